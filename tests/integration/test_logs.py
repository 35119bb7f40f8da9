"""Every program's output reaches supervisord's stdout (what `make run` and `docker logs` show),
each line prefixed by the program's name, and stays in the program's own log file."""

from __future__ import annotations

import pytest

from harness.stack import Stack
from tests.integration.helpers import wait_until

# A line each program family writes once it is up: (program, text in the line).
STARTED = [
    ("api-1", "Application startup complete"),
    ("encoder-1", "encoder 1 ready"),
    ("worker", "worker ready"),
    ("redis", "Ready to accept connections"),
    ("rabbitmq", "Server startup complete"),
]


@pytest.mark.parametrize(("program", "text"), STARTED)
def test_a_programs_line_is_in_its_file_and_prefixed_on_supervisords_stdout(
    stack: Stack, program: str, text: str
) -> None:
    def in_file() -> str | None:
        return next((line for line in stack.logs(program).splitlines() if text in line), None)

    line = wait_until(in_file, timeout=60)
    relayed = f"{program:<10} | {line}"
    try:
        wait_until(lambda: relayed in stack.output().splitlines(), timeout=60)
    except AssertionError as exc:
        raise AssertionError(f"not on stdout: {relayed!r}\n{stack.log_tails()}") from exc
