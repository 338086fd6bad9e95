// A lock client as a Node team would write it: node-redlock 4.2.0 (what
// `npm install redlock@4` gives) over ioredis 4, node-postgres for the row.
// fencesim runs it unchanged (`fencesim live --worker-cmd ...`) and watches
// its connections; the program reports nothing to fencesim.
//
//     node worker.js plain    # UPDATE ... WHERE id = $3: unsafe under a long pause
//     node worker.js fenced   # ... AND fencing_token < $2: the late write is refused
//
// Single master: FENCESIM_REDIS_URL. Multi-master (the Redlock algorithm over
// N independent masters): FENCESIM_REDIS_URLS, a comma-separated list of N
// redis URLs; one ioredis client per URL, a lock is won on a majority within
// its validity time. The fencing token is `INCR $FENCESIM_TOKEN_KEY` on the
// first master.
//
// node-redlock takes the lock with a script (`EVALSHA <sha> 1 key value ttl`,
// `EVAL` after a NOSCRIPT) on every master, and after a failed attempt sends
// its release script to every master before retrying; it releases with a
// compare-and-delete script and rejects (LockError) when fewer than a
// majority deleted the key — not an error for this program.
//
// Pinned (package-lock.json, `npm ci`): redlock 4.2.0, ioredis 4.31.0, pg 8.23.1.
//
// Environment (set by fencesim; defaults for a manual run): FENCESIM_REDIS_URL,
// FENCESIM_REDIS_URLS, FENCESIM_POSTGRES_URL, FENCESIM_WORKER_ID,
// FENCESIM_LOCK_KEY, FENCESIM_TOKEN_KEY, FENCESIM_DOC_ID, FENCESIM_OPS,
// FENCESIM_TTL_MS, FENCESIM_WORK_MS. Optional FENCESIM_SIDE_ACCOUNT=FILE: the
// program appends its own account as JSON lines (fencesim never reads it):
//   {"event":"acquired","op":n,"token":T,"masters":N,"won_on":k}
//   {"event":"write","op":n,"token":T,"rows":R}          (rows null: the UPDATE failed)
//   {"event":"released","op":n,"deleted":true|false,"deleted_on":k}
//   {"event":"attempt_undone","op":n,"won_on":w,"deleted_on":k}
// The last one is written when a failed lock attempt had won on some masters
// and redlock's clean-up deleted the key on k of them (a real deletion that is
// not a release of a granted lock). deleted = deleted_on > 0.
'use strict';

const fs = require('fs');
const Redis = require('ioredis');
const Redlock = require('redlock');
const { Client } = require('pg');

const env = (name, dflt) => (process.env[name] === undefined ? dflt : process.env[name]);
const MODE = process.argv[2] || 'plain';
if (MODE !== 'plain' && MODE !== 'fenced') {
  console.error('usage: node worker.js plain|fenced');
  process.exit(2);
}
const REDIS_URLS = (env('FENCESIM_REDIS_URLS', '') || env('FENCESIM_REDIS_URL', 'redis://127.0.0.1:6379/'))
  .split(',')
  .map((u) => u.trim())
  .filter((u) => u.length > 0);
const PG_URL = env('FENCESIM_POSTGRES_URL', 'postgresql://postgres@127.0.0.1/postgres');
const ME = env('FENCESIM_WORKER_ID', 'w');
const LOCK_KEY = env('FENCESIM_LOCK_KEY', 'lock:doc');
const TOKEN_KEY = env('FENCESIM_TOKEN_KEY', 'fence:doc');
const DOC = parseInt(env('FENCESIM_DOC_ID', '1'), 10);
const OPS = parseInt(env('FENCESIM_OPS', '1'), 10);
const TTL_MS = parseInt(env('FENCESIM_TTL_MS', '1000'), 10);
const WORK_MS = parseInt(env('FENCESIM_WORK_MS', '0'), 10);
// Bounded retry: an attempt every ~20 ms for max(10 s, 20 TTLs).
const RETRY_DELAY_MS = 20;
const ACQUIRE_TIMEOUT_MS = Math.max(10000, 20 * TTL_MS);

