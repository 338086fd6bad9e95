#!/bin/sh
# Cargo runs every binary it runs (`cargo run`, `cargo test`, `cargo bench`)
# through this script (.cargo/config.toml, `runner`), which passes each one
# through untouched but one: the integration tests' binary (`it-<hash>`)
# asked for the whole suite (no filter; only output options). That one runs
# as two processes at once:
#
# - the tests with deadlines in real time, at normal priority, their output
#   streamed: the live tests (`live::`: real servers, leases, sessions; they
#   mostly wait), `validate::` and `cli::deploy::` (external
#   implementations, each step answered within `--step-timeout-ms`) and
#   `cli::slurm::` (a Slurm cluster's daemons);
# - every other test (CPU-bound: refinement proofs, sweeps, fuzzers), in a
#   session of its own at autogroup nice 19, so it takes only the CPU the
#   first half leaves idle (starved there, an external implementation
#   missed its 5 s step timeout); its output is kept and printed when both
#   end.
#
# In one process libtest starts tests in name order, so the CPU tests
# (`check::`, `cli::`, `codecheck::`) ran before the first live test and
# the rest after the last: the two phases never overlapped
# (docs/ci-minutes.md). The exit status fails if either process fails.
# FENCESIM_TEST_SPLIT=0 runs the suite as one process, as libtest would.
set -u
bin=$1
shift

case "${bin##*/}" in
  it-*) ;;
  *) exec "$bin" "$@" ;;
esac
[ "${FENCESIM_TEST_SPLIT:-1}" = 0 ] && exec "$bin" "$@"
# The second half needs a session of its own (util-linux's setsid).
command -v setsid >/dev/null 2>&1 || exec "$bin" "$@"
for arg in "$@"; do
  case "$arg" in
    --nocapture | --show-output | -q | --quiet | --color=* | --test-threads=*) ;;
    *) exec "$bin" "$@" ;;
  esac
done

# Every test by exact name (a filter is a substring: `live::` also matches
# `codecheck::to_live::…`). Names are Rust paths: no spaces, no glob characters.
set -f
list=$("$bin" --list --format terse) || exec "$bin" "$@"
real_time='^(live|validate|cli::deploy|cli::slurm)::'
tests=$(printf '%s\n' "$list" | sed -n 's/^\([^ ]*\): test$/\1/p')
timed=$(printf '%s\n' "$tests" | grep -E "$real_time")
cpu=$(printf '%s\n' "$tests" | grep -v -E "$real_time")
if [ -z "$timed" ] || [ -z "$cpu" ]; then
  exec "$bin" "$@"
fi

. "$(dirname "$0")/autogroup.sh"
cpu_log=$(mktemp)
# shellcheck disable=SC2086 # one word per test name
setsid nice -n 19 "$bin" --exact $cpu "$@" >"$cpu_log" 2>&1 </dev/null &
cpu_run=$!
trap 'kill -- "-$cpu_run" 2>/dev/null; rm -f "$cpu_log"' EXIT
# Interrupted: the CPU-bound half (its own session: the terminal's signal
# does not reach it) ends, and what it printed so far is shown, not lost.
# A signal before the first half's pid is known is held until it is
# (traps run between commands: after its fork, before `timed_run=$!`).
pending=
on_signal() {
  if [ -z "${timed_run:-}" ]; then
    pending=$1
    return
  fi
  interrupted "$1"
}
interrupted() {
  kill -- "-$cpu_run" 2>/dev/null
  kill "$timed_run" 2>/dev/null
  echo
  echo "fencesim's test runner: interrupted; the CPU-bound tests' output so far:"
  cat "$cpu_log"
  exit "$1"
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
autogroup_nice "$cpu_run" 19

echo "fencesim's test runner (.cargo/runner.sh): the $(printf '%s\n' "$timed" | wc -l | tr -d ' ') tests with real-time deadlines" \
  "(live::, validate::, cli::deploy::, cli::slurm::) here; the other $(printf '%s\n' "$cpu" | wc -l | tr -d ' ')" \
  "beside them at nice 19, their output after"
# In the background and waited for, so that a signal's trap runs at once.
# shellcheck disable=SC2086
"$bin" --exact $timed "$@" &
timed_run=$!
[ -n "$pending" ] && interrupted "$pending"
wait "$timed_run"
timed_status=$?
wait "$cpu_run"
cpu_status=$?
echo
echo "fencesim's test runner: the CPU-bound tests' output (they ran beside the ones above, at nice 19):"
cat "$cpu_log"
if [ "$timed_status" -ne 0 ] || [ "$cpu_status" -ne 0 ]; then
  echo "fencesim's test runner: the real-time tests exited $timed_status, the CPU-bound tests $cpu_status"
  exit 101
fi
