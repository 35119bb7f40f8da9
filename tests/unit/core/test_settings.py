"""The default number of api processes: a table, and the one place that computes it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.settings import Settings, available_cores, default_api_processes

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("cores", "processes"),
    [(1, 1), (2, 2), (3, 2), (4, 2), (5, 2), (6, 3), (7, 3), (8, 4), (16, 8), (64, 32)],
)
def test_api_processes_are_half_the_cores_at_least_two_one_on_one_core(
    cores: int, processes: int
) -> None:
    assert default_api_processes(cores) == processes


@pytest.mark.skipif(shutil.which("nproc") is None, reason="no nproc")
def test_available_cores_counts_what_nproc_counts() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}  # nproc honours them
    nproc = subprocess.run(["nproc"], env=env, capture_output=True, text=True, check=True)
    assert available_cores() == int(nproc.stdout)


def test_settings_default_to_that_rule_and_the_environment_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BRAID_API_PROCESSES", raising=False)
    assert Settings().api_processes == default_api_processes(available_cores())
    monkeypatch.setenv("BRAID_API_PROCESSES", "7")
    assert Settings().api_processes == 7


def test_the_module_prints_the_default_for_the_entrypoint() -> None:
    command = [sys.executable, "-m", "core.settings", "api-processes"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout == f"{default_api_processes(available_cores())}\n"
