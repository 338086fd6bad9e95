"""A ZooKeeper semaphore with one lease, on kazoo: `zk.Semaphore(path,
max_leases=1)`, unchanged. kazoo's recipe takes its own lock beside the path
(`<path>-__lock__`, sequential children), counts the path's children, creates
its lease — an ephemeral child named by a random hex id, not sequential —
and lets its lock go. With one lease the lease is the lock: fencesim judges
it from the ensemble's transaction logs (a third recipe, docs/live-your-lock.md).
psycopg 3 for the row.

    python3 semaphore.py plain    # UPDATE ... WHERE id = $3: unsafe under a long pause
    python3 semaphore.py fenced   # ... AND fencing_token < $2: the late write is refused

Per operation: acquire the semaphore, take the lease znode's czxid as the
fencing token (`zk.exists(lease).czxid`, while holding it), read the row,
work, write it back, release (kazoo deletes the lease; gone already is not
an error). The ZooKeeper session timeout is FENCESIM_TTL_MS: a session that
expired (the program was paused longer) took its lease with it.

Pinned: kazoo==2.11.0, psycopg[binary]==3.3.9 (examples/live-clients/install.sh).

Environment as kazoo/worker.py. Optional FENCESIM_SIDE_ACCOUNT=FILE (fencesim
never reads it): {"event":"acquired","op":n,"token":T},
{"event":"write","op":n,"token":T,"rows":R}, {"event":"released","op":n,"deleted":true|false}
(deleted: the lease was still ours, in the session that made it, when it was released).
"""
import json
import os
import sys
import time

import psycopg
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

env = os.environ.get
MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
if MODE not in ("plain", "fenced"):
    sys.exit(f"usage: {sys.argv[0]} plain|fenced")

ZK_HOSTS = env("FENCESIM_ZK_HOSTS", "127.0.0.1:2181")
LOCK_PATH = env("FENCESIM_ZK_LOCK_PATH", "/fencesim/lock-doc")
PG_URL = env("FENCESIM_POSTGRES_URL", "postgresql://postgres@127.0.0.1/postgres")
ME = env("FENCESIM_WORKER_ID", "w")
DOC = int(env("FENCESIM_DOC_ID", "1"))
OPS = int(env("FENCESIM_OPS", "1"))
TTL_MS = int(env("FENCESIM_TTL_MS", "4000"))
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


def take(zk):
    """Acquire the one lease; its znode's czxid, our session, the semaphore."""
    sem = zk.Semaphore(LOCK_PATH, identifier=ME, max_leases=1)
    if not sem.acquire(timeout=ACQUIRE_TIMEOUT_S):
        sys.exit(f"{ME}: could not acquire {LOCK_PATH} in {ACQUIRE_TIMEOUT_S} s")
    stat = zk.exists(sem.create_path)
    if stat is None:
        sys.exit(f"{ME}: acquired, but the lease {sem.create_path} is gone")
    return stat.czxid, zk.client_id[0], sem


def write_document(pg, token):
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
    zk = KazooClient(hosts=ZK_HOSTS, timeout=TTL_MS / 1000)
    zk.start(timeout=15)
    pg = psycopg.connect(PG_URL)
    for op in range(1, OPS + 1):
        token, session, sem = take(zk)
        account(event="acquired", op=op, token=token)
        try:
            rows = write_document(pg, token)
        except psycopg.OperationalError as e:
            print(f"{ME}: the write failed, given up: {e}", file=sys.stderr)
            rows = None
            pg = psycopg.connect(PG_URL)
        account(event="write", op=op, token=token, rows=rows)
        # Still ours only in the session that made it (an expired session
        # took the lease with it; kazoo's release then deletes nothing).
        try:
            now = zk.client_id
            deleted = bool(now is not None and now[0] == session and zk.exists(sem.create_path))
            sem.release()
        except KazooException as e:
            # Woken from a pause longer than its session (seen on a loaded
            # machine): the connection is being re-established or the
            # session is gone, and the lease with it. Nothing left to release.
            print(f"{ME}: release: {e!r}", file=sys.stderr)
            deleted = False
        account(event="released", op=op, deleted=deleted)
    pg.close()
    try:
        zk.stop()
        zk.close()
    except KazooException as e:
        print(f"{ME}: closing the session: {e!r}", file=sys.stderr)


if __name__ == "__main__":
    main()
