//! PostgreSQL's frontend/backend protocol (v3) in both directions.
//!
//! Backend messages are parsed by `postgres-protocol` (the crate the
//! `postgres` client uses). That crate only *writes* frontend messages, so
//! the few a lock client's statements travel in are read here: the simple
//! protocol's Query, and the extended protocol's Parse (statement text),
//! Bind (parameters, result formats) and Execute (the statement runs). A
//! statement is reported when it runs — at Query or Execute — with its
//! integer parameters (binary or text) or, for a simple Query, the integer
//! literals in its text, since drivers such as psycopg2 inline them.

use std::collections::BTreeMap;

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::Message;

use super::pgframe::FrontendFramer;

/// A statement the server is about to run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Statement {
    pub sql: String,
    /// Integer parameters in order (None: null or not an integer).
    pub params: Vec<Option<i64>>,
    /// Result columns come back in binary (the extended protocol's choice).
    pub binary_results: bool,
    /// Offset in the client's stream of the request that runs it: its
    /// Query, or the first message after the previous Sync (the proxy can
    /// lose the request from there on and leave what came before intact).
    pub request_at: u64,
}

impl Statement {
    pub fn is_update_of(&self, table: &str) -> bool {
        let sql = self.sql.to_ascii_lowercase();
        sql.trim_start().starts_with("update") && sql.contains(table)
    }

    pub fn is_select_of(&self, table: &str) -> bool {
        let sql = self.sql.to_ascii_lowercase();
        sql.trim_start().starts_with("select") && sql.contains(table)
    }

    /// Every integer the statement carries: bound parameters, else literals.
    pub fn integers(&self) -> Vec<i64> {
        if !self.params.is_empty() {
            return self.params.iter().flatten().copied().collect();
        }
        self.sql
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect()
    }
}

/// Reads the client's stream.
#[derive(Default)]
pub struct Frontend {
    /// Cuts the stream into messages (the proxy's own framer too).
    frames: FrontendFramer,
    broken: bool,
    statements: BTreeMap<String, String>,
    portals: BTreeMap<String, Statement>,
    /// Where the current request began (after the last Sync or Query).
    request_at: u64,
}

fn cstr(b: &[u8], at: &mut usize) -> Option<String> {
    let end = b.get(*at..)?.iter().position(|&c| c == 0)? + *at;
    let s = String::from_utf8_lossy(&b[*at..end]).into_owned();
    *at = end + 1;
    Some(s)
}

fn int16(b: &[u8], at: &mut usize) -> Option<i16> {
    let v = i16::from_be_bytes(b.get(*at..*at + 2)?.try_into().ok()?);
    *at += 2;
    Some(v)
}

fn int32(b: &[u8], at: &mut usize) -> Option<i32> {
    let v = i32::from_be_bytes(b.get(*at..*at + 4)?.try_into().ok()?);
    *at += 4;
    Some(v)
}

/// An integer column or parameter in text or binary format.
pub fn integer(bytes: &[u8], binary: bool) -> Option<i64> {
    if binary {
        match bytes.len() {
            8 => Some(i64::from_be_bytes(bytes.try_into().ok()?)),
            4 => Some(i32::from_be_bytes(bytes.try_into().ok()?) as i64),
            2 => Some(i16::from_be_bytes(bytes.try_into().ok()?) as i64),
            _ => None,
        }
    } else {
        std::str::from_utf8(bytes).ok()?.trim().parse().ok()
    }
}

impl Frontend {
    /// Feeds a chunk; returns the statements it starts running.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Statement> {
        let mut out = Vec::new();
        if self.broken {
            return out;
        }
        self.frames.push(chunk);
        while let Some(msg) = self.frames.next_message() {
            if !msg.typed || matches!(msg.kind(), Some(b'S' | b'Q')) {
                // The next request starts after a Sync, a Query or the start-up.
                self.request_at = msg.end();
            }
            let Some(kind) = msg.kind() else {
                continue;
            };
            if self.message(kind, msg.body(), msg.at, &mut out).is_none() {
                self.broken = true;
                break;
            }
        }
        self.broken |= self.frames.is_broken();
        out
    }

    fn message(&mut self, kind: u8, b: &[u8], msg_at: u64, out: &mut Vec<Statement>) -> Option<()> {
        let mut at = 0;
        match kind {
            b'Q' => out.push(Statement {
                sql: cstr(b, &mut at)?,
                request_at: msg_at,
                ..Statement::default()
            }),
            b'P' => {
                let name = cstr(b, &mut at)?;
                let sql = cstr(b, &mut at)?;
                self.statements.insert(name, sql);
            }
            b'B' => {
                let portal = cstr(b, &mut at)?;
                let name = cstr(b, &mut at)?;
                let formats: Vec<i16> = (0..int16(b, &mut at)?)
                    .map(|_| int16(b, &mut at))
                    .collect::<Option<_>>()?;
                let n = int16(b, &mut at)?;
                let mut params = Vec::new();
                for i in 0..n as usize {
                    let len = int32(b, &mut at)?;
                    if len < 0 {
                        params.push(None);
                        continue;
                    }
                    let bytes = b.get(at..at + len as usize)?;
                    at += len as usize;
                    let format = match formats.len() {
                        0 => 0,
                        1 => formats[0],
                        _ => *formats.get(i)?,
                    };
                    params.push(integer(bytes, format == 1));
                }
                let results: Vec<i16> = (0..int16(b, &mut at)?)
                    .map(|_| int16(b, &mut at))
                    .collect::<Option<_>>()?;
                let sql = self.statements.get(&name).cloned().unwrap_or_default();
                self.portals.insert(
                    portal,
                    Statement {
                        sql,
                        params,
                        binary_results: results.first() == Some(&1),
                        request_at: msg_at,
                    },
                );
            }
            b'E' => {
                let portal = cstr(b, &mut at)?;
                if let Some(s) = self.portals.get(&portal) {
                    out.push(Statement {
                        request_at: self.request_at.min(msg_at),
                        ..s.clone()
                    });
                }
            }
            _ => {}
        }
        Some(())
    }
}

