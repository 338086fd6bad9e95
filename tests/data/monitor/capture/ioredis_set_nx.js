// MONITOR capture: the hand-rolled ioredis 5.11.1 lock of
// examples/live-clients/ioredis-set-nx/worker.js (SET key v PX ttl NX, retry;
// defineCommand Lua compare-and-delete). Actors A, B, C: own ioredis clients,
// each sends ECHO actor:<name> first.
'use strict';
const path = require('path');
const req = require('module').createRequire(
  path.resolve(__dirname, '../../../../examples/live-clients/ioredis-set-nx/package.json'));
const Redis = req('ioredis');

const url = process.argv[2];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const LUA = `
    if redis.call('get', KEYS[1]) == ARGV[1] then
      return redis.call('del', KEYS[1])
    end
    return 0`;
function client(name) {
  const c = new Redis(url);
  c.defineCommand('releaseLock', { numberOfKeys: 1, lua: LUA });
  c.actor = name;
  return c;
}
async function take(c, value, tries) {
  for (let i = 0; i < tries; i++) {
    if ((await c.set('lock:doc', value, 'PX', 300, 'NX')) === 'OK') return true;
    await sleep(20);
  }
  return false;
}
async function main() {
  const [A, B, C] = ['A', 'B', 'C'].map(client);
  for (const c of [A, B, C]) await c.echo(`actor:${c.actor}`);
  console.log('A take (free):', await take(A, 'a', 1));
  console.log('A INCR:', await A.incr('fence:doc'));
  console.log('B take (held, 3 tries):', await take(B, 'b', 3));
  console.log('A release (own):', await A.releaseLock('lock:doc', 'a'));
  console.log('B take (free):', await take(B, 'b', 1));
  await sleep(400);
  console.log('C take (B expired):', await take(C, 'c', 1));
  console.log('B release after expiry:', await B.releaseLock('lock:doc', 'b'));
  console.log('C release:', await C.releaseLock('lock:doc', 'c'));
  for (const c of [A, B, C]) await c.quit();
}
main().catch((e) => { console.error(e); process.exit(1); });
