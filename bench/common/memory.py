"""RSS and anonymous resident memory of every process of the stack, per supervisord program: each
program's process tree (the RabbitMQ launcher script with its Erlang VM and helpers, …) and
supervisord itself. Both, because RSS includes the file-backed pages of the embedded store's
memory-mapped segments (reclaimable page cache), so only the anonymous part tells a leak.

Programs and their PIDs come from `supervisorctl status`, read every sample, so a program that
supervisord restarted shows up under its new PID (and as a restart).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bench.common import procs
from harness.stack import Stack

MIB = 1024 * 1024
SUPERVISORD = "supervisord"


def parse_status(text: str) -> dict[str, int]:
    """`supervisorctl status` → program → PID, for the programs that are RUNNING.

    Lines read `api:api-1   RUNNING   pid 4291, uptime 0:01:02`; a group's program is named by its
    process name (`api-1`), a lone program by its own (`worker`)."""
    found = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) < 4 or words[1] != "RUNNING" or words[2] != "pid":
            continue
        pid = words[3].rstrip(",")
        if pid.isdigit():
            found[words[0].rsplit(":", 1)[-1]] = int(pid)
    return found


@dataclass(frozen=True)
class Memory:
    """One reading: program -> MiB of its process tree, resident (RSS) and anonymous (RssAnon)."""

    rss_mib: dict[str, float]
    anon_mib: dict[str, float]


def program_memory(table: Iterable[procs.Proc], roots: Mapping[str, int]) -> Memory:
    """Resident and anonymous memory of each root's process tree (the root and its descendants),
    from one reading of /proc. SUPERVISORD counts itself alone: its tree is the whole stack."""
    trees = procs.program_trees(table, roots, alone=frozenset({SUPERVISORD}))
    rss = {name: sum(p.rss_bytes for p in tree) / MIB for name, tree in trees.items()}
    anon = {name: sum(p.anon_bytes for p in tree) / MIB for name, tree in trees.items()}
    return Memory(rss_mib=rss, anon_mib=anon)


def program_pids(stack: Stack, previous: Mapping[str, int]) -> dict[str, int]:
    """Every running program's PID and supervisord's; the previous ones if supervisorctl fails to
    answer (a sample is better late than a soak lost)."""
    try:
        found = parse_status(stack.ctl("status"))
    except (subprocess.SubprocessError, OSError):
        return dict(previous)
    if not found:
        return dict(previous)
    found[SUPERVISORD] = stack.supervisord_pid
    return found


def sample(roots: Mapping[str, int]) -> Memory:
    return program_memory(procs.all_procs(), roots)
