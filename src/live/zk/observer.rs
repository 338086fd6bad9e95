//! A worker's connection to a ZooKeeper member, decoded for the trial's
//! shared observer ([`crate::live::common::wire`]): jute records behind a
//! 4-byte length. Server to client, a connection's first message is the
//! `ConnectResponse`, whose session id says which worker the session is (a
//! reconnect to another member shows the same id again); then each reply's
//! header (xid, zxid, error). Client to server, after the `ConnectRequest`,
//! each request's header (xid, type) and body: one whose body names the
//! lock's znode (when it is to be found: any request on a path) is a lock request (the first waits at the start gate), its
//! reply one after which the account is asked — once the majority's logs
//! reach the reply's zxid — whether the worker now holds the lock; a
//! worker's `closeSession` request is noted, to tell its release from the
//! server's expiry.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::account::ZkAccount;
use super::txnlog::Jute;
use crate::live::common::bytes::contains;
use crate::live::common::wire::{Conversation, Reply, Request, Side, Wire};
use crate::live::locked;

/// The largest jute frame a proxy decodes (ZooKeeper's jute.maxbuffer is 1 MiB).
const MAX_FRAME_BYTES: usize = 16 << 20;

/// The request types that name a znode (create, delete, exists, getData,
/// setData, getACL, setACL, getChildren, getChildren2, check, multi,
/// create2, createContainer, createTTL, multiRead).
const ON_A_PATH: [i32; 15] = [1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 14, 15, 19, 21, 22];

/// Splits a stream into jute frames (a 4-byte big-endian length, then the record).
#[derive(Default)]
struct Frames {
    buf: Vec<u8>,
    /// A length no ZooKeeper frame has: the stream is not decoded any more.
    lost: bool,
}

impl Frames {
    fn push(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        if self.lost {
            return out;
        }
        self.buf.extend_from_slice(chunk);
        let mut at = 0;
        while let Some(head) = self.buf.get(at..at + 4) {
            let len = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
            let Ok(len) = usize::try_from(len) else {
                self.lost = true;
                break;
            };
            if len > MAX_FRAME_BYTES {
                self.lost = true;
                break;
            }
            let Some(frame) = self.buf.get(at + 4..at + 4 + len) else {
                break;
            };
            out.push(frame.to_vec());
            at += 4 + len;
        }
        self.buf.drain(..at.min(self.buf.len()));
        out
    }

    fn broken(&self) -> Option<String> {
        self.lost
            .then(|| "a frame length no ZooKeeper frame has (the rest is not decoded)".to_string())
    }
}

/// The decoders of every worker connection to a member (module doc).
pub(super) fn wire(account: Arc<ZkAccount>, path: Option<&str>) -> Wire {
    let path = path.map(|p| p.as_bytes().to_vec());
    Arc::new(move |worker, member, _| {
        // The connection's session (from its ConnectResponse) and, per
        // request xid not yet answered, whether it named the lock.
        let session: Arc<Mutex<Option<i64>>> = Arc::default();
        let pending: Arc<Mutex<BTreeMap<i32, bool>>> = Arc::default();
        let requests = Requests {
            account: account.clone(),
            path: path.clone(),
            frames: Frames::default(),
            connected: false,
            session: session.clone(),
            pending: pending.clone(),
        };
        let replies = Replies {
            account: account.clone(),
            worker,
            member,
            frames: Frames::default(),
            connected: false,
            session,
            pending,
        };
        let conversation: Conversation = (Box::new(requests), Box::new(replies));
        conversation
    })
}

/// The worker's requests.
struct Requests {
    account: Arc<ZkAccount>,
    /// The lock's znode; None: to be found, any request on a path may be the lock's.
    path: Option<Vec<u8>>,
    frames: Frames,
    /// Past its ConnectRequest.
    connected: bool,
    session: Arc<Mutex<Option<i64>>>,
    pending: Arc<Mutex<BTreeMap<i32, bool>>>,
}

impl Side<Request> for Requests {
    fn push(&mut self, chunk: &[u8], each: &mut dyn FnMut(Request)) {
        for frame in self.frames.push(chunk) {
            // The ConnectRequest.
            if !std::mem::replace(&mut self.connected, true) {
                continue;
            }
            let mut j = Jute::new(&frame);
            let (Ok(xid), Ok(kind)) = (j.int(), j.int()) else {
                continue;
            };
            if kind == -11 {
                if let Some(s) = *locked(&self.session) {
                    self.account.close_sent(s);
                }
            }
            let names_lock = match &self.path {
                Some(p) => contains(frame.get(8..).unwrap_or_default(), p),
                None => ON_A_PATH.contains(&kind),
            };
            each(Request {
                note: names_lock,
                gate: names_lock,
            });
            locked(&self.pending).insert(xid, names_lock);
        }
    }

    fn broken(&self) -> Option<String> {
        self.frames.broken()
    }
}

/// The member's replies.
struct Replies {
    account: Arc<ZkAccount>,
    worker: usize,
    member: usize,
    frames: Frames,
    /// Past its ConnectResponse.
    connected: bool,
    session: Arc<Mutex<Option<i64>>>,
    pending: Arc<Mutex<BTreeMap<i32, bool>>>,
}

impl Side<Reply> for Replies {
    fn push(&mut self, chunk: &[u8], each: &mut dyn FnMut(Reply)) {
        for frame in self.frames.push(chunk) {
            let mut j = Jute::new(&frame);
            if !std::mem::replace(&mut self.connected, true) {
                // ConnectResponse: protocolVersion, timeOut, sessionId (0: refused).
                if let (Ok(_), Ok(_), Ok(s)) = (j.int(), j.int(), j.long()) {
                    if s != 0 {
                        self.account.session_opened(s, self.worker);
                        *locked(&self.session) = Some(s);
                    }
                }
                continue;
            }
            let (Ok(xid), Ok(zxid)) = (j.int(), j.long()) else {
                continue;
            };
            if locked(&self.pending).remove(&xid) == Some(true) {
                self.account.replied(self.member, zxid);
                each(Reply {
                    touches_lock: true,
                    problem: None,
                });
            }
        }
    }

    fn broken(&self) -> Option<String> {
        self.frames.broken()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_split_across_chunks_and_a_wild_length_stops_decoding() {
        let mut f = Frames::default();
        let mut bytes = Vec::new();
        for body in [&b"abc"[..], &b""[..], &b"hello"[..]] {
            bytes.extend((body.len() as i32).to_be_bytes());
            bytes.extend(body);
        }
        let mut got = Vec::new();
        for c in bytes.chunks(3) {
            got.extend(f.push(c));
        }
        assert_eq!(got, vec![b"abc".to_vec(), Vec::new(), b"hello".to_vec()]);
        assert!(f.push(&(-5i32).to_be_bytes()).is_empty());
        assert!(f.push(&3i32.to_be_bytes()).is_empty());
    }
}
