"""Locust as a separate process running bench/load/locustfile.py, driven through its web API, and
the reading of the numbers it answers (bench/load and bench/soak both drive it this way)."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.common import procs
from bench.load.workload import COLLECTION, ID_SPACE, Lengths
from harness.stack import REPO_ROOT, die_with_parent, free_ports

LOCUSTFILE = REPO_ROOT / "bench" / "load" / "locustfile.py"


class LocustProcess:
    """Locust with its web API on a free port, driven by a runner."""

    def __init__(
        self,
        host: str,
        oplog: Path,
        log: Path,
        seed: int,
        processes: int = 1,
        id_space: int = ID_SPACE,
        lengths: Lengths = Lengths.SEED,
    ) -> None:
        self.port = free_ports(1)[0]
        env = dict(os.environ)
        env.update(
            BRAID_LOAD_COLLECTION=COLLECTION,
            BRAID_LOAD_OPLOG=str(oplog),
            BRAID_LOAD_SEED=str(seed),
            BRAID_LOAD_ID_SPACE=str(id_space),
            BRAID_LOAD_LENGTHS=str(lengths),
        )
        command = [
            sys.executable, "-m", "locust", "-f", str(LOCUSTFILE),
            "--host", host, "--web-host", "127.0.0.1", "--web-port", str(self.port),
            "--stop-timeout", "60", "--loglevel", "WARNING",
        ]  # fmt: skip
        if processes > 1:  # one process drives about one core's worth of requests
            command += ["--processes", str(processes)]
        self._log = open(log, "ab")  # noqa: SIM115
        # A group of its own: a Ctrl-C at the terminal goes to the runner, which stops Locust
        # when it is done with it (bench/soak still reads the last minute after one).
        self.process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            process_group=0,
            preexec_fn=die_with_parent,
        )
        self.meter = procs.TreeMeter(lambda: procs.descendants(self.process.pid))
        self.http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.port}", timeout=30.0)

    async def ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"locust exited with {self.process.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if (await self.http.get("/stats/requests")).status_code == 200:
                    return
            await asyncio.sleep(0.5)
        raise RuntimeError("locust's web API did not answer")

    async def swarm(self, users: int, rate: float) -> None:
        response = await self.http.post("/swarm", data={"user_count": users, "spawn_rate": rate})
        response.raise_for_status()

    async def users(self) -> int:
        return int((await self.http.get("/stats/requests")).json().get("user_count", 0))

    async def ramp(self, users: int) -> None:
        """Swarm to `users` at up to 10 s of ramp, and wait until they run."""
        await self.swarm(users, max(1.0, users / 10))
        deadline = time.monotonic() + 120
        while await self.users() != users and time.monotonic() < deadline:
            await asyncio.sleep(0.5)

    async def reset(self) -> None:
        (await self.http.post("/stats/reset")).raise_for_status()

    async def stats(self) -> dict[str, dict[str, str]]:
        text = (await self.http.get("/stats/requests/csv")).text
        return {row["Name"]: row for row in csv.DictReader(io.StringIO(text))}

    async def failures(self) -> list[dict[str, str]]:
        text = (await self.http.get("/stats/failures/csv")).text
        return list(csv.DictReader(io.StringIO(text)))

    async def totals(self) -> dict[str, int]:
        """Answers by request kind and status since Locust started ("search 200": 1234)."""
        return dict((await self.http.get("/braid/totals")).json())

    async def stop(self) -> None:
        with contextlib.suppress(httpx.HTTPError):
            await self.http.post("/stop", timeout=120.0)
        await self.http.aclose()
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


def number(value: str | None) -> float:
    """A number of Locust's CSV; NaN where it has none ("N/A", empty)."""
    try:
        return float(value) if value not in (None, "", "N/A") else math.nan
    except ValueError:
        return math.nan


def failure_counts(failures: list[dict[str, str]]) -> tuple[int, int]:
    """(errors other than 503, 503s) in Locust's failure table."""
    errors = overloaded = 0
    for row in failures:
        count = int(row.get("Occurrences", 0) or 0)
        if row.get("Error", "").startswith("HTTP 503"):
            overloaded += count
        else:
            errors += count
    return errors, overloaded
