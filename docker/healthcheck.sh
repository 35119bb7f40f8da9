#!/usr/bin/env bash
# The image's HEALTHCHECK: healthy while GET /v1/health/ready answers 2xx (218, one side of the
# service stalled, included: it still answers). Bash alone: no Python start every few seconds.
set -euo pipefail
exec 3<>"/dev/tcp/127.0.0.1/${BRAID_PORT:-8234}"
printf 'GET /v1/health/ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
read -r -t 4 _ status _ <&3
[[ $status == 2?? ]]
