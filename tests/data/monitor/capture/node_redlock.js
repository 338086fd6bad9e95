// MONITOR capture: node-redlock 4.2.0 over ioredis 4.31.0, from
// examples/live-clients/node-redlock/node_modules (run install.sh first).
// argv[2]: comma-separated redis URLs (one: single master; five: Redlock over
// 5 masters). Actors A, B, C are separate Redlock instances with their own
// ioredis clients; each sends ECHO actor:<name> on each of its clients first.
'use strict';
const path = require('path');
const req = require('module').createRequire(
  path.resolve(__dirname, '../../../../examples/live-clients/node-redlock/package.json'));
const Redis = req('ioredis');
const Redlock = req('redlock');

const urls = process.argv[2].split(',');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function actor(name, opts) {
  const clients = urls.map((u) => new Redis(u));
  return { name, clients, redlock: new Redlock(clients, opts) };
}

async function main() {
  const A = actor('A', { retryCount: 0 });
  const B = actor('B', { retryCount: 2, retryDelay: 50, retryJitter: 0 });
  const C = actor('C', { retryCount: 0 });
  for (const x of [A, B, C]) for (const c of x.clients) await c.echo(`actor:${x.name}`);

  const la = await A.redlock.lock('lock:doc', 300);
  console.log('A lock (free): ok', la.value);
  try {
    await B.redlock.lock('lock:doc', 300);
    console.log('B lock (held): ok?!');
  } catch (e) {
    console.log('B lock (held by A, 3 attempts):', e.name, e.message);
  }
  await la.extend(300);
  console.log('A extend: ok');
  await la.unlock();
  console.log('A unlock (own): ok');
  const lb = await B.redlock.lock('lock:doc', 300);
  console.log('B lock (free): ok', lb.value);
  await sleep(400); // B's lease runs out
  const lc = await C.redlock.lock('lock:doc', 300);
  console.log('C lock (B expired): ok', lc.value);
  try {
    await lb.unlock();
    console.log('B unlock after expiry: ok?!');
  } catch (e) {
    console.log('B unlock after expiry:', e.name, e.message);
  }
  await lc.unlock();
  console.log('C unlock: ok');
  for (const x of [A, B, C]) await x.redlock.quit();
}
main().catch((e) => { console.error(e); process.exit(1); });
