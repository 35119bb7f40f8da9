"""`python3 -m bench.soak`: parse the command line, run the soak, judge it, render and record it,
exit 1 when the verdict fails."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import tempfile
from pathlib import Path

from bench.common.report import Report
from bench.soak import findings
from bench.soak import report as soak_report
from bench.soak.run import HYBRID_DOCUMENTS, HYBRID_USERS, Plan, run


def parse(argv: list[str]) -> Plan:
    parser = argparse.ArgumentParser(
        prog="python3 -m bench.soak",
        description="The seed workload at a fixed user count for an hour: RSS and anonymous "
        "memory of every process of the stack and search latency each minute, then a check that "
        "nothing was lost.",
    )
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="the hybrid collection (keyword and the model's dense vector), documents of 3 to "
        "300 words so the model holder sees every token length",
    )
    parser.add_argument(
        "--documents",
        type=int,
        help=f"pre-populated documents, the ids the writes draw from (100000; hybrid "
        f"{HYBRID_DOCUMENTS}: what the model embeds in about 5 minutes)",
    )
    parser.add_argument(
        "--users",
        type=int,
        help=f"Locust users (4: half the keyword knee of 8; hybrid {HYBRID_USERS}: about 60 RPS, "
        "half the hybrid knee of 96-126 RPS at 3-9 users)",
    )
    parser.add_argument("--minutes", type=int, help="minutes under load (60)")
    parser.add_argument("--warmup", type=int, help="minutes left out of growth and slope (5)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the stack")
    parser.add_argument("--smoke", action="store_true", help="2 minutes, 500 documents, no write")
    parser.add_argument("--no-write", action="store_true", help="print instead of recording")
    args = parser.parse_args(argv)
    plan = Plan.defaults(hybrid=args.hybrid, smoke=args.smoke)
    for name in ("documents", "users", "minutes", "warmup"):
        if getattr(args, name) is not None:
            setattr(plan, name, getattr(args, name))
    if plan.minutes < 1 or plan.users < 1 or plan.documents < 0 or plan.warmup < 0:
        parser.error("--minutes and --users must be at least 1, the others not negative")
    plan.env.update(dict(item.split("=", 1) for item in args.env))
    plan.write = plan.write and not args.no_write
    return plan


def title(plan: Plan) -> str:
    return f"soak ({plan.config}, {plan.users} users, {plan.minutes} min)"


async def soak(plan: Plan) -> int:
    doc = Report(
        title=title(plan),
        command=shlex.join(["python3", "-m", "bench.soak", *sys.argv[1:]]),
        runs_heading=soak_report.HEADING,
    )
    with tempfile.TemporaryDirectory(prefix="braid-soak-") as scratch:
        result = await run(plan, Path(scratch))
    verdict = findings.judge(result)
    files = {}
    if plan.write:
        files = soak_report.write_files(result, doc.started, soak_report.OUT_DIR)
    soak_report.section(doc, result, verdict, files)
    print(doc.markdown())
    if plan.write:
        doc.append_to()
    return 0 if verdict.ok else 1


def main() -> None:
    sys.exit(asyncio.run(soak(parse(sys.argv[1:]))))


if __name__ == "__main__":
    main()
