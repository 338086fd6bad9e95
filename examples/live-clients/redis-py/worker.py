"""A lock client as a Python team would write it: redis-py's `Lock`
(`r.lock(key, timeout=...)`) in front of a PostgreSQL row, psycopg 3 for the
row. fencesim runs it unchanged (`fencesim live --worker-cmd ...`) and watches
its connections; the program reports nothing to fencesim.

    python3 worker.py plain    # UPDATE ... WHERE id = $3: unsafe under a long pause
    python3 worker.py fenced   # ... AND fencing_token < $2, token INCRed after the grant
    python3 worker.py fenced-held  # the same UPDATE, token drawn only while the lock is ours

Per operation: take the lock (redis-py retries `SET key token NX PX ttl` every
`sleep` s until `blocking_timeout`), take a fencing token with
`INCR $FENCESIM_TOKEN_KEY` (`fenced-held`: with one script that INCRs only
while the lock key still holds this Lock's value, else the lock is taken
again — a token drawn after the grant by a plain INCR is not one: paused
between the two past the lease, the program draws a token newer than the
next holder's), read the row, work `FENCESIM_WORK_MS`, write it
back, release (redis-py's Lua compare-and-delete, `EVALSHA`). A release
refused because the lease ran out and someone else holds the lock
(`LockNotOwnedError`) is not an error for the program.

Pinned: redis==8.1.0, psycopg[binary]==3.3.9 (examples/live-clients/install.sh).

Environment (set by fencesim; defaults for a manual run): FENCESIM_REDIS_URL,
FENCESIM_POSTGRES_URL, FENCESIM_WORKER_ID, FENCESIM_LOCK_KEY,
FENCESIM_TOKEN_KEY, FENCESIM_DOC_ID, FENCESIM_OPS, FENCESIM_TTL_MS,
FENCESIM_WORK_MS. Optional FENCESIM_SIDE_ACCOUNT=FILE: the program appends its
own account as JSON lines (fencesim never reads it; a test compares it with
the decoded history):
    {"event":"acquired","op":n,"token":T}
    {"event":"write","op":n,"token":T,"rows":R}      (rows null: the UPDATE failed)
    {"event":"released","op":n,"deleted":true|false}
"""
import json
import os
import sys
import time

import psycopg
import redis
from redis.exceptions import LockError, LockNotOwnedError

env = os.environ.get
MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
if MODE not in ("plain", "fenced", "fenced-held"):
    sys.exit(f"usage: {sys.argv[0]} plain|fenced|fenced-held")

REDIS_URL = env("FENCESIM_REDIS_URL", "redis://127.0.0.1:6379/")
PG_URL = env("FENCESIM_POSTGRES_URL", "postgresql://postgres@127.0.0.1/postgres")
ME = env("FENCESIM_WORKER_ID", "w")
LOCK_KEY = env("FENCESIM_LOCK_KEY", "lock:doc")
TOKEN_KEY = env("FENCESIM_TOKEN_KEY", "fence:doc")
DOC = int(env("FENCESIM_DOC_ID", "1"))
OPS = int(env("FENCESIM_OPS", "1"))
TTL_MS = int(env("FENCESIM_TTL_MS", "1000"))
WORK_MS = int(env("FENCESIM_WORK_MS", "0"))
# Give up taking the lock after this long (a bounded retry, as a service would).
ACQUIRE_TIMEOUT_S = max(10.0, 20 * TTL_MS / 1000)

_side = None
if env("FENCESIM_SIDE_ACCOUNT"):
    os.makedirs(os.path.dirname(os.path.abspath(env("FENCESIM_SIDE_ACCOUNT"))), exist_ok=True)
    _side = open(env("FENCESIM_SIDE_ACCOUNT"), "a")


def account(**record):
    if _side is not None:
        _side.write(json.dumps(record, separators=(",", ":")) + "\n")
        _side.flush()


def write_document(pg, token):
    """Read the row, work, write it back; the rows updated (0: refused)."""
    with pg.cursor() as cur:
        cur.execute("SELECT body, fencing_token FROM documents WHERE id = %s", (DOC,))
        body, _current = cur.fetchone()
        time.sleep(WORK_MS / 1000)
        if MODE != "plain":
            cur.execute(
                "UPDATE documents SET body = %s, fencing_token = %s WHERE id = %s AND fencing_token < %s",
                (body + 1, token, DOC, token),
            )
        else:
            cur.execute(
                "UPDATE documents SET body = %s, fencing_token = %s WHERE id = %s",
                (body + 1, token, DOC),
            )
        rows = cur.rowcount
    pg.commit()
    return rows


# The token only while the lock key still holds our Lock's value.
TOKEN_IF_HELD = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('incr', KEYS[2]) end
return false"""


def lock_and_token(r):
    """Take the lock and a token; with `fenced-held`, one drawn under it."""
    while True:
        lock = r.lock(LOCK_KEY, timeout=TTL_MS / 1000, sleep=0.005, blocking_timeout=ACQUIRE_TIMEOUT_S)
        if not lock.acquire():
            sys.exit(f"{ME}: could not take the lock in {ACQUIRE_TIMEOUT_S} s")
        if MODE != "fenced-held":
            return lock, r.incr(TOKEN_KEY)
        token = r.eval(TOKEN_IF_HELD, 2, LOCK_KEY, TOKEN_KEY, lock.local.token)
        if token is not None:
            return lock, token
        # The lease ran out before the token was drawn: the lock is someone
        # else's (or nobody's); take it again.


def main():
    r = redis.Redis.from_url(REDIS_URL)
    pg = psycopg.connect(PG_URL)
    for op in range(1, OPS + 1):
        lock, token = lock_and_token(r)
        account(event="acquired", op=op, token=token)
        try:
            rows = write_document(pg, token)
        except psycopg.OperationalError as e:
            # The connection was lost (cut, reset): this write is given up.
            print(f"{ME}: the write failed, given up: {e}", file=sys.stderr)
            rows = None
            pg = psycopg.connect(PG_URL)
        account(event="write", op=op, token=token, rows=rows)
        try:
            lock.release()
            deleted = True
        except LockNotOwnedError:
            # The lease ran out while we worked and the key is gone or another's:
            # redis-py's compare-and-delete removed nothing.
            deleted = False
        except LockError as e:
            print(f"{ME}: release failed: {e}", file=sys.stderr)
            deleted = False
        account(event="released", op=op, deleted=deleted)
    pg.close()
    r.close()


if __name__ == "__main__":
    main()
