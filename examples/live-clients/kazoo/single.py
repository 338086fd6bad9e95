"""The hand-rolled ZooKeeper lock, on kazoo: one ephemeral znode at the
lock's path itself (`zk.create(path, ephemeral=True)`, retried every 10 ms
while it exists), not kazoo's `Lock` recipe of sequential children. psycopg
3 for the row. fencesim runs it unchanged and judges it from the ensemble's
transaction logs (a second recipe: the single ephemeral znode at the path).

    python3 single.py plain    # UPDATE ... WHERE id = $3: unsafe under a long pause
    python3 single.py fenced   # ... AND fencing_token < $2: the late write is refused

Per operation: create the znode (its czxid is the fencing token: the zxid
of its create, from the create's own Stat), read the row, work, write it
back, delete the znode. The ZooKeeper session timeout is FENCESIM_TTL_MS: a
session that expired (the program was paused longer) took the znode with it;
kazoo opens a new session and the delete finds nothing (not an error).

Pinned: kazoo==2.11.0, psycopg[binary]==3.3.9 (examples/live-clients/install.sh).

Environment as kazoo/worker.py. Optional FENCESIM_SIDE_ACCOUNT=FILE (fencesim
never reads it): {"event":"acquired","op":n,"token":T},
{"event":"write","op":n,"token":T,"rows":R}, {"event":"released","op":n,"deleted":true|false}.
"""
import json
import os
import sys
import time

import psycopg
from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)

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
    """Create the lock's znode, ephemeral; its czxid and our session."""
    deadline = time.monotonic() + ACQUIRE_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            _, stat = zk.create(LOCK_PATH, ME.encode(), ephemeral=True, makepath=True, include_data=True)
            return stat.czxid, zk.client_id[0]
        except NodeExistsError:
            time.sleep(0.01)
        except ConnectionLoss:
            # The create may have happened before the connection dropped (a
            # loaded machine, a short session timeout): the znode is ours
            # iff our session owns it. kazoo reconnects to the same session.
            time.sleep(0.01)
            try:
                stat = zk.exists(LOCK_PATH)
            except ConnectionLoss:
                continue
            if stat is not None and zk.client_id and stat.ephemeralOwner == zk.client_id[0]:
                return stat.czxid, zk.client_id[0]
    sys.exit(f"{ME}: could not create {LOCK_PATH} in {ACQUIRE_TIMEOUT_S} s")


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
        token, session = take(zk)
        account(event="acquired", op=op, token=token)
        try:
            rows = write_document(pg, token)
        except psycopg.OperationalError as e:
            print(f"{ME}: the write failed, given up: {e}", file=sys.stderr)
            rows = None
            pg = psycopg.connect(PG_URL)
        account(event="write", op=op, token=token, rows=rows)
        # Ours only in the session that created it (a new session after an
        # expiry finds the next holder's znode, or none: never delete that).
        deleted = False
        now = zk.client_id
        if now is not None and now[0] == session:
            try:
                zk.delete(LOCK_PATH)
                deleted = True
            except NoNodeError:
                pass
            except (ConnectionLoss, SessionExpiredError) as e:
                # Woken from a pause longer than its session: the
                # connection is being re-established or the session is
                # gone, and the znode with it. Nothing left to release.
                print(f"{ME}: release: {e!r}", file=sys.stderr)
        account(event="released", op=op, deleted=deleted)
    pg.close()
    try:
        zk.stop()
        zk.close()
    except KazooException as e:
        print(f"{ME}: closing the session: {e!r}", file=sys.stderr)


if __name__ == "__main__":
    main()
