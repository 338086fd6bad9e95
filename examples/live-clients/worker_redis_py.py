"""A lock client as an application would write it: redis-py's Lock in front
of a PostgreSQL row. fencesim runs it unchanged (`fencesim live
--worker-cmd ...`); it reports nothing to fencesim, which watches its
connections instead.

    python3 worker_redis_py.py            # plain UPDATE: unsafe under a long pause
    python3 worker_redis_py.py --fenced   # token from INCR, the article's fenced UPDATE

Settings come from the environment fencesim sets (defaults for a manual run):
FENCESIM_REDIS_URL, FENCESIM_POSTGRES_URL, FENCESIM_WORKER_ID, FENCESIM_LOCK_KEY,
FENCESIM_TOKEN_KEY, FENCESIM_DOC_ID, FENCESIM_OPS, FENCESIM_TTL_MS.
Tested with redis-py 8.1.0 and psycopg 3.3.9 (Python 3.11).
"""
import os
import sys

import psycopg
import redis

env = os.environ.get
fenced = "--fenced" in sys.argv
r = redis.Redis.from_url(env("FENCESIM_REDIS_URL", "redis://127.0.0.1:6379/"))
pg_url = env("FENCESIM_POSTGRES_URL", "postgresql://postgres@127.0.0.1/postgres")
pg = psycopg.connect(pg_url)
doc = int(env("FENCESIM_DOC_ID", "1"))
ttl_s = int(env("FENCESIM_TTL_MS", "1000")) / 1000

for _ in range(int(env("FENCESIM_OPS", "1"))):
    # redis-py's Lock: SET key token NX PX ttl; released with a Lua compare-and-delete.
    lock = r.lock(env("FENCESIM_LOCK_KEY", "lock:doc"), timeout=ttl_s, sleep=0.005, blocking_timeout=10)
    if not lock.acquire():
        sys.exit("could not take the lock")
    token = r.incr(env("FENCESIM_TOKEN_KEY", "fence:doc")) if fenced else None
    try:
        with pg.cursor() as cur:
            cur.execute("SELECT body FROM documents WHERE id = %s", (doc,))
            (body,) = cur.fetchone()
            if fenced:
                # The article's fenced write: refused unless this token is newer.
                cur.execute(
                    "UPDATE documents SET body = %s, fencing_token = %s WHERE id = %s AND fencing_token < %s",
                    (body + 1, token, doc, token),
                )
            else:
                cur.execute("UPDATE documents SET body = %s WHERE id = %s", (body + 1, doc))
        pg.commit()
    except psycopg.OperationalError as e:
        # The connection was lost (cut, reset): this write is given up.
        print(f"the write failed, given up: {e}", file=sys.stderr)
        pg = psycopg.connect(pg_url)
    try:
        lock.release()
    except redis.exceptions.LockNotOwnedError:
        pass  # the lease expired while we worked; redis-py refuses to delete another's lock
