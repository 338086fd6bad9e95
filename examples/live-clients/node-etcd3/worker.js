// A lock client as a Node team would write it: the `etcd3` package's Lock
// (a lease, then a transaction `if create_revision(key) == 0 then put(key,
// lease)`; released by revoking the lease), node-postgres for the row.
// fencesim runs it unchanged (`fencesim live --worker-cmd ...`) and watches
// its connections; the program reports nothing to fencesim.
//
//     node worker.js plain    # UPDATE ... WHERE id = $3: unsafe under a long pause
//     node worker.js fenced   # ... AND fencing_token < $2: the late write is refused
//
// etcd3's acquire() fails fast when the key exists (EtcdLockFailedError,
// after revoking the lease it granted for the attempt): the program retries
// every RETRY_DELAY_MS until it gets the lock. The fencing token is the lock
// key's create revision, read with a get after acquiring (etcd's own
// revision counter: a later holder's key is always created at a higher one).
// The lease is kept alive by etcd3 (a keep-alive every TTL/3 on a stream of
// the same connection): a paused program stops renewing it and etcd's lessor
// revokes it, deleting the key.
//
// Pinned (package-lock.json, `npm ci`): etcd3 1.1.2 (@grpc/grpc-js), pg 8.23.1.
//
// Environment (set by fencesim; defaults for a manual run):
// FENCESIM_ETCD_ENDPOINTS (comma-separated http://host:port),
// FENCESIM_ETCD_LOCK (the lock's key), FENCESIM_POSTGRES_URL,
// FENCESIM_WORKER_ID, FENCESIM_DOC_ID, FENCESIM_OPS, FENCESIM_TTL_MS (the
// lease TTL; etcd counts whole seconds, at least 1), FENCESIM_WORK_MS.
// Optional FENCESIM_SIDE_ACCOUNT=FILE: the program appends its own account as
// JSON lines (fencesim never reads it):
//   {"event":"acquired","op":n,"token":T,"attempts":k}
//   {"event":"write","op":n,"token":T,"rows":R}      (rows null: the UPDATE failed)
//   {"event":"released","op":n,"deleted":true|false} (false: the key was no
//     longer ours when we revoked — its lease had expired; etcd3's revoke
//     swallows "lease not found", so the program gets the key just before)
'use strict';

const fs = require('fs');
const { Etcd3, EtcdLockFailedError } = require('etcd3');
const { Client } = require('pg');

const env = (name, dflt) => (process.env[name] === undefined ? dflt : process.env[name]);
const MODE = process.argv[2] || 'plain';
if (MODE !== 'plain' && MODE !== 'fenced') {
  console.error('usage: node worker.js plain|fenced');
  process.exit(2);
}
const HOSTS = env('FENCESIM_ETCD_ENDPOINTS', 'http://127.0.0.1:2379')
  .split(',')
  .map((u) => u.trim())
  .filter((u) => u.length > 0);
const LOCK = env('FENCESIM_ETCD_LOCK', 'fencesim/lock/doc');
const PG_URL = env('FENCESIM_POSTGRES_URL', 'postgresql://postgres@127.0.0.1/postgres');
const ME = env('FENCESIM_WORKER_ID', 'w');
const DOC = parseInt(env('FENCESIM_DOC_ID', '1'), 10);
const OPS = parseInt(env('FENCESIM_OPS', '1'), 10);
const TTL_MS = parseInt(env('FENCESIM_TTL_MS', '1000'), 10);
const WORK_MS = parseInt(env('FENCESIM_WORK_MS', '0'), 10);
const TTL_S = Math.max(1, Math.round(TTL_MS / 1000));
// Bounded retry: an attempt every ~10 ms for max(10 s, 20 TTLs).
const RETRY_DELAY_MS = 10;
const ACQUIRE_TIMEOUT_MS = Math.max(10000, 20 * TTL_S * 1000);

const sidePath = process.env.FENCESIM_SIDE_ACCOUNT;
if (sidePath) fs.mkdirSync(require('path').dirname(require('path').resolve(sidePath)), { recursive: true });
const sideFd = sidePath ? fs.openSync(sidePath, 'a') : null;
function account(record) {
  // Synchronous append: the line is in the file before the next step.
  if (sideFd !== null) fs.writeSync(sideFd, JSON.stringify(record) + '\n');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const client = new Etcd3({ hosts: HOSTS });

async function acquire() {
  const give_up = Date.now() + ACQUIRE_TIMEOUT_MS;
  for (let attempts = 1; ; attempts++) {
    const lock = client.lock(LOCK).ttl(TTL_S);
    try {
      await lock.acquire();
      return { lock, attempts };
    } catch (err) {
      if (!(err instanceof EtcdLockFailedError) || Date.now() > give_up) throw err;
    }
    await sleep(RETRY_DELAY_MS);
  }
}

async function connectPg() {
  const pg = new Client({ connectionString: PG_URL });
  pg.on('error', (err) => console.error(`${ME}: postgres: ${err.message}`));
  await pg.connect();
  return pg;
}

async function writeDocument(pg, token) {
  const read = await pg.query('SELECT body, fencing_token FROM documents WHERE id = $1', [DOC]);
  const body = BigInt(read.rows[0].body);
  await sleep(WORK_MS);
  const res =
    MODE === 'fenced'
      ? await pg.query(
          'UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3 AND fencing_token < $2',
          [(body + 1n).toString(), token, DOC],
        )
      : await pg.query('UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3', [
          (body + 1n).toString(),
          token,
          DOC,
        ]);
  return res.rowCount;
}

async function main() {
  let pg = await connectPg();
  for (let op = 1; op <= OPS; op++) {
    const { lock, attempts } = await acquire();
    // The token: the lock key's create revision (etcd3 does not return it).
    const kv = await client.get(LOCK).exec();
    const token = kv.kvs.length ? Number(kv.kvs[0].create_revision) : null;
    account({ event: 'acquired', op, token, attempts });
    let rows = null;
    try {
      rows = await writeDocument(pg, token);
    } catch (err) {
      // The connection was lost (cut, reset): this write is given up.
      console.error(`${ME}: the write failed, given up: ${err.message}`);
      await pg.end().catch(() => {});
      pg = await connectPg();
    }
    account({ event: 'write', op, token, rows });
    // Side account only: etcd3's release (a lease revoke) swallows "lease
    // not found", so whether it deleted the key is asked before: still ours?
    const lease = await lock.leaseId();
    const held = await client.get(LOCK).exec();
    const ours = held.kvs.length > 0 && held.kvs[0].lease === String(lease);
    await lock.release();
    account({ event: 'released', op, deleted: ours });
  }
  await pg.end();
  client.close();
}

main().catch((err) => {
  console.error(`${ME}: ${err.stack || err}`);
  process.exit(1);
});