/// A backend message, reduced to what a lock history needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `UPDATE 1`, `SELECT 1`, `BEGIN`, …
    Complete(String),
    /// The first column of a row, raw (its format is the statement's).
    Row(Option<Vec<u8>>),
    Error(String),
    /// The server's process id for this connection (BackendKeyData).
    BackendPid(i32),
    Ready,
}

/// Reads the server's stream.
#[derive(Default)]
pub struct Backend {
    buf: BytesMut,
    seen_any: bool,
    broken: bool,
}

impl Backend {
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Reply> {
        let mut out = Vec::new();
        if self.broken {
            return out;
        }
        self.buf.extend_from_slice(chunk);
        // A refused SSL/GSS request is answered with one unframed 'N'.
        while !self.seen_any && self.buf.first() == Some(&b'N') {
            let _ = self.buf.split_to(1);
        }
        loop {
            match Message::parse(&mut self.buf) {
                Ok(Some(m)) => {
                    self.seen_any = true;
                    match m {
                        Message::CommandComplete(c) => {
                            out.push(Reply::Complete(c.tag().unwrap_or("").to_string()))
                        }
                        Message::DataRow(r) => {
                            let buf = r.buffer();
                            let first = r.ranges().next().ok().flatten();
                            out.push(Reply::Row(
                                first.and_then(|range| range.map(|x| buf[x].to_vec())),
                            ));
                        }
                        Message::ErrorResponse(e) => {
                            let mut fields = e.fields();
                            let mut text = String::new();
                            while let Ok(Some(f)) = fields.next() {
                                if f.type_() == b'M' {
                                    text = String::from_utf8_lossy(f.value_bytes()).into_owned();
                                }
                            }
                            out.push(Reply::Error(text));
                        }
                        Message::BackendKeyData(k) => out.push(Reply::BackendPid(k.process_id())),
                        Message::ReadyForQuery(_) => out.push(Reply::Ready),
                        _ => {}
                    }
                }
                Ok(None) => break,
                Err(_) => {
                    self.broken = true;
                    break;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::pgframe::PROTOCOL_3;
    use super::*;

    fn typed(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn startup() -> Vec<u8> {
        let mut m = 8u32.to_be_bytes().to_vec();
        m.extend_from_slice(&PROTOCOL_3.to_be_bytes());
        m
    }

    #[test]
    fn bound_update_runs_with_its_binary_parameters() {
        let mut f = Frontend::default();
        let mut wire = startup();
        wire.extend(typed(
            b'P',
            b"s1\0UPDATE documents SET body = $1 WHERE fencing_token < $2\0\0\0",
        ));
        let mut bind = b"\0s1\0\0\x01\0\x01\0\x02".to_vec();
        bind.extend_from_slice(&8i32.to_be_bytes());
        bind.extend_from_slice(&7i64.to_be_bytes());
        bind.extend_from_slice(&1i32.to_be_bytes());
        bind.push(b'3');
        bind.extend_from_slice(b"\0\0");
        // Formats: one code (binary) for all; the second parameter is therefore
        // 1 byte of binary, not an integer.
        wire.extend(typed(b'B', &bind));
        wire.extend(typed(b'E', b"\0\0\0\0\0"));
        let (a, b) = wire.split_at(9);
        assert!(f.push(a).is_empty());
        let run = f.push(b);
        assert_eq!(run.len(), 1);
        assert!(run[0].is_update_of("documents"));
        assert_eq!(run[0].params, vec![Some(7), None]);
        assert_eq!(run[0].request_at, 8, "its request starts with its Parse");
    }

    #[test]
    fn a_request_after_a_sync_starts_after_it() {
        let mut f = Frontend::default();
        let mut wire = startup();
        wire.extend(typed(b'P', b"s1\0SELECT body FROM documents\0\0\0"));
        wire.extend(typed(b'S', b""));
        let second = wire.len() as u64;
        wire.extend(typed(b'B', b"\0s1\0\0\0\0\0\0\0"));
        wire.extend(typed(b'E', b"\0\0\0\0\0"));
        let run = f.push(&wire);
        assert_eq!(run.len(), 1);
        assert_eq!(run[0].request_at, second);
    }

    #[test]
    fn simple_query_reports_its_literals() {
        let mut f = Frontend::default();
        let mut wire = startup();
        wire.extend(typed(
            b'Q',
            b"UPDATE documents SET body = 12, fencing_token = 3 WHERE id = 1\0",
        ));
        let run = f.push(&wire);
        assert_eq!(run[0].integers(), vec![12, 3, 1]);
    }
}
