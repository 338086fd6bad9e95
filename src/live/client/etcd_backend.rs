//! etcd as a user's program's lock server: the harness's three-member
//! cluster, one proxy per member for each worker (so a member's faults
//! still apply to the program's connections), the program's environment
//! (`FENCESIM_ETCD_ENDPOINTS`, `FENCESIM_ETCD_LOCK`), and the observers that
//! read its gRPC conversation ([`crate::live::decode::grpc`]).
//!
//! What the observers take from the conversation is only what ties etcd's
//! own account ([`EtcdLockAccount`], a watch on the lock's prefix) to the
//! workers: which worker's connection was granted which lease (a key
//! created with that lease is that worker's), and which response carried
//! the revision of a change that may have deleted the lock's key (a
//! revoke, a delete, a transaction, an unlock). A request naming the lock
//! key, or revoking a lease (the `etcd3` package releases by revoking its
//! lease), is `LockSent`, its response `LockReplied`; after a response to
//! a change under the prefix the observer waits for the watch to show that
//! revision before the response goes on, so a fault anchored at the grant
//! strikes before the program learns it holds the lock.
//!
//! The start gate holds a worker's first lease grant (or first request
//! naming the lock, for a client that brings its own lease): an `etcd3`
//! acquisition starts with `LeaseGrant`, and holding the transaction that
//! follows it instead would hold the lease's keep-alives with it (HTTP/2
//! multiplexes them on the same connection) and let the lease run out
//! before the lock was even asked for.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;

use super::backend::{Backend, ObserverFactory};
use super::seen::Seen;
use super::server_account::{Finished, ServerAccount};
use super::shared::Shared;
use crate::live::account::etcd_lock::{EtcdLockAccount, Mutation};
use crate::live::account::majority::grants_of_worker;
use crate::live::decode::grpc::{etcd_revision, varint_field, H2Decoder, H2Event};
use crate::live::proxy::{Flow, Observer};
use crate::live::scenario::LiveScenario;
use crate::live::servers::Servers;
use crate::live::{locked, ClusterKind};

/// The lock's key (its prefix, for etcd's Mutex recipe: `<key>/<lease>`).
/// The cluster is the run's own, and the key is deleted before each trial.
pub(super) const ETCD_LOCK_KEY: &str = "fencesim/lock/doc";

/// How long a response waits for the watch to show its revision.
const WATCH_TIMEOUT: Duration = Duration::from_secs(2);

const LEASE_GRANT: &str = "/etcdserverpb.Lease/LeaseGrant";
const LEASE_REVOKE: &str = "/etcdserverpb.Lease/LeaseRevoke";
const TXN: &str = "/etcdserverpb.KV/Txn";
const PUT: &str = "/etcdserverpb.KV/Put";
const DELETE_RANGE: &str = "/etcdserverpb.KV/DeleteRange";
const UNLOCK: &str = "/v3lockpb.Lock/Unlock";

impl ServerAccount for EtcdLockAccount {
    /// The observers waited for the watch before asking (module doc).
    fn grants_of(&self, _upstream: usize, worker: usize) -> Result<Vec<u64>> {
        Ok(grants_of_worker(&self.facts().0, worker))
    }

    fn finish(&self) -> Finished {
        let (facts, problems) = EtcdLockAccount::finish(self);
        Finished { facts, problems }
    }
}

/// The run's etcd cluster, its lock freed and its account started.
pub(super) fn etcd_backend(_s: &LiveScenario, servers: &mut Servers) -> Result<Backend> {
    let endpoints = servers.ensure_cluster(ClusterKind::Etcd)?.endpoints();
    let account = Arc::new(EtcdLockAccount::start(&endpoints, ETCD_LOCK_KEY)?);
    let upstreams = endpoints
        .iter()
        .map(|e| e.trim_start_matches("http://").to_string())
        .collect();
    Ok(Backend {
        upstreams,
        account: account.clone(),
        observers: etcd_observers(account),
        env: |ports| {
            let urls: Vec<String> = ports
                .iter()
                .map(|p| format!("http://127.0.0.1:{p}"))
                .collect();
            vec![
                ("FENCESIM_ETCD_ENDPOINTS", urls.join(",")),
                ("FENCESIM_ETCD_LOCK", ETCD_LOCK_KEY.to_string()),
            ]
        },
        keys: [ETCD_LOCK_KEY.to_string(), String::new()],
    })
}

fn etcd_observers(account: Arc<EtcdLockAccount>) -> ObserverFactory {
    Arc::new(move |shared, worker, member, _seen_as| {
        etcd_connection(shared, account.clone(), worker, member)
    })
}

