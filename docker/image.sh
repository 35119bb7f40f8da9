#!/usr/bin/env bash
# `make image`: builds the Braid image (tag $IMAGE, default braid) from docker/Dockerfile.
#   - a Docker engine: installs Debian's docker.io and starts dockerd when none answers;
#   - the base: $BASE (default debian:bookworm-slim) as pulled; where no registry answers, the same
#     Debian 12 bootstrapped from Debian's packages (debootstrap) and imported as braid-debian:bookworm;
#   - docker/build/: the host's CA bundle and, when the host has it on disk, the torch CPU wheel
#     (see docker/build/README.md); the image keeps neither.
# TORCH=cuda builds the CUDA variant (run it with --gpus all); BUILD_FLAGS adds docker build flags.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

IMAGE=${IMAGE:-braid}
BASE=${BASE:-debian:bookworm-slim}
TORCH=${TORCH:-cpu}
LOCAL_BASE=braid-debian:bookworm
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

say() { echo "image: $*"; }

apt_install() {
    say "apt-get install $*"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

ensure_engine() {
    command -v dockerd >/dev/null 2>&1 || apt_install docker.io
    if docker info >/dev/null 2>&1; then
        return 0
    fi
    # A dockerd still starting or stopping: wait for it to answer or go. A pid file whose dockerd
    # is gone (killed with the machine's processes) would stop a new one from starting.
    local pidfile=/var/run/docker.pid
    for _ in $(seq 60); do
        [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null || break
        docker info >/dev/null 2>&1 && return 0
        sleep 1
    done
    if [[ -f $pidfile ]] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        say "removing the stale $pidfile (its dockerd is gone)"
        rm -f "$pidfile"
    fi
    # No init system starts it here: run it in the background, as a service would.
    say "starting dockerd (log: /var/log/dockerd.log)"
    nohup dockerd >>/var/log/dockerd.log 2>&1 &
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && return 0
        sleep 1
    done
    echo "image: dockerd did not answer within 60 s; see /var/log/dockerd.log" >&2
    exit 1
}

# The Debian 12 base from Debian's packages: what debian:bookworm-slim is, with the same sources
# (updates and security too) and the same cleanups of apt's caches.
bootstrap_base() {
    local root
    command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
    root=$(mktemp -d /tmp/braid-debian.XXXXXX)
    say "no registry: bootstrapping $LOCAL_BASE from $DEBIAN_MIRROR into $root"
    debootstrap --variant=minbase bookworm "$root" "$DEBIAN_MIRROR" >"$root.log"
    cat >"$root/etc/apt/sources.list" <<SOURCES
deb ${DEBIAN_MIRROR} bookworm main
deb ${DEBIAN_MIRROR} bookworm-updates main
deb ${DEBIAN_MIRROR}-security bookworm-security main
SOURCES
    printf 'APT::Install-Recommends "false";\n' >"$root/etc/apt/apt.conf.d/99braid"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -c . | docker import - "$LOCAL_BASE" >/dev/null
    rm -rf "$root" "$root.log"
}

pick_base() {
    if docker image inspect "$BASE" >/dev/null 2>&1 || docker pull -q "$BASE" >/dev/null 2>&1; then
        return 0
    fi
    if [[ $BASE != debian:bookworm-slim ]]; then
        echo "image: base $BASE cannot be pulled" >&2
        exit 1
    fi
    docker image inspect "$LOCAL_BASE" >/dev/null 2>&1 || bootstrap_base
    BASE=$LOCAL_BASE
}

fill_build_dir() {
    rm -rf docker/build/wheels docker/build/ca.crt
    if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
        cp /etc/ssl/certs/ca-certificates.crt docker/build/ca.crt
    fi
    # The torch CPU wheel, only when this machine's pip finds it without an index (on disk).
    if [[ $TORCH == cpu ]] && python3 -m pip download --quiet --no-deps --no-index \
        --dest docker/build/wheels torch==2.13.0+cpu >/dev/null 2>&1; then
        say "torch CPU wheel from this machine: $(ls docker/build/wheels)"
    fi
}

ensure_engine
pick_base
fill_build_dir
say "docker build: base $BASE, torch $TORCH, tag $IMAGE"
start=$SECONDS
# shellcheck disable=SC2086 # BUILD_FLAGS: extra flags, word-split on purpose (--no-cache)
docker build ${BUILD_FLAGS:-} -f docker/Dockerfile --build-arg BASE="$BASE" --build-arg TORCH="$TORCH" -t "$IMAGE" .
say "built $IMAGE in $((SECONDS - start)) s, $(docker image inspect -f '{{.Size}}' "$IMAGE" |
    awk '{printf "%.0f MB", $1 / 1e6}')"
