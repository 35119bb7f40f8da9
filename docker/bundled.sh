#!/usr/bin/env bash
# Runs one bundled infrastructure server in the foreground, as a supervisord program:
#   bundled.sh rabbitmq|redis|qdrant|epmd
# Everything it writes lives under $BRAID_DATA_DIR. Ports come from the BRAID_*_URL variables.
# entrypoint.sh sources this file for the URL helpers only (nothing runs when sourced).

# --- URL helpers (pure bash, no python needed) -------------------------------------------------

# "amqp://user:pass@host:5672/vhost" -> "host:5672"
url_authority() {
    local rest=${1#*://}
    rest=${rest%%/*}
    rest=${rest%%\?*}
    printf '%s' "${rest##*@}"
}

# "amqp://user:pass@host:5672/" -> "host" (IPv6 "[::1]:5672" -> "::1")
url_host() {
    local authority
    authority=$(url_authority "$1")
    if [[ $authority == \[* ]]; then
        authority=${authority#\[}
        printf '%s' "${authority%%]*}"
    else
        printf '%s' "${authority%%:*}"
    fi
}

# url_port URL DEFAULT -> the URL's port, or DEFAULT when it names none
url_port() {
    local authority port
    authority=$(url_authority "$1")
    if [[ $authority == \[* ]]; then
        authority=${authority##*]}
    fi
    if [[ $authority == *:* ]]; then
        port=${authority##*:}
    else
        port=""
    fi
    printf '%s' "${port:-$2}"
}

# Bundled servers serve only the loopback: a URL naming another host means "not ours to start".
is_local_url() {
    case "$(url_host "$1")" in
        127.0.0.1 | localhost) return 0 ;;
        *) return 1 ;;
    esac
}

# wait_for_port PORT SECONDS: true once something accepts TCP on 127.0.0.1:PORT
wait_for_port() {
    local port=$1 deadline=$((SECONDS + $2))
    while ((SECONDS < deadline)); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        sleep 0.2
    done
    return 1
}

# --- servers ------------------------------------------------------------------------------------

find_epmd() {
    local candidate
    # The Erlang runtime's own copy first (what erl itself would start), then PATH.
    for candidate in /usr/lib/erlang/erts-*/bin/epmd "$(command -v epmd || true)"; do
        if [[ -n $candidate && -x $candidate ]]; then
            printf '%s' "$candidate"
            return 0
        fi
    done
    echo "bundled.sh: epmd not found (is erlang-base installed? run docker/install.sh)" >&2
    return 1
}

run_epmd() {
    local epmd
    epmd=$(find_epmd)
    echo "bundled.sh: epmd on 127.0.0.1:$BRAID_EPMD_PORT"
    # Foreground (no -daemon): it lives and dies with supervisord instead of outliving the stack.
    exec "$epmd" -port "$BRAID_EPMD_PORT" -address 127.0.0.1
}

write_rabbitmq_files() {
    local base=$1
    # Rewritten on every start so the file always matches this script.
    cat >"$base/rabbitmq.conf" <<'EOF'
# Written by docker/bundled.sh on every start; edits are lost.
disk_free_limit.absolute = 50MB
log.console = true
log.console.level = info
log.file = false
EOF
    printf '[].\n' >"$base/enabled_plugins"
}

run_rabbitmq() {
    local port base server=/usr/lib/rabbitmq/bin/rabbitmq-server
    port=$(url_port "$BRAID_AMQP_URL" 5672)
    base=$BRAID_DATA_DIR/rabbitmq
    mkdir -p "$base/mnesia" "$base/log"
    write_rabbitmq_files "$base"
    if [[ ! -x $server ]]; then
        echo "bundled.sh: $server not found (run docker/install.sh)" >&2
        exit 1
    fi

    # The node name carries the AMQP port so that several stacks can share one host.
    export RABBITMQ_NODENAME="braid-$port@localhost"
    export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
    export RABBITMQ_NODE_PORT=$port
    export RABBITMQ_DIST_PORT=$BRAID_RABBITMQ_DIST_PORT
    export ERL_EPMD_PORT=$BRAID_EPMD_PORT
    export RABBITMQ_MNESIA_BASE=$base/mnesia
    export RABBITMQ_LOG_BASE=$base/log
    export RABBITMQ_LOGS=-
    export RABBITMQ_CONFIG_FILE=$base/rabbitmq.conf
    export RABBITMQ_ADVANCED_CONFIG_FILE=$base/advanced.config
    export RABBITMQ_ENABLED_PLUGINS_FILE=$base/enabled_plugins
    export RABBITMQ_PID_FILE=$base/rabbitmq.pid
    # A path that does not exist: keeps /etc/rabbitmq/rabbitmq-env.conf out of our node.
    export RABBITMQ_CONF_ENV_FILE=$base/rabbitmq-env.conf
    # The Erlang cookie lives in $HOME: keep it inside the data folder too.
    export HOME=$base
    # epmd is supervisord's program; never let erl spawn a daemon epmd that outlives the stack.
    # The distribution port listens on loopback only.
    export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-start_epmd false -kernel inet_dist_use_interface {127,0,0,1}"

    if ! wait_for_port "$BRAID_EPMD_PORT" 30; then
        echo "bundled.sh: epmd is not listening on $BRAID_EPMD_PORT; giving up" >&2
        exit 1
    fi
    echo "bundled.sh: rabbitmq node $RABBITMQ_NODENAME on 127.0.0.1:$port (data $base)"
    exec "$server"
}

run_redis() {
    local port dir=$BRAID_DATA_DIR/redis
    port=$(url_port "$BRAID_REDIS_URL" 6379)
    mkdir -p "$dir"
    echo "bundled.sh: redis on 127.0.0.1:$port (data $dir)"
    # fsync before every answer: the ledger, tombstones and the catalog back acknowledged writes,
    # and `everysec` would lose the last second of them to a kill -9 (measured here: SET p50
    # 0.62 ms instead of 0.24 ms, 25k writes/s with 20 clients; docs/benchmarks.md).
    exec redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" \
        --appendonly yes --appendfsync always --save "" --daemonize no
}

run_qdrant() {
    local port dir=$BRAID_DATA_DIR/qdrant
    port=$(url_port "${BRAID_QDRANT_URL:?BRAID_QDRANT_URL is not set}" 6333)
    if [[ ! -x ${BRAID_QDRANT_BINARY:-} ]]; then
        echo "bundled.sh: BRAID_QDRANT_BINARY='${BRAID_QDRANT_BINARY:-}' is not executable" >&2
        exit 1
    fi
    mkdir -p "$dir/storage" "$dir/snapshots"
    export QDRANT__SERVICE__HOST=127.0.0.1
    export QDRANT__SERVICE__HTTP_PORT=$port
    export QDRANT__SERVICE__GRPC_PORT=$((port + 1))
    export QDRANT__SERVICE__ENABLE_STATIC_CONTENT=false
    export QDRANT__STORAGE__STORAGE_PATH=$dir/storage
    export QDRANT__STORAGE__SNAPSHOTS_PATH=$dir/snapshots
    export QDRANT__TELEMETRY_DISABLED=true
    # Qdrant writes its init marker into the working directory.
    cd "$dir"
    echo "bundled.sh: qdrant on 127.0.0.1:$port (grpc $((port + 1)), data $dir)"
    exec "$BRAID_QDRANT_BINARY"
}

main() {
    set -euo pipefail
    : "${BRAID_DATA_DIR:?BRAID_DATA_DIR is not set (start the stack with docker/entrypoint.sh)}"
    case "${1:-}" in
        epmd) run_epmd ;;
        rabbitmq) run_rabbitmq ;;
        redis) run_redis ;;
        qdrant) run_qdrant ;;
        *)
            echo "usage: $0 rabbitmq|redis|qdrant|epmd" >&2
            exit 2
            ;;
    esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
