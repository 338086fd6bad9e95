"""A lock as a team writes it by hand with redis-py, on keys of its own:
invoice 42's lock is `lock:invoice:42`, its fencing counter
`fence:invoice:42` — names fencesim never told it (FENCESIM_LOCK_KEY and
FENCESIM_TOKEN_KEY are not read). fencesim finds them in Redis's own account
(the scenario names the lock `lock:invoice:*`). psycopg 3 for the row.

    python3 worker.py plain    # UPDATE ... WHERE id = $3: unsafe under a long pause
    python3 worker.py fenced   # ... AND fencing_token < $2, token INCRed after the grant
    python3 worker.py plain --per-document   # invoice N = FENCESIM_DOC_ID:
                                             # lock:invoice:N, fence:invoice:N

Per operation: `SET lock:invoice:42 <uuid> NX PX <ttl>` every 5 ms until it
is taken (bounded), `INCR fence:invoice:42`, read the row, work
FENCESIM_WORK_MS, write it back, release with a hand-written Lua
compare-and-delete (`EVAL`; 0: the lease had run out and the key was not
ours, not an error).

Pinned: redis==8.1.0, psycopg[binary]==3.3.9 (examples/live-clients/install.sh).

Environment (set by fencesim; defaults for a manual run): FENCESIM_REDIS_URL,
FENCESIM_POSTGRES_URL, FENCESIM_WORKER_ID, FENCESIM_DOC_ID, FENCESIM_OPS,
FENCESIM_TTL_MS, FENCESIM_WORK_MS. Optional FENCESIM_SIDE_ACCOUNT=FILE: the
program appends its own account as JSON lines (fencesim never reads it):
    {"event":"acquired","op":n,"token":T}
    {"event":"write","op":n,"token":T,"rows":R}      (rows null: the UPDATE failed)
    {"event":"released","op":n,"deleted":true|false}
"""
import json
import os
import sys
import time
import uuid

import psycopg
import redis

env = os.environ.get
MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
PER_DOCUMENT = sys.argv[2:] == ["--per-document"]
if MODE not in ("plain", "fenced") or (sys.argv[2:] and not PER_DOCUMENT):
    sys.exit(f"usage: {sys.argv[0]} plain|fenced [--per-document]")

DOC = int(env("FENCESIM_DOC_ID", "1"))
# One invoice, or one lock per document: invoice N is document N's.
INVOICE = DOC if PER_DOCUMENT else 42
LOCK_KEY = f"lock:invoice:{INVOICE}"
TOKEN_KEY = f"fence:invoice:{INVOICE}"
REDIS_URL = env("FENCESIM_REDIS_URL", "redis://127.0.0.1:6379/")
PG_URL = env("FENCESIM_POSTGRES_URL", "postgresql://postgres@127.0.0.1/postgres")
ME = env("FENCESIM_WORKER_ID", "w")
OPS = int(env("FENCESIM_OPS", "1"))
TTL_MS = int(env("FENCESIM_TTL_MS", "1000"))
WORK_MS = int(env("FENCESIM_WORK_MS", "0"))
ACQUIRE_TIMEOUT_S = max(10.0, 20 * TTL_MS / 1000)

RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0"""

_side = None
if env("FENCESIM_SIDE_ACCOUNT"):
    os.makedirs(os.path.dirname(os.path.abspath(env("FENCESIM_SIDE_ACCOUNT"))), exist_ok=True)
    _side = open(env("FENCESIM_SIDE_ACCOUNT"), "a")


def account(**record):
    if _side is not None:
        _side.write(json.dumps(record, separators=(",", ":")) + "\n")
        _side.flush()


def acquire(r, me):
    deadline = time.monotonic() + ACQUIRE_TIMEOUT_S
    while time.monotonic() < deadline:
        if r.set(LOCK_KEY, me, nx=True, px=TTL_MS):
            return
        time.sleep(0.005)
    sys.exit(f"{ME}: could not take {LOCK_KEY} in {ACQUIRE_TIMEOUT_S} s")


def write_document(pg, token):
    """Read the row, work, write it back; the rows updated (0: refused)."""
    with pg.cursor() as cur:
        cur.execute("SELECT body, fencing_token FROM documents WHERE id = %s", (DOC,))
        body, _current = cur.fetchone()
        time.sleep(WORK_MS / 1000)
        if MODE == "fenced":
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


def main():
    r = redis.Redis.from_url(REDIS_URL)
    pg = psycopg.connect(PG_URL)
    for op in range(1, OPS + 1):
        me = uuid.uuid4().hex
        acquire(r, me)
        token = r.incr(TOKEN_KEY)
        account(event="acquired", op=op, token=token)
        try:
            rows = write_document(pg, token)
        except psycopg.OperationalError as e:
            print(f"{ME}: the write failed, given up: {e}", file=sys.stderr)
            rows = None
            pg = psycopg.connect(PG_URL)
        account(event="write", op=op, token=token, rows=rows)
        deleted = r.eval(RELEASE, 1, LOCK_KEY, me)
        account(event="released", op=op, deleted=deleted == 1)
    pg.close()


if __name__ == "__main__":
    main()
