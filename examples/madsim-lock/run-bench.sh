#!/bin/sh
# The madsim-vs-fencesim criterion bench (release, --cfg madsim, own target dir).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR="$here/target" \
    cargo bench --manifest-path "$here/Cargo.toml" -j 1 --bench side_by_side -- "$@"
