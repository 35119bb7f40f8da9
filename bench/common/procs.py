"""CPU and memory of a process tree, read from /proc (Linux), for the load runner and the soak.

A tree is a session (the stack: supervisord and everything it runs) or one process with its
descendants (the load generator). CPU counts each live process's own time plus what it collected
from children it reaped, so a process that exits between two samples still counts.

Memory comes two ways: RSS (every resident page) and anonymous resident memory (RssAnon: heap,
stacks, private allocations). RSS also counts file-backed pages, e.g. the embedded store's
memory-mapped segment files, which are page cache the kernel can reclaim; a leak shows in RssAnon.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    session: int
    cpu_s: float  # utime + stime + cutime + cstime
    rss_bytes: int
    command: str
    anon_bytes: int = 0  # RssAnon: resident anonymous memory (last, so old callers still build)


def status_kib_bytes(text: str, key: str = "RssAnon") -> int:
    """Bytes of a `Key:   1234 kB` line of /proc/<pid>/status; 0 when the line is missing (kernel
    threads have no memory lines) or unreadable."""
    prefix = key + ":"
    for line in text.splitlines():
        if line.startswith(prefix):
            words = line[len(prefix) :].split()
            if words and words[0].isdigit():
                scale = 1024 if len(words) > 1 and words[1] == "kB" else 1
                return int(words[0]) * scale
            return 0
    return 0


def _read(pid: int) -> Proc | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        statm = Path(f"/proc/{pid}/statm").read_text().split()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    head, tail = stat.rsplit(")", 1)
    fields = tail.split()
    if fields[0] == "Z":
        return None
    # fields[0] is the state (field 3 of stat); utime..cstime are fields 14..17.
    cpu = sum(int(value) for value in fields[11:15]) / TICKS
    return Proc(
        pid=pid,
        ppid=int(fields[1]),
        session=int(fields[3]),
        cpu_s=cpu,
        rss_bytes=int(statm[1]) * PAGE,
        command=head.split("(", 1)[1],
        anon_bytes=status_kib_bytes(status),
    )


def all_procs() -> list[Proc]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (proc := _read(int(entry.name))) is not None:
            found.append(proc)
    return found


def session_tree(session: int) -> list[Proc]:
    return [proc for proc in all_procs() if proc.session == session]


def descendants(root: int) -> list[Proc]:
    procs = all_procs()
    children: dict[int, list[Proc]] = {}
    for proc in procs:
        children.setdefault(proc.ppid, []).append(proc)
    tree = [proc for proc in procs if proc.pid == root]
    for proc in tree:  # grows while iterating: breadth first
        tree.extend(children.get(proc.pid, []))
    return tree


def machine_busy_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, all cores."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])
    return (total - idle) / TICKS, total / TICKS


@dataclass(frozen=True)
class Usage:
    """A tree over an interval. CPU as % of one core (200 % = both cores of this machine busy)."""

    cpu_percent: float
    rss_gb: float
    by_process: list[tuple[str, float]]  # (label, CPU %), hottest first


def label(pid: int) -> str:
    """`python3 -m worker (1234)`: the command line, short."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return str(pid)
    words = [Path(argv[0].decode(errors="replace")).name] + [
        arg.decode(errors="replace") for arg in argv[1:3]
    ]
    return f"{' '.join(words)[:48]} ({pid})"


class TreeMeter:
    """Each `usage()` gives a tree's CPU since the previous call (or since it was made)."""

    def __init__(self, tree: Callable[[], list[Proc]]) -> None:
        self._tree = tree
        self._at, self._cpu = self._sample()

    def _sample(self) -> tuple[float, dict[int, float]]:
        return time.monotonic(), {proc.pid: proc.cpu_s for proc in self._tree()}

    def usage(self) -> Usage:
        procs = self._tree()
        now = time.monotonic()
        elapsed = max(1e-9, now - self._at)
        per = {proc.pid: proc.cpu_s - self._cpu.get(proc.pid, 0.0) for proc in procs}
        # A process that exited without being reaped inside the tree takes its CPU time with it;
        # that interval reads a little low, never negative.
        total = max(0.0, sum(per.values()))
        ranked = sorted(per.items(), key=lambda item: -item[1])
        self._at, self._cpu = now, {proc.pid: proc.cpu_s for proc in procs}
        return Usage(
            cpu_percent=total / elapsed * 100.0,
            rss_gb=sum(proc.rss_bytes for proc in procs) / 1e9,
            by_process=[(label(pid), used / elapsed * 100.0) for pid, used in ranked],
        )


def program_trees(
    table: Iterable[Proc], roots: Mapping[str, int], alone: frozenset[str] = frozenset()
) -> dict[str, list[Proc]]:
    """Each root's process tree (the root and its descendants) from one reading of /proc; the
    roots named in `alone` count themselves only (supervisord: its tree is the whole stack)."""
    by_pid = {proc.pid: proc for proc in table}
    children: dict[int, list[int]] = {}
    for proc in by_pid.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    trees = {}
    for name, root in roots.items():
        if root not in by_pid:
            continue
        tree = [root]
        if name not in alone:
            for pid in tree:  # grows while iterating: breadth first
                tree.extend(children.get(pid, []))
        trees[name] = [by_pid[pid] for pid in tree]
    return trees
