//! The lock servers' own account of a trial: what the server did to the
//! lock, attributed to the connection that caused it.
//!
//! A user's program takes its lock however its library does — a bare
//! `SET … NX PX`, a script, a transaction, a pipeline — and there is no end
//! to those shapes. The server knows what happened to the lock key, so the
//! history of a `--worker-cmd` trial is built from its account: Redis's
//! `MONITOR` feed ([`monitor`]) replayed on a model of the lock and token
//! keys ([`keyspace`]) into grants, renewals, deletions, expiries and
//! tokens per worker ([`ledger`]). A ZooKeeper lock's account is the
//! ensemble's own transaction logs ([`zk_txnlog`]) folded into the lock
//! recipe's grants ([`zk_lock`]); etcd's is a watch on the lock's key
//! prefix, whose revisions the responses on each worker's connection tie
//! to the workers ([`etcd_lock`]).

pub mod etcd_lock;
pub mod feed;
pub mod keyspace;
pub mod ledger;
pub mod majority;
pub mod monitor;
pub mod zk_lock;
pub mod zk_txnlog;

#[cfg(test)]
mod captures;
