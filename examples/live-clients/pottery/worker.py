"""pottery's Redlock on one Redis master, on keys of its own: the library
names its key itself — `Redlock(key="invoice")` locks `redlock:invoice` —
and the team's fencing counter is `fence:invoice`; fencesim never told it
either (FENCESIM_LOCK_KEY and FENCESIM_TOKEN_KEY are not read). fencesim
finds both in Redis's own account. psycopg 3 for the row.

    python3 worker.py plain    # UPDATE ... WHERE id = $3: unsafe under a long pause
    python3 worker.py fenced   # ... AND fencing_token < $2, token INCRed after the grant

Per operation: `Redlock.acquire(timeout=…)` (pottery: `SET redlock:invoice
<uuid> NX PX <ttl>` on every master from a thread pool; a failed attempt is
followed by its release script on every master, then a random delay of up
to 200 ms), `INCR fence:invoice`, read the row, work FENCESIM_WORK_MS, write
it back, `Redlock.release()` (its compare-and-delete script by `EVALSHA`;
`ReleaseUnlockedLock` when the lease had run out: not an error).

Pinned: pottery==3.0.1 (mmh3==5.3.1), redis==8.1.0, psycopg[binary]==3.3.9
(examples/live-clients/install.sh).

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

import psycopg
import redis
from pottery import Redlock
from pottery.exceptions import ReleaseUnlockedLock

env = os.environ.get
MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
if MODE not in ("plain", "fenced"):
    sys.exit(f"usage: {sys.argv[0]} plain|fenced")

DOC = int(env("FENCESIM_DOC_ID", "1"))
NAME = "invoice"  # pottery locks redlock:invoice
TOKEN_KEY = f"fence:{NAME}"
REDIS_URL = env("FENCESIM_REDIS_URL", "redis://127.0.0.1:6379/")
PG_URL = env("FENCESIM_POSTGRES_URL", "postgresql://postgres@127.0.0.1/postgres")
ME = env("FENCESIM_WORKER_ID", "w")
OPS = int(env("FENCESIM_OPS", "1"))
TTL_MS = int(env("FENCESIM_TTL_MS", "1000"))
WORK_MS = int(env("FENCESIM_WORK_MS", "0"))
ACQUIRE_TIMEOUT_S = max(10.0, 20 * TTL_MS / 1000)

_side = None
if env("FENCESIM_SIDE_ACCOUNT"):
    os.makedirs(os.path.dirname(os.path.abspath(env("FENCESIM_SIDE_ACCOUNT"))), exist_ok=True)
    _side = open(env("FENCESIM_SIDE_ACCOUNT"), "a")


def account(**record):
    if _side is not None:
        _side.write(json.dumps(record, separators=(",", ":")) + "\n")
        _side.flush()


def acquire(lock):
    if not lock.acquire(timeout=ACQUIRE_TIMEOUT_S):
        sys.exit(f"{ME}: could not take {lock.key} in {ACQUIRE_TIMEOUT_S} s")


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
    lock = Redlock(key=NAME, masters={r}, auto_release_time=TTL_MS / 1000)
    for op in range(1, OPS + 1):
        acquire(lock)
        token = r.incr(TOKEN_KEY)
        account(event="acquired", op=op, token=token)
        try:
            rows = write_document(pg, token)
        except psycopg.OperationalError as e:
            print(f"{ME}: the write failed, given up: {e}", file=sys.stderr)
            rows = None
            pg = psycopg.connect(PG_URL)
        account(event="write", op=op, token=token, rows=rows)
        try:
            lock.release()
            deleted = True
        except ReleaseUnlockedLock:
            deleted = False
        account(event="released", op=op, deleted=deleted)
    pg.close()


if __name__ == "__main__":
    main()
