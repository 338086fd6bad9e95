#!/usr/bin/env python3
"""A lock service and a fenced store as a careless engineer might write
them, from docs/validate.md alone (written apart from fencelock.py, sharing
no code with it), for attacking `fencesim validate`'s verdicts.

    python3 careless.py MODE

MODE `correct` is the careful version: it must be judged clean. Every
other mode has exactly one realistic bug, and fencesim must name it:

- `fence_before_durable` (store): checks `token >= fence`, persists the new
  fence at once, but leaves the value in a write-back buffer (buffered) and
  acknowledges: after a crash the fence survives and the value does not
  (`acked_write_lost`).
- `counter_in_memory` (coordinator): the token counter is never persisted,
  so after a crash the next grant is token 1 again (`token_order`).
- `strict_reads_only` (store): with `strict`, the read check is right but
  the write check is `token >= fence` (`fence_rule_broken`).
- `renew_resurrects` (coordinator): a renewal for a lease that is gone
  creates it again for the caller, even over a newer owner
  (`expired_renewal`).
- `blind_store` (store): ignores the fence altogether (`stale_write`).

Standard library only; no clock reads, no randomness: time comes with
every input, so a run replays from its seed.
"""

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "correct"


class Process:
    def __init__(self):
        self.node = None
        self.step = 0
        self.lines = []
        self.now = {"mono_ns": 0, "wall_ns": 0}

    def send(self, dest, body):
        body["step"] = self.step
        self.lines.append(json.dumps({"src": self.node, "dest": dest, "body": body}))

    def harness(self, body):
        self.send("harness", body)

    def answer(self, env, body):
        body["in_reply_to"] = env["body"]["msg_id"]
        self.send(env["src"], body)

    def run(self):
        for raw in sys.stdin:
            env = json.loads(raw)
            body = env["body"]
            self.step = body["msg_id"]
            self.now = body["clock"]
            t = body["type"]
            if t == "init":
                self.node = body["node_id"]
                self.keys = body["keys"]
                self.setup(body["role"]["config"], body["recovered"])
                self.harness({"type": "init_ok", "in_reply_to": self.step})
            elif t == "timer":
                self.timer(body["timer"])
            elif t == "promote":
                pass
            else:
                getattr(self, t)(env)
            self.harness({"type": "step_done", "in_reply_to": self.step})
            sys.stdout.write("\n".join(self.lines) + "\n")
            sys.stdout.flush()
            self.lines = []


class Locks(Process):
    def setup(self, config, recovered):
        self.ttl = config["lease_ttl_ns"]
        self.tokens = config["tokens"]
        self.plain_del = config["release"] == "del"
        self.last_token = (recovered or {}).get("last_token", 0)
        self.held = {}  # key -> [owner, token, deadline on mono_ns]

    def live(self, key):
        lease = self.held.get(key)
        if lease and self.now["mono_ns"] >= lease[2]:
            self.harness({"type": "lease_expired", "key": key, "owner": lease[0]})
            del self.held[key]
            lease = None
        return lease

    def acquire(self, env):
        key, owner = env["body"]["key"], env["body"]["owner"]
        lease = self.live(key)
        if lease and lease[0] != owner:
            return self.answer(env, {"type": "error", "code": 11, "text": "busy"})
        if lease:  # the same owner asking again: the same grant
            left = max(0, lease[2] - self.now["mono_ns"])
            return self.answer(env, {"type": "acquire_ok", "token": lease[1], "ttl_ns": left})
        token = None
        if self.tokens:
            self.last_token += 1
            token = self.last_token
            if MODE != "counter_in_memory":
                self.harness({"type": "persist", "state": {"last_token": token}})
        self.held[key] = [owner, token, self.now["mono_ns"] + self.ttl]
        self.harness({"type": "set_timer", "timer": self.keys.index(key), "after_ns": self.ttl})
        self.answer(env, {"type": "acquire_ok", "token": token, "ttl_ns": self.ttl})

    def release(self, env):
        key, owner = env["body"]["key"], env["body"]["owner"]
        lease = self.live(key)
        removed = None
        if lease and (self.plain_del or lease[0] == owner):
            removed = lease[0]
            del self.held[key]
        self.answer(env, {"type": "release_ok", "removed": removed})

    def renew(self, env):
        key, owner = env["body"]["key"], env["body"]["owner"]
        lease = self.live(key)
        if MODE == "renew_resurrects" and (lease is None or lease[0] != owner):
            # "the client still thinks it holds it, so it does": bring it back
            token = lease[1] if lease else self.last_token
            lease = self.held[key] = [owner, token, 0]
        if lease is None or lease[0] != owner:
            return self.answer(env, {"type": "error", "code": 22, "text": "gone"})
        lease[2] = self.now["mono_ns"] + self.ttl
        self.harness({"type": "set_timer", "timer": self.keys.index(key), "after_ns": self.ttl})
        self.answer(env, {"type": "renew_ok", "ttl_ns": self.ttl})

    def timer(self, n):
        key = self.keys[n]
        lease = self.live(key)
        if lease:
            self.harness({"type": "set_timer", "timer": n,
                          "after_ns": max(1, lease[2] - self.now["mono_ns"])})


class Store(Process):
    def setup(self, config, recovered):
        self.fenced = config["fenced"] and MODE != "blind_store"
        self.strict = config["strict"]
        self.fence_reads = config["fence_reads"]
        state = recovered or {}
        self.values = state.get("values", {})
        self.fences = state.get("fences", {})  # key -> [write fence, read fence]

    def save(self, durability="synced"):
        self.harness({"type": "persist", "durability": durability,
                      "state": {"values": self.values, "fences": self.fences}})

    def refuse(self, env, key):
        self.answer(env, {"type": "error", "code": 22, "text": "stale token",
                          "fence": max(self.fences.get(key, [0, 0]))})

    def read(self, env):
        body = env["body"]
        key = body["key"]
        fence = self.fences.setdefault(key, [0, 0])
        if self.fence_reads:
            token = body.get("token")
            if token is None or token < max(fence):
                return self.refuse(env, key)
            if token > fence[1]:
                fence[1] = token
                self.save()
        self.answer(env, {"type": "read_ok", "value": self.values.get(key, 0)})

    def write(self, env):
        body = env["body"]
        key, token = body["key"], body.get("token")
        fence = self.fences.setdefault(key, [0, 0])
        if self.fenced:
            if token is None or token < fence[1]:
                return self.refuse(env, key)
            strict = self.strict and MODE != "strict_reads_only"
            if token < fence[0] or (strict and token == fence[0]):
                return self.refuse(env, key)
            fence[0] = token
        if MODE == "fence_before_durable":
            # the fence row is "small and important": synced now; the body
            # goes to the write-back buffer, and the ack does not wait for it
            committed = dict(self.values)
            self.harness({"type": "persist", "durability": "synced",
                          "state": {"values": committed, "fences": self.fences}})
            self.values[key] = body["value"]
            self.save("buffered")
        else:
            self.values[key] = body["value"]
            self.save()
        self.answer(env, {"type": "write_ok"})

    def timer(self, n):
        pass


if __name__ == "__main__":
    first = sys.stdin.readline()
    if first:
        kind = json.loads(first)["body"]["role"]["kind"]
        node = {"coordinator": Locks, "resource": Store}[kind]()
        sys.stdin = __import__("itertools").chain([first], sys.stdin)
        node.run()
