#!/usr/bin/env bash
# A local Redis Cluster for the `[store] backend = "redis"` crawl store and its
# tests: 3 masters and 3 replicas on loopback ports BASE_PORT..BASE_PORT+5
# (default 7000-7005; cluster bus ports +10000), data in a temporary
# directory, `redis-server` installed with apt-get when missing (as root).
#
#   scripts/redis-cluster.sh start [BASE_PORT]   start (idempotent: a running,
#                                                healthy cluster is kept)
#   scripts/redis-cluster.sh stop  [BASE_PORT]   stop the nodes, remove the data
#   scripts/redis-cluster.sh status [BASE_PORT]  exit 0 when cluster_state:ok
#
# `start` prints the nodes as the last line of its output, ready for
# `--set 'store.redis_nodes=[...]'`. Exit codes: 0 ok, 1 failure, 3 redis-server
# is not installed and could not be installed.
set -uo pipefail

cmd=${1:-}
BASE=${2:-7000}
case "$cmd" in start | stop | status) ;; *)
    echo "usage: $0 start|stop|status [BASE_PORT]" >&2
    exit 1
    ;;
esac
if ! [[ "$BASE" =~ ^[0-9]+$ ]] || [ "$BASE" -lt 1024 ] || [ "$BASE" -gt 55000 ]; then
    echo "redis-cluster: BASE_PORT must be a number in 1024..=55000" >&2
    exit 1
fi
PORTS=$(seq "$BASE" $((BASE + 5)))
DIR=${TMPDIR:-/tmp}/simcrawl-redis-cluster-$BASE
LOCK=${TMPDIR:-/tmp}/simcrawl-redis-cluster-$BASE.lock

log() { echo "redis-cluster: $*" >&2; }

# One start or stop at a time per port range (test binaries may race).
exec 9>"$LOCK"
flock 9

cluster_ok() {
    command -v redis-cli >/dev/null || return 1
    for p in $PORTS; do
        redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
    done
    # Three masters, each with a replica.
    [ "$(redis-cli -p "$BASE" cluster nodes 2>/dev/null | grep -c master)" = 3 ] || return 1
    [ "$(redis-cli -p "$BASE" cluster nodes 2>/dev/null | grep -c slave)" = 3 ] || return 1
    # Every replica in sync with its master (it can take over only then).
    for p in $PORTS; do
        if redis-cli -p "$p" info replication 2>/dev/null | grep -q '^role:slave'; then
            redis-cli -p "$p" info replication | grep -q '^master_link_status:up' || return 1
        fi
    done
}

stop_nodes() {
    [ -d "$DIR" ] || return 0
    local pids=()
    for p in $PORTS; do
        local f="$DIR/$p/redis.pid"
        if [ -f "$f" ]; then
            local pid
            pid=$(cat "$f")
            # Only a redis-server we started (the pid file could be stale).
            if [ -n "$pid" ] && grep -q redis-server "/proc/$pid/cmdline" 2>/dev/null; then
                kill "$pid" 2>/dev/null && pids+=("$pid")
            fi
        fi
    done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    done
    rm -rf "$DIR"
}

nodes_line() {
    local out=""
    for p in $PORTS; do out="$out${out:+,}127.0.0.1:$p"; done
    echo "$out"
}

case "$cmd" in
status)
    cluster_ok && { echo "cluster_state:ok"; exit 0; }
    echo "not running"
    exit 1
    ;;
stop)
    stop_nodes
    log "stopped (ports $BASE-$((BASE + 5)))"
    exit 0
    ;;
esac

# start
if [ -d "$DIR" ] && cluster_ok; then
    log "already running (ports $BASE-$((BASE + 5)))"
    nodes_line
    exit 0
fi
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    log "redis-server not found; installing Debian's redis-server (apt-get)..."
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) \
            >"${TMPDIR:-/tmp}/simcrawl-redis-apt.log" 2>&1 || true
    fi
    if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
        log "redis-server is not installed and could not be installed (see ${TMPDIR:-/tmp}/simcrawl-redis-apt.log)"
        exit 3
    fi
fi
# A half-started or broken cluster is replaced whole.
stop_nodes
for p in $PORTS; do
    if redis-cli -p "$p" ping >/dev/null 2>&1; then
        log "port $p is taken by a server this script did not start; choose another BASE_PORT"
        exit 1
    fi
done
mkdir -p "$DIR"
for p in $PORTS; do
    mkdir -p "$DIR/$p"
    # No persistence: the cluster is for crawls and tests on this machine;
    # replicas keep the data when a master dies.
    redis-server --port "$p" --bind 127.0.0.1 --daemonize yes \
        --dir "$DIR/$p" --pidfile "$DIR/$p/redis.pid" --logfile "$DIR/$p/redis.log" \
        --cluster-enabled yes --cluster-config-file "$DIR/$p/nodes.conf" \
        --cluster-node-timeout 2000 --cluster-replica-validity-factor 0 \
        --repl-diskless-sync-delay 0 --save "" --appendonly no \
        9>&- </dev/null >/dev/null 2>&1 \
        || { log "redis-server on port $p did not start (see $DIR/$p/redis.log)"; stop_nodes; exit 1; }
done
for p in $PORTS; do
    for _ in $(seq 100); do
        redis-cli -p "$p" ping >/dev/null 2>&1 && break
        sleep 0.05
    done
done
addrs=()
for p in $PORTS; do addrs+=("127.0.0.1:$p"); done
if ! redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$DIR/create.log" 2>&1; then
    log "cluster create failed:"
    tail -5 "$DIR/create.log" >&2
    stop_nodes
    exit 1
fi
for _ in $(seq 300); do
    if cluster_ok; then
        log "running (ports $BASE-$((BASE + 5)), data in $DIR)"
        nodes_line
        exit 0
    fi
    sleep 0.1
done
log "the cluster did not reach cluster_state:ok within 30 s"
stop_nodes
exit 1