const sidePath = process.env.FENCESIM_SIDE_ACCOUNT;
if (sidePath) fs.mkdirSync(require('path').dirname(require('path').resolve(sidePath)), { recursive: true });
const sideFd = sidePath ? fs.openSync(sidePath, 'a') : null;
function account(record) {
  // Synchronous append: the line is in the file before the next step.
  if (sideFd !== null) fs.writeSync(sideFd, JSON.stringify(record) + '\n');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const clients = REDIS_URLS.map((url) => new Redis(url, { maxRetriesPerRequest: 3 }));
const redlock = new Redlock(clients, {
  driftFactor: 0.01,
  retryCount: Math.ceil(ACQUIRE_TIMEOUT_MS / RETRY_DELAY_MS),
  retryDelay: RETRY_DELAY_MS,
  retryJitter: 10,
});
redlock.on('clientError', (err) => console.error(`${ME}: redis: ${err.message}`));

// Side account only: each master's reply to redlock's scripts (redlock does not
// say on how many masters it won or deleted). The library is not changed: the
// client's evalsha/eval are wrapped to see their replies.
const replies = { lockScript: [], unlockScript: [] };
function observe(client) {
  const scriptName = (text, hash) => {
    for (const name of ['lockScript', 'unlockScript']) {
      const s = redlock.scripts[name];
      if (s.hash === hash || s.value === text) return name;
    }
    return null;
  };
  for (const method of ['evalsha', 'eval']) {
    const original = client[method].bind(client);
    client[method] = (...args) => {
      const cb = args[args.length - 1];
      const name = method === 'evalsha' ? scriptName(null, args[0]) : scriptName(args[0][0], null);
      if (name !== null && typeof cb === 'function') {
        args[args.length - 1] = (err, res) => {
          if (!(err && err.message.startsWith('NOSCRIPT'))) replies[name].push(err ? 0 : Number(res));
          cb(err, res);
        };
      }
      return original(...args);
    };
  }
}
clients.forEach(observe);
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
// A lock attempt is N lock-script replies (one per master) followed, when it
// failed, by N unlock-script replies before the next attempt.
function lockAttempts() {
  const n = clients.length;
  const attempts = [];
  for (let i = 0; i + n <= replies.lockScript.length; i += n) {
    attempts.push({ won: sum(replies.lockScript.slice(i, i + n)), undone: sum(replies.unlockScript.slice(i, i + n)) });
  }
  replies.lockScript = [];
  replies.unlockScript = [];
  return attempts;
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
    let lock;
    try {
      lock = await redlock.lock(LOCK_KEY, TTL_MS);
    } catch (err) {
      console.error(`${ME}: could not take the lock: ${err.message}`);
      process.exit(1);
    }
    const attempts = lockAttempts();
    for (const a of attempts.slice(0, -1)) {
      if (a.undone > 0) account({ event: 'attempt_undone', op, won_on: a.won, deleted_on: a.undone });
    }
    const wonOn = attempts.length ? attempts[attempts.length - 1].won : null;
    const token = await clients[0].incr(TOKEN_KEY);
    account({ event: 'acquired', op, token, masters: clients.length, won_on: wonOn });
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
    replies.unlockScript = [];
    let released = true;
    try {
      await lock.unlock();
    } catch (err) {
      if (!(err instanceof Redlock.LockError)) throw err;
      // The lease ran out while we worked: not deleted on a majority.
      released = false;
    }
    const deletedOn = sum(replies.unlockScript);
    replies.unlockScript = [];
    account({
      event: 'released',
      op,
      deleted: clients.length === 1 ? released : deletedOn > 0,
      deleted_on: deletedOn,
    });
  }
  await pg.end();
  await Promise.all(clients.map((c) => c.quit()));
}

main().catch((err) => {
  console.error(`${ME}: ${err.stack || err}`);
  process.exit(1);
});
