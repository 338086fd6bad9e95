# Sourced by .ci/run and .cargo/runner.sh (POSIX sh).
#
# A background job started by setsid is its own session, hence its own
# scheduler autogroup where the kernel has them; a process's nice counts
# only inside its autogroup, so a job's priority against everything else
# is its autogroup's nice (/proc/PID/autogroup). `autogroup_nice PID N`
# sets it once setsid has given PID an autogroup of its own (never the
# caller's: that would slow the caller down too). Without autogroups,
# nothing to do (the job's own `nice` then counts machine-wide).
autogroup() { cut -d' ' -f1 "/proc/$1/autogroup" 2>/dev/null || true; }
autogroup_nice() {
  [ -e "/proc/$1" ] || return 0
  for _ in $(seq 100); do
    if [ -n "$(autogroup "$1")" ] && [ "$(autogroup "$1")" != "$(autogroup $$)" ]; then
      echo "$2" 2>/dev/null >"/proc/$1/autogroup" || true
      return 0
    fi
    sleep 0.01
  done
}
