"""The write-cost benchmark's table: each window against the first of its replicas' mode, and what
the replicas' apply adds where a count ran both ways (no network)."""

from __future__ import annotations

from bench.writecost import Window, table


def window(processes: int, replicas: str, api: float) -> Window:
    cpu_ms = {"api": api, "worker": 2.0, "broker": 0.5, "redis": 0.5}
    return Window(processes, replicas, 88.0, cpu_ms, optimizes=1, awake=0, restarted=[])


def test_each_window_is_held_to_the_first_of_its_own_mode() -> None:
    lines = table([window(1, "awake", 1.0), window(1, "idle", 0.5), window(4, "awake", 3.0)])

    rows = [line for line in lines if line.startswith(("| 1 |", "| 4 |"))]
    assert rows[0].startswith("| 1 | awake | 88.0 | 1.00 | 2.00 | 0.50 | 0.50 | **4.00** | 1.00 |")
    assert rows[1].startswith("| 1 | idle | 88.0 | 0.50 | 2.00 | 0.50 | 0.50 | **3.50** | 1.00 |")
    # 6.00 against the first awake window's 4.00, not the idle one's 3.50
    assert rows[2].startswith("| 4 | awake | 88.0 | 3.00 | 2.00 | 0.50 | 0.50 | **6.00** | 1.50 |")


def test_a_count_run_both_ways_says_what_the_replicas_apply_added() -> None:
    lines = table(
        [
            window(1, "awake", 1.0),
            window(1, "idle", 0.75),
            window(4, "awake", 3.0),
            window(4, "idle", 2.0),
        ]
    )

    split = lines[lines.index("") + 1 :]
    assert split[2:] == ["| 1 | 3.75 | +0.25 | 4.00 |", "| 4 | 5.00 | +1.00 | 6.00 |"]


def test_one_mode_alone_has_no_split() -> None:
    lines = table([window(1, "awake", 1.0), window(2, "awake", 1.5)])

    assert "" not in lines
    assert len(lines) == 4
