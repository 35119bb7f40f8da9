"""Bulk-load a JSON-lines file of documents into a Braid collection, with progress, resumably.

    python3 -m loader docs.jsonl --collection articles [--url http://localhost:8234]

See loader/load.py for what a line may hold and how retries and resuming work; the README's
"Loading documents" has an example.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import httpx

from loader.load import MAX_BATCH, LoadError, load


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m loader", description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path, help="JSON lines, one document per line")
    parser.add_argument("--collection", required=True, help="an existing collection")
    parser.add_argument("--url", default="http://localhost:8234", help="Braid's base URL")
    parser.add_argument("--api-key", help="sent as `api-key` when the service requires one")
    parser.add_argument("--batch", type=int, default=MAX_BATCH, help="documents per request")
    parser.add_argument("--in-flight", type=int, default=4, help="requests at a time")
    parser.add_argument(
        "--state",
        type=Path,
        help="where progress is kept for resuming (default: FILE.progress next to the file)",
    )
    parser.add_argument("--restart", action="store_true", help="ignore a saved state")
    parser.add_argument(
        "--no-wait", action="store_true", help="stop once sent, without waiting for the index"
    )
    return parser.parse_args(argv)


async def run(args: argparse.Namespace) -> int:
    state = args.state or args.file.with_name(args.file.name + ".progress")
    if args.restart:
        state.unlink(missing_ok=True)
    headers = {"api-key": args.api_key} if args.api_key else {}
    async with httpx.AsyncClient(base_url=args.url, headers=headers, timeout=120.0) as client:
        result = await load(
            client,
            args.collection,
            args.file,
            state,
            batch=args.batch,
            in_flight=args.in_flight,
            wait=not args.no_wait,
        )
    done = "sent" if args.no_wait else "indexed"
    skipped = (
        f" ({result.skipped:,} skipped: acknowledged by an earlier run)" if result.skipped else ""
    )
    print(
        f"{result.sent:,} documents {done} in {result.seconds:.1f} s "
        f"({result.docs_s:,.1f}/s){skipped}",
        file=sys.stderr,
    )
    if result.failed:
        print(
            f"{result.failed:,} writes failed: GET /v1/collections/{args.collection}"
            "/documents/{id}/status gives a document's reason",
            file=sys.stderr,
        )
        return 1
    return 0


def main() -> None:
    args = parse()
    try:
        sys.exit(asyncio.run(run(args)))
    except LoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print(
            "the documents acknowledged so far are kept: run the same command to resume",
            file=sys.stderr,
        )
        sys.exit(2)
    except KeyboardInterrupt:
        print("\nstopped: run the same command to resume", file=sys.stderr)
        sys.exit(130)
    except httpx.HTTPError as exc:
        print(f"error: cannot reach {args.url}: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
