"""The encoder's runtimes load with their telemetry off, whatever the environment: OpenVINO never
loads openvino_telemetry (installed or not), ONNX Runtime writes no device id. Each check runs in
a fresh interpreter, as the modules are loaded once per process."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def python(script: str, home: Path, path: list[Path]) -> str:
    env = {k: v for k, v in os.environ.items() if k not in {"ORT_DISABLE_TELEMETRY", "HOME"}}
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join(str(p) for p in [*path, REPO]))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(not importlib.util.find_spec("openvino"), reason="openvino not installed")
def test_openvino_loads_its_telemetry_stub_even_with_the_package_installed(tmp_path: Path) -> None:
    fake = tmp_path / "site" / "openvino_telemetry"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(f"open({str(tmp_path / 'loaded')!r}, 'w').close()\n")
    home = tmp_path / "home"
    home.mkdir()
    script = (
        "from encoder import openvino\n"
        "openvino._core()\n"
        "from openvino.tools.ovc import telemetry_utils\n"
        "print(telemetry_utils.tm.__name__)\n"
    )
    stub = python(script, home, [tmp_path / "site"])
    assert stub == "openvino.tools.ovc.telemetry_stub"
    assert not (tmp_path / "loaded").exists()
    assert list(home.iterdir()) == []


@pytest.mark.skipif(not importlib.util.find_spec("onnxruntime"), reason="onnxruntime not installed")
def test_onnx_runtime_writes_no_device_id(tmp_path: Path) -> None:
    script = "from encoder import onnx\nprint(onnx.available())\n"
    assert python(script, tmp_path, []) == "True"
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*")) == []
