#!/usr/bin/env python3
"""Stores for the store-claims tests of `fencesim validate`
(tests/it/validate/claims.rs), each beside fencelock.py's coordinator.

    stores.py MODE

idempotent           correct: a write whose op it already applied is a
                     duplicate; answered write_ok with applied = false,
                     the row untouched (checked before the fence).
idempotent_unclaimed the same store, but its write_ok does not say
                     applied = false (the harness must take it as applied).
lying_idempotent     says applied = false, but applies the duplicate again.
equal_token          ignores `strict`: accepts a token equal to the fence.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fencelock  # noqa: E402

MODE = sys.argv[1]


class Store(fencelock.Resource):
    def on_init(self, config, recovered):
        super().on_init(config, recovered)
        if MODE == "equal_token":
            self.strict = False  # BUG: the configured rule is ignored
        self.applied = set(recovered["applied"]) if recovered and "applied" in recovered else set()

    def durable(self):
        self.persist({"rows": self.rows, "applied": sorted(self.applied)})

    def on_write(self, req):
        body = req["body"]
        if MODE != "equal_token" and body["op"] in self.applied:
            if MODE == "lying_idempotent":
                self.row(body["key"])["value"] = body["value"]  # BUG: applied again
                self.durable()
            answer = {"type": "write_ok"}
            if MODE != "idempotent_unclaimed":
                answer["applied"] = False
            return self.reply(req, answer)
        super().on_write(req)

    def commit(self, req):
        self.applied.add(req["body"]["op"])
        super().commit(req)


if __name__ == "__main__":
    fencelock.main({"coordinator": fencelock.Coordinator, "resource": Store})
