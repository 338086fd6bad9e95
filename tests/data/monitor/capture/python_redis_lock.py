"""MONITOR capture: python-redis-lock 4.0.1 (redis_lock.Lock(conn, name, expire=...)).
Actors A, B, C are separate redis.Redis clients; each sends ECHO actor:<name> first."""
import sys
import threading
import time

import redis
import redis_lock

url = sys.argv[1]
A, B, C = (redis.Redis.from_url(url) for _ in range(3))
for name, c in (("A", A), ("B", B), ("C", C)):
    c.echo(f"actor:{name}")

la = redis_lock.Lock(A, "doc", expire=1)
print("A acquire (free):", la.acquire())
lb = redis_lock.Lock(B, "doc", expire=1)
got = {}
t = threading.Thread(target=lambda: got.setdefault("B", lb.acquire(blocking=True, timeout=1)))
t.start()  # B: SET NX EX fails, then BLPOP lock-signal:doc 1
time.sleep(0.2)
la.extend()  # extend script (EXPIRE lock:doc 1)
print("A extend: ok")
la.release()  # unlock script: DEL signal, LPUSH signal, PEXPIRE signal, DEL lock
print("A release (own, pushes the signal)")
t.join()
print("B acquire (woken by the signal):", got["B"])
time.sleep(1.2)  # B's lease (EX 1) runs out
lc = redis_lock.Lock(C, "doc", expire=1)
print("C acquire (B's lease expired):", lc.acquire(blocking=False))
try:
    lb.release()
    print("B release after expiry: deleted")
except redis_lock.NotAcquired as e:
    print("B release after expiry: NotAcquired", e)
try:
    lb.extend()
except redis_lock.NotAcquired as e:
    print("B extend after expiry: NotAcquired", e)
lc.release()
print("C release: ok")
