"""A lock client as a Python team would write it with python-redis-lock
(`redis_lock.Lock(conn, name, expire=...)`) in front of a PostgreSQL row,
psycopg 3 for the row. fencesim runs it unchanged (`fencesim live
--worker-cmd ...`) and watches its connections; the program reports nothing
to fencesim.

    python3 worker.py plain    # UPDATE ... WHERE id = $3: unsafe under a long pause
    python3 worker.py fenced   # ... AND fencing_token < $2, token INCRed after the grant
    python3 worker.py fenced-held  # the same UPDATE, token drawn only while the lock is ours
    python3 worker.py plain --name invoice   # the program's own lock name (below)

`--name NAME`: the lock's name as a team's code has it, whatever fencesim
says — the library's key is then `lock:NAME` and the token counter
`fence:NAME` (FENCESIM_LOCK_KEY and FENCESIM_TOKEN_KEY are not read): the
keys fencesim finds in Redis's own account.

python-redis-lock names its key `lock:` + name and its signal list
`lock-signal:` + name. With fencesim's FENCESIM_LOCK_KEY=lock:doc the name is
`doc`, so the library's key is exactly `lock:doc` (a key without the `lock:`
prefix cannot be produced: the library then uses `lock:<key>`, printed on
stderr). It takes the lock with `SET lock:doc <id> NX EX <s>`; while the lock
is busy it waits on `BLPOP lock-signal:doc <expire>` and tries again; it
releases with a two-key compare-and-delete script (`EVALSHA`, keys lock:doc and
lock-signal:doc) that deletes the lock and pushes a wake-up on the signal list.
Its expiry is in whole seconds: FENCESIM_TTL_MS is rounded up to a second
(a 300 ms TTL becomes EX 1).

Per operation: lock, `INCR $FENCESIM_TOKEN_KEY` (`fenced-held`: one script
that INCRs only while the lock key still holds this Lock's id, else the lock
is taken again; a plain INCR after the grant is not a fencing token), read the row, work
`FENCESIM_WORK_MS`, write it back, release. A release refused because the
lease ran out (`NotAcquired`) is not an error for the program.

Pinned: python-redis-lock==4.0.1, redis==8.1.0, psycopg[binary]==3.3.9
(examples/live-clients/install.sh).

Environment (set by fencesim; defaults for a manual run): FENCESIM_REDIS_URL,
FENCESIM_POSTGRES_URL, FENCESIM_WORKER_ID, FENCESIM_LOCK_KEY,
FENCESIM_TOKEN_KEY, FENCESIM_DOC_ID, FENCESIM_OPS, FENCESIM_TTL_MS,
FENCESIM_WORK_MS. Optional FENCESIM_SIDE_ACCOUNT=FILE: the program appends its
own account as JSON lines (fencesim never reads it):
    {"event":"acquired","op":n,"token":T}
    {"event":"write","op":n,"token":T,"rows":R}      (rows null: the UPDATE failed)
    {"event":"released","op":n,"deleted":true|false}
"""
import json
import math
import os
import sys
import time

import psycopg
import redis
import redis_lock

env = os.environ.get
MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
OWN_NAME = sys.argv[3] if len(sys.argv) == 4 and sys.argv[2] == "--name" else None
if MODE not in ("plain", "fenced", "fenced-held") or len(sys.argv) not in (1, 2, 4) or (
    len(sys.argv) == 4 and OWN_NAME is None
):
    sys.exit(f"usage: {sys.argv[0]} plain|fenced|fenced-held [--name NAME]")

REDIS_URL = env("FENCESIM_REDIS_URL", "redis://127.0.0.1:6379/")
PG_URL = env("FENCESIM_POSTGRES_URL", "postgresql://postgres@127.0.0.1/postgres")
ME = env("FENCESIM_WORKER_ID", "w")
LOCK_KEY = env("FENCESIM_LOCK_KEY", "lock:doc")
TOKEN_KEY = env("FENCESIM_TOKEN_KEY", "fence:doc")
DOC = int(env("FENCESIM_DOC_ID", "1"))
OPS = int(env("FENCESIM_OPS", "1"))
TTL_MS = int(env("FENCESIM_TTL_MS", "1000"))
WORK_MS = int(env("FENCESIM_WORK_MS", "0"))
# python-redis-lock's expire is whole seconds (0 would mean "never expires").
EXPIRE_S = max(1, math.ceil(TTL_MS / 1000))
ACQUIRE_TIMEOUT_S = max(10.0, 20 * TTL_MS / 1000)

if OWN_NAME is not None:
    LOCK_NAME, TOKEN_KEY = OWN_NAME, "fence:" + OWN_NAME
elif LOCK_KEY.startswith("lock:"):
    LOCK_NAME = LOCK_KEY[len("lock:"):]
else:
    LOCK_NAME = LOCK_KEY
    print(f"{ME}: python-redis-lock will use the key lock:{LOCK_KEY}, not {LOCK_KEY}", file=sys.stderr)

_side = None
if env("FENCESIM_SIDE_ACCOUNT"):
    os.makedirs(os.path.dirname(os.path.abspath(env("FENCESIM_SIDE_ACCOUNT"))), exist_ok=True)
    _side = open(env("FENCESIM_SIDE_ACCOUNT"), "a")


def account(**record):
    if _side is not None:
        _side.write(json.dumps(record, separators=(",", ":")) + "\n")
        _side.flush()


def take(lock):
    """Block until the lock is ours; bounded by ACQUIRE_TIMEOUT_S."""
    deadline = time.monotonic() + ACQUIRE_TIMEOUT_S
    while time.monotonic() < deadline:
        # One round: SET NX EX; if busy, BLPOP on the signal list for up to
        # `timeout` s (woken early by a release), then one more SET NX EX.
        if lock.acquire(blocking=True, timeout=EXPIRE_S):
            return
    sys.exit(f"{ME}: could not take the lock in {ACQUIRE_TIMEOUT_S} s")


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


# The token only while the lock key still holds our Lock's id.
TOKEN_IF_HELD = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('incr', KEYS[2]) end
return false"""


def lock_and_token(r):
    """Take the lock and a token; with `fenced-held`, one drawn under it."""
    while True:
        lock = redis_lock.Lock(r, LOCK_NAME, expire=EXPIRE_S)
        take(lock)
        if MODE != "fenced-held":
            return lock, r.incr(TOKEN_KEY)
        token = r.eval(TOKEN_IF_HELD, 2, "lock:" + LOCK_NAME, TOKEN_KEY, lock.id)
        if token is not None:
            return lock, token
        # The lease ran out before the token was drawn: take the lock again.


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
        except redis_lock.NotAcquired:
            # The lease ran out while we worked: the script found another id
            # (or none) under the key and deleted nothing.
            deleted = False
        account(event="released", op=op, deleted=deleted)
    pg.close()
    r.close()


if __name__ == "__main__":
    main()
