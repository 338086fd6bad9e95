//! A worker's connection to an etcd member, decoded ([`super::grpc`]: HTTP/2
//! frames, HPACK headers, gRPC messages) for the trial's shared observer
//! ([`crate::live::common::wire`]).
//!
//! What it takes from the conversation is only what ties etcd's own
//! account ([`EtcdLockAccount`], a watch on the lock's prefix) to the
//! workers: which worker's connection was granted which lease (a key
//! created with that lease is that worker's), and which response carried
//! the revision of a change that may have deleted the lock's key (a
//! revoke, a delete, a transaction, an unlock). A request naming the lock
//! key (when it is to be found: any request on the keys), or revoking a lease (the `etcd3` package releases by revoking its
//! lease), is a lock request; after a response to a change under the
//! prefix it waits for the watch to show that revision before the response
//! goes on, so a fault anchored at the grant strikes before the program
//! learns it holds the lock. A read of the lock's keys (a `Range` naming
//! the prefix: how etcd's Mutex recipe learns that its key became the
//! lowest) waits likewise for the watch to reach the revision its response
//! carries, so a grant the read reveals is in the account before the
//! program sees it (else it is received at a later reply, after the
//! program already wrote under it).
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

use super::account::{EtcdLockAccount, Mutation};
use super::grpc::{etcd_revision, fields, varint_field, Field, H2Decoder, H2Event};
use crate::live::common::bytes::contains;
use crate::live::common::wire::{Conversation, Reply, Request, Side, Wire};
use crate::live::locked;

/// How long a response waits for the watch to show its revision.
const WATCH_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a read's response waits for the watch to reach the store's
/// revision it carries (which may be a change outside the lock's prefix,
/// one the watch never shows: then it goes on, nothing lost).
const READ_TIMEOUT: Duration = Duration::from_millis(200);

const LEASE_GRANT: &str = "/etcdserverpb.Lease/LeaseGrant";
const LEASE_REVOKE: &str = "/etcdserverpb.Lease/LeaseRevoke";
const TXN: &str = "/etcdserverpb.KV/Txn";
const PUT: &str = "/etcdserverpb.KV/Put";
const DELETE_RANGE: &str = "/etcdserverpb.KV/DeleteRange";
const RANGE: &str = "/etcdserverpb.KV/Range";
const UNLOCK: &str = "/v3lockpb.Lock/Unlock";
const LOCK: &str = "/v3lockpb.Lock/Lock";

/// The requests that may be the lock's when it is to be found: any on the
/// keys (which keys is the account's to find).
const ON_THE_KEYS: [&str; 5] = [RANGE, TXN, PUT, DELETE_RANGE, LOCK];

/// A stream of one connection: its method, whether it named the lock, and
/// the account's handle of its request when it may delete the lock's key.
#[derive(Default)]
struct Stream {
    method: String,
    names_lock: bool,
    handle: Option<usize>,
}

type Streams = Arc<Mutex<BTreeMap<u32, Stream>>>;

/// The decoders of every worker connection to an etcd member.
pub(super) fn wire(account: Arc<EtcdLockAccount>) -> Wire {
    Arc::new(move |worker, _member, _seen_as| {
        let streams: Streams = Arc::default();
        let requests = Calls {
            worker,
            account: account.clone(),
            h2: H2Decoder::client(),
            streams: streams.clone(),
        };
        let responses = Responses {
            worker,
            account: account.clone(),
            h2: H2Decoder::server(),
            streams,
        };
        let conversation: Conversation = (Box::new(requests), Box::new(responses));
        conversation
    })
}

/// The worker's gRPC calls.
struct Calls {
    worker: usize,
    account: Arc<EtcdLockAccount>,
    h2: H2Decoder,
    streams: Streams,
}

impl Side<Request> for Calls {
    fn push(&mut self, chunk: &[u8], each: &mut dyn FnMut(Request)) {
        for ev in self.h2.push(chunk) {
            match ev {
                H2Event::Headers {
                    stream,
                    path: Some(method),
                    ..
                } => {
                    let s = Stream {
                        method,
                        ..Stream::default()
                    };
                    locked(&self.streams).insert(stream, s);
                }
                H2Event::Message { stream, bytes } => self.message(stream, &bytes, each),
                _ => {}
            }
        }
    }

    fn broken(&self) -> Option<String> {
        self.h2.broken().map(str::to_string)
    }
}

impl Calls {
    /// A request message on `stream`: a lock request when it names the
    /// lock or may delete its key (then the account hears of it, once the
    /// start gate let it through).
    fn message(&mut self, stream: u32, bytes: &[u8], each: &mut dyn FnMut(Request)) {
        let method = match locked(&self.streams).get(&stream) {
            Some(s) => s.method.clone(),
            None => return,
        };
        let names_lock = match self.account.named() {
            Some(prefix) => contains(bytes, prefix),
            None => ON_THE_KEYS.contains(&method.as_str()),
        };
        let what = match method.as_str() {
            LEASE_REVOKE => Some(Mutation::Revoke(varint_field(bytes, 1).unwrap_or(0))),
            PUT if names_lock => Some(Mutation::Write { deletes: false }),
            TXN if names_lock => Some(Mutation::Write {
                deletes: txn_may_delete(bytes, 0),
            }),
            DELETE_RANGE if names_lock => Some(Mutation::Write { deletes: true }),
            UNLOCK => Some(Mutation::Write { deletes: true }),
            _ => None,
        };
        let lock = names_lock || what.is_some();
        each(Request {
            note: lock,
            gate: names_lock || method == LEASE_GRANT,
        });
        let handle = what.map(|w| self.account.sent(self.worker, w));
        if let Some(s) = locked(&self.streams).get_mut(&stream) {
            s.names_lock |= lock;
            s.handle = s.handle.or(handle);
        }
    }
}

