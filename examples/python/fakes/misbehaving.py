#!/usr/bin/env python3
"""A coordinator that breaks the wire protocol on purpose, for the tests of
`fencesim validate`'s diagnostics (tests/validate_misbehaviour.rs).

    misbehaving.py MODE [SEED]

Behaves like examples/python/fencelock.py until the first acquire of the
run whose FENCESIM_SEED is SEED (default: every seed), then does MODE:
malformed, unknown_type, wrong_in_reply_to, crash, hang, flood, long_line.
Appends its pid (and in `hang` mode its child's) to $FAKE_PIDFILE so tests
can check that nothing outlives the harness.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fencelock  # noqa: E402

MODE = sys.argv[1]
ONLY_SEED = sys.argv[2] if len(sys.argv) > 2 else None


def record_pid(pid):
    path = os.environ.get("FAKE_PIDFILE")
    if path:
        with open(path, "a") as f:
            f.write(f"{pid}\n")


def raw(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Misbehaving(fencelock.Coordinator):
    def on_acquire(self, req):
        if ONLY_SEED is not None and os.environ.get("FENCESIM_SEED") != ONLY_SEED:
            return super().on_acquire(req)
        me = self.me
        if MODE == "malformed":
            raw('{"src": "%s", "dest": "harness", "body": {"type": "step_done"' % me)
        elif MODE == "unknown_type":
            raw('{"src": "%s", "dest": "worker/A", "body": {"type": "heartbeat", "msg_id": 1}}' % me)
        elif MODE == "wrong_in_reply_to":
            wrong = req["body"]["msg_id"] + 1000
            raw('{"src": "%s", "dest": "%s", "body": {"type": "acquire_ok", "in_reply_to": %d, "token": 1, "ttl_ns": 5}}'
                % (me, req["src"], wrong))
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
            line = '{"src": "%s", "dest": "harness", "body": {"type": "cancel_timer", "timer": 0}}' % me
            while True:
                raw(line)
        elif MODE == "long_line":
            sys.stdout.write("x" * (1 << 20))
            sys.stdout.flush()
            time.sleep(600)
        else:
            raise SystemExit("unknown mode " + MODE)


if __name__ == "__main__":
    record_pid(os.getpid())
    fencelock.main({"coordinator": Misbehaving, "resource": fencelock.Resource})
