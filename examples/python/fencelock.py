#!/usr/bin/env python3
"""A lease lock service with fencing tokens, and a fenced document store,
speaking fencesim's JSON-lines protocol (docs/validate.md).

One program, both roles: the harness's `init` says whether this process is
the coordinator (every replica, when the scenario has several: each is
told its `replica` index) or the resource. Standard library only. The
program never reads a clock or draws randomness -- time arrives with every
input -- so a run replays exactly from a fencesim seed. Wire protocol
version 2: every line it writes carries `step`, the msg_id of the input
it answers.

    fencesim validate \
        --node coordinator='python3 examples/python/fencelock.py' \
        --node resource='python3 examples/python/fencelock.py' \
        scenarios/article/gc-pause-fenced-cas.toml

Coordinator: SET key owner NX PX ttl, plus a counter that is persisted as
synced *before* the grant leaves, so a restart never re-issues a token.
The lease table is volatile, as in Redis without AOF fsync. Leases are
timed on the node's *monotonic* clock (`mono_ns`), so a wall-clock jump
cannot end one early. What it is correct for: one coordinator process
(it does not replicate: with several replicas each would grant on its
own), fencing tokens on, and a fenced store; without tokens no lease
service is safe against pauses, and that is what the unfenced scenarios
show.

Resource: the article's `UPDATE ... WHERE fencing_token < $token` (or <=),
with fence and value changed and persisted (synced) in one step before the
answer leaves.
"""

import itertools
import json
import sys

TEMPORARILY_UNAVAILABLE = 11
PRECONDITION_FAILED = 22


class Node:
    """The wire protocol: one input line in, outputs, then step_done."""

    def __init__(self):
        self.me = None
        self.step = None  # msg_id of the input being answered
        self.out = []
        self.clock = None
        self.keys = []

    def emit(self, dest, body):
        body["step"] = self.step
        self.out.append({"src": self.me, "dest": dest, "body": body})

    def to_harness(self, body):
        self.emit("harness", body)

    def reply(self, request, body):
        body["in_reply_to"] = request["body"]["msg_id"]
        self.emit(request["src"], body)

    def persist(self, state, durability="synced"):
        self.to_harness({"type": "persist", "durability": durability, "state": state})

    def set_timer(self, timer, after_ns):
        self.to_harness({"type": "set_timer", "timer": timer, "after_ns": after_ns})

    def cancel_timer(self, timer):
        self.to_harness({"type": "cancel_timer", "timer": timer})

    def on_promote(self, env):
        """The harness made this coordinator the primary (at boot, or on a
        failover fault). A single coordinator has nothing to do."""

    def serve(self, lines):
        for line in lines:
            env = json.loads(line)
            body = env["body"]
            self.clock = body["clock"]
            self.step = body["msg_id"]
            kind = body["type"]
            if kind == "init":
                self.me = body["node_id"]
                self.keys = body["keys"]
                self.on_init(body["role"]["config"], body["recovered"])
                self.to_harness({"type": "init_ok", "in_reply_to": body["msg_id"]})
            elif kind == "timer":
                self.on_timer(body["timer"])
            else:
                getattr(self, "on_" + kind)(env)
            self.to_harness({"type": "step_done", "in_reply_to": body["msg_id"]})
            sys.stdout.write("".join(json.dumps(m) + "\n" for m in self.out))
            sys.stdout.flush()
            self.out.clear()
            self.after_step()

    def after_step(self):
        """Called once a step's lines are written (a hook for the test fakes)."""


