"""Nothing leaves the box: the whole stack, started in a network namespace whose one way off the
machine is a default route (IPv4 and IPv6, with the namespace's nameservers behind it) into a sink
interface, runs the README quickstart (keyword + dense) and idles 30 s without trying to send a
single packet off the machine, and writes nothing into its processes' HOME (OpenVINO's
~/intel/openvino_ga_cid, ONNX Runtime's ~/.cache/Microsoft device id).

nftables counts and drops every packet not on `lo` and names its destination; the kernel's own
IPv6 neighbour discovery on the sink is counted apart (tests/integration/egress.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.stack import REPO_ROOT, Stack
from tests.integration.egress import Egress
from tests.readme import quickstart_script

MODULE = "tests.integration.test_offline"  # imported again inside the namespace
IDLE_S = 30.0  # idle traffic (heartbeats, timers, telemetry flushes) is the point of the wait
SINK = "sink0"
NAMESERVERS = ("198.51.100.53", "2001:db8:53::53")  # behind the default routes, off the sink's nets


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


class SealedNamespace:
    """A network namespace with a counting, dropping way out; `ip netns exec` runs in it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.etc = Path("/etc/netns") / name
        self.egress = Egress(["ip", "netns", "exec", name], SINK)

    def create(self) -> None:
        self.delete()
        ip("netns", "add", self.name)
        ip("-n", self.name, "link", "set", "lo", "up")
        self._add_sink()
        # The rules go in before the sink comes up: nothing it sends escapes the count.
        self.egress.seal()
        ip("-n", self.name, "link", "set", SINK, "up")
        ip("-n", self.name, "addr", "add", "192.0.2.2/24", "dev", SINK)
        ip("-n", self.name, "-6", "addr", "add", "2001:db8::2/64", "dev", SINK, "nodad")
        ip("-n", self.name, "route", "add", "default", "via", "192.0.2.1")
        ip("-n", self.name, "-6", "route", "add", "default", "via", "2001:db8::1")
        self.etc.mkdir(parents=True, exist_ok=True)
        (self.etc / "resolv.conf").write_text("".join(f"nameserver {a}\n" for a in NAMESERVERS))

    def _add_sink(self) -> None:
        """A dummy interface; where the kernel has none, an ifb, which drops what it is sent
        just the same (and counts it as received)."""
        try:
            ip("-n", self.name, "link", "add", SINK, "type", "dummy")
        except subprocess.CalledProcessError:
            ip("-n", self.name, "link", "add", SINK, "type", "ifb")

    def delete(self) -> None:
        if (Path("/run/netns") / self.name).exists():
            ip("netns", "del", self.name)
        shutil.rmtree(self.etc, ignore_errors=True)

    def exec(self, command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ip", "netns", "exec", self.name, *command],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@contextlib.contextmanager
def sealed_namespace() -> Iterator[SealedNamespace]:
    namespace = SealedNamespace(f"braid-offline-{os.getpid()}")
    try:
        namespace.create()
        yield namespace
    finally:
        namespace.delete()


def quickstart_then_idle(home: str) -> None:
    """Run inside the namespace: the stack with HOME=`home`, the README quickstart, IDLE_S idle,
    then a stop as `docker stop` does (its shutdown counts too)."""
    with Stack({"HOME": home}) as stack:
        script = quickstart_script().replace("localhost:8234", stack.base_url.split("//", 1)[1])
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{done.stderr}\n{stack.log_tails()}"
        hits = json.loads(done.stdout.strip().splitlines()[-1])["results"]
        assert hits[0]["id"] == "gazpacho", f"{hits}\n{stack.log_tails()}"
        time.sleep(IDLE_S)


def test_start_quickstart_and_idle_send_nothing_off_the_box(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("network namespaces and nftables need root")
    home = tmp_path / "home"
    home.mkdir()
    inside = f"from {MODULE} import quickstart_then_idle; quickstart_then_idle({str(home)!r})"
    started = time.monotonic()
    with sealed_namespace() as namespace:
        run = namespace.exec([sys.executable, "-c", inside], timeout=600)
        tally = namespace.egress.tally()
    written = sorted(str(path.relative_to(home)) for path in home.rglob("*"))
    seconds = time.monotonic() - started
    leaks = []
    if tally.leaked:
        leaks.append(f"packets tried off the box in {seconds:.0f} s: {tally.describe()}")
    if written:
        leaks.append(f"written to the processes' HOME (telemetry ids?): {written}")
    assert run.returncode == 0, f"{leaks}\nthe stack in the namespace failed:\n{run.stderr[-6000:]}"
    assert not leaks, "\n".join(leaks)
