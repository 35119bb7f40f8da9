"""Pieces of the soak benchmark that decide what it records and whether it passes (no network)."""

from __future__ import annotations

import math
from collections import Counter

from bench.common import memory
from bench.common.measure import slope
from bench.common.procs import Proc, status_kib_bytes
from bench.common.report import Report
from bench.load.collection import Bulk
from bench.load.workload import ID_SPACE, MAKERS, VARIED_WORDS, Lengths, seeded, varied_document
from bench.soak.__main__ import parse, title
from bench.soak.findings import (
    Answers,
    Minute,
    SoakResult,
    count_answers,
    growth,
    judge,
    latency,
    restarts,
    warmup_minutes,
)
from bench.soak.report import rows, section
from bench.soak.run import HYBRID_DOCUMENTS, HYBRID_USERS
from harness.verify import Verdict as Check

MIB = 1024 * 1024
QUIET = Answers(requests=600, errors=0, overloaded=0, kinds={})


def minute(
    at: int,
    rss: dict[str, float],
    p50: float = 40.0,
    anon: dict[str, float] | None = None,
    **extra: object,
) -> Minute:
    """A quiet minute; anonymous memory is the RSS unless given."""
    fields: dict = dict(
        minute=at,
        seconds=60.0,
        users=4,
        answers=QUIET,
        search_p50=p50,
        search_p95=p50 * 2,
        search_p99=p50 * 3,
        doc_queue=0,
        doc_queue_max=3,
        documents=1000,
        braid_cpu=100.0,
        rss_mib=rss,
        anon_mib=dict(rss) if anon is None else anon,
    )
    fields.update(extra)
    return Minute(**fields)


def result(minutes: list[Minute], **extra: object) -> SoakResult:
    fields: dict = dict(
        users=4,
        minutes_planned=len(minutes),
        warmup_wanted=5,
        bulk=Bulk(documents=100, seconds=1.0, sent_seconds=1.0),
        minutes=minutes,
        answers=Answers(requests=36_000, errors=0, overloaded=0, kinds={}),
        check=Check(checked=100, acknowledged=50),
    )
    fields.update(extra)
    return SoakResult(**fields)


def flat_hour(worker: float = 0.0) -> list[Minute]:
    """60 minutes: the api settles during the warm-up; the worker grows `worker` MiB a minute."""
    return [
        minute(at, {"api-1": 80.0 if at > 3 else 60.0 + at, "worker": 200.0 + worker * at})
        for at in range(1, 61)
    ]


def test_slope_is_least_squares_growth_per_unit_of_time() -> None:
    assert slope([(1, 100.0), (2, 101.0), (3, 102.0)]) == 1.0
    assert slope([(1, 100.0), (2, 130.0), (3, 100.0)]) == 0.0
    assert slope([(5, 100.0)]) == 0.0
    assert slope([(5, 100.0), (5, 120.0)]) == 0.0  # no spread in time


def test_growth_leaves_the_warm_up_out_and_gives_mib_percent_and_mib_per_hour() -> None:
    by_program = {item.program: item for item in growth(flat_hour(worker=0.5), warmup=5)}
    api, worker = by_program["api-1"], by_program["worker"]
    assert (api.first_mib, api.baseline_mib, api.end_mib) == (61.0, 80.0, 80.0)
    assert api.growth_mib == 0.0 and api.slope_mib_h == 0.0 and not api.over()
    assert (worker.baseline_mib, worker.end_mib) == (202.5, 228.0)  # floors of 5 minutes
    assert math.isclose(worker.growth_pct, 25.5 / 202.5 * 100)
    assert math.isclose(worker.slope_mib_h, 30.0)  # 0.5 MiB a minute


def test_a_helper_process_that_lifts_single_samples_is_not_growth_but_a_raised_floor_is() -> None:
    """The worker's optimize child lives seconds: it lifts a sample, the end's among them."""
    spiky = [minute(at, {"worker": 300.0 if at % 12 == 0 else 100.0}) for at in range(1, 61)]
    (worker,) = growth(spiky, warmup=5)
    assert (worker.baseline_mib, worker.end_mib) == (100.0, 100.0)
    assert judge(result(spiky)).ok
    leaking = [minute(at, {"worker": 100.0 if at < 40 else 150.0}) for at in range(1, 61)]
    assert judge(result(leaking)).grown == ["worker"]


def test_growth_skips_minutes_a_program_was_not_running() -> None:
    minutes = [minute(1, {"redis": 10.0}), minute(2, {}), minute(3, {"redis": 11.0})]
    (redis,) = growth(minutes, warmup=1)
    assert (redis.baseline_mib, redis.end_mib) == (10.0, 11.0)


