//! gRPC over HTTP/2, one direction of one connection at a time, as a
//! user's etcd client (the Node `etcd3` package over grpc-js, Go's
//! clientv3, …) speaks it to etcd through the proxy: enough to know each
//! stream's method and to read the protobuf fields of its messages that
//! say what the lock did (a lease's id, a response's revision).
//!
//! HTTP/2 (RFC 9113): after the client's 24-byte preface, 9-byte frame
//! headers (length, type, flags, stream). A stream's request names its
//! method in the `:path` pseudo-header of its HEADERS (+ CONTINUATION)
//! block, which HPACK (RFC 7541) compresses against a table both ends keep
//! for the whole connection — so every header block of the direction is
//! decoded, in order, with the `loona-hpack` crate (the maintained fork of
//! `hpack`), or the table would drift. DATA frames are reassembled per
//! stream into gRPC's length-prefixed messages (1 byte compressed flag,
//! 4 bytes big-endian length). Protobuf is read by hand ([`fields`]): the
//! few fields the lock needs, by number, no generated code (fencesim
//! builds with `cargo build` alone: no `protoc`).
//!
//! The decoder only reads. A frame it cannot decode marks the direction
//! broken ([`H2Decoder::broken`]): its later messages are not seen, and the
//! caller says so rather than judge on a part of the conversation.

use std::collections::BTreeMap;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const PUSH_PROMISE: u8 = 5;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;

/// What one direction of a connection carried, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum H2Event {
    /// A header block: a request's (with its `:path`), a response's, or
    /// trailers (with `grpc-status`).
    Headers {
        stream: u32,
        path: Option<String>,
        grpc_status: Option<String>,
        end_stream: bool,
    },
    /// One whole gRPC message of a stream (its 5-byte prefix removed).
    Message { stream: u32, bytes: Vec<u8> },
    /// The stream ended from this side (END_STREAM on DATA) or was reset.
    Ended { stream: u32 },
}

/// One direction's decoder: bytes in, [`H2Event`]s out.
pub struct H2Decoder {
    buf: Vec<u8>,
    /// Bytes of the client preface still to skip (0 for the server's side).
    preface_left: usize,
    hpack: loona_hpack::Decoder<'static>,
    /// A header block waiting for its CONTINUATION frames: stream, END_STREAM, bytes.
    block: Option<(u32, bool, Vec<u8>)>,
    /// Per stream: DATA bytes not yet a whole gRPC message.
    data: BTreeMap<u32, Vec<u8>>,
    broken: Option<String>,
}

impl H2Decoder {
    /// The client's side (it starts with the preface).
    pub fn client() -> H2Decoder {
        H2Decoder::new(PREFACE.len())
    }

    /// The server's side.
    pub fn server() -> H2Decoder {
        H2Decoder::new(0)
    }

    fn new(preface_left: usize) -> H2Decoder {
        H2Decoder {
            buf: Vec::new(),
            preface_left,
            hpack: loona_hpack::Decoder::new(),
            block: None,
            data: BTreeMap::new(),
            broken: None,
        }
    }

    /// Why the direction stopped decoding (None: it did not).
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    fn fail(&mut self, why: String) {
        self.broken.get_or_insert(why);
        self.buf.clear();
        self.data.clear();
        self.block = None;
    }

