"""Counts and drops every packet a network namespace tries to send off the box, naming each one's
destination and port: the offline tests of the bare-machine and container tiers.

nftables, in the namespace's output hook, accepts what goes to `lo` and drops the rest, adding
each destination (address, protocol, port) to a set with a counter. The one exception is the
kernel's own IPv6 router solicitation, neighbour discovery and MLD on the way out (link-local or
unspecified source to ff02::/16), counted apart. The way out's own packet counter must equal that
count: a packet socket, which bypasses netfilter, would show there.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

TABLE = "braid_offline"
# What the kernel sends on its own on an IPv6 link: router solicitations, duplicate address
# detection and multicast listener reports.
KERNEL_ND = (
    "nd-router-solicit, nd-neighbor-solicit, mld-listener-report, mld2-listener-report,"
    " mld-listener-done"
)


def rules(way_out: str) -> str:
    """The nftables table for a namespace whose interface off the box is `way_out`."""
    return f"""
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
        oifname "{way_out}" ip6 saddr {{ ::, fe80::/10 }} ip6 daddr ff02::/16 \\
            ip6 hoplimit {{ 1, 255 }} icmpv6 type {{ {KERNEL_ND} }} counter name kernel_nd accept
        meta l4proto {{ tcp, udp }} add @tried4 {{ ip daddr . meta l4proto . th dport }}
        meta l4proto {{ tcp, udp }} add @tried6 {{ ip6 daddr . meta l4proto . th dport }}
        meta l4proto != {{ tcp, udp }} add @other4 {{ ip daddr . meta l4proto }}
        meta l4proto != {{ tcp, udp }} add @other6 {{ ip6 daddr . meta l4proto }}
        counter name dropped drop
    }}
}}
"""


@dataclass
class Tally:
    """What the namespace tried to send off the box since the rules went in."""

    dropped: int
    kernel_nd: int
    sent: int  # packets the way out's device sent: the kernel's ND/MLD, or a netfilter bypass
    destinations: dict[str, int]

    @property
    def leaked(self) -> bool:
        return self.dropped > 0 or self.sent != self.kernel_nd

    def describe(self) -> str:
        named = sum(self.destinations.values())
        lines = [f"{count} x {dest}" for dest, count in sorted(self.destinations.items())]
        if self.dropped > named:
            lines.append(f"{self.dropped - named} x unnamed")
        if self.sent != self.kernel_nd:
            lines.append(
                f"the way out sent {self.sent} packets, {self.kernel_nd} of them the kernel's own"
                " ND/MLD: the rest bypassed netfilter (a packet socket)"
            )
        return "; ".join(lines) or "nothing"


class Egress:
    """The counting, dropping rules of one namespace, reached by the command prefix `enter`
    (`ip netns exec NAME`, `nsenter -t PID -n`); `way_out` is its interface off the box."""

    def __init__(self, enter: list[str], way_out: str) -> None:
        self._enter = enter
        self._way_out = way_out
        self._sent_before = 0

    def run(self, *command: str, stdin: str | None = None, timeout: float = 30) -> str:
        """Run `command` in the namespace; its stdout."""
        done = subprocess.run(
            [*self._enter, *command], input=stdin, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, f"{' '.join(command)}: {done.stderr}"
        return done.stdout

    def seal(self) -> None:
        """Load the rules; what the way out sent before does not count."""
        self.run("nft", "-f", "-", stdin=rules(self._way_out))
        self._sent_before = self._sent()

    def _sent(self) -> int:
        link = json.loads(self.run("ip", "-s", "-d", "-j", "link", "show", self._way_out))[0]
        stats = link["stats64"]
        # An ifb counts what it is sent as received (and drops it); the others count it as sent.
        kind = link.get("linkinfo", {}).get("info_kind")
        return int(stats["rx" if kind == "ifb" else "tx"]["packets"])

    def tally(self) -> Tally:
        counters: dict[str, int] = {}
        destinations: dict[str, int] = {}
        listing = json.loads(self.run("nft", "-j", "list", "table", "inet", TABLE))
        for item in listing["nftables"]:
            if "counter" in item:
                counters[item["counter"]["name"]] = item["counter"]["packets"]
            for elem in item.get("set", {}).get("elem", []):
                address, proto, *port = elem["elem"]["val"]["concat"]
                where = f"{address} {proto}" + "".join(f"/{number}" for number in port)
                destinations[where] = elem["elem"]["counter"]["packets"]
        return Tally(
            dropped=counters["dropped"],
            kernel_nd=counters["kernel_nd"],
            sent=self._sent() - self._sent_before,
            destinations=destinations,
        )
