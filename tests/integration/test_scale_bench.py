"""bench.load.scale end to end, small: one stack with two api processes takes the seed workload, one
api process is stopped under that load, the levels run again on the other, and every acknowledged
write is in the collection after. Each count's levels must answer without errors."""

from __future__ import annotations

import subprocess
import sys

from harness.stack import REPO_ROOT


def test_the_scale_table_runs_each_count_and_loses_nothing() -> None:
    command = [
        sys.executable, "-m", "bench.load.scale", "--processes", "2,1", "--users-per-process", "2",
        "--documents", "1000", "--window", "5", "--settle", "2", "--no-write",
    ]  # fmt: skip
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "all match" in output, output[-4000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith(("| 1 |", "| 2 |"))]
    assert [row.split("|")[2].strip().split()[0] for row in rows] == ["2", "4"], output[-4000:]
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert float(cells[2]) > 0, row  # RPS
        assert cells[8] == "0 / 0", row  # errors / 503s