    /// The events completed by `chunk`.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<H2Event> {
        let mut out = Vec::new();
        if self.broken.is_some() {
            return out;
        }
        self.buf.extend_from_slice(chunk);
        if self.preface_left > 0 {
            let at = PREFACE.len() - self.preface_left;
            let n = self.preface_left.min(self.buf.len());
            if self.buf[..n] != PREFACE[at..at + n] {
                self.fail("the connection does not start with the HTTP/2 preface".into());
                return out;
            }
            self.buf.drain(..n);
            self.preface_left -= n;
            if self.preface_left > 0 {
                return out;
            }
        }
        let mut used = 0;
        while self.buf.len() - used >= 9 {
            let h = &self.buf[used..used + 9];
            let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
            let (kind, flags) = (h[3], h[4]);
            let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
            if self.buf.len() - used < 9 + len {
                break;
            }
            let payload = self.buf[used + 9..used + 9 + len].to_vec();
            used += 9 + len;
            if let Err(why) = self.frame(kind, flags, stream, &payload, &mut out) {
                self.fail(why);
                return out;
            }
        }
        self.buf.drain(..used);
        out
    }

    fn frame(
        &mut self,
        kind: u8,
        flags: u8,
        stream: u32,
        payload: &[u8],
        out: &mut Vec<H2Event>,
    ) -> Result<(), String> {
        if self.block.is_some() && kind != CONTINUATION {
            return Err(format!(
                "a frame of type {kind} inside a header block (stream {stream})"
            ));
        }
        match kind {
            DATA => {
                let body = unpadded(flags, payload)?;
                let buf = self.data.entry(stream).or_default();
                buf.extend_from_slice(body);
                while buf.len() >= 5 {
                    let n = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
                    if buf.len() < 5 + n {
                        break;
                    }
                    if buf[0] != 0 {
                        return Err(format!("a compressed gRPC message on stream {stream}"));
                    }
                    let bytes = buf[5..5 + n].to_vec();
                    buf.drain(..5 + n);
                    out.push(H2Event::Message { stream, bytes });
                }
                if flags & END_STREAM != 0 {
                    self.data.remove(&stream);
                    out.push(H2Event::Ended { stream });
                }
            }
            HEADERS | PUSH_PROMISE => {
                let mut body = unpadded(flags, payload)?;
                let skip = if kind == PUSH_PROMISE {
                    4
                } else if flags & PRIORITY != 0 {
                    5
                } else {
                    0
                };
                body = body.get(skip..).ok_or("a header frame too short")?;
                let end_stream = kind == HEADERS && flags & END_STREAM != 0;
                self.block = Some((stream, end_stream, body.to_vec()));
                if flags & END_HEADERS != 0 {
                    self.header_block(out)?;
                }
            }
            CONTINUATION => {
                let Some((s, _, block)) = self.block.as_mut() else {
                    return Err(format!(
                        "a CONTINUATION outside a header block (stream {stream})"
                    ));
                };
                if *s != stream {
                    return Err(format!(
                        "a CONTINUATION of stream {stream} inside stream {s}'s header block"
                    ));
                }
                block.extend_from_slice(payload);
                if flags & END_HEADERS != 0 {
                    self.header_block(out)?;
                }
            }
            RST_STREAM => {
                self.data.remove(&stream);
                out.push(H2Event::Ended { stream });
            }
            _ => {}
        }
        Ok(())
    }

    fn header_block(&mut self, out: &mut Vec<H2Event>) -> Result<(), String> {
        let Some((stream, end_stream, block)) = self.block.take() else {
            return Ok(());
        };
        let headers = self
            .hpack
            .decode(&block)
            .map_err(|e| format!("HPACK on stream {stream}: {e:?}"))?;
        let find = |name: &[u8]| {
            headers
                .iter()
                .find(|(n, _)| n.as_slice() == name)
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        };
        out.push(H2Event::Headers {
            stream,
            path: find(b":path"),
            grpc_status: find(b"grpc-status"),
            end_stream,
        });
        if end_stream {
            self.data.remove(&stream);
        }
        Ok(())
    }
}

/// A frame's payload without its padding (RFC 9113 §6.1).
fn unpadded(flags: u8, payload: &[u8]) -> Result<&[u8], String> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let pad = usize::from(
        *payload
            .first()
            .ok_or("a padded frame without its pad length")?,
    );
    payload
        .get(1..payload.len().saturating_sub(pad))
        .filter(|_| pad < payload.len())
        .ok_or_else(|| "a frame's padding is longer than the frame".to_string())
}

/// One protobuf field's value (wire types 0, 1, 2 and 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

fn varint(buf: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A protobuf message's fields in order (number, value); None: it does not
/// parse (a truncated field, a group, an unknown wire type).
pub fn fields(msg: &[u8]) -> Option<Vec<(u64, Field<'_>)>> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < msg.len() {
        let tag = varint(msg, &mut at)?;
        let value = match tag & 7 {
            0 => Field::Varint(varint(msg, &mut at)?),
            1 => {
                let b = msg.get(at..at + 8)?;
                at += 8;
                Field::Fixed64(u64::from_le_bytes(b.try_into().ok()?))
            }
            2 => {
                let n = usize::try_from(varint(msg, &mut at)?).ok()?;
                let b = msg.get(at..at.checked_add(n)?)?;
                at += n;
                Field::Bytes(b)
            }
            5 => {
                let b = msg.get(at..at + 4)?;
                at += 4;
                Field::Fixed32(u32::from_le_bytes(b.try_into().ok()?))
            }
            _ => return None,
        };
        out.push((tag >> 3, value));
    }
    Some(out)
}

/// The last varint field `number` of `msg` (protobuf: the last one wins).
pub fn varint_field(msg: &[u8], number: u64) -> Option<u64> {
    fields(msg)?.into_iter().rev().find_map(|(n, v)| match v {
        Field::Varint(x) if n == number => Some(x),
        _ => None,
    })
}

