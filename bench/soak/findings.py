"""What a soak run found, computed from its per-minute rows: answers by kind, memory growth per
process after the warm-up, the latency summary, and the verdict (pass or the reasons it fails).

Nothing here reads the network or the clock; the runner gathers, this module judges, the report
renders both.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from bench.common.measure import median, slope
from bench.load.collection import Bulk
from bench.load.workload import ID_SPACE, Lengths
from harness import verify

# A process fails the soak when its anonymous memory at the end is more than both of these above
# its anonymous memory when the warm-up ended: 20 MiB ignores allocator noise in small processes
# (Redis, epmd), 10 % ignores a cache that settles a little later in big ones (the worker's engine,
# RabbitMQ).
GROWTH_LIMIT_MIB = 20.0
GROWTH_LIMIT_PCT = 10.0
WARMUP_MINUTES = 5
# Both ends are a floor: the least of this many minutes' samples. A program's tree includes its
# short-lived helpers (the worker's optimize runs in a child process for a few seconds, ~130 MiB
# anonymous on a 10,000-document hybrid shard), which lift a single sample and are gone by the
# next; a leak lifts the floor. The 2026-11-27 hybrid soak failed on its last sample alone: the
# worker's tree was 220 MiB at minute 60, mid-optimize, against 86-118 in the other minutes.
FLOOR_MINUTES = 5

# Which memory a figure is about. "rss": every resident page, file-backed ones included (the
# embedded store mmaps its segment files: those pages grow with the appendable segment, drop when
# an optimize swaps in a compacted copy, and are page cache the kernel can reclaim). "anon": the
# anonymous resident pages (RssAnon: heap, stacks), where a leak shows; the verdict judges these.
Kind = Literal["rss", "anon"]
JUDGED: Kind = "anon"


@dataclass(frozen=True)
class Answers:
    """A stretch of the run's answers, from Locust's never-reset totals ("search 200": n)."""

    requests: int
    errors: int  # anything but 2xx and 503: other statuses, no answer (status 0), exceptions
    overloaded: int  # 503s
    kinds: dict[str, int]  # "search 500", "upsert 0", "search exception" ... -> count (errors)


def _status(key: str) -> int:
    text = key.rsplit(" ", 1)[-1]
    return int(text) if text.isdigit() else 0


def count_answers(
    before: Mapping[str, int], after: Mapping[str, int], failures: Sequence[Mapping[str, str]] = ()
) -> Answers:
    """The answers between two snapshots of the totals, plus the exceptions in Locust's failure
    table of the same stretch (failures that are not an HTTP answer never reach the totals)."""
    delta = {
        key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key, 0)
    }
    kinds: Counter[str] = Counter()
    overloaded = 0
    for key, count in delta.items():
        status = _status(key)
        if status == 503:
            overloaded += count
        elif not 200 <= status < 300:
            kinds[key] += count
    for row in failures:
        if not row.get("Error", "").startswith("HTTP "):
            kinds[f"{row.get('Name', '?')} exception"] += int(row.get("Occurrences", 0) or 0)
    return Answers(
        requests=sum(delta.values()),
        errors=sum(kinds.values()),
        overloaded=overloaded,
        kinds=dict(kinds),
    )


@dataclass
class Minute:
    """One minute of the soak; memory (RSS and anonymous) sampled at its end."""

    minute: int  # 1, 2, …: the row is taken `minute` minutes after the users were running
    seconds: float  # how long the stretch actually lasted
    users: int
    answers: Answers
    search_p50: float  # ms, Locust's statistics for this minute alone
    search_p95: float
    search_p99: float
    doc_queue: int  # at the end of the minute
    doc_queue_max: int  # largest sample within it (every few seconds)
    documents: int  # in the collection at the end (the workload's upserts add new ids)
    braid_cpu: float  # % of one core, the whole stack
    rss_mib: dict[str, float]  # program -> RSS of its process tree
    anon_mib: dict[str, float]  # program -> anonymous resident memory (RssAnon) of the same tree
    restarted: list[str] = field(default_factory=list)  # programs with a new PID since last

    @property
    def rps(self) -> float:
        return self.answers.requests / self.seconds if self.seconds > 0 else math.nan

    def memory(self, kind: Kind) -> dict[str, float]:
        return self.anon_mib if kind == "anon" else self.rss_mib


@dataclass(frozen=True)
class Growth:
    """One program's memory of one kind (RSS or anonymous) over the run."""

    program: str
    kind: Kind
    first_mib: float  # at minute 1
    baseline_mib: float  # the floor of the FLOOR_MINUTES from the end of the warm-up
    end_mib: float  # the floor of the last FLOOR_MINUTES
    slope_mib_h: float  # least squares over the samples from the end of the warm-up on

    @property
    def growth_mib(self) -> float:
        return self.end_mib - self.baseline_mib

    @property
    def growth_pct(self) -> float:
        return self.growth_mib / self.baseline_mib * 100 if self.baseline_mib > 0 else math.nan

    def over(
        self, limit_mib: float = GROWTH_LIMIT_MIB, limit_pct: float = GROWTH_LIMIT_PCT
    ) -> bool:
        return self.growth_mib > limit_mib and self.growth_pct > limit_pct


