"""`python3 -m bench.resend --url URL --collection NAME`: how fast a running Braid takes back
documents re-sent with their text unchanged (new timestamp and tags), as a user re-syncing a
catalog does. Only the payloads change, so nothing is embedded or re-indexed: what is timed is
the worker's payload-only path, from the first bulk request until the queue is empty.

The documents are the collection's own (the first `--count`, read with /documents/fetch); every
one comes back with the tag `resent`.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from typing import Any

import httpx

KEPT = ("id", "name", "description", "content", "metadata")
BULK = 100


def stored(client: httpx.Client, collection: str, count: int) -> list[dict[str, Any]]:
    documents: list[dict[str, Any]] = []
    after: str | None = None
    while len(documents) < count:
        body: dict[str, Any] = {"page_size": min(1000, count - len(documents))}
        if after:
            body["after"] = after
        response = client.post(f"/v1/collections/{collection}/documents/fetch", json=body)
        response.raise_for_status()
        page = response.json()
        documents += page["documents"]
        after = page.get("after")
        if not after:
            break
    return documents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="Braid's base URL")
    parser.add_argument("--collection", required=True)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--key", help="an API key with write access")
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {args.key}"} if args.key else {}
    with httpx.Client(base_url=args.url, headers=headers, timeout=120.0) as client:
        documents = stored(client, args.collection, args.count)
        stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        kept = [{k: d[k] for k in KEPT if d.get(k) is not None} for d in documents]
        again = [{**d, "timestamp": stamp, "tags": ["resent"]} for d in kept]
        started = time.monotonic()
        for i in range(0, len(again), BULK):
            body = {"documents": again[i : i + BULK]}
            response = client.post(f"/v1/collections/{args.collection}/documents/bulk", json=body)
            response.raise_for_status()
        sent = time.monotonic() - started
        while client.get(f"/v1/collections/{args.collection}/queue/info").json()["total"]:
            time.sleep(0.05)
        took = time.monotonic() - started
    print(
        f"{len(again)} unchanged documents re-sent in {sent:.1f} s, all indexed after "
        f"{took:.1f} s: {len(again) / took:.0f} documents/s"
    )


if __name__ == "__main__":
    main()
