"""The README quickstart works exactly as written (pointed at the test stack's port)."""

from __future__ import annotations

import json
import subprocess

from tests.readme import quickstart_script


def test_readme_quickstart_returns_the_expected_hit(stack) -> None:  # type: ignore[no-untyped-def]
    script = quickstart_script().replace("localhost:8234", stack.base_url.removeprefix("http://"))
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    last_line = result.stdout.strip().splitlines()[-1]
    hits = json.loads(last_line)["results"]
    assert hits[0]["id"] == "gazpacho"