def warmup_minutes(rows: int, wanted: int = WARMUP_MINUTES) -> int:
    """The warm-up actually left out: `wanted`, or half of a shorter run, so a trend remains."""
    return max(0, min(wanted, rows // 2))


def programs(minutes: Sequence[Minute]) -> list[str]:
    """Every program seen, in the order first seen."""
    seen: dict[str, None] = {}
    for row in minutes:
        seen.update(dict.fromkeys(row.rss_mib))
        seen.update(dict.fromkeys(row.anon_mib))
    return list(seen)


def growth(minutes: Sequence[Minute], warmup: int, kind: Kind = JUDGED) -> list[Growth]:
    """Per program, memory of `kind` at minute 1, its floor over FLOOR_MINUTES from the end of the
    warm-up (the row of minute `warmup`, or the first row) and over the last FLOOR_MINUTES, and
    the slope from the end of the warm-up on, in MiB/hour."""
    out = []
    for program in programs(minutes):
        series = [
            (row.minute, row.memory(kind)[program])
            for row in minutes
            if not math.isnan(row.memory(kind).get(program, math.nan))
        ]
        after = [(at, mib) for at, mib in series if at >= warmup]
        if not after:
            continue
        floor = max(1, min(FLOOR_MINUTES, len(after) // 2))  # the two ends never overlap
        out.append(
            Growth(
                program=program,
                kind=kind,
                first_mib=series[0][1],
                baseline_mib=min(mib for _, mib in after[:floor]),
                end_mib=min(mib for _, mib in after[-floor:]),
                slope_mib_h=slope(after) * 60,
            )
        )
    return out


def restarts(before: Mapping[str, int], after: Mapping[str, int]) -> list[str]:
    """Programs whose PID changed (supervisord restarted them) or that stopped running."""
    return [name for name, pid in before.items() if pid and after.get(name, 0) != pid]


@dataclass(frozen=True)
class Latency:
    p50_median: float  # median of the per-minute search p50s
    p50_worst: float
    p95_worst: float  # worst minute
    p99_worst: float


def latency(minutes: Sequence[Minute]) -> Latency:
    def finite(values: list[float]) -> list[float]:
        return [value for value in values if not math.isnan(value)]

    p50 = finite([row.search_p50 for row in minutes])
    p95 = finite([row.search_p95 for row in minutes])
    p99 = finite([row.search_p99 for row in minutes])
    return Latency(
        p50_median=median(p50),
        p50_worst=max(p50, default=math.nan),
        p95_worst=max(p95, default=math.nan),
        p99_worst=max(p99, default=math.nan),
    )


@dataclass
class SoakResult:
    users: int
    minutes_planned: int
    warmup_wanted: int
    bulk: Bulk
    minutes: list[Minute]
    answers: Answers  # the whole soak, from the totals (every answer, none lost to a reset)
    stopped_early: bool = False
    drain_s: float = 0.0
    check: verify.Verdict | None = None
    stack_env: str = ""
    config: str = "keyword"  # the collection: keyword, or hybrid (with the model's dense vector)
    lengths: Lengths = Lengths.SEED  # of the documents written
    id_space: int = ID_SPACE  # the writes' ids: 0 .. id_space - 1

    @property
    def warmup(self) -> int:
        return warmup_minutes(len(self.minutes), self.warmup_wanted)

    def growth(self, kind: Kind = JUDGED) -> list[Growth]:
        return growth(self.minutes, self.warmup, kind)

    @property
    def restarted(self) -> list[str]:
        return sorted({name for row in self.minutes for name in row.restarted})


@dataclass(frozen=True)
class Verdict:
    reasons: list[str]  # empty: passed
    grown: list[str]  # programs whose anonymous memory is over the growth limit

    @property
    def ok(self) -> bool:
        return not self.reasons


def judge(result: SoakResult) -> Verdict:
    """Fails on any error other than a 503, anything lost (or not checked), a process restarted,
    a process (any program's tree, the model-holding encoders included) whose anonymous memory grew
    past the limits after the warm-up, or too little run to tell (no load, fewer than two
    minutes). Not RSS: it also counts the store's memory-mapped segment files, reclaimable page
    cache that follows the appendable segment, not a leak."""
    reasons = []
    if result.answers.requests == 0:
        reasons.append("no requests were answered")
    if len(result.minutes) < 2:
        reasons.append(f"{len(result.minutes)} minute(s) recorded: too few to measure growth")
    if result.answers.errors:
        kinds = ", ".join(f"{kind}: {n}" for kind, n in sorted(result.answers.kinds.items()))
        reasons.append(f"{result.answers.errors} errors other than 503 ({kinds})")
    if result.check is None:
        reasons.append("the collection was not checked")
    elif not result.check.ok:
        reasons.append("acknowledged writes lost: " + result.check.summary())
    if result.restarted:
        reasons.append("restarted during the run: " + ", ".join(result.restarted))
    grown = [item for item in result.growth(JUDGED) if item.over()]
    for item in grown:
        reasons.append(
            f"{item.program}'s anonymous memory grew {item.growth_mib:+.1f} MiB "
            f"({item.growth_pct:+.1f} %) after the warm-up (limit: more than "
            f"{GROWTH_LIMIT_MIB:.0f} MiB and {GROWTH_LIMIT_PCT:.0f} %)"
        )
    return Verdict(reasons=reasons, grown=[item.program for item in grown])
