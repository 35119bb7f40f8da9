"""The load study's harness end to end, small: `python3 -m bench.load --smoke` starts its own stack,
bulk-loads 300 documents, runs the Locust seed workload at 2 and 4 users and an overload at 8,
then checks the collection against every acknowledged write. Under that mixed load no request may
fail (503s aside) and no acknowledged write may be lost. Locust runs as two processes, as on a
machine with more cores: their writes and answer totals must come together."""

from __future__ import annotations

import re
import subprocess
import sys

from harness.stack import REPO_ROOT


def test_the_seed_workload_runs_without_errors_and_loses_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench.load", "--smoke", "--locust-processes", "2"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "all match" in output, output[-4000:]
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("| users |"))
    columns = [cell.strip() for cell in header.strip("|").split("|")]
    rows = [line for line in lines if line.startswith(("| 2 |", "| 4 |"))]
    assert len(rows) == 2, output[-4000:]
    for row in rows:
        cells = dict(
            zip(columns, (cell.strip() for cell in row.strip("|").split("|")), strict=True)
        )
        assert float(cells["RPS (all)"]) > 0
        assert cells["errors / 503s"] == "0 / 0"
        assert float(cells["p95, Braid's histogram"]) > 0  # the api's own search histogram
    assert "`promtool check metrics` on /v1/metrics/prometheus after the load: clean" in output
    totals = next(line for line in lines if line.startswith("- every answer of the run"))
    searches = re.search(r"search 200: ([\d,]+)", totals)
    assert searches and int(searches.group(1).replace(",", "")) > 0, totals
