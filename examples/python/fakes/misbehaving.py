#!/usr/bin/env python3
"""A coordinator that breaks the wire protocol on purpose, for the tests of
`fencesim validate`'s diagnostics (tests/it/validate/misbehaviour.rs).

    misbehaving.py MODE [SEED]

Behaves like examples/python/fencelock.py until the first acquire of the
run whose FENCESIM_SEED is SEED (default: every seed), then does MODE:
malformed, unknown_type, wrong_in_reply_to, crash, hang, flood, long_line,
late_line (after that step's step_done, a line of the finished step,
written after a random 0-3 ms: a race on purpose), daemon / daemon_noenv
(start a setsid'd grandchild that outlives its parent -- keeping, or
clearing, its environment -- then behave), slow (sleep $FAKE_SLOW_S, then
behave), exit_at_init (exit on `init`, before init_ok), huge_ttl (grant with
a lease of 2^64-1 ns: the harness's clock must not overflow).
Appends its pid (and its children's) to $FAKE_PIDFILE so tests can check
that nothing outlives the harness.
"""

import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fencelock  # noqa: E402

MODE = sys.argv[1]
ONLY_SEED = sys.argv[2] if len(sys.argv) > 2 else None


def targeted():
    return ONLY_SEED is None or os.environ.get("FENCESIM_SEED") == ONLY_SEED


def record_pid(pid):
    path = os.environ.get("FAKE_PIDFILE")
    if path:
        with open(path, "a") as f:
            f.write(f"{pid}\n")


def raw(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def start_daemon(clear_env):
    """The classic double fork: the grandchild leaves the process group and
    session (setsid) and is orphaned when its parent exits."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            record_pid(os.getpid())
            os.write(ready_w, b"x")  # recorded: the parent may go on
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            if clear_env:
                os.execve("/bin/sleep", ["sleep", "600"], {})
            time.sleep(600)
        os._exit(0)
    os.waitpid(pid, 0)
    os.read(ready_r, 1)
    os.close(ready_r)
    os.close(ready_w)


class Misbehaving(fencelock.Coordinator):
    late = False

    def after_step(self):
        if self.late:
            self.late = False
            time.sleep(random.random() * 0.003)
            raw('{"src": "%s", "dest": "harness", "body": {"type": "cancel_timer", "timer": 0, "step": %d}}'
                % (self.me, self.step))

    def on_acquire(self, req):
        if not targeted() or getattr(self, "done", False):
            return super().on_acquire(req)
        me, step = self.me, self.step
        if MODE == "malformed":
            raw('{"src": "%s", "dest": "harness", "body": {"type": "step_done"' % me)
        elif MODE == "unknown_type":
            raw('{"src": "%s", "dest": "worker/A", "body": {"type": "heartbeat", "msg_id": 1, "step": %d}}' % (me, step))
        elif MODE == "wrong_in_reply_to":
            wrong = req["body"]["msg_id"] + 1000
            raw('{"src": "%s", "dest": "%s", "body": {"type": "acquire_ok", "in_reply_to": %d, "token": 1, "ttl_ns": 5, "step": %d}}'
                % (me, req["src"], wrong, step))
        elif MODE == "double_reply":
            self.done = True
            self.reply(req, {"type": "error", "code": 11, "text": "lock held"})
            return super().on_acquire(req)
        elif MODE == "crash":
            sys.stderr.write("fake: giving up on acquire\n")
            sys.stderr.flush()
            os._exit(3)
        elif MODE == "hang":
            child = subprocess.Popen(["sleep", "600"])
            record_pid(child.pid)
            sys.stderr.write("fake: waiting forever\n")
            sys.stderr.flush()
            time.sleep(600)
        elif MODE == "flood":
            line = '{"src": "%s", "dest": "harness", "body": {"type": "cancel_timer", "timer": 0, "step": %d}}' % (me, step)
            while True:
                raw(line)
        elif MODE == "long_line":
            sys.stdout.write("x" * (1 << 20))
            sys.stdout.flush()
            time.sleep(600)
        elif MODE == "late_line":
            self.done = self.late = True
            return super().on_acquire(req)
        elif MODE in ("daemon", "daemon_noenv"):
            self.done = True
            start_daemon(MODE == "daemon_noenv")
            return super().on_acquire(req)
        elif MODE == "huge_ttl":
            self.done = True
            self.ttl_ns = 2**64 - 1
            return super().on_acquire(req)
        elif MODE == "slow":
            self.done = True
            time.sleep(float(os.environ.get("FAKE_SLOW_S", "4")))
            return super().on_acquire(req)
        else:
            raise SystemExit("unknown mode " + MODE)


def main():
    record_pid(os.getpid())
    if MODE == "exit_at_init" and targeted():
        sys.stdin.readline()
        sys.stderr.write("fake: no init_ok from me\n")
        sys.stderr.flush()
        os._exit(4)
    fencelock.main({"coordinator": Misbehaving, "resource": fencelock.Resource})


if __name__ == "__main__":
    main()
