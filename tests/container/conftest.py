"""The container tier: the image `make image` built, run the way the README's "Container" section
says, through the docker CLI. `make test-container` builds the image first.

`Readme` holds every command of that section, as written there; each test runs them as a user
would (from a folder of its own, so `$PWD/braid-data` is the test's), and test_readme.py checks
that the section holds nothing else.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import wait_until

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
IMAGE = "braid"
NAME = "braid"  # the README's --name
UID = 10001  # the image's user `braid`
START_S = 120.0  # README: healthy within 2 minutes of a start
BASE_URL = "http://127.0.0.1:8234"


class Readme:
    """The commands of the README's container section, as written there."""

    BUILD = "make image"
    RUN = "docker run -d --name braid -p 8234:8234 -v $PWD/braid-data:/data braid"
    RUN_ENCODERS = (
        "docker run -d --name braid -p 8234:8234 -v $PWD/braid-data:/data"
        " -e BRAID_ENCODERS=3 -e BRAID_ENCODER_MODELS=1 braid"
    )
    RUN_OFFLINE = "docker run -d --name braid --network none -v $PWD/braid-data:/data braid"
    STOP = "docker stop braid"
    START = "docker start braid"
    KILL = "docker kill braid"
    REMOVE = "docker rm -f braid"

    @classmethod
    def all(cls) -> list[str]:
        return [value for key, value in vars(cls).items() if key.isupper()]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/container carries the `container` marker."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.container)


def docker(*args: str, timeout: float = 120, check: bool = True) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, f"docker {' '.join(args)}: {done.stderr.strip()}"
    return done.stdout.strip()


class Container:
    """The README's container `braid`, with its data in `folder`/braid-data."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.data = folder / "braid-data"

    def sh(self, command: str, timeout: float = 120) -> str:
        """Run a README command as written, from the test's folder; one that hangs fails with
        what it printed and the container's logs."""
        try:
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=self.folder,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            output = exc.stdout or b""  # bytes, even with text=True
            printed = output if isinstance(output, str) else output.decode(errors="replace")
            raise AssertionError(
                f"{command}\nstill running after {timeout:g} s; it printed:\n{printed}\n"
                f"{self.log_tails()}"
            ) from None
        assert done.returncode == 0, f"{command}: {done.stderr.strip()}\n{self.log_tails()}"
        return done.stdout.strip()

    def state(self) -> dict[str, Any]:
        return dict(json.loads(docker("inspect", "-f", "{{json .State}}", NAME)))

    def wait_healthy(self, timeout: float = START_S) -> float:
        """Seconds until Docker calls it healthy; fails at once if it stops meanwhile."""
        started = time.monotonic()

        def healthy() -> bool:
            state = self.state()
            assert state["Running"], f"the container stopped: {state}\n{self.log_tails()}"
            return bool((state.get("Health") or {}).get("Status") == "healthy")

        try:
            wait_until(healthy, timeout=timeout, interval=0.5)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.log_tails()}") from exc
        return time.monotonic() - started

    def python(self, script: str, timeout: float = 180) -> object:
        """Run `script` with the image's Python inside the container (as root, in /braid); it
        prints one JSON value, which comes back."""
        done = subprocess.run(
            ["docker", "exec", "-i", "-w", "/braid", NAME, "python3", "-"],
            input=script,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, f"{done.stderr}\n{self.log_tails()}"
        return json.loads(done.stdout.strip().splitlines()[-1])

    def supervisord_log(self) -> str:
        return (self.data / "logs" / "supervisord.log").read_text(errors="replace")

    def log_tails(self, lines: int = 15) -> str:
        logs = self.data / "logs"
        if not logs.is_dir():
            return docker("logs", "--tail", str(lines), NAME, check=False)
        tails = []
        for path in sorted(logs.glob("*.log")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            tails.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(tails)

    def remove(self) -> None:
        docker("rm", "-f", NAME, check=False)


@pytest.fixture(scope="session", autouse=True)
def image() -> str:
    """The image under test, built by `make image` (make test-container builds it first)."""
    found = subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True, timeout=60)
    assert found.returncode == 0, f"no image '{IMAGE}': run `make image` (or make test-container)"
    return IMAGE


@pytest.fixture
def container(tmp_path: Path) -> Iterator[Container]:
    """A folder to run the README's commands from; the container `braid` is removed before and
    after (its name, and port 8234, are the README's)."""
    box = Container(tmp_path)
    box.remove()
    try:
        yield box
    finally:
        box.remove()