/// Whether a `TxnRequest` may delete a key: a `RequestOp` of its success
/// (field 2) or failure (field 3) branch is a delete (`request_delete_range`,
/// field 3) or a nested Txn (field 4) that may. What does not parse, or
/// nests deeper than etcd allows, is taken to delete: unanswered, it makes
/// a key's deletion unplaceable ("cannot judge") rather than an expiry.
fn txn_may_delete(txn: &[u8], depth: u32) -> bool {
    const DELETE_RANGE_OP: u64 = 3;
    const TXN_OP: u64 = 4;
    if depth > 8 {
        return true;
    }
    let Some(txn_fields) = fields(txn) else {
        return true;
    };
    txn_fields.iter().any(|(n, v)| match (n, v) {
        (2 | 3, Field::Bytes(op)) => match fields(op) {
            Some(op_fields) => op_fields.iter().any(|(k, v)| match (k, v) {
                (&DELETE_RANGE_OP, _) => true,
                (&TXN_OP, Field::Bytes(inner)) => txn_may_delete(inner, depth + 1),
                _ => false,
            }),
            None => true,
        },
        _ => false,
    })
}

/// etcd's responses to them.
struct Responses {
    worker: usize,
    account: Arc<EtcdLockAccount>,
    h2: H2Decoder,
    streams: Streams,
}

impl Side<Reply> for Responses {
    fn push(&mut self, chunk: &[u8], each: &mut dyn FnMut(Reply)) {
        for ev in self.h2.push(chunk) {
            match ev {
                H2Event::Message { stream, bytes } => {
                    if let Some(reply) = self.message(stream, &bytes) {
                        each(reply);
                    }
                }
                H2Event::Headers {
                    stream,
                    end_stream: true,
                    ..
                }
                | H2Event::Ended { stream } => {
                    // Trailers: a request never answered with a message failed.
                    if let Some(s) = locked(&self.streams).remove(&stream) {
                        if let Some(h) = s.handle {
                            self.account.answered(h, None);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn broken(&self) -> Option<String> {
        self.h2.broken().map(str::to_string)
    }
}

impl Responses {
    /// A response message on `stream`, told to the account (a lease
    /// granted, the revision a change made, waited for on the watch); a
    /// reply of the lock when its request named the lock.
    fn message(&mut self, stream: u32, bytes: &[u8]) -> Option<Reply> {
        let (method, names_lock, handle) = match locked(&self.streams).get(&stream) {
            Some(s) => (s.method.clone(), s.names_lock, s.handle),
            None => return None,
        };
        let rev = etcd_revision(bytes);
        if method == LEASE_GRANT {
            if let Some(id) = varint_field(bytes, 2) {
                self.account.lease_granted(self.worker, id);
            }
        }
        if let (RANGE, true, Some(r)) = (method.as_str(), names_lock, rev) {
            // Not a problem when it times out: the revision may be outside the prefix.
            let _ = self.account.wait_for(r, READ_TIMEOUT);
        }
        let mut problem = None;
        if let Some(h) = handle {
            // Whether the request changed the store at the revision its
            // response carries.
            let changed = match method.as_str() {
                TXN => varint_field(bytes, 2) == Some(1),
                DELETE_RANGE => varint_field(bytes, 2).unwrap_or(0) > 0,
                _ => true,
            };
            self.account.answered(h, rev.filter(|_| changed));
            let under_prefix = changed && names_lock && method != LEASE_REVOKE;
            if let (true, Some(r)) = (under_prefix, rev) {
                problem = self
                    .account
                    .wait_for(r, WATCH_TIMEOUT)
                    .err()
                    .map(|e| format!("{e:#}"));
            }
        }
        Some(Reply {
            touches_lock: names_lock,
            problem,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::txn_may_delete;

    /// A length-delimited protobuf field (field numbers and lengths < 128).
    fn field(number: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![number << 3 | 2, body.len() as u8];
        out.extend_from_slice(body);
        out
    }

    fn op(kind: u8, body: &[u8]) -> Vec<u8> {
        field(kind, body)
    }

    #[test]
    fn a_create_if_absent_txn_of_a_compare_and_a_put_never_deletes() {
        let put = op(2, &field(1, b"lock/doc"));
        let txn = [field(1, &field(3, b"lock/doc")), field(2, &put)].concat();
        assert!(!txn_may_delete(&txn, 0));
        // A read in the failure branch (the holder's key) deletes nothing.
        let range = op(1, &field(1, b"lock/doc"));
        let txn = [txn, field(3, &range)].concat();
        assert!(!txn_may_delete(&txn, 0));
    }

    #[test]
    fn a_txn_with_a_delete_in_either_branch_or_nested_may_delete() {
        let delete = op(3, &field(1, b"lock/doc"));
        assert!(txn_may_delete(&field(2, &delete), 0));
        assert!(txn_may_delete(&field(3, &delete), 0));
        let nested = op(4, &field(2, &delete));
        assert!(txn_may_delete(&field(2, &nested), 0));
        let nested_put = op(4, &field(2, &op(2, &field(1, b"k"))));
        assert!(!txn_may_delete(&field(2, &nested_put), 0));
    }

    #[test]
    fn a_txn_that_does_not_parse_is_taken_to_delete() {
        assert!(txn_may_delete(&[0x12, 0x40, 0x01], 0));
    }
}
