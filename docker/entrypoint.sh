#!/usr/bin/env bash
# The one launcher for Braid: the container's ENTRYPOINT, `make run` and the integration tests.
# Sets a default for every variable supervisord.conf and the programs need, decides which bundled
# servers to start, then execs supervisord in the foreground. With arguments it sets up the same
# environment and execs them instead (compose runs one role per container: `python3 -m app`).
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
# shellcheck source=docker/bundled.sh
source docker/bundled.sh

BRAID_DATA_DIR=${BRAID_DATA_DIR:-$PWD/data}
mkdir -p "$BRAID_DATA_DIR"
BRAID_DATA_DIR=$(cd "$BRAID_DATA_DIR" && pwd)
export BRAID_DATA_DIR

# The image starts as root only to hand the data folder to BRAID_RUN_AS (a host folder mounted
# there arrives owned by root), then drops root for good: every process runs as that user.
if [[ -n ${BRAID_RUN_AS:-} && $(id -u) == 0 ]]; then
    find "$BRAID_DATA_DIR" -xdev ! -user "$BRAID_RUN_AS" -exec chown "$BRAID_RUN_AS:" {} +
    # The log relay (core/logrelay.py) opens supervisord's stdout anew, as that user: Docker's
    # pipe (or, with -t, the container's console) belongs to root until it is handed over.
    if [[ -p /dev/stdout ]] || { (($$ == 1)) && [[ -t 1 ]]; }; then
        chown "$BRAID_RUN_AS" /dev/stdout || true
    fi
    exec setpriv --reuid="$BRAID_RUN_AS" --regid="$BRAID_RUN_AS" --init-groups --inh-caps=-all \
        env HOME="$BRAID_DATA_DIR" "$0" "$@"
fi
if [[ ! -w $BRAID_DATA_DIR ]]; then
    echo "entrypoint: $BRAID_DATA_DIR is not writable by $(id -un) (uid $(id -u));" \
        "give it to that user or mount another folder" >&2
    exit 1
fi
export BRAID_PORT=${BRAID_PORT:-8234}
export BRAID_AMQP_URL=${BRAID_AMQP_URL:-amqp://guest:guest@127.0.0.1:5672/}
export BRAID_REDIS_URL=${BRAID_REDIS_URL:-redis://127.0.0.1:6379/0}
export BRAID_ENCODERS=${BRAID_ENCODERS:-2}
export BRAID_ENCODER_MODELS=${BRAID_ENCODER_MODELS:-1}
# api processes, each answering its own searches: core/settings.py owns the default (and why).
if [[ -z ${BRAID_API_PROCESSES:-} ]]; then
    BRAID_API_PROCESSES=$(python3 -m core.settings api-processes)
fi
export BRAID_API_PROCESSES
export BRAID_EPMD_PORT=${BRAID_EPMD_PORT:-4369}
export BRAID_RABBITMQ_DIST_PORT=${BRAID_RABBITMQ_DIST_PORT:-25672}
# BRAID_QDRANT_URL / BRAID_QDRANT_BINARY stay unset when not given: unset means embedded store.

bundled_if_local() {
    if is_local_url "$1"; then echo true; else echo false; fi
}
export BRAID_START_RABBITMQ BRAID_START_REDIS BRAID_START_QDRANT
BRAID_START_RABBITMQ=$(bundled_if_local "$BRAID_AMQP_URL")
BRAID_START_REDIS=$(bundled_if_local "$BRAID_REDIS_URL")
BRAID_START_QDRANT=false
if [[ -n ${BRAID_QDRANT_URL:-} ]] && is_local_url "$BRAID_QDRANT_URL" &&
    [[ -f ${BRAID_QDRANT_BINARY:-} && -x ${BRAID_QDRANT_BINARY:-} ]]; then
    BRAID_START_QDRANT=true
fi

mkdir -p "$BRAID_DATA_DIR"/{logs,rabbitmq,redis,store,qdrant,models,hf}

if [[ ${BRAID_ALLOW_DOWNLOADS:-false} == true ]]; then
    unset HF_HUB_OFFLINE TRANSFORMERS_OFFLINE # the image sets them
else
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
fi
export HF_HOME=${HF_HOME:-$BRAID_DATA_DIR/hf}
# Nothing leaves the box: libraries that phone home by default are told not to. ONNX Runtime's
# official builds send usage events to Microsoft and keep a device id under ~/.cache/Microsoft
# unless ORT_DISABLE_TELEMETRY is set before they load; the Hugging Face hub adds telemetry to its
# requests when downloads are allowed (DO_NOT_TRACK is the cross-tool convention it honours too).
# OpenVINO's telemetry is kept from loading in encoder/openvino.py.
export ORT_DISABLE_TELEMETRY=1 HF_HUB_DISABLE_TELEMETRY=1 DO_NOT_TRACK=1

if (($# > 0)); then
    exec "$@"
fi

# supervisord and the log relay both write to this stdout: a file must take them in append
# mode, or each would write over the other's lines.
if [[ -f /dev/stdout ]]; then
    exec >>/proc/self/fd/1
fi
echo "entrypoint: data $BRAID_DATA_DIR, api :$BRAID_PORT ($BRAID_API_PROCESSES processes)," \
    "encoders $BRAID_ENCODERS" \
    "(models $BRAID_ENCODER_MODELS), bundled rabbitmq=$BRAID_START_RABBITMQ" \
    "redis=$BRAID_START_REDIS qdrant=$BRAID_START_QDRANT"
exec python3 -m supervisor.supervisord -n -c supervisord.conf