def test_growth_must_pass_both_limits_to_count() -> None:
    small = growth([minute(1, {"redis": 10.0}), minute(2, {"redis": 25.0})], warmup=1)[0]
    assert small.growth_pct > 100 and not small.over()  # +15 MiB: under 20 MiB
    big = growth([minute(1, {"worker": 500.0}), minute(2, {"worker": 540.0})], warmup=1)[0]
    assert big.growth_mib == 40 and not big.over()  # +8 %: under 10 %
    assert big.over(limit_mib=20, limit_pct=5)


def test_a_run_shorter_than_the_warm_up_keeps_half_of_it_for_the_trend() -> None:
    assert warmup_minutes(60) == 5
    assert warmup_minutes(3) == 1
    assert warmup_minutes(1) == 0
    assert warmup_minutes(60, wanted=0) == 0


def test_answers_between_snapshots_count_503s_apart_from_errors_by_kind() -> None:
    before = {"search 200": 100, "upsert 200": 20, "upsert 503": 1}
    after = {
        "search 200": 180,
        "search 500": 2,
        "upsert 200": 39,
        "upsert 503": 4,
        "delete 0": 1,
    }
    failures = [
        {"Name": "search", "Error": "HTTP 500: boom", "Occurrences": "2"},  # counted by totals
        {"Name": "upsert", "Error": "HTTP 503", "Occurrences": "3"},
        {"Name": "search", "Error": "KeyError('x')", "Occurrences": "1"},
    ]
    answers = count_answers(before, after, failures)
    assert answers.requests == 80 + 2 + 19 + 3 + 1
    assert answers.overloaded == 3
    assert answers.kinds == {"search 500": 2, "delete 0": 1, "search exception": 1}
    assert answers.errors == 4


def test_a_changed_or_vanished_pid_is_a_restart() -> None:
    before = {"api-1": 10, "worker": 11, "redis": 12}
    assert restarts(before, {"api-1": 10, "worker": 99, "redis": 12}) == ["worker"]
    assert restarts(before, {"api-1": 10, "worker": 11}) == ["redis"]
    assert restarts({}, before) == []


def test_latency_summary_is_the_median_p50_and_the_worst_minutes() -> None:
    minutes = [minute(1, {}, p50=30), minute(2, {}, p50=50), minute(3, {}, p50=40)]
    minutes.append(minute(4, {}, p50=math.nan, search_p95=math.nan, search_p99=math.nan))
    summary = latency(minutes)
    assert (summary.p50_median, summary.p50_worst) == (40, 50)
    assert (summary.p95_worst, summary.p99_worst) == (100, 150)


def test_a_flat_clean_run_passes() -> None:
    assert judge(result(flat_hour())).ok


def test_the_verdict_fails_on_errors_losses_restarts_and_growth_but_not_on_503s() -> None:
    assert judge(result(flat_hour(), answers=Answers(36_000, 0, 50, {}))).ok
    errors = judge(result(flat_hour(), answers=Answers(36_000, 2, 50, {"search 500": 2})))
    assert not errors.ok and "search 500: 2" in errors.reasons[0]
    lost = judge(result(flat_hour(), check=Check(checked=100, missing=["7"])))
    assert not lost.ok and "lost" in lost.reasons[0]
    assert not judge(result(flat_hour(), check=None)).ok
    crashed = flat_hour()
    crashed[30].restarted = ["worker"]
    assert judge(result(crashed)).reasons == ["restarted during the run: worker"]
    leaking = judge(result(flat_hour(worker=0.5)))
    assert leaking.grown == ["worker"] and len(leaking.reasons) == 1
    assert not judge(result(flat_hour(), answers=Answers(0, 0, 0, {}))).ok
    assert not judge(result(flat_hour()[:1])).ok  # stopped after a minute: growth unknown


def test_supervisorctl_status_gives_the_running_programs_by_process_name() -> None:
    text = "\n".join(
        [
            "api:api-1                        RUNNING   pid 4291, uptime 0:01:02",
            "encoder:encoder-1                RUNNING   pid 4293, uptime 0:01:02",
            "epmd                             RUNNING   pid 4280, uptime 0:01:03",
            "qdrant                           STOPPED   Not started",
            "worker                           STARTING  ",
            "worker                           BACKOFF   Exited too quickly",
        ]
    )
    assert memory.parse_status(text) == {"api-1": 4291, "encoder-1": 4293, "epmd": 4280}
    assert memory.parse_status("unix:///tmp/x/supervisor.sock no such file") == {}


