"""A lock client as a Python team would write it on ZooKeeper: kazoo's
`Lock` recipe (`zk.Lock(path)`: an ephemeral sequential child of the lock's
znode; the lowest child holds the lock, each waiter watches the one before
it) in front of a PostgreSQL row, psycopg 3 for the row. fencesim runs it
unchanged (`fencesim live --worker-cmd ...`) and watches its connections; the
program reports nothing to fencesim.

    python3 worker.py plain    # UPDATE ... WHERE id = $3: unsafe under a long pause
    python3 worker.py fenced   # ... AND fencing_token < $2: the late write is refused
    python3 worker.py plain --path /app/locks/invoice   # the program's own lock path

`--path PATH`: the lock's znode as a team's code has it, whatever fencesim's
FENCESIM_ZK_LOCK_PATH says (the ensemble's account finds it: the parent of the
ephemeral sequential znodes the workers create).

Per operation: take the lock (kazoo's `Lock.acquire`), take the fencing token
as the czxid of the lock's own znode (`zk.exists(path + "/" + lock.node)`: the
zxid of the transaction that created it, which grows with every create), read
the row, work `FENCESIM_WORK_MS`, write it back, release (kazoo deletes its
znode). The ZooKeeper session timeout is FENCESIM_TTL_MS: a session that
expired (the program was paused longer) took the znode with it; kazoo then
opens a new session, and its release deletes nothing (it still says True):
not an error for the program.

Pinned: kazoo==2.11.0, psycopg[binary]==3.3.9 (examples/live-clients/install.sh).

Environment (set by fencesim; defaults for a manual run): FENCESIM_ZK_HOSTS
(host:port,... — one per ensemble member), FENCESIM_ZK_LOCK_PATH,
FENCESIM_POSTGRES_URL, FENCESIM_WORKER_ID, FENCESIM_DOC_ID, FENCESIM_OPS,
FENCESIM_TTL_MS, FENCESIM_WORK_MS. Optional FENCESIM_SIDE_ACCOUNT=FILE: the
program appends its own account as JSON lines (fencesim never reads it; a
test compares it with the decoded history):
    {"event":"acquired","op":n,"token":T,"znode":"...","session":S,"waited_ms":W}
    {"event":"write","op":n,"token":T,"rows":R}      (rows null: the UPDATE failed)
    {"event":"released","op":n,"deleted":true|false}
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
OWN_PATH = sys.argv[3] if len(sys.argv) == 4 and sys.argv[2] == "--path" else None
if MODE not in ("plain", "fenced") or len(sys.argv) not in (1, 2, 4) or (
    len(sys.argv) == 4 and OWN_PATH is None
):
    sys.exit(f"usage: {sys.argv[0]} plain|fenced [--path PATH]")

ZK_HOSTS = env("FENCESIM_ZK_HOSTS", "127.0.0.1:2181")
LOCK_PATH = OWN_PATH or env("FENCESIM_ZK_LOCK_PATH", "/fencesim/lock-doc")
PG_URL = env("FENCESIM_POSTGRES_URL", "postgresql://postgres@127.0.0.1/postgres")
ME = env("FENCESIM_WORKER_ID", "w")
DOC = int(env("FENCESIM_DOC_ID", "1"))
OPS = int(env("FENCESIM_OPS", "1"))
TTL_MS = int(env("FENCESIM_TTL_MS", "4000"))
WORK_MS = int(env("FENCESIM_WORK_MS", "0"))
# Give up taking the lock after this long (a bounded wait, as a service would).
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
        lock = zk.Lock(LOCK_PATH, ME)
        asked = time.monotonic()
        if not lock.acquire(timeout=ACQUIRE_TIMEOUT_S):
            sys.exit(f"{ME}: could not take the lock in {ACQUIRE_TIMEOUT_S} s")
        znode = f"{LOCK_PATH}/{lock.node}"
        stat = zk.exists(znode)
        if stat is None:
            sys.exit(f"{ME}: {znode} is gone right after kazoo said we hold the lock")
        token = stat.czxid
        session = zk.client_id[0]
        waited_ms = round((time.monotonic() - asked) * 1000, 1)
        account(event="acquired", op=op, token=token, znode=znode, session=session, waited_ms=waited_ms)
        try:
            rows = write_document(pg, token)
        except psycopg.OperationalError as e:
            # The connection was lost (cut, reset): this write is given up.
            print(f"{ME}: the write failed, given up: {e}", file=sys.stderr)
            rows = None
            pg = psycopg.connect(PG_URL)
        account(event="write", op=op, token=token, rows=rows)
        try:
            released = bool(lock.release())
        except KazooException as e:
            print(f"{ME}: release failed: {e!r}", file=sys.stderr)
            released = False
        # kazoo says True also when the znode was already gone: after our
        # session expired (we were paused longer than its timeout) kazoo
        # opened a new session, and the server had removed the old one's
        # znode. Only in the session that created it did the delete delete it.
        now = zk.client_id
        deleted = released and now is not None and now[0] == session
        if released and not deleted:
            print(f"{ME}: our session {session:#x} expired; its znode was gone before the release", file=sys.stderr)
        account(event="released", op=op, deleted=deleted)
    pg.close()
    try:
        zk.stop()
        zk.close()
    except KazooException as e:
        print(f"{ME}: closing the session: {e!r}", file=sys.stderr)


if __name__ == "__main__":
    main()
