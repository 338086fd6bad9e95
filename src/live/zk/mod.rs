//! ZooKeeper as a lock server, in one room: the ensemble's health and
//! sessions ([`ensemble`]), the built-in worker's lane ([`lane`]: the lock
//! recipe, the czxid as the token), the ensemble's own account of a user's
//! program's lock ([`account`]: its transaction logs, [`txnlog`], folded
//! into the recipe's grants, [`lock`]), the decoder of a program's
//! connections ([`observer`]) and how its ensemble's members start
//! ([`members`]).
//!
//! A user's program gets the harness's three members, each behind one
//! proxy per worker (so a member's faults still apply and every connection
//! is the worker's), and its environment (`FENCESIM_ZK_HOSTS`,
//! `FENCESIM_ZK_LOCK_PATH`: a path it may use, or lock on its own).

pub(crate) mod account;
pub(crate) mod ensemble;
pub(crate) mod found;
pub(crate) mod lane;
pub(crate) mod lock;
pub(crate) mod members;
mod observer;
pub(crate) mod txnlog;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;

use super::cluster::{ClusterKind, MEMBERS};
use super::common::keys::KeyChoice;
use super::common::server::Backend;
use super::scenario::LiveScenario;
use super::servers::Servers;
use account::ZkAccount;

/// The lock's znode the programs are told to use (the cluster is the run's own).
pub(crate) const ZK_LOCK_PATH: &str = "/fencesim/lock-doc";

/// The harness's ZooKeeper ensemble for a user's program; its lock's
/// znode is the scenario's `lock_key` when it names one exactly, else
/// found in the ensemble's account ([`found`]).
pub(crate) fn backend(s: &LiveScenario, servers: &mut Servers) -> Result<Backend> {
    let upstreams = servers.ensure_cluster(ClusterKind::Zk)?.endpoints();
    // Where cluster.rs puts each member's dataDir (the run's directory).
    let dirs: Vec<PathBuf> = (0..MEMBERS)
        .map(|i| {
            servers
                .root
                .path
                .join("zookeeper")
                .join(format!("z{i}"))
                .join("version-2")
        })
        .collect();
    let choice = s.lock_key.clone().unwrap_or_else(KeyChoice::any);
    let account = Arc::new(ZkAccount::start(dirs, &choice, ZK_LOCK_PATH)?);
    Ok(Backend {
        name: "ZooKeeper",
        upstreams,
        account: account.clone(),
        wire: observer::wire(account, choice.exact()),
        env: Box::new(|_worker: usize, ports: &[u16]| {
            let hosts: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
            vec![
                ("FENCESIM_ZK_HOSTS", hosts.join(",")),
                ("FENCESIM_ZK_LOCK_PATH", ZK_LOCK_PATH.to_string()),
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
