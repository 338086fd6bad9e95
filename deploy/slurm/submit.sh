#!/bin/sh
# Submits a fencesim sweep (or campaign) to Slurm: a job array whose task I
# runs shard I/SHARDS, and a merge job that starts once every task succeeded
# (--dependency=afterok on the array). Prints the merge job's id.
#
#   SHARDS=8 SEEDS=100000 SCENARIOS=scenarios RESULTS_DIR=$PWD/results deploy/slurm/submit.sh
#   MODE=campaign SHARDS=8 BUDGET_SECS=3600 SCENARIOS=scenarios/chaos \
#     RESULTS_DIR=$PWD/results deploy/slurm/submit.sh
#
# Run it from the directory the scenario paths are relative to (a checkout,
# or the image's /opt/fencesim), on a submit host where `fencesim` is on
# PATH (the tasks inherit the environment and working directory). The
# results (shard-I.json or campaign-I.json, report.json, report.txt,
# junit.xml, html/, exit-code) land in RESULTS_DIR, which every node must see.
# Extra sbatch options (partition, account, --cpus-per-task) go in
# SBATCH_ARGS; PARALLEL caps how many tasks run at once.
#
# Tested: tests/it/cli/slurm.rs starts a one-node cluster (munge, slurmctld,
# slurmd from Debian's packages), runs this script for a sweep and for a
# campaign, and compares the merged results with the unsharded run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${MODE:=sweep}" "${SHARDS:=8}" "${SCENARIOS:=scenarios}"
: "${RESULTS_DIR:=$PWD/fencesim-results}" "${SBATCH_ARGS:=}"
mkdir -p "$RESULTS_DIR"
RESULTS_DIR=$(cd "$RESULTS_DIR" && pwd)
case $MODE in
  sweep)
    : "${SEEDS:=10000}"
    export SEEDS
    array_script=sweep-array.sbatch ;;
  campaign)
    # One campaign seed for every slice: printed here, recorded in every file.
    if [ -z "${CAMPAIGN_SEED:-}" ]; then
      CAMPAIGN_SEED=0x$(od -An -N8 -tx8 /dev/urandom | tr -d ' \n')
    fi
    if [ -z "${BUDGET_SEEDS:-}" ] && [ -z "${BUDGET_SECS:-}" ]; then
      BUDGET_SECS=3600
    fi
    export CAMPAIGN_SEED BUDGET_SEEDS="${BUDGET_SEEDS:-}" BUDGET_SECS="${BUDGET_SECS:-}"
    echo "campaign seed $CAMPAIGN_SEED" >&2
    array_script=campaign-array.sbatch ;;
  *)
    echo "MODE=$MODE: expected sweep or campaign" >&2
    exit 2 ;;
esac
export MODE SHARDS SCENARIOS RESULTS_DIR
# shellcheck disable=SC2086 # SBATCH_ARGS is a list of options.
array=$(sbatch --parsable $SBATCH_ARGS --array="0-$((SHARDS - 1))${PARALLEL:+%$PARALLEL}" \
  --output="$RESULTS_DIR/task-%a.log" "$here/$array_script")
array=${array%%;*} # --parsable prints ID[;CLUSTER]
# shellcheck disable=SC2086
merge=$(sbatch --parsable $SBATCH_ARGS --dependency="afterok:$array" --kill-on-invalid-dep=yes \
  --output="$RESULTS_DIR/merge.log" "$here/merge.sbatch")
echo "${merge%%;*}"
