"""The README's Python client example works as written (pointed at the test stack's port)."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.readme import section


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", section("Python client"), re.S)
    assert blocks, "README has no ```python block under ## Python client"
    return blocks[0]


def test_readme_python_example_finds_the_bike_guide_first(stack) -> None:  # type: ignore[no-untyped-def]
    script = _example().replace("http://localhost:8234", stack.base_url)
    assert script != _example(), "the example no longer names http://localhost:8234"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    ids = [line.split()[0] for line in result.stdout.splitlines()]
    assert ids[0] == "chain", result.stdout  # the README says it prints `chain` first
    assert len(ids) == 2  # limit=2
