"""The standard process series of the running process (CPU time, resident memory, open file
descriptors, start time), read from Linux's /proc/self when the process publishes its metrics.

Two small reads a second: /proc/self/stat and the /proc/self/fd listing. The start time needs
the boot time too (/proc/stat), read once. Where there is no /proc (not Linux) nothing is read
and the series are left out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from core.metrics import PROCESS_CPU, PROCESS_FDS, PROCESS_MEMORY, PROCESS_START, Recorder

# Fields of /proc/<pid>/stat counted from the one after the command's closing parenthesis
# (proc(5) numbers them from 1 at the pid: utime is 14, stime 15, starttime 22, rss 24).
_UTIME, _STIME, _STARTTIME, _RSS = 11, 12, 19, 21


@dataclass(frozen=True)
class ProcessStats:
    cpu_seconds: float
    resident_bytes: int
    open_fds: int
    start_time: float  # unix time


@dataclass(frozen=True)
class Stat:
    """What /proc/self/stat says, in clock ticks and pages."""

    cpu_ticks: int
    start_ticks: int  # after boot
    resident_pages: int


def parse_stat(text: str) -> Stat:
    """/proc/<pid>/stat; the command name may hold spaces and parentheses, so the fields are
    counted after its last closing parenthesis."""
    fields = text[text.rindex(")") + 2 :].split()
    return Stat(
        int(fields[_UTIME]) + int(fields[_STIME]), int(fields[_STARTTIME]), int(fields[_RSS])
    )


def boot_time(text: str) -> float:
    """The `btime` line of /proc/stat: unix time the host booted."""
    for line in text.splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise ValueError("no btime in /proc/stat")


class ProcessReader:
    """Reads the process's stats; `proc` is where /proc is (a test's folder)."""

    def __init__(self, proc: Path = Path("/proc")) -> None:
        self._proc = proc
        self._ticks = os.sysconf("SC_CLK_TCK")
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._boot: float | None = None

    def read(self) -> ProcessStats | None:
        """None where /proc cannot be read."""
        try:
            stat = parse_stat((self._proc / "self" / "stat").read_text())
            fds = len(os.listdir(self._proc / "self" / "fd"))
            if self._boot is None:
                self._boot = boot_time((self._proc / "stat").read_text())
        except (OSError, ValueError, IndexError):
            return None
        return ProcessStats(
            cpu_seconds=stat.cpu_ticks / self._ticks,
            resident_bytes=stat.resident_pages * self._page,
            open_fds=fds,
            start_time=self._boot + stat.start_ticks / self._ticks,
        )

    def record(self, recorder: Recorder) -> None:
        stats = self.read()
        if stats is None:
            return
        recorder.set_total(PROCESS_CPU, stats.cpu_seconds)
        recorder.set(PROCESS_MEMORY, stats.resident_bytes)
        recorder.set(PROCESS_FDS, stats.open_fds)
        recorder.set(PROCESS_START, stats.start_time)
