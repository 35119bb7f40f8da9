"""What a load study is asked to do (Plan) and what it finds (levels, the overload, the
verdict): shared by the runners (run.py, scale.py) and the report (report.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.load.collection import Bulk
from harness import verify

P50_LIMIT_MS = 100.0
# A document queue growing faster than this (least-squares slope, writes/s) is not stable.
GROWTH_LIMIT = 0.5


@dataclass
class Plan:
    configs: list[str]
    documents: int = 80_000
    prepopulate_minutes: float = 30.0
    users: list[int] | None = None  # None: search for the knee
    start_users: dict[str, int] = field(default_factory=lambda: {"keyword": 8, "hybrid": 2})
    max_levels: int = 10
    settle_s: float = 60.0
    window_s: float = 60.0
    overload_factor: int = 5
    overload_s: float = 600.0
    recovery_limit_s: float = 600.0
    profile_s: float = 20.0
    env: dict[str, str] = field(default_factory=dict)
    locust_processes: int = 1
    write: bool = True
    smoke: bool = False

    @classmethod
    def smoke_test(cls, configs: list[str]) -> Plan:
        return cls(
            configs=configs,
            documents=300,
            prepopulate_minutes=2.0,
            users=[2, 4],
            settle_s=5.0,
            window_s=10.0,
            overload_factor=2,
            overload_s=20.0,
            recovery_limit_s=60.0,
            profile_s=0.0,
            smoke=True,
        )


# --- what a run finds ---------------------------------------------------------------------------


@dataclass
class Level:
    users: int
    rps: float  # every request
    search_rps: float
    search_p50: float
    search_p95: float
    search_p99: float
    upsert_p50: float
    server_p95: float  # from Braid's own search histogram over the same window
    braid_cpu: float  # % of one core, the whole stack
    braid_rss_gb: float
    locust_cpu: float
    machine_cpu: float  # % of all cores, everything on the machine
    doc_queue_start: int
    doc_queue_end: int
    doc_queue_growth_per_s: float
    search_queue_start: int
    search_queue_end: int
    requests: int
    errors: int  # failures other than 503
    overloaded: int  # 503s
    hottest: str

    @property
    def queues_stable(self) -> bool:
        """The document queue does not grow faster than 0.5 writes/s (a backlog of 30 per minute);
        the search queue is never meant to hold more than a moment's work."""
        growth_ok = self.doc_queue_growth_per_s <= GROWTH_LIMIT
        return growth_ok and self.search_queue_end <= max(5, self.users)

    @property
    def under_limits(self) -> bool:
        return self.search_p50 < P50_LIMIT_MS and self.queues_stable and self.errors == 0


@dataclass
class Slice:
    """A short stretch of the overload run."""

    at_s: float  # since the overload started
    users: int
    rps: float
    search_p50: float
    search_p99: float
    errors: int
    overloaded: int
    doc_queue: int
    search_queue: int
    braid_cpu: float


@dataclass
class Overload:
    users: int
    seconds: float
    base_users: int
    base_p50: float
    slices: list[Slice]
    recovered_after_s: float | None  # latency back within 1.25× the knee's p50 (max 100 ms)
    queue_back_after_s: float | None  # document queue back to its depth before the overload
    errors: int
    overloaded: int


@dataclass
class ConfigResult:
    config: str
    bulk: Bulk
    levels: list[Level] = field(default_factory=list)
    knee: Level | None = None
    overload: Overload | None = None
    profile: list[str] = field(default_factory=list)
    profiled: str = ""
    drain_s: float = 0.0
    verdict: verify.Verdict | None = None
    totals: dict[str, int] = field(default_factory=dict)
    locust_peak_cpu: float = 0.0
    encoders: str = ""
    promtool: str = "not run"  # promtool check metrics on the exposition after the load