def test_a_programs_memory_is_its_whole_process_tree_and_supervisord_its_own() -> None:
    def proc(pid: int, ppid: int, mib: int) -> Proc:
        return Proc(
            pid=pid,
            ppid=ppid,
            session=1,
            cpu_s=0.0,
            rss_bytes=mib * MIB,
            command="x",
            anon_bytes=mib * MIB // 2,
        )

    table = [
        proc(1, 0, 20),  # supervisord
        proc(2, 1, 2),  # rabbitmq-server (sh)
        proc(3, 2, 120),  # beam.smp
        proc(4, 3, 1),  # erl_child_setup
        proc(5, 1, 80),  # api
    ]
    roots = {"rabbitmq": 2, "api-1": 5, "supervisord": 1, "gone": 42}
    reading = memory.program_memory(table, roots)
    assert reading.rss_mib == {"rabbitmq": 123.0, "api-1": 80.0, "supervisord": 20.0}
    assert reading.anon_mib == {"rabbitmq": 61.5, "api-1": 40.0, "supervisord": 10.0}


def test_anonymous_memory_is_read_from_the_rssanon_line_of_proc_status() -> None:
    status = "\n".join(
        [
            "Name:\tpython3",
            "VmRSS:\t  876544 kB",
            "RssAnon:\t  679936 kB",
            "RssFile:\t  196608 kB",
            "RssShmem:\t       0 kB",
        ]
    )
    assert status_kib_bytes(status) == 679936 * 1024
    assert status_kib_bytes(status, "RssFile") == 196608 * 1024
    assert status_kib_bytes("Name:\tkthreadd\nState:\tS (sleeping)\n") == 0  # kernel thread
    assert status_kib_bytes("RssAnon:\t\n") == 0


def mapped_hour(anon_per_minute: float) -> list[Minute]:
    """60 minutes of a worker whose RSS climbs 20 MiB a minute with its mapped segment files (and
    falls back at minute 40, an optimize) while its heap grows `anon_per_minute`."""
    return [
        minute(
            at,
            {"worker": 900.0 + 20 * (at if at < 40 else at - 35)},
            anon={"worker": 664.0 + anon_per_minute * at},
        )
        for at in range(1, 61)
    ]


def test_the_verdict_judges_anonymous_memory_not_rss() -> None:
    mapped = result(mapped_hour(anon_per_minute=0.0))
    (rss,) = mapped.growth("rss")
    assert rss.over()  # +500 MiB of mapped segment pages: RSS alone would fail it
    assert judge(mapped).ok
    leaking = judge(result(mapped_hour(anon_per_minute=2.0)))  # +110 MiB of heap, +16 %
    assert leaking.grown == ["worker"]
    assert leaking.reasons == [
        "worker's anonymous memory grew +102.0 MiB (+15.1 %) after the warm-up (limit: more "
        "than 20 MiB and 10 %)"
    ]


def test_csv_rows_have_an_rss_and_an_anon_column_per_program_in_every_row() -> None:
    table = rows(
        [
            minute(1, {"api-1": 80.0}, anon={"api-1": 60.0}),
            minute(2, {"api-1": 81.0, "worker": 200.0}, anon={"api-1": 61.0, "worker": 150.0}),
        ]
    )
    assert list(table[0]) == list(table[1])
    assert table[0]["rss_api-1_mib"] == 80.0 and math.isnan(table[0]["rss_worker_mib"])
    assert table[0]["anon_api-1_mib"] == 60.0 and math.isnan(table[0]["anon_worker_mib"])
    assert table[1]["anon_worker_mib"] == 150.0
    assert table[1]["rps"] == 10.0


def test_the_memory_table_shows_rss_and_anon_and_marks_anon_growth() -> None:
    run = result(mapped_hour(anon_per_minute=2.0))
    doc = Report(title="soak", machine="test", command="test", runs_heading="test")
    section(doc, run, judge(run), files={})
    text = "\n".join(doc.lines)
    assert "judges anonymous memory (RssAnon), not RSS" in text
    (line,) = [row for row in doc.lines if row.startswith("| worker")]
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert cells[0] == "worker **over the limit**"
    assert cells[1:4] == ["920.0 / 666.0", "1000.0 / 674.0", "1320.0 / 776.0"]  # floors
    assert cells[4] == "+320.0 / +102.0"


def test_the_default_soak_is_keyword_with_seed_documents_at_half_the_keyword_knee() -> None:
    plan = parse([])
    assert (plan.config, plan.lengths, plan.documents, plan.users) == (
        "keyword",
        Lengths.SEED,
        100_000,
        4,
    )
    assert (plan.minutes, plan.warmup, plan.write) == (60, 5, True)
    assert title(plan) == "soak (keyword, 4 users, 60 min)"


