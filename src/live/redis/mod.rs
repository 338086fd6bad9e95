//! Redis as a lock server, in one room: the built-in worker's lane
//! ([`lane`]: `SET NX PX` with an `INCR` beside it, `DEL` or
//! compare-and-delete), the server's own account of a user's program's
//! lock ([`account`]: Redis's `MONITOR` feed, [`monitor`] and [`feed`],
//! replayed on a model of the lock and token keys, [`keyspace`], into each
//! master's grants, renewals, deletions, expiries and tokens, [`ledger`],
//! and N masters folded into one Redlock, [`majority`]) and the decoder of
//! a program's connections ([`observer`], RESP by [`resp`]).
//!
//! Why the account and not the commands: a user's program takes its lock
//! however its library does — a bare `SET … NX PX`, a script, a
//! transaction, a pipeline — and there is no end to those shapes. The
//! server knows what happened to the lock key.

pub(crate) mod account;
#[cfg(test)]
mod captures;
pub(crate) mod feed;
pub(crate) mod keyspace;
pub(crate) mod lane;
pub(crate) mod ledger;
pub(crate) mod majority;
pub(crate) mod monitor;
mod observer;
pub(crate) mod resp;

use std::sync::Arc;

use anyhow::Result;

use super::common::server::Backend;
use super::scenario::LiveScenario;
use super::servers::Servers;
use super::{LOCK_KEY, TOKEN_KEY};
use account::LockAccount;

/// The harness's own Redis masters for a user's program (one unless the
/// scenario asks for a Redlock over N), each followed by its `MONITOR`
/// feed before any program runs.
pub(crate) fn backend(s: &LiveScenario, servers: &mut Servers) -> Result<Backend> {
    // The harness's own Redis is the run's alone: a program sees the plain
    // `lock:doc` (a library that prefixes its own key, as python-redis-lock
    // does with `lock:`, could name no other).
    let keys = [LOCK_KEY.to_string(), TOKEN_KEY.to_string()];
    let upstreams = servers.ensure_masters(s.redis_masters, &keys)?;
    let account = Arc::new(LockAccount::start(&upstreams, &keys[0], &keys[1], true)?);
    Ok(Backend {
        name: "Redis",
        upstreams,
        account: account.clone(),
        wire: observer::wire(account, keys.clone()),
        env: |ports| {
            let urls: Vec<String> = ports
                .iter()
                .map(|p| format!("redis://127.0.0.1:{p}/"))
                .collect();
            vec![
                ("FENCESIM_REDIS_URL", urls[0].clone()),
                ("FENCESIM_REDIS_URLS", urls.join(",")),
                ("FENCESIM_LOCK_KEY", LOCK_KEY.to_string()),
                ("FENCESIM_TOKEN_KEY", TOKEN_KEY.to_string()),
            ]
        },
        keys,
    })
}
