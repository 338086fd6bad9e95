"""MONITOR capture: lock shapes beyond a bare SET NX PX, sent with redis-py 8.1.0.
Actor A sends everything except where noted (B holds the lock for the failed
script case); each sends ECHO actor:<name> first."""
import sys
import time

import redis

url = sys.argv[1]
A, B = redis.Redis.from_url(url), redis.Redis.from_url(url)
A.echo("actor:A")
B.echo("actor:B")

A.echo("case:pipeline-multi-exec")
p = A.pipeline(transaction=True)
p.set("lock:doc", "a1", nx=True, px=100)
p.incr("fence:doc")
print("pipeline MULTI/EXEC:", p.execute())
A.echo("case:pipeline-multi-exec-held")  # the lock is still held: SET NX fails inside EXEC
p = A.pipeline(transaction=True)
p.set("lock:doc", "a2", nx=True, px=100)
p.incr("fence:doc")
print("pipeline MULTI/EXEC, lock held:", p.execute())
A.delete("lock:doc")

A.echo("case:pipeline-no-transaction")
p = A.pipeline(transaction=False)
p.set("lock:doc", "a3", nx=True, px=100)
p.incr("fence:doc")
print("pipeline without MULTI:", p.execute())
A.delete("lock:doc")

LOCK_AND_TOKEN = (
    "if redis.call('set',KEYS[1],ARGV[1],'NX','PX',ARGV[2]) then "
    "return redis.call('incr',KEYS[2]) end return nil"
)
A.echo("case:eval-lock-and-token")
print("EVAL lock+token (free):", A.eval(LOCK_AND_TOKEN, 2, "lock:doc", "fence:doc", "v", 100))
B.echo("case:eval-lock-and-token-held")
print("EVAL lock+token by B (held by A):", B.eval(LOCK_AND_TOKEN, 2, "lock:doc", "fence:doc", "w", 100))

A.echo("case:eval-read-only")
print("EVAL pttl (read-only):", A.eval("return redis.call('pttl',KEYS[1])", 1, "lock:doc"))
A.delete("lock:doc")

A.echo("case:evalsha-noscript-retry")  # redis-py Script: EVALSHA, NOSCRIPT, SCRIPT LOAD, EVALSHA
take = A.register_script(LOCK_AND_TOKEN)
print("registered script (EVALSHA first):", take(keys=["lock:doc", "fence:doc"], args=["s", 100]))
A.delete("lock:doc")

A.echo("case:setnx-pexpire")
print("SETNX:", A.setnx("lock:doc", "n1"), "PEXPIRE:", A.pexpire("lock:doc", 100))
print("SETNX again (held):", A.setnx("lock:doc", "n2"))
A.delete("lock:doc")

A.echo("case:set-pxat")
pxat = int(time.time() * 1000) + 100
print("SET NX PXAT:", A.set("lock:doc", "p1", nx=True, pxat=pxat))
A.echo("case:set-exat-keepttl-get")
print("SET XX GET KEEPTTL (renew value):", A.execute_command("SET", "lock:doc", "p2", "XX", "KEEPTTL", "GET"))
A.delete("lock:doc")

A.echo("case:fcall")
A.execute_command(
    "FUNCTION", "LOAD", "REPLACE",
    "#!lua name=locklib\n"
    "redis.register_function('take', function(keys, args) "
    "if redis.call('set', keys[1], args[1], 'NX', 'PX', args[2]) then return redis.call('incr', keys[2]) end "
    "return nil end)\n"
    "redis.register_function{function_name='ttl_left', callback=function(keys) return redis.call('pttl', keys[1]) end, "
    "flags={'no-writes'}}",
)
print("FCALL take:", A.execute_command("FCALL", "take", 2, "lock:doc", "fence:doc", "f1", 100))
print("FCALL take (held):", B.execute_command("FCALL", "take", 2, "lock:doc", "fence:doc", "f2", 100))
print("FCALL_RO ttl_left:", A.execute_command("FCALL_RO", "ttl_left", 1, "lock:doc"))

A.echo("case:expiry")
time.sleep(0.15)  # the FCALL's lock expires (no command shows it)
print("GET after expiry:", A.get("lock:doc"))
A.echo("case:eval-error")
try:
    A.eval("redis.call('set',KEYS[1],'x','NX','PX',100); return redis.call('incr',KEYS[1])", 1, "lock:doc")
except redis.ResponseError as e:
    print("EVAL with an error after the SET:", e)
print("GET after the failed script (the SET stays):", A.get("lock:doc"), A.pttl("lock:doc"))
A.delete("lock:doc")
A.echo("case:multi-exec-discard")
p = A.pipeline(transaction=True)
p.set("lock:doc", "d1", nx=True, px=100)
p.execute_command("NOSUCHCOMMAND")
try:
    p.execute()
except redis.ResponseError as e:
    print("MULTI with a bad command (EXECABORT):", e)
print("GET after EXECABORT:", A.get("lock:doc"))

A.echo("case:multi-queued-slowly")  # MULTI, SET queued, 50 ms, INCR queued, 50 ms, EXEC
conn = A.connection_pool.get_connection()
try:
    for cmd in (("MULTI",), ("SET", "lock:doc", "q1", "NX", "PX", "100"), ("INCR", "fence:doc"), ("EXEC",)):
        conn.send_command(*cmd)
        print(cmd[0], "->", conn.read_response())
        time.sleep(0.05)
finally:
    A.connection_pool.release(conn)
A.echo("case:end")
