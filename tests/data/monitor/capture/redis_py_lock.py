"""MONITOR capture: redis-py 8.1.0 Lock (r.lock(key, timeout=...)).
Actors A, B, C are separate redis.Redis clients (own connections); each first
sends ECHO actor:<name> so its address can be told in the capture."""
import sys
import time

import redis
from redis.exceptions import LockNotOwnedError

url = sys.argv[1]
A, B, C = (redis.Redis.from_url(url) for _ in range(3))
for name, c in (("A", A), ("B", B), ("C", C)):
    c.echo(f"actor:{name}")

la = A.lock("lock:doc", timeout=0.3, sleep=0.05, blocking_timeout=0.2)
print("A acquire (free):", la.acquire())
A.incr("fence:doc")
lb = B.lock("lock:doc", timeout=0.3, sleep=0.05, blocking_timeout=0.12)
print("B acquire (held by A, retries every 50 ms, gives up after 120 ms):", lb.acquire())
print("A extend by 0.3 s:", la.extend(0.3))
print("A release (own):", la.release())
print("B acquire (free):", lb.acquire())
time.sleep(0.4)  # B's lease runs out
lc = C.lock("lock:doc", timeout=0.3)
print("C acquire (B's lease expired):", lc.acquire())
try:
    lb.release()
    print("B release after expiry: deleted")
except LockNotOwnedError as e:
    print("B release after expiry: LockNotOwnedError", e)
print("C release:", lc.release())
