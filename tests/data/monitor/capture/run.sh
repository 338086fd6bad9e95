#!/usr/bin/env bash
# Re-creates the MONITOR captures of tests/data/monitor/ (see its README.md)
# against scratch redis-servers on free loopback ports (never 6379), one
# fresh server per capture (empty script cache, so first EVALSHAs get
# NOSCRIPT). Needs redis-server/redis-cli, the pinned Python packages and
# node_modules of examples/live-clients (install.sh). Usage: run.sh [PORT]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(dirname "$here")"
base="${1:-7391}"
pids=()
ports=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# start_servers N: N scratch servers on base..base+N-1; each gets a MONITOR
# and a keyspace-notification subscriber writing to files of capture NAME.
start() {
  local name="$1" n="$2" i port
  urls=""
  for ((i = 0; i < n; i++)); do
    port=$((base + i))
    if redis-cli -p "$port" PING >/dev/null 2>&1; then echo "port $port is in use" >&2; exit 1; fi
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
      --notify-keyspace-events KEA >/dev/null &
    pids+=($!)
    ports+=("$port")
    until redis-cli -p "$port" PING >/dev/null 2>&1; do sleep 0.02; done
    local suffix=""; [ "$n" -gt 1 ] && suffix=".m$i"
    redis-cli -p "$port" MONITOR >"$out/$name$suffix.txt" &
    pids+=($!)
    redis-cli -p "$port" --csv PSUBSCRIBE '__key*@0__:*' >"$out/keyspace/$name$suffix.txt" &
    pids+=($!)
    urls="${urls:+$urls,}redis://127.0.0.1:$port/"
  done
  sleep 0.2
}
# stop: shut the servers down (the MONITOR and subscriber clients then see
# the connection close and exit, their output flushed), then reap.
stop() {
  sleep 0.3
  local port
  for port in "${ports[@]}"; do redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  ports=()
}

# capture NAME N PROGRAM...: run PROGRAM against N fresh servers; what it
# prints (the replies the capture cannot show) goes to replies/NAME.txt.
capture() {
  local name="$1" n="$2"; shift 2
  start "$name" "$n"
  "$@" "$urls" >"$out/replies/$name.txt"
  stop
}

mkdir -p "$out/keyspace" "$out/replies"
capture redis-py-lock 1         python3 "$here/redis_py_lock.py"
capture python-redis-lock 1     python3 "$here/python_redis_lock.py"
capture node-redlock 1          node "$here/node_redlock.js"
capture node-redlock-5masters 5 node "$here/node_redlock.js"
capture ioredis-set-nx 1        node "$here/ioredis_set_nx.js"
capture shapes 1                python3 "$here/shapes.py"
echo "captures written to $out"
