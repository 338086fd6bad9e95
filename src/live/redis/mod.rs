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

use anyhow::{Context, Result};

use super::common::documents::DocumentAccounts;
use super::common::keys::KeyChoice;
use super::common::server::{Backend, ServerAccount};
use super::scenario::LiveScenario;
use super::servers::Servers;
use super::{lock_key, token_key, TOKEN_KEY};
use account::LockAccount;

/// The harness's own Redis masters for a user's program (one unless the
/// scenario asks for a Redlock over N), emptied, each followed by its
/// `MONITOR` feed before any program runs.
///
/// The lock's key is the scenario's `lock_key` when it names one exactly;
/// otherwise the account finds it — the first key a worker creates
/// conditionally among those the name (a prefix, a glob; none: any key)
/// matches — and the token key likewise (ledger's module doc). A program
/// is told `FENCESIM_LOCK_KEY` (the exact key named, else its document's
/// `lock:doc`, `lock:doc2`, …) and `FENCESIM_TOKEN_KEY`; one written for
/// fencesim uses them, and one that names its own keys is found all the
/// same. Workers on several documents (`document = N`) get one account per
/// document, each following its own workers
/// ([`crate::live::common::documents`]), so each document's key is found
/// and judged on its own.
pub(crate) fn backend(s: &LiveScenario, servers: &mut Servers) -> Result<Backend> {
    let choice = s.lock_key.clone().unwrap_or_else(KeyChoice::any);
    let documents: Vec<u32> = s.workers.iter().map(|w| w.document).collect();
    let mut distinct = documents.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let told: Vec<[String; 2]> = documents
        .iter()
        .map(|&d| {
            [
                choice.exact().map_or_else(|| lock_key(d), str::to_string),
                s.token_key.clone().unwrap_or_else(|| token_key(d)),
            ]
        })
        .collect();
    let upstreams = servers.ensure_masters(s.redis_masters)?;
    let token = s.token_key.clone().unwrap_or_default();
    let mut accounts: Vec<(u32, Arc<LockAccount>)> = Vec::new();
    for &d in &distinct {
        let account = LockAccount::start(&upstreams, &choice, &token, true)?;
        accounts.push((d, Arc::new(account)));
    }
    let of_worker: Vec<Arc<LockAccount>> = documents
        .iter()
        .map(|d| {
            accounts
                .iter()
                .find(|(x, _)| x == d)
                .map(|(_, a)| a.clone())
        })
        .collect::<Option<_>>()
        .context("every worker's document has an account")?;
    let account: Arc<dyn ServerAccount> = match accounts.as_slice() {
        [(_, one)] => one.clone(),
        _ => Arc::new(DocumentAccounts::new(
            accounts.into_iter().map(|(d, a)| (d, a as _)).collect(),
            &documents,
        )),
    };
    Ok(Backend {
        name: "Redis",
        upstreams,
        account,
        wire: observer::wire(of_worker, token),
        env: Box::new(move |worker: usize, ports: &[u16]| {
            let urls: Vec<String> = ports
                .iter()
                .map(|p| format!("redis://127.0.0.1:{p}/"))
                .collect();
            let [lock, token] = told[worker].clone();
            vec![
                ("FENCESIM_REDIS_URL", urls[0].clone()),
                ("FENCESIM_REDIS_URLS", urls.join(",")),
                ("FENCESIM_LOCK_KEY", lock),
                ("FENCESIM_TOKEN_KEY", token),
            ]
        }),
        keys: [
            choice.describe(),
            s.token_key.clone().unwrap_or_else(|| TOKEN_KEY.to_string()),
        ],
    })
}
