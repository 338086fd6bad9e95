//! RESP (Redis's wire protocol) in both directions, decoded with the
//! `redis-protocol` crate: a client's commands are arrays of bulk strings,
//! the server's replies RESP2 or RESP3 frames (redis-py 8 says `HELLO 3`;
//! the RESP3 decoder reads both). Replies answer commands in order, so
//! pairing is a FIFO; RESP3 push frames answer nothing and are skipped.

use redis_protocol::resp3::decode::complete::decode;
use redis_protocol::resp3::types::OwnedFrame;

/// One decoded Redis reply, reduced to what a lock history needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Ok,
    Nil,
    Int(i64),
    Bulk(Vec<u8>),
    Error(String),
    Other,
}

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

pub fn reply(frame: &OwnedFrame) -> Reply {
    match frame {
        OwnedFrame::SimpleString { data, .. } if data == b"OK" => Reply::Ok,
        OwnedFrame::Null => Reply::Nil,
        OwnedFrame::Number { data, .. } => Reply::Int(*data),
        OwnedFrame::BlobString { data, .. } => Reply::Bulk(data.clone()),
        OwnedFrame::SimpleError { data, .. } => Reply::Error(data.clone()),
        _ => Reply::Other,
    }
}

/// The lock-client meaning of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `SET key value NX [PX ms | EX s]`: a lock acquisition.
    Acquire {
        key: String,
        ttl_ms: Option<u64>,
    },
    /// `INCR key`: a fencing token.
    Incr {
        key: String,
    },
    /// `DEL key`, or a script (`EVAL`/`EVALSHA`) over one key and one
    /// argument (the compare-and-delete release of redis-py's `Lock` and of
    /// most recipes; an extension passes more arguments).
    Release {
        key: String,
        script: bool,
    },
    Other(String),
}

pub fn interpret(args: &[Vec<u8>]) -> Command {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let name = args.first().map(|a| text(a).to_ascii_uppercase());
    let upper: Vec<String> = args.iter().map(|a| text(a).to_ascii_uppercase()).collect();
    let number_after = |flag: &str| {
        upper
            .iter()
            .position(|a| a == flag)
            .and_then(|i| upper.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    match (name.as_deref(), args.len()) {
        (Some("SET"), n) if n >= 3 && upper[3..].iter().any(|a| a == "NX") => Command::Acquire {
            key: text(&args[1]),
            ttl_ms: number_after("PX").or_else(|| number_after("EX").map(|s| s * 1000)),
        },
        (Some("INCR"), 2) => Command::Incr {
            key: text(&args[1]),
        },
        (Some("DEL"), 2) => Command::Release {
            key: text(&args[1]),
            script: false,
        },
        (Some("EVAL" | "EVALSHA"), 5) if upper[2] == "1" => Command::Release {
            key: text(&args[3]),
            script: true,
        },
        (Some(n), _) => Command::Other(n.to_string()),
        (None, _) => Command::Other(String::new()),
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
        let cmd = interpret(&command_args(&frames[0]).unwrap());
        assert_eq!(
            cmd,
            Command::Acquire {
                key: "lock:doc".into(),
                ttl_ms: Some(50)
            }
        );
    }

    #[test]
    fn pipelined_replies_come_out_in_order() {
        let mut b = FrameBuffer::default();
        let frames = b.push(b"+OK\r\n_\r\n:7\r\n>2\r\n$4\r\nnote\r\n:1\r\n$-1\r\n");
        let replies: Vec<Reply> = frames.iter().map(reply).collect();
        assert_eq!(
            replies,
            vec![Reply::Ok, Reply::Nil, Reply::Int(7), Reply::Nil],
            "RESP3 null, a push skipped, then RESP2's null bulk string"
        );
    }
}
