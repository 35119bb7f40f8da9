"""Pieces of bench/ingest that decide what its report says: the CPU line, the encoder's log lines,
the keyword corpus and row, and Milvus Lite's answer."""

from __future__ import annotations

import pytest

from bench.common import cpu
from bench.ingest import fulltext, keyword, milvus, precision
from bench.ingest.braid import WARM, Ingest
from bench.load import workload

CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse avx512f avx512_bf16 amx_tile amx_bf16 avx2

processor\t: 1
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse avx512f avx512_bf16 amx_tile amx_bf16 avx2
"""


def test_cpu_line_names_the_model_and_the_precision_flags_present_once() -> None:
    assert precision.cpu_line(CPUINFO) == (
        "CPU: Intel(R) Xeon(R) Processor; flags: avx512f, avx512_bf16, amx_tile, amx_bf16"
    )


def test_cpu_line_says_when_none_of_the_flags_is_present() -> None:
    line = precision.cpu_line("model name\t: Old CPU\nflags\t: fpu sse avx2\n")
    assert line == "CPU: Old CPU; flags: none of avx512f, avx512_bf16, amx_tile, amx_bf16"


def test_the_encoder_lines_kept_are_those_about_the_model_and_its_precision() -> None:
    logs = {
        "encoder-2": "INFO encoder 2 consuming q\nINFO loaded model m@default from p on cpu/torch",
        "encoder-1": (
            "INFO model device cpu, 1 intra-op threads\n"
            "WARNING bfloat16 embeddings differ from float32 (cosine 0.99000): kept float32\n"
            "WARNING OpenVINO cannot run this model: RuntimeError: unsupported\n"
            "INFO m document lane (texts a second): torch 60/s; runs torch: the only one\n"
            "INFO loaded model m@default from p on cpu/torch-bf16+onnx (dim 384)\n"
        ),
    }
    assert precision.picked(logs) == [
        "encoder-1: WARNING bfloat16 embeddings differ from float32 (cosine 0.99000): kept float32",
        "encoder-1: WARNING OpenVINO cannot run this model: RuntimeError: unsupported",
        "encoder-1: INFO m document lane (texts a second): torch 60/s; runs torch: the only one",
        "encoder-1: INFO loaded model m@default from p on cpu/torch-bf16+onnx (dim 384)",
        "encoder-2: INFO loaded model m@default from p on cpu/torch",
    ]


def test_dense_notes_say_each_sides_precision_and_when_no_model_was_loaded() -> None:
    notes = "\n".join(precision.dense_notes([]))
    assert "float32 (defaults" in notes and "bfloat16 (model cast" in notes
    assert "(no encoder logged loading a model)" in notes


def test_the_keyword_corpus_is_seed_workload_documents_with_the_warm_ones_first() -> None:
    corpus = keyword.corpus(3)
    assert len(corpus.documents) == WARM + 3 and len(corpus.timed) == 3
    assert corpus.vectors == [workload.KEYWORD]
    assert [d["id"] for d in corpus.timed] == [str(WARM), str(WARM + 1), str(WARM + 2)]
    assert keyword.corpus(3).documents == corpus.documents  # seeded: the same every run
    first = corpus.documents[0]
    assert len(first["content"].split("\n\n")) == 5


def test_the_keyword_row_holds_braid_to_the_better_milvus_run_and_shows_the_other_peers() -> None:
    run = Ingest(200.0, 5.0, dict.fromkeys(cpu.GROUPS, 0.5))
    others = [milvus.Result(6000.0, 0.1), milvus.Result(25000.0, 0.04)]
    row = keyword.row(1000, run, milvus.Result(400.0, 0.9), milvus.Result(800.0, 0.6), others)
    assert len(row) == len(keyword.HEADER)
    assert row[:4] == ["1,000", "200.0", "400.0 / 800.0", "**0.25×**"]
    assert row[-4:] == [f"{0.5 * len(cpu.GROUPS):.2f}", "0.60", "6000.0 (0.10)", "25000.0 (0.04)"]


def test_the_fulltext_peers_search_a_name_as_plain_words() -> None:
    assert fulltext._plain('Say "why" (now) - AND: it.') == "say why now and it"


def test_milvus_is_given_the_name_and_the_content_as_one_text() -> None:
    assert milvus.text({"id": "1", "name": "A title.", "content": "Body."}) == "A title.\nBody."


def test_milvus_answer_is_read_from_its_last_line_per_document() -> None:
    result = milvus.parse('noise\n{"documents": 500, "seconds": 0.25, "cpu_s": 0.5}\n')
    assert result.docs_s == pytest.approx(2000.0)
    assert result.cpu_ms == pytest.approx(1.0)
