"""Nothing leaves the box: the whole stack, started in a network namespace whose one way off the
machine is a default route (IPv4 and IPv6, with the namespace's nameservers behind it) into a sink
interface, runs the README quickstart (keyword + dense) and idles 30 s without trying to send a
single packet off the machine, and writes nothing into its processes' HOME (OpenVINO's
~/intel/openvino_ga_cid, ONNX Runtime's ~/.cache/Microsoft device id).

nftables counts and drops, in the namespace's output hook, every packet not on `lo`, recording
each destination and port. The one exception is the kernel's own IPv6 router solicitation,
neighbour discovery and MLD on the sink (link-local or unspecified source to ff02::/16), counted
apart. The sink's own packet counters must equal that count: a packet socket, which bypasses
netfilter, would show there.
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
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.stack import REPO_ROOT, Stack
from tests.readme import quickstart_script

MODULE = "tests.integration.test_offline"  # imported again inside the namespace
IDLE_S = 30.0  # idle traffic (heartbeats, timers, telemetry flushes) is the point of the wait
SINK = "sink0"
TABLE = "braid_offline"
NAMESERVERS = ("198.51.100.53", "2001:db8:53::53")  # behind the default routes, off the sink's nets
# What the kernel sends on its own when an IPv6 link comes up: router solicitations, duplicate
# address detection and multicast listener reports.
KERNEL_ND = (
    "nd-router-solicit, nd-neighbor-solicit, mld-listener-report, mld2-listener-report,"
    " mld-listener-done"
)
RULES = f"""
table inet {TABLE} {{
    set tried4 {{ type ipv4_addr . inet_proto . inet_service; flags dynamic; counter; size 4096; }}
    set tried6 {{ type ipv6_addr . inet_proto . inet_service; flags dynamic; counter; size 4096; }}
    set other4 {{ type ipv4_addr . inet_proto; flags dynamic; counter; size 4096; }}
    set other6 {{ type ipv6_addr . inet_proto; flags dynamic; counter; size 4096; }}
    counter dropped {{}}
    counter kernel_nd {{}}
    chain output {{
        type filter hook output priority filter; policy accept;
        oif "lo" accept
        oifname "{SINK}" ip6 saddr {{ ::, fe80::/10 }} ip6 daddr ff02::/16 \
            ip6 hoplimit {{ 1, 255 }} icmpv6 type {{ {KERNEL_ND} }} counter name kernel_nd accept
        meta l4proto {{ tcp, udp }} add @tried4 {{ ip daddr . meta l4proto . th dport }}
        meta l4proto {{ tcp, udp }} add @tried6 {{ ip6 daddr . meta l4proto . th dport }}
        meta l4proto != {{ tcp, udp }} add @other4 {{ ip daddr . meta l4proto }}
        meta l4proto != {{ tcp, udp }} add @other6 {{ ip6 daddr . meta l4proto }}
        counter name dropped drop
    }}
}}
"""


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


@dataclass
class Tally:
    """What the namespace tried to send off the box."""

    dropped: int
    kernel_nd: int
    reached_sink: int  # packets the sink device saw: the kernel's ND/MLD, or a netfilter bypass
    destinations: dict[str, int]

    @property
    def leaked(self) -> bool:
        return self.dropped > 0 or self.reached_sink != self.kernel_nd

    def describe(self) -> str:
        named = sum(self.destinations.values())
        lines = [f"{count} x {dest}" for dest, count in sorted(self.destinations.items())]
        if self.dropped > named:
            lines.append(f"{self.dropped - named} x unnamed")
        if self.reached_sink != self.kernel_nd:
            lines.append(
                f"the sink saw {self.reached_sink} packets, {self.kernel_nd} of them the kernel's"
                " own ND/MLD: the rest bypassed netfilter (a packet socket)"
            )
        return "; ".join(lines) or "nothing"


class SealedNamespace:
    """A network namespace with a counting, dropping way out; `ip netns exec` runs in it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.etc = Path("/etc/netns") / name

    def create(self) -> None:
        self.delete()
        ip("netns", "add", self.name)
        ip("-n", self.name, "link", "set", "lo", "up")
        self._add_sink()
        # The rules go in before the sink comes up: nothing it sends escapes the count.
        self.exec(["nft", "-f", "-"], stdin=RULES)
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

    def exec(
        self, command: list[str], stdin: str | None = None, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ip", "netns", "exec", self.name, *command],
            cwd=REPO_ROOT,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=stdin is not None,
        )

    def tally(self) -> Tally:
        listing = self.exec(["nft", "-j", "list", "table", "inet", TABLE])
        assert listing.returncode == 0, listing.stderr
        counters: dict[str, int] = {}
        destinations: dict[str, int] = {}
        for item in json.loads(listing.stdout)["nftables"]:
            if "counter" in item:
                counters[item["counter"]["name"]] = item["counter"]["packets"]
            for elem in item.get("set", {}).get("elem", []):
                address, proto, *port = elem["elem"]["val"]["concat"]
                where = f"{address} {proto}" + "".join(f"/{number}" for number in port)
                destinations[where] = elem["elem"]["counter"]["packets"]
        link = subprocess.run(
            ["ip", "-n", self.name, "-s", "-j", "link", "show", SINK],
            capture_output=True,
            text=True,
            check=True,
        )
        stats = json.loads(link.stdout)[0]["stats64"]
        return Tally(
            dropped=counters["dropped"],
            kernel_nd=counters["kernel_nd"],
            reached_sink=stats["tx"]["packets"] + stats["rx"]["packets"],
            destinations=destinations,
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
        tally = namespace.tally()
    written = sorted(str(path.relative_to(home)) for path in home.rglob("*"))
    seconds = time.monotonic() - started
    leaks = []
    if tally.leaked:
        leaks.append(f"packets tried off the box in {seconds:.0f} s: {tally.describe()}")
    if written:
        leaks.append(f"written to the processes' HOME (telemetry ids?): {written}")
    assert run.returncode == 0, f"{leaks}\nthe stack in the namespace failed:\n{run.stderr[-6000:]}"
    assert not leaks, "\n".join(leaks)
