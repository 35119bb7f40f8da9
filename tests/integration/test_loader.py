"""The loader command (`python3 -m loader`), run as a user runs it, against the session stack:
a JSON-lines file ends up indexed, a bad line stops it with the line named and keeps what was
acknowledged, and a second run resumes after it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from harness.stack import Stack
from tests.integration.helpers import create, doc_count, keyword_collection, search_ids

REPO = Path(__file__).resolve().parents[2]
DOCS = 250


def run_loader(stack: Stack, file: Path, collection: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "loader",
            str(file),
            "--collection",
            collection,
            "--url",
            stack.base_url,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def lines(count: int) -> list[str]:
    # Every other document has no timestamp: the loader gives it the load's start time.
    docs = [
        {"id": f"l{i}", "name": f"loaded {i}", "content": f"quince jam batch number{i}"}
        | ({"timestamp": "2026-01-01T00:00:00Z"} if i % 2 else {})
        for i in range(count)
    ]
    return [json.dumps(d) for d in docs]


def test_a_file_is_loaded_with_progress_and_every_document_indexed(
    stack: Stack, client: httpx.Client, tmp_path: Path
) -> None:
    create(client, "loaded", keyword_collection())
    file = tmp_path / "docs.jsonl"
    file.write_text("\n".join(lines(DOCS)) + "\n")
    done = run_loader(stack, file, "loaded")
    assert done.returncode == 0, done.stderr
    assert f"{DOCS}/{DOCS} indexed" in done.stderr  # the progress line, from the stats
    assert f"{DOCS} documents indexed" in done.stderr
    assert doc_count(client, "loaded") == DOCS  # indexed when the loader says so, not later
    assert search_ids(client, "loaded", "number7")[0] == "l7"

    again = run_loader(stack, file, "loaded")
    assert again.returncode == 0, again.stderr
    assert f"{DOCS} skipped" in again.stderr


def test_a_bad_line_stops_the_load_and_a_second_run_resumes_after_what_was_taken(
    stack: Stack, client: httpx.Client, tmp_path: Path
) -> None:
    create(client, "resumed", keyword_collection())
    good = lines(DOCS)
    file = tmp_path / "docs.jsonl"
    file.write_text("\n".join(good[:180] + ["{not json"] + good[181:]) + "\n")
    stopped = run_loader(stack, file, "resumed")
    assert stopped.returncode == 2
    assert f"{file}:181: not JSON" in stopped.stderr
    state = json.loads((tmp_path / "docs.jsonl.progress").read_text())
    assert state["done"] == 100  # the first batch was acknowledged; the second never went out

    file.write_text("\n".join(good) + "\n")  # the user fixes the line
    resumed = run_loader(stack, file, "resumed")
    assert resumed.returncode == 0, resumed.stderr
    assert "100 skipped" in resumed.stderr
    assert doc_count(client, "resumed") == DOCS
