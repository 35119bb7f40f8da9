"""A process's standard series from /proc: the stat line parsed by field, the start time from
the boot time, the live process read with sensible values, and nothing where there is no /proc."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from core.metrics import PROCESS_CPU, PROCESS_FDS, PROCESS_MEMORY, PROCESS_START, Recorder
from core.process_stats import ProcessReader, boot_time, parse_stat

# A stat line whose command holds a space and a closing parenthesis, as a thread's may.
# utime 250, stime 50, starttime 1000, rss 4096 pages (proc(5) fields 14, 15, 22, 24).
STAT = (
    "4242 (odd) name) S 1 4242 4242 0 -1 4194304 99 0 0 0 250 50 0 0 20 0 8 0 1000 "
    "3133440 4096 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
)


def test_the_stat_line_is_read_by_field_after_the_command() -> None:
    stat = parse_stat(STAT)
    assert (stat.cpu_ticks, stat.start_ticks, stat.resident_pages) == (300, 1000, 4096)


def test_the_boot_time_is_the_btime_line() -> None:
    assert boot_time("cpu  1 2 3\nbtime 1796472414\nprocesses 9\n") == 1796472414.0
    with pytest.raises(ValueError, match="btime"):
        boot_time("cpu  1 2 3\n")


def test_a_proc_folder_gives_cpu_memory_fds_and_start_in_standard_units(tmp_path: Path) -> None:
    (tmp_path / "self" / "fd").mkdir(parents=True)
    (tmp_path / "self" / "stat").write_text(STAT)
    (tmp_path / "stat").write_text("btime 1700000000\n")
    for fd in ("0", "1", "2"):
        (tmp_path / "self" / "fd" / fd).touch()
    stats = ProcessReader(tmp_path).read()
    ticks, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    assert stats is not None
    assert stats.cpu_seconds == 300 / ticks
    assert stats.resident_bytes == 4096 * page
    assert stats.open_fds == 3
    assert stats.start_time == 1700000000 + 1000 / ticks


def test_without_proc_nothing_is_recorded(tmp_path: Path) -> None:
    recorder = Recorder()
    reader = ProcessReader(tmp_path / "missing")
    assert reader.read() is None
    reader.record(recorder)
    assert recorder.state() == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc")
def test_this_process_reads_as_alive_now() -> None:
    recorder = Recorder()
    ProcessReader().record(recorder)
    values = {name: value for name, _, value in recorder.state()}
    assert set(values) == {
        m.name for m in (PROCESS_CPU, PROCESS_MEMORY, PROCESS_FDS, PROCESS_START)
    }
    assert values[PROCESS_CPU.name] > 0
    assert values[PROCESS_MEMORY.name] > 1_000_000  # a Python process holds megabytes
    assert values[PROCESS_FDS.name] >= 3  # stdin, stdout, stderr at least
    assert time.time() - 86_400 * 30 < values[PROCESS_START.name] <= time.time()
