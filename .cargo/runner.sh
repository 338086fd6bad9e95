#!/bin/sh
# Cargo runs every binary it runs (`cargo run`, `cargo test`, `cargo bench`)
# through this script (.cargo/config.toml, `runner`), which passes each one
# through untouched but one: the integration tests' binary (`it-<hash>`)
# asked for the whole suite (no filter; only output options). That one runs
# as two processes at once:
#
# - the live tests (`live::…`: real servers, real timeouts; they mostly
#   wait), at normal priority, their output streamed;
# - every other test (CPU-bound: refinement proofs, sweeps, fuzzers), in a
#   session of its own at autogroup nice 19, so it takes only the CPU the
#   live tests leave idle; its output is kept and printed when both end.
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
live=$(printf '%s\n' "$list" | sed -n 's/^\(live::[^ ]*\): test$/\1/p')
rest=$(printf '%s\n' "$list" | sed -n '/^live::/d; s/^\([^ ]*\): test$/\1/p')
if [ -z "$live" ] || [ -z "$rest" ]; then
  exec "$bin" "$@"
fi

. "$(dirname "$0")/autogroup.sh"
rest_log=$(mktemp)
# shellcheck disable=SC2086 # one word per test name
setsid nice -n 19 "$bin" --exact $rest "$@" >"$rest_log" 2>&1 </dev/null &
rest_run=$!
trap 'kill -- "-$rest_run" 2>/dev/null; rm -f "$rest_log"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
autogroup_nice "$rest_run" 19

echo "fencesim's test runner (.cargo/runner.sh): the $(printf '%s\n' "$live" | wc -l | tr -d ' ') live tests here;" \
  "the other $(printf '%s\n' "$rest" | wc -l | tr -d ' ') beside them at nice 19, their output after"
# shellcheck disable=SC2086
"$bin" --exact $live "$@"
live_status=$?
wait "$rest_run"
rest_status=$?
echo
echo "fencesim's test runner: the other tests' output (they ran beside the live tests):"
cat "$rest_log"
if [ "$live_status" -ne 0 ] || [ "$rest_status" -ne 0 ]; then
  echo "fencesim's test runner: live tests exited $live_status, the other tests $rest_status"
  exit 101
fi