def test_hybrid_takes_the_dense_vector_varied_lengths_and_its_own_defaults() -> None:
    plan = parse(["--hybrid"])
    assert (plan.config, plan.lengths) == ("hybrid", Lengths.VARIED)
    assert (plan.documents, plan.users) == (HYBRID_DOCUMENTS, HYBRID_USERS) == (10_000, 2)
    assert (plan.minutes, plan.write) == (60, True)
    assert title(plan) == "soak (hybrid, 2 users, 60 min)"
    assert plan.stack_env == {"BRAID_ENCODERS": "2", "BRAID_ENCODER_MODELS": "1"}


def test_hybrid_smoke_and_overrides_apply_over_the_hybrid_defaults() -> None:
    smoke = parse(["--hybrid", "--smoke"])
    assert (smoke.config, smoke.documents, smoke.minutes, smoke.users, smoke.write) == (
        "hybrid",
        500,
        2,
        2,
        False,
    )
    tried = parse(["--hybrid", "--minutes", "3", "--documents", "1000", "--no-write"])
    assert (tried.documents, tried.minutes, tried.users, tried.write) == (1000, 3, 2, False)
    assert parse(["--hybrid", "--users", "3", "--env", "BRAID_SEARCHERS=2"]).stack_env == {
        "BRAID_ENCODERS": "2",
        "BRAID_ENCODER_MODELS": "1",
        "BRAID_SEARCHERS": "2",
    }
    assert not parse(["--smoke"]).hybrid


def test_varied_documents_hit_every_32_token_length_of_the_model_and_past_its_256() -> None:
    """Faker's text is 1.1-1.2 tokens a word, plus 2, for all-MiniLM-L6-v2's tokenizer (measured
    on it). At either ratio every 32-token step the document lane pads to (encoder/runners.py), up
    to the model's 256 and past it (truncated), holds several percent of the documents."""
    fake = seeded(7)
    words = [len(varied_document(fake, n, "t")["content"].split()) for n in range(2_000)]
    assert min(words) >= VARIED_WORDS[0] and max(words) <= VARIED_WORDS[1]
    assert min(words) <= 5 and max(words) >= 290  # from a few words to a few hundred
    for ratio in (1.1, 1.2):
        steps = Counter(min(math.ceil((ratio * n + 2) / 32), 9) for n in words)
        assert sorted(steps) == list(range(1, 10))  # 32, 64 … 256 tokens, and past 256
        assert min(steps.values()) / len(words) > 0.05, (ratio, steps)


def test_a_varied_document_is_a_seed_document_with_exactly_the_drawn_words() -> None:
    one, two = (varied_document(seeded(3), 42, "2026-01-02T00:00:00Z") for _ in range(2))
    assert one == two  # the seed decides it, as the check at the end needs
    assert set(one) == {"id", "timestamp", "name", "content"} and one["id"] == "42"
    assert MAKERS[Lengths.SEED](seeded(3), 1, "t")["content"].count("\n\n") == 4
    fake = seeded(5)
    fake.random_int = lambda low, high: 3  # type: ignore[method-assign]
    assert len(varied_document(fake, 1, "t")["content"].split()) == 3


def test_the_hybrid_report_names_the_mix_lengths_and_id_space() -> None:
    run = result(flat_hour(), config="hybrid", lengths=Lengths.VARIED, id_space=HYBRID_DOCUMENTS)
    doc = Report(title="soak", machine="test", command="test", runs_heading="test")
    section(doc, run, judge(run), files={})
    text = "\n".join(doc.lines)
    assert "(hybrid: keyword and the model's dense vector)" in text
    assert "documents of 3 to 300 words" in text
    assert "the hybrid mix: 80 % search, 19 % upsert of a random id of 10,000" in text
    assert "upserts ids 0–9,999" in text
    keyword = result(flat_hour())
    doc = Report(title="soak", machine="test", command="test", runs_heading="test")
    section(doc, keyword, judge(keyword), files={})
    assert f"random id of {ID_SPACE:,}" in "\n".join(doc.lines)


def test_an_encoder_whose_anonymous_memory_grows_fails_the_verdict() -> None:
    """The model holder is judged like every process: its tree's anonymous memory."""
    minutes = [
        minute(
            at,
            {"encoder-1": 1500.0, "encoder-2": 60.0},
            anon={"encoder-1": 1200.0 + 4.0 * at, "encoder-2": 40.0},
        )
        for at in range(1, 61)
    ]
    verdict = judge(result(minutes))
    assert verdict.grown == ["encoder-1"]
    assert verdict.reasons[0].startswith("encoder-1's anonymous memory grew +204.0 MiB")
