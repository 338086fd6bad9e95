//! The one framer of PostgreSQL's frontend stream (protocol v3): the bytes
//! a client sends, cut into whole messages — first the untyped ones (an
//! SSL or GSS request, then the startup message: int32 length including
//! itself, then the body), then typed ones (a type byte, an int32 length
//! including itself, the body).
//!
//! Two readers need those boundaries: the proxy that holds, drops or cuts
//! a worker's UPDATE ([`crate::live::proxy`]) and the decoder of a user's
//! client ([`super::pgwire`]). They share this one framer so that both cut
//! the stream in the same places; a length below 4 is no PostgreSQL stream
//! (the framer stops, and says so, rather than guess).

/// The protocol version a startup message carries (3.0); an untyped
/// message with another code is an SSL/GSS request, and the startup is
/// still to come.
pub const PROTOCOL_3: u32 = 196_608;

/// One whole frontend message and where it sat in the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrontendMessage {
    /// Its bytes, header included, exactly as sent.
    pub bytes: Vec<u8>,
    /// Typed (after the startup) or not (the startup and what precedes it).
    pub typed: bool,
    /// Offset of its first byte in the stream.
    pub at: u64,
}

impl FrontendMessage {
    /// Its type byte (None for the untyped start-up messages).
    pub fn kind(&self) -> Option<u8> {
        self.typed.then(|| self.bytes[0])
    }

    /// Its body, after the header.
    pub fn body(&self) -> &[u8] {
        &self.bytes[if self.typed { 5 } else { 4 }..]
    }

    /// Offset just past it in the stream.
    pub fn end(&self) -> u64 {
        self.at + self.bytes.len() as u64
    }
}

/// Buffers a client's chunks and hands out whole messages in order.
#[derive(Default)]
pub struct FrontendFramer {
    buf: Vec<u8>,
    /// The startup message has gone by: messages are typed from here on.
    started: bool,
    broken: bool,
    /// Bytes of the stream taken out of `buf` so far.
    consumed: u64,
}

impl FrontendFramer {
    pub fn push(&mut self, chunk: &[u8]) {
        if !self.broken {
            self.buf.extend_from_slice(chunk);
        }
    }

    /// The next whole message; None until more bytes come (or for good,
    /// once the stream turned out not to be PostgreSQL's).
    pub fn next_message(&mut self) -> Option<FrontendMessage> {
        if self.broken {
            return None;
        }
        let head = if self.started { 5 } else { 4 };
        if self.buf.len() < head {
            return None;
        }
        let len_at = head - 4;
        let len = u32::from_be_bytes(self.buf[len_at..head].try_into().unwrap_or([0; 4])) as usize;
        if len < 4 {
            self.broken = true;
            return None;
        }
        let total = len_at + len;
        if self.buf.len() < total {
            return None;
        }
        let bytes: Vec<u8> = self.buf.drain(..total).collect();
        let at = self.consumed;
        self.consumed += total as u64;
        let typed = self.started;
        if !typed {
            // SSL/GSS requests precede the startup message, untyped like it.
            let code = bytes
                .get(4..8)
                .map_or(0, |c| u32::from_be_bytes(c.try_into().unwrap_or([0; 4])));
            self.started = code == PROTOCOL_3;
        }
        Some(FrontendMessage { bytes, typed, at })
    }

    /// Whether the stream stopped framing (a length below 4).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// The bytes buffered and not framed (what a broken stream left).
    pub fn take_rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_messages_come_out_whole_and_typed_after_the_startup() {
        let mut startup = vec![0, 0, 0, 8];
        startup.extend_from_slice(&PROTOCOL_3.to_be_bytes());
        let query = [b'Q', 0, 0, 0, 6, b'x', 0];
        let stream: Vec<u8> = startup.iter().chain(&query).copied().collect();
        let mut f = FrontendFramer::default();
        f.push(&stream[..6]);
        assert_eq!(f.next_message(), None);
        f.push(&stream[6..10]);
        let first = f.next_message().expect("startup");
        assert_eq!((first.kind(), first.at, first.end()), (None, 0, 8));
        assert_eq!(f.next_message(), None);
        f.push(&stream[10..]);
        let q = f.next_message().expect("query");
        assert_eq!((q.kind(), q.body(), q.at), (Some(b'Q'), &b"x\0"[..], 8));
    }

    #[test]
    fn a_length_below_four_stops_the_framer() {
        let mut f = FrontendFramer::default();
        f.push(&[0, 0, 0, 2, 9, 9]);
        assert_eq!(f.next_message(), None);
        assert!(f.is_broken());
        assert_eq!(f.take_rest(), vec![0, 0, 0, 2, 9, 9]);
    }
}
