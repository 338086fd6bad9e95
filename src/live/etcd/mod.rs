//! etcd as a lock server, in one room: its JSON gateway client
//! ([`gateway`]), the built-in worker's lane ([`lane`]: a lease kept alive,
//! the server-side lock, the key's create revision as the token), etcd's
//! own account of a user's program's lock ([`account`]: a watch on the
//! lock's prefix), the decoder of a program's gRPC connections
//! ([`observer`], over [`grpc`]) and how its cluster's members start
//! ([`members`]).
//!
//! A user's program gets the harness's three-member cluster, one proxy per
//! member for each worker (so a member's faults still apply to the
//! program's connections), and its environment (`FENCESIM_ETCD_ENDPOINTS`,
//! `FENCESIM_ETCD_LOCK`: a key it may use, or lock on its own).

pub(crate) mod account;
pub(crate) mod found;
pub(crate) mod gateway;
pub(crate) mod grpc;
pub(crate) mod lane;
pub(crate) mod members;
mod observer;

use std::sync::Arc;

use anyhow::Result;

use super::cluster::ClusterKind;
use super::common::keys::KeyChoice;
use super::common::server::Backend;
use super::scenario::LiveScenario;
use super::servers::Servers;
use account::EtcdLockAccount;

/// The lock's key (its prefix, for etcd's Mutex recipe: `<key>/<lease>`).
/// The cluster is the run's own, and the key is deleted before each trial.
pub(crate) const ETCD_LOCK_KEY: &str = "fencesim/lock/doc";

/// The run's etcd cluster for a user's program, its lock freed and its
/// account started: the lock is the scenario's `lock_key` when it names
/// one exactly (a prefix watched), else found in etcd's account ([`found`]).
pub(crate) fn backend(s: &LiveScenario, servers: &mut Servers) -> Result<Backend> {
    let endpoints = servers.ensure_cluster(ClusterKind::Etcd)?.endpoints();
    let choice = s.lock_key.clone().unwrap_or_else(KeyChoice::any);
    let account = Arc::new(EtcdLockAccount::start(&endpoints, &choice, ETCD_LOCK_KEY)?);
    let upstreams = endpoints
        .iter()
        .map(|e| e.trim_start_matches("http://").to_string())
        .collect();
    Ok(Backend {
        name: "etcd",
        upstreams,
        account: account.clone(),
        wire: observer::wire(account),
        env: Box::new(|_worker: usize, ports: &[u16]| {
            let urls: Vec<String> = ports
                .iter()
                .map(|p| format!("http://127.0.0.1:{p}"))
                .collect();
            vec![
                ("FENCESIM_ETCD_ENDPOINTS", urls.join(",")),
                ("FENCESIM_ETCD_LOCK", ETCD_LOCK_KEY.to_string()),
            ]
        }),
        keys: [
            choice
                .exact()
                .map_or_else(|| choice.describe(), str::to_string),
            String::new(),
        ],
    })
}