class Coordinator(Node):
    def on_init(self, config, recovered):
        self.ttl_ns = config["lease_ttl_ns"]
        self.tokens = config["tokens"]
        self.release_del = config["release"] == "del"
        self.counter = recovered["counter"] if recovered else 0
        self.leases = {}  # key -> (owner, token, expires_mono_ns)

    def expire_if_due(self, key):
        """Drops key's lease if it ran out on our monotonic clock; True if the key is free."""
        lease = self.leases.get(key)
        if lease is None:
            return True
        if self.clock["mono_ns"] >= lease[2]:
            self.to_harness({"type": "lease_expired", "key": key, "owner": lease[0]})
            del self.leases[key]
            return True
        return False

    def on_acquire(self, req):
        key, owner = req["body"]["key"], req["body"]["owner"]
        now = self.clock["mono_ns"]
        if not self.expire_if_due(key):
            held_by, token, expires = self.leases[key]
            if held_by == owner:  # a retransmitted acquire: same grant again
                self.reply(req, {"type": "acquire_ok", "token": token,
                                 "ttl_ns": max(0, expires - now)})
            else:
                self.reply(req, {"type": "error", "code": TEMPORARILY_UNAVAILABLE,
                                 "text": "lock held"})
            return
        token = None
        if self.tokens:
            self.counter += 1
            self.persist({"counter": self.counter})  # durable before the grant leaves
            token = self.counter
        self.leases[key] = (owner, token, now + self.ttl_ns)
        self.set_timer(self.keys.index(key), self.ttl_ns)
        self.reply(req, {"type": "acquire_ok", "token": token, "ttl_ns": self.ttl_ns})

    def on_release(self, req):
        key, owner = req["body"]["key"], req["body"]["owner"]
        self.expire_if_due(key)
        lease = self.leases.get(key)
        removed = None
        if lease is not None and (self.release_del or lease[0] == owner):
            removed = lease[0]
            del self.leases[key]
            self.cancel_timer(self.keys.index(key))
        self.reply(req, {"type": "release_ok", "removed": removed})

    def on_renew(self, req):
        key, owner = req["body"]["key"], req["body"]["owner"]
        self.expire_if_due(key)
        lease = self.leases.get(key)
        if lease is None or lease[0] != owner:
            return self.reply(req, {"type": "error", "code": PRECONDITION_FAILED,
                                    "text": "lease lost"})
        self.leases[key] = (owner, lease[1], self.clock["mono_ns"] + self.ttl_ns)
        self.set_timer(self.keys.index(key), self.ttl_ns)
        self.reply(req, {"type": "renew_ok", "ttl_ns": self.ttl_ns})

    def on_timer(self, timer):
        key = self.keys[timer]
        if not self.expire_if_due(key):
            # Renewed since the timer was set: wait for the new expiry.
            left = max(1, self.leases[key][2] - self.clock["mono_ns"])
            self.set_timer(timer, left)


class Resource(Node):
    def on_init(self, config, recovered):
        self.fenced = config["fenced"]
        self.strict = config["strict"]
        self.fence_reads = config["fence_reads"]
        # key -> {"value", "write_fence", "read_fence"}
        self.rows = recovered["rows"] if recovered else {}

    def row(self, key):
        return self.rows.setdefault(key, {"value": 0, "write_fence": 0, "read_fence": 0})

    def reject(self, req, row):
        fence = max(row["write_fence"], row["read_fence"])
        self.reply(req, {"type": "error", "code": PRECONDITION_FAILED,
                         "text": "fenced", "fence": fence})

    def durable(self):
        self.persist({"rows": self.rows})

    def on_read(self, req):
        body = req["body"]
        row = self.row(body["key"])
        if self.fence_reads:
            token = body.get("token")
            if token is None or token < row["write_fence"] or token < row["read_fence"]:
                return self.reject(req, row)
            if token > row["read_fence"]:
                row["read_fence"] = token
                self.durable()
        self.reply(req, {"type": "read_ok", "value": row["value"]})

    def on_write(self, req):
        body = req["body"]
        row = self.row(body["key"])
        if self.fenced:
            token = body.get("token")
            if token is None:
                return self.reject(req, row)
            above = token > row["write_fence"] if self.strict else token >= row["write_fence"]
            if not above or token < row["read_fence"]:
                return self.reject(req, row)
            row["write_fence"] = token
        row["value"] = body["value"]
        self.commit(req)

    def commit(self, req):
        """Fence and value reach disk in one synced step, then the answer leaves."""
        self.durable()
        self.reply(req, {"type": "write_ok"})

    def on_timer(self, timer):
        pass


ROLES = {"coordinator": Coordinator, "resource": Resource}


def main(roles=ROLES):
    """Reads init to learn the role, then serves every line (init included)."""
    first = sys.stdin.readline()
    if not first:
        return
    kind = json.loads(first)["body"]["role"]["kind"]
    roles[kind]().serve(itertools.chain([first], sys.stdin))


if __name__ == "__main__":
    main()
