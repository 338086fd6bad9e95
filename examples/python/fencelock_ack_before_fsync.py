#!/usr/bin/env python3
"""fencelock.py with a realistic durability bug in the store: group commit.

The store acknowledges a write as soon as it is applied in memory and
written to the page cache, and fsyncs the whole table on a 50 ms timer --
Redis's `appendfsync everysec`, or PostgreSQL with `synchronous_commit =
off`. Throughput goes up; a crash inside the window loses writes that were
already acknowledged. Fencing does not help: the token check is fine, it is
the store's own claim ("write_ok") that is broken.

fencesim finds it when the resource crashes right after acknowledging a
write (examples/python/scenarios/resource-crash-after-ack.toml): the next
read returns the older value, and the checker reports `acked_write_lost`
with the acknowledgement and the read as evidence.
"""

import fencelock

GROUP_COMMIT = 0
GROUP_COMMIT_NS = 50_000_000


class GroupCommitResource(fencelock.Resource):
    def on_init(self, config, recovered):
        super().on_init(config, recovered)
        self.dirty = False

    def commit(self, req):
        # BUG: acknowledged before it is durable.
        self.persist({"rows": self.rows}, durability="buffered")
        self.reply(req, {"type": "write_ok"})
        if not self.dirty:
            self.dirty = True
            self.set_timer(GROUP_COMMIT, GROUP_COMMIT_NS)

    def on_timer(self, timer):
        if timer == GROUP_COMMIT and self.dirty:
            self.dirty = False
            self.durable()


if __name__ == "__main__":
    fencelock.main({"coordinator": fencelock.Coordinator, "resource": GroupCommitResource})
