//! RESP (Redis's wire protocol) in both directions, decoded with the
//! `redis-protocol` crate: a client's commands are arrays of bulk strings,
//! the server's replies RESP2 or RESP3 frames (redis-py 8 says `HELLO 3`;
//! the RESP3 decoder reads both). Replies answer commands in order, so
//! pairing is a FIFO; RESP3 push frames answer nothing and are skipped.

use redis_protocol::resp3::decode::complete::decode;
use redis_protocol::resp3::types::OwnedFrame;

/// Accumulates one direction's bytes and yields whole frames.
#[derive(Default)]
pub struct FrameBuffer {
    buf: Vec<u8>,
    /// A frame that would not decode: the rest of this stream is not decoded.
    broken: bool,
}

impl FrameBuffer {
    /// Whole frames completed by `chunk`, push frames left out.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<OwnedFrame> {
        let mut out = Vec::new();
        if self.broken {
            return out;
        }
        self.buf.extend_from_slice(chunk);
        loop {
            // RESP2's null bulk string and null array (a refused `SET NX`,
            // a `GET` of nothing) are not RESP3: the RESP3 decoder would
            // call them malformed and the rest of the stream would be lost.
            if self.buf.starts_with(b"$-1\r\n") || self.buf.starts_with(b"*-1\r\n") {
                self.buf.drain(..5);
                out.push(OwnedFrame::Null);
                continue;
            }
            match decode(&self.buf) {
                Ok(Some((frame, used))) => {
                    self.buf.drain(..used);
                    if !matches!(frame, OwnedFrame::Push { .. }) {
                        out.push(frame);
                    }
                }
                Ok(None) => break,
                Err(_) => {
                    self.broken = true;
                    self.buf.clear();
                    break;
                }
            }
        }
        out
    }

    /// Why the stream stopped decoding, if it did.
    pub fn broken(&self) -> Option<String> {
        self.broken
            .then(|| "a frame that is not RESP (the rest is not decoded)".to_string())
    }
}

/// A command frame as its arguments (`SET`, key, value, `NX`, `PX`, ttl).
pub fn command_args(frame: &OwnedFrame) -> Option<Vec<Vec<u8>>> {
    match frame {
        OwnedFrame::Array { data, .. } => data
            .iter()
            .map(|f| match f {
                OwnedFrame::BlobString { data, .. } | OwnedFrame::SimpleString { data, .. } => {
                    Some(data.clone())
                }
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_set_nx_is_decoded_once_whole() {
        let mut b = FrameBuffer::default();
        let wire =
            b"*6\r\n$3\r\nSET\r\n$8\r\nlock:doc\r\n$1\r\nx\r\n$2\r\nNX\r\n$2\r\nPX\r\n$2\r\n50\r\n";
        assert!(b.push(&wire[..10]).is_empty());
        let frames = b.push(&wire[10..]);
        assert_eq!(frames.len(), 1);
        let args = command_args(&frames[0]).unwrap();
        assert_eq!(args.len(), 6);
        assert_eq!(args[1], b"lock:doc");
    }

    #[test]
    fn pipelined_replies_come_out_in_order() {
        let mut b = FrameBuffer::default();
        let frames = b.push(b"+OK\r\n_\r\n:7\r\n>2\r\n$4\r\nnote\r\n:1\r\n$-1\r\n");
        assert_eq!(
            frames,
            vec![
                OwnedFrame::SimpleString {
                    data: b"OK".to_vec(),
                    attributes: None
                },
                OwnedFrame::Null,
                OwnedFrame::Number {
                    data: 7,
                    attributes: None
                },
                OwnedFrame::Null
            ],
            "RESP3 null, a push skipped, then RESP2's null bulk string"
        );
    }
}