/// A stream of one connection: its method, whether it named the lock, and
/// the account's handle of its request when it may delete the lock's key.
#[derive(Default)]
struct Stream {
    method: String,
    names_lock: bool,
    handle: Option<usize>,
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Notes a direction that stopped decoding, once.
fn note_broken(shared: &Shared, d: &H2Decoder, noted: &mut bool, worker: usize, side: &str) {
    if let (Some(why), false) = (d.broken(), *noted) {
        *noted = true;
        locked(&shared.account_errors).push(format!(
            "worker/{}'s etcd connection ({side}) could not be decoded: {why}",
            shared.names[worker]
        ));
    }
}

fn etcd_connection(
    shared: Arc<Shared>,
    account: Arc<EtcdLockAccount>,
    worker: usize,
    member: usize,
) -> (Observer, Observer) {
    let streams: Arc<Mutex<BTreeMap<u32, Stream>>> = Arc::default();
    let (s2, streams2, account2) = (shared.clone(), streams.clone(), account.clone());
    let mut up = H2Decoder::client();
    let mut down = H2Decoder::server();
    let (mut up_noted, mut down_noted) = (false, false);
    let to_server: Observer = Box::new(move |chunk| {
        for ev in up.push(chunk) {
            match ev {
                H2Event::Headers {
                    stream,
                    path: Some(method),
                    ..
                } => {
                    locked(&streams).insert(
                        stream,
                        Stream {
                            method,
                            ..Stream::default()
                        },
                    );
                }
                H2Event::Message { stream, bytes } => {
                    let method = match locked(&streams).get(&stream) {
                        Some(s) => s.method.clone(),
                        None => continue,
                    };
                    let names_lock = contains(&bytes, account.prefix());
                    if names_lock || method == LEASE_GRANT {
                        shared.in_start_order(worker);
                    }
                    let what = match method.as_str() {
                        LEASE_REVOKE => {
                            Some(Mutation::Revoke(varint_field(&bytes, 1).unwrap_or(0)))
                        }
                        TXN | PUT | DELETE_RANGE if names_lock => Some(Mutation::Write),
                        UNLOCK => Some(Mutation::Write),
                        _ => None,
                    };
                    let lock = names_lock || what.is_some();
                    if lock {
                        shared.record(worker, Seen::LockSent);
                    }
                    let handle = what.map(|w| account.sent(worker, w));
                    if let Some(s) = locked(&streams).get_mut(&stream) {
                        s.names_lock |= lock;
                        s.handle = s.handle.or(handle);
                    }
                }
                _ => {}
            }
        }
        note_broken(&shared, &up, &mut up_noted, worker, "requests");
        Flow::Pass
    });
    let to_client: Observer = Box::new(move |chunk| {
        for ev in down.push(chunk) {
            match ev {
                H2Event::Message { stream, bytes } => {
                    let (method, names_lock, handle) = match locked(&streams2).get(&stream) {
                        Some(s) => (s.method.clone(), s.names_lock, s.handle),
                        None => continue,
                    };
                    let rev = etcd_revision(&bytes);
                    if method == LEASE_GRANT {
                        if let Some(id) = varint_field(&bytes, 2) {
                            account2.lease_granted(worker, id);
                        }
                    }
                    if let Some(h) = handle {
                        // Whether the request changed the store at the
                        // revision its response carries.
                        let changed = match method.as_str() {
                            TXN => varint_field(&bytes, 2) == Some(1),
                            DELETE_RANGE => varint_field(&bytes, 2).unwrap_or(0) > 0,
                            _ => true,
                        };
                        account2.answered(h, rev.filter(|_| changed));
                        let under_prefix = changed && names_lock && method != LEASE_REVOKE;
                        if let (true, Some(r)) = (under_prefix, rev) {
                            if let Err(e) = account2.wait_for(r, WATCH_TIMEOUT) {
                                locked(&s2.account_errors).push(format!("{e:#}"));
                            }
                        }
                    }
                    if names_lock {
                        s2.record(worker, Seen::LockReplied);
                        s2.learn_grants(member, worker);
                    }
                }
                H2Event::Headers {
                    stream,
                    end_stream: true,
                    ..
                }
                | H2Event::Ended { stream } => {
                    // Trailers: a request never answered with a message failed.
                    if let Some(s) = locked(&streams2).remove(&stream) {
                        if let Some(h) = s.handle {
                            account2.answered(h, None);
                        }
                    }
                }
                _ => {}
            }
        }
        note_broken(&s2, &down, &mut down_noted, worker, "responses");
        Flow::Pass
    });
    (to_server, to_client)
}
