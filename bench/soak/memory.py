"""RSS of every process of the stack, per supervisord program: each program's process tree (the
RabbitMQ launcher script with its Erlang VM and helpers, …) and supervisord itself.

Programs and their PIDs come from `supervisorctl status`, read every sample, so a program that
supervisord restarted shows up under its new PID (and as a restart).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping

from bench import procs
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


def program_rss(table: Iterable[procs.Proc], roots: Mapping[str, int]) -> dict[str, float]:
    """MiB of resident memory of each root's process tree (the root and its descendants), from one
    reading of /proc. SUPERVISORD counts itself alone: its tree is the whole stack."""
    by_pid = {proc.pid: proc for proc in table}
    children: dict[int, list[int]] = {}
    for proc in by_pid.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    out = {}
    for name, root in roots.items():
        if root not in by_pid:
            continue
        tree = [root]
        if name != SUPERVISORD:
            for pid in tree:  # grows while iterating: breadth first
                tree.extend(children.get(pid, []))
        out[name] = sum(by_pid[pid].rss_bytes for pid in tree) / MIB
    return out


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


def sample(roots: Mapping[str, int]) -> dict[str, float]:
    return program_rss(procs.all_procs(), roots)
