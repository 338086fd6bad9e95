#!/bin/sh
# Tests the madsim implementation: builds with --cfg madsim in this crate's
# own target dir (so the main crate never rebuilds with that cfg), runs its
# tests, then feeds a fenced and an unfenced history to the main crate's
# `fencesim check-history` and checks both verdicts.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# `run.sh --build-only` compiles what the steps below run and stops: .ci/run
# starts it in the background at the beginning, on the core the other
# builds leave idle, so the test suite's run of this script finds it built.
if [ "${1:-}" = "--build-only" ]; then
    RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR="$here/target" \
        cargo test --manifest-path "$here/Cargo.toml" -j 1 --no-run
    RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR="$here/target" \
        cargo build --manifest-path "$here/Cargo.toml" -j 1 --bin madsim-lock
    exit 0
fi

RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR="$here/target" \
    cargo test --manifest-path "$here/Cargo.toml" -j 1 "$@"
RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR="$here/target" \
    cargo build --manifest-path "$here/Cargo.toml" -j 1 --bin madsim-lock

"$here/target/debug/madsim-lock" "$root/scenarios/article/gc-pause-fenced-cas.toml" --seed 3 --history "$tmp/fenced.jsonl"
"$here/target/debug/madsim-lock" "$root/scenarios/article/gc-pause-stale-write.toml" --seed 3 --history "$tmp/unfenced.jsonl"

# The main crate's binary: FENCESIM_BIN when the caller has one (tests/it/sim/madsim.rs
# passes the binary cargo built for the test run), else built here.
check() {
    if [ -n "${FENCESIM_BIN:-}" ]; then
        "$FENCESIM_BIN" check-history "$1"
    else
        env -u RUSTFLAGS -u CARGO_TARGET_DIR cargo run -q --manifest-path "$root/Cargo.toml" -j 1 -- check-history "$1"
    fi
}
check "$tmp/fenced.jsonl" > "$tmp/fenced.out" || { cat "$tmp/fenced.out"; echo "madsim fenced history: expected clean"; exit 1; }
if check "$tmp/unfenced.jsonl" > "$tmp/unfenced.out"; then
    cat "$tmp/unfenced.out"; echo "madsim unfenced history: expected violations"; exit 1
fi
grep -q "VIOLATION stale_write" "$tmp/unfenced.out" || { cat "$tmp/unfenced.out"; exit 1; }
echo "madsim-lock: fenced history clean, unfenced history has stale_write (fencesim check-history)"
