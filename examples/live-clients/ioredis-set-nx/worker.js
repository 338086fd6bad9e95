// A lock client as a Node team would write it by hand: ioredis 5 with
// `SET key value PX ttl NX` to take the lock and a Lua compare-and-delete
// (defined with `defineCommand`, so sent as EVALSHA, EVAL after a NOSCRIPT) to
// release it; node-postgres for the row. fencesim runs it unchanged
// (`fencesim live --worker-cmd ...`) and watches its connections.
//
//     node worker.js plain    # UPDATE ... WHERE id = $3: unsafe under a long pause
//     node worker.js fenced   # ... AND fencing_token < $2, token INCRed after the grant
//     node worker.js fenced-held  # the same UPDATE, token drawn only while the lock is ours
//
// `fenced` takes its token with a plain INCR once the SET NX succeeded: paused
// between the two past the lease, it draws a token newer than the next
// holder's and its late write passes the fence. `fenced-held` draws it with
// one script that INCRs only while the lock key still holds this program's
// value, and takes the lock again when it does not.
//
// Pinned (package-lock.json, `npm ci`): ioredis 5.11.1, pg 8.23.1.
//
// Environment (set by fencesim; defaults for a manual run): FENCESIM_REDIS_URL,
// FENCESIM_POSTGRES_URL, FENCESIM_WORKER_ID, FENCESIM_LOCK_KEY,
// FENCESIM_TOKEN_KEY, FENCESIM_DOC_ID, FENCESIM_OPS, FENCESIM_TTL_MS,
// FENCESIM_WORK_MS. Optional FENCESIM_SIDE_ACCOUNT=FILE: the program appends
// its own account as JSON lines (fencesim never reads it):
//   {"event":"acquired","op":n,"token":T}
//   {"event":"write","op":n,"token":T,"rows":R}      (rows null: the UPDATE failed)
//   {"event":"released","op":n,"deleted":true|false}
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const Redis = require('ioredis');
const { Client } = require('pg');

const env = (name, dflt) => (process.env[name] === undefined ? dflt : process.env[name]);
const MODE = process.argv[2] || 'plain';
if (!['plain', 'fenced', 'fenced-held'].includes(MODE)) {
  console.error('usage: node worker.js plain|fenced|fenced-held');
  process.exit(2);
}
const REDIS_URL = env('FENCESIM_REDIS_URL', 'redis://127.0.0.1:6379/');
const PG_URL = env('FENCESIM_POSTGRES_URL', 'postgresql://postgres@127.0.0.1/postgres');
const ME = env('FENCESIM_WORKER_ID', 'w');
const LOCK_KEY = env('FENCESIM_LOCK_KEY', 'lock:doc');
const TOKEN_KEY = env('FENCESIM_TOKEN_KEY', 'fence:doc');
const DOC = parseInt(env('FENCESIM_DOC_ID', '1'), 10);
const OPS = parseInt(env('FENCESIM_OPS', '1'), 10);
const TTL_MS = parseInt(env('FENCESIM_TTL_MS', '1000'), 10);
const WORK_MS = parseInt(env('FENCESIM_WORK_MS', '0'), 10);
const RETRY_MS = 5;
const ACQUIRE_TIMEOUT_MS = Math.max(10000, 20 * TTL_MS);

const sidePath = process.env.FENCESIM_SIDE_ACCOUNT;
if (sidePath) fs.mkdirSync(require('path').dirname(require('path').resolve(sidePath)), { recursive: true });
const sideFd = sidePath ? fs.openSync(sidePath, 'a') : null;
function account(record) {
  if (sideFd !== null) fs.writeSync(sideFd, JSON.stringify(record) + '\n');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
// Delete the key only if it still holds our value: a lease that ran out and
// was taken by someone else is left alone.
redis.defineCommand('releaseLock', {
  numberOfKeys: 1,
  lua: `
    if redis.call('get', KEYS[1]) == ARGV[1] then
      return redis.call('del', KEYS[1])
    end
    return 0`,
});

// The token only while the lock key still holds our value (null: it does not).
redis.defineCommand('tokenIfHeld', {
  numberOfKeys: 2,
  lua: `
    if redis.call('get', KEYS[1]) == ARGV[1] then
      return redis.call('incr', KEYS[2])
    end
    return false`,
});

async function acquire(value) {
  const deadline = Date.now() + ACQUIRE_TIMEOUT_MS;
  for (;;) {
    if ((await redis.set(LOCK_KEY, value, 'PX', TTL_MS, 'NX')) === 'OK') return;
    if (Date.now() > deadline) throw new Error(`could not take the lock in ${ACQUIRE_TIMEOUT_MS} ms`);
    await sleep(RETRY_MS);
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
  const sql =
    MODE !== 'plain'
      ? 'UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3 AND fencing_token < $2'
      : 'UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3';
  const res = await pg.query(sql, [(body + 1n).toString(), token, DOC]);
  return res.rowCount;
}

async function main() {
  let pg = await connectPg();
  for (let op = 1; op <= OPS; op++) {
    const value = `${ME}-${process.pid}-${crypto.randomBytes(8).toString('hex')}`;
    let token = null;
    while (token === null) {
      await acquire(value);
      // A lease that ran out before the token was drawn: take the lock again.
      token = MODE === 'fenced-held' ? await redis.tokenIfHeld(LOCK_KEY, TOKEN_KEY, value) : await redis.incr(TOKEN_KEY);
    }
    account({ event: 'acquired', op, token });
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
    let deleted = false;
    try {
      deleted = (await redis.releaseLock(LOCK_KEY, value)) === 1;
    } catch (err) {
      console.error(`${ME}: release failed: ${err.message}`);
    }
    account({ event: 'released', op, deleted });
  }
  await pg.end();
  await redis.quit();
}

main().catch((err) => {
  console.error(`${ME}: ${err.stack || err}`);
  process.exit(1);
});