/// The last length-delimited field `number` of `msg`.
pub fn bytes_field(msg: &[u8], number: u64) -> Option<&[u8]> {
    fields(msg)?.into_iter().rev().find_map(|(n, v)| match v {
        Field::Bytes(b) if n == number => Some(b),
        _ => None,
    })
}

/// The revision of an etcd response's `ResponseHeader` (every etcd
/// response's field 1; the header's revision is its field 3).
pub fn etcd_revision(response: &[u8]) -> Option<u64> {
    varint_field(bytes_field(response, 1)?, 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let n = payload.len();
        let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn grpc(msg: &[u8]) -> Vec<u8> {
        let mut m = vec![0];
        m.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        m.extend_from_slice(msg);
        m
    }

    #[test]
    fn messages_are_reassembled_across_frames_and_chunks() {
        // :path /etcdserverpb.KV/Range as a literal without indexing (0x04 = :path's index).
        let path = b"/etcdserverpb.KV/Range";
        let mut block = vec![0x04, path.len() as u8];
        block.extend_from_slice(path);
        let msg = grpc(&[0x0a, 0x03, b'k', b'e', b'y']);
        let mut bytes = PREFACE.to_vec();
        bytes.extend(frame(4, 0, 0, &[]));
        bytes.extend(frame(HEADERS, END_HEADERS, 1, &block));
        bytes.extend(frame(DATA, 0, 1, &msg[..3]));
        bytes.extend(frame(DATA, END_STREAM, 1, &msg[3..]));
        let mut d = H2Decoder::client();
        let mut events = Vec::new();
        for c in bytes.chunks(5) {
            events.extend(d.push(c));
        }
        assert_eq!(d.broken(), None);
        assert_eq!(
            events,
            vec![
                H2Event::Headers {
                    stream: 1,
                    path: Some("/etcdserverpb.KV/Range".into()),
                    grpc_status: None,
                    end_stream: false
                },
                H2Event::Message {
                    stream: 1,
                    bytes: vec![0x0a, 0x03, b'k', b'e', b'y']
                },
                H2Event::Ended { stream: 1 },
            ]
        );
    }

    #[test]
    fn a_padded_prioritised_header_block_continues_and_padded_data_is_unpadded() {
        // :path as a literal, split across HEADERS (PADDED | PRIORITY) and a
        // CONTINUATION; the message in a padded DATA frame; then trailers.
        let path = b"/etcdserverpb.Lease/LeaseRevoke";
        let mut block = vec![0x04, path.len() as u8];
        block.extend_from_slice(path);
        let mut headers = vec![2u8, 0, 0, 0, 0, 16];
        headers.extend_from_slice(&block[..10]);
        headers.extend_from_slice(&[0, 0]);
        let msg = grpc(&[0x08, 0x07]);
        let mut data = vec![3u8];
        data.extend_from_slice(&msg);
        data.extend_from_slice(&[0, 0, 0]);
        let mut bytes = frame(HEADERS, PADDED | PRIORITY, 3, &headers);
        bytes.extend(frame(CONTINUATION, END_HEADERS, 3, &block[10..]));
        bytes.extend(frame(DATA, PADDED, 3, &data));
        // grpc-status: 0 as a literal with a new name, ending the stream.
        let mut trailers = vec![0x00, 11];
        trailers.extend_from_slice(b"grpc-status");
        trailers.extend_from_slice(&[1, b'0']);
        bytes.extend(frame(HEADERS, END_HEADERS | END_STREAM, 3, &trailers));
        let mut d = H2Decoder::server();
        let events = d.push(&bytes);
        assert_eq!(d.broken(), None);
        assert_eq!(
            events,
            vec![
                H2Event::Headers {
                    stream: 3,
                    path: Some("/etcdserverpb.Lease/LeaseRevoke".into()),
                    grpc_status: None,
                    end_stream: false
                },
                H2Event::Message {
                    stream: 3,
                    bytes: vec![0x08, 0x07]
                },
                H2Event::Headers {
                    stream: 3,
                    path: None,
                    grpc_status: Some("0".into()),
                    end_stream: true
                },
            ]
        );
        // A frame of another stream inside a header block is a broken stream.
        let mut d = H2Decoder::server();
        let mut bytes = frame(HEADERS, 0, 5, &block[..4]);
        bytes.extend(frame(DATA, 0, 5, &msg));
        d.push(&bytes);
        assert!(d.broken().is_some());
    }

    #[test]
    fn a_stream_that_is_not_http2_is_broken_not_guessed() {
        let mut d = H2Decoder::client();
        assert!(d.push(b"GET / HTTP/1.1\r\n\r\n").is_empty());
        assert!(d.broken().is_some());
    }

    #[test]
    fn protobuf_fields_and_the_response_header_revision() {
        // LeaseGrantResponse { header { revision: 300 }, ID: 7, TTL: 1 }
        let header = [0x18, 0xac, 0x02];
        let mut msg = vec![0x0a, header.len() as u8];
        msg.extend_from_slice(&header);
        msg.extend_from_slice(&[0x10, 0x07, 0x18, 0x01]);
        assert_eq!(etcd_revision(&msg), Some(300));
        assert_eq!(varint_field(&msg, 2), Some(7));
        assert_eq!(fields(&[0x0a, 0x05, 0x01]), None);
    }

    /// (stream, method) of each request, and every message of each side,
    /// from the capture of the real client (tests/data/etcd/).
    fn decode_capture() -> (Vec<(u32, String)>, Vec<H2Event>, Vec<H2Event>) {
        let requests = include_bytes!("../../../tests/data/etcd/etcd3-lock-requests.bin");
        let responses = include_bytes!("../../../tests/data/etcd/etcd3-lock-responses.bin");
        let (mut up, mut down) = (H2Decoder::client(), H2Decoder::server());
        // Cut at odd places: frames and messages span chunks.
        let up_events: Vec<H2Event> = requests.chunks(7).flat_map(|c| up.push(c)).collect();
        let down_events: Vec<H2Event> = responses.chunks(11).flat_map(|c| down.push(c)).collect();
        assert_eq!((up.broken(), down.broken()), (None, None));
        let methods = up_events
            .iter()
            .filter_map(|e| match e {
                H2Event::Headers {
                    stream,
                    path: Some(p),
                    ..
                } => Some((*stream, p.clone())),
                _ => None,
            })
            .collect();
        (methods, up_events, down_events)
    }

    fn message_of(events: &[H2Event], stream: u32) -> &[u8] {
        events
            .iter()
            .find_map(|e| match e {
                H2Event::Message { stream: s, bytes } if *s == stream => Some(bytes.as_slice()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no message on stream {stream}"))
    }

    #[test]
    fn the_etcd3_packages_lock_decodes_from_the_real_bytes() {
        let (methods, up, down) = decode_capture();
        let names: Vec<&str> = methods.iter().map(|(_, m)| m.as_str()).collect();
        let first = |m: &str| {
            methods
                .iter()
                .find(|(_, x)| x == m)
                .map(|(s, _)| *s)
                .unwrap_or_else(|| panic!("no {m} in {names:?}"))
        };
        // The lock: a lease, the create-if-absent transaction, a get; the
        // second attempt's lease, its failed transaction and its revoke; the
        // release's revoke (keep-alives on their own stream between).
        for m in [
            "/etcdserverpb.Lease/LeaseGrant",
            "/etcdserverpb.KV/Txn",
            "/etcdserverpb.KV/Range",
            "/etcdserverpb.Lease/LeaseRevoke",
        ] {
            first(m);
        }
        let grants = names.iter().filter(|m| m.ends_with("LeaseGrant")).count();
        let txns: Vec<u32> = methods
            .iter()
            .filter(|(_, m)| m.ends_with("/Txn"))
            .map(|(s, _)| *s)
            .collect();
        let revokes: Vec<u32> = methods
            .iter()
            .filter(|(_, m)| m.ends_with("LeaseRevoke"))
            .map(|(s, _)| *s)
            .collect();
        assert_eq!((grants, txns.len(), revokes.len()), (2, 2, 2), "{names:?}");
        // The lease the first grant's response names is the one the first
        // transaction puts the key with, and the one the last revoke names.
        let lease = varint_field(
            message_of(&down, first("/etcdserverpb.Lease/LeaseGrant")),
            2,
        );
        assert_eq!(lease, Some(4111120419136772101));
        let txn = message_of(&up, txns[0]);
        assert!(txn.windows(17).any(|w| w == b"fencesim/lock/doc"));
        assert_eq!(varint_field(message_of(&up, revokes[1]), 1), lease);
        // The first transaction succeeded at revision 2 (the key's create
        // revision), the second failed.
        let (ok, failed) = (message_of(&down, txns[0]), message_of(&down, txns[1]));
        assert_eq!((varint_field(ok, 2), etcd_revision(ok)), (Some(1), Some(2)));
        assert_eq!(varint_field(failed, 2), None);
        // The release's revoke deleted the key: a new revision.
        assert_eq!(etcd_revision(message_of(&down, revokes[1])), Some(3));
    }
}
