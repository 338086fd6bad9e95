// etcd's own Mutex recipe (Go's concurrency.Mutex), written by hand on the
// `etcd3` package, fencing with the revision at which the program saw
// itself become the owner — a position in etcd's own order read while it
// holds the lock, not its key's create revision.
//
//     node mutex.js plain    # UPDATE ... WHERE id = $3: unsafe under a long pause
//     node mutex.js fenced   # ... AND fencing_token < $2, the token below
//     node mutex.js plain --prefix app/locks/invoice   # the program's own prefix
//
// `--prefix P`: the lock's prefix as a team's code has it, whatever
// fencesim's FENCESIM_ETCD_LOCK says (etcd's account finds it: the prefix of
// the keys the workers create with their leases).
//
// Per operation: grant a lease (kept alive by etcd3 every TTL/3), put
// `<FENCESIM_ETCD_LOCK>/<lease hex>` with it, then poll (every 10 ms) the
// prefix's key with the lowest create revision until it is ours: the
// header revision of that read is the fencing token. A waiter that created
// its key while another held the lock becomes the owner at the revision of
// its predecessor's deletion, so its token is above its create revision
// (issue 42: `unissued_token` counts it vouched for, a position of etcd's
// order within its ownership). Released by revoking the lease.
//
// Pinned (package-lock.json, `npm ci`): etcd3 1.1.2 (@grpc/grpc-js), pg 8.23.1.
//
// Environment as worker.js. Optional FENCESIM_SIDE_ACCOUNT=FILE (fencesim
// never reads it): {"event":"acquired","op":n,"token":C,"fence":F} (C: its
// key's create revision, the grant's token in etcd's account; F: the
// revision it fences with), {"event":"write","op":n,"token":F,"rows":R},
// {"event":"released","op":n,"deleted":true|false}.
'use strict';

const fs = require('fs');
const path = require('path');
const { Etcd3 } = require('etcd3');
const { Client } = require('pg');

const env = (name, dflt) => (process.env[name] === undefined ? dflt : process.env[name]);
const MODE = process.argv[2] || 'plain';
const OWN_PREFIX = process.argv[3] === '--prefix' ? process.argv[4] : undefined;
const argsOk = process.argv.length === 3 || (process.argv.length === 5 && OWN_PREFIX);
if ((MODE !== 'plain' && MODE !== 'fenced') || !argsOk) {
  console.error('usage: node mutex.js plain|fenced [--prefix PREFIX]');
  process.exit(2);
}
const HOSTS = env('FENCESIM_ETCD_ENDPOINTS', 'http://127.0.0.1:2379')
  .split(',')
  .map((u) => u.trim())
  .filter((u) => u.length > 0);
const PREFIX = (OWN_PREFIX || env('FENCESIM_ETCD_LOCK', 'fencesim/lock/doc')) + '/';
const PG_URL = env('FENCESIM_POSTGRES_URL', 'postgresql://postgres@127.0.0.1/postgres');
const ME = env('FENCESIM_WORKER_ID', 'w');
const DOC = parseInt(env('FENCESIM_DOC_ID', '1'), 10);
const OPS = parseInt(env('FENCESIM_OPS', '1'), 10);
const TTL_MS = parseInt(env('FENCESIM_TTL_MS', '1000'), 10);
const WORK_MS = parseInt(env('FENCESIM_WORK_MS', '0'), 10);
const TTL_S = Math.max(1, Math.round(TTL_MS / 1000));
const ACQUIRE_TIMEOUT_MS = Math.max(10000, 20 * TTL_S * 1000);

const sidePath = process.env.FENCESIM_SIDE_ACCOUNT;
if (sidePath) fs.mkdirSync(path.dirname(path.resolve(sidePath)), { recursive: true });
const sideFd = sidePath ? fs.openSync(sidePath, 'a') : null;
function account(record) {
  if (sideFd !== null) fs.writeSync(sideFd, JSON.stringify(record) + '\n');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const client = new Etcd3({ hosts: HOSTS });

// Our key, its create revision, and the revision we became the owner at.
async function lock() {
  const lease = client.lease(TTL_S, { autoKeepAlive: true });
  lease.on('lost', () => {}); // a paused program loses it: its write tells
  const id = await lease.grant();
  const key = PREFIX + BigInt(id).toString(16);
  const put = await lease.put(key).value(ME).exec();
  const created = Number(put.header.revision);
  const giveUp = Date.now() + ACQUIRE_TIMEOUT_MS;
  for (;;) {
    const first = await client.getAll().prefix(PREFIX).sort('Create', 'Ascend').limit(1).exec();
    if (first.kvs.length && first.kvs[0].key.toString() === key) {
      return { lease, key, created, fence: Number(first.header.revision) };
    }
    if (Date.now() > giveUp) throw new Error(`${ME}: no lock in ${ACQUIRE_TIMEOUT_MS} ms`);
    await sleep(10);
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
    const { lease, key, created, fence } = await lock();
    account({ event: 'acquired', op, token: created, fence });
    let rows = null;
    try {
      rows = await writeDocument(pg, fence);
    } catch (err) {
      console.error(`${ME}: the write failed, given up: ${err.message}`);
      await pg.end().catch(() => {});
      pg = await connectPg();
    }
    account({ event: 'write', op, token: fence, rows });
    // Side account only: is the key still ours (its lease alive) before the revoke?
    const held = await client.get(key).exec();
    const ours = held.kvs.length > 0;
    await lease.revoke().catch(() => {});
    account({ event: 'released', op, deleted: ours });
  }
  await pg.end();
  client.close();
}

main().catch((err) => {
  console.error(`${ME}: ${err.stack || err}`);
  process.exit(1);
});
