//! One line of Redis's `MONITOR` feed, parsed.
//!
//! `MONITOR` is the server's own account of what it executed, in execution
//! order: `<unix s>.<µs> [<db> <caller>] "cmd" "arg" …`, where the caller is
//! the client's `ip:port` (or `unix:<path>`) for a command the client sent —
//! also each command of a `MULTI`/`EXEC` block, fed when `EXEC` runs them —
//! and `lua` for a command a script ran, fed right after its `EVAL`,
//! `EVALSHA` or `FCALL` line. Arguments are quoted as `sdscatrepr` writes
//! them (`\\`, `\"`, `\n`, `\r`, `\t`, `\a`, `\b`, `\xHH`). Parsing is exact
//! or an error naming what was expected: a line the account cannot read is
//! a reason not to judge, never a guess.

use std::fmt;

/// Who ran a command, as the feed names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A client connection: its address as the server saw it (`127.0.0.1:52144`).
    Client(String),
    /// A script (`[0 lua]`): the command belongs to the last client line.
    Lua,
}

/// One executed command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonitorLine {
    /// Redis's wall clock when it fed the line, in µs since the epoch.
    pub ts_us: u64,
    pub db: u32,
    pub caller: Caller,
    /// The command name and its arguments, unquoted bytes.
    pub args: Vec<Vec<u8>>,
}

impl MonitorLine {
    /// The command name, lower case (`set`, `evalsha`).
    pub fn name(&self) -> String {
        self.args
            .first()
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
            .unwrap_or_default()
    }
}

/// A line the parser could not read, with what it expected where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub column: usize,
    pub expected: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: expected {}", self.column, self.expected)
    }
}

impl std::error::Error for ParseError {}

/// Parses one feed line (without its line ending). `+OK`, the reply to the
/// `MONITOR` command itself, is not a line of the feed: the caller skips it.
pub fn parse(line: &str) -> Result<MonitorLine, ParseError> {
    let b = line.as_bytes();
    let err = |column: usize, expected: &'static str| ParseError {
        column: column + 1,
        expected,
    };
    let space = b
        .iter()
        .position(|&c| c == b' ')
        .ok_or(err(0, "a timestamp and a space"))?;
    let ts_us = parse_ts(&line[..space]).ok_or(err(0, "a timestamp <seconds>.<6 digits>"))?;
    let mut at = space + 1;
    if b.get(at) != Some(&b'[') {
        return Err(err(at, "'[' opening the caller"));
    }
    let close = b[at..]
        .iter()
        .position(|&c| c == b']')
        .map(|k| at + k)
        .ok_or(err(at, "']' closing the caller"))?;
    let inside = &line[at + 1..close];
    let (db, who) = inside
        .split_once(' ')
        .ok_or(err(at + 1, "'<db> <caller>'"))?;
    let db = db.parse().map_err(|_| err(at + 1, "a database number"))?;
    let caller = if who == "lua" {
        Caller::Lua
    } else if who.is_empty() {
        return Err(err(at + 1 + inside.len(), "a caller address or 'lua'"));
    } else {
        Caller::Client(who.to_string())
    };
    at = close + 1;
    let mut args = Vec::new();
    loop {
        match b.get(at) {
            None => break,
            Some(b' ') => at += 1,
            Some(b'"') => {
                let (arg, next) =
                    unquote(b, at + 1).ok_or(err(at, "a closed, well-escaped argument"))?;
                args.push(arg);
                at = next;
            }
            Some(_) => return Err(err(at, "a quoted argument")),
        }
    }
    if args.is_empty() {
        return Err(err(at, "a command"));
    }
    Ok(MonitorLine {
        ts_us,
        db,
        caller,
        args,
    })
}

fn parse_ts(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    if frac.len() != 6 || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let frac: u64 = frac.parse().ok()?;
    secs.checked_mul(1_000_000)?.checked_add(frac)
}

/// One argument from after its opening quote: its bytes and the index after
/// its closing quote.
fn unquote(b: &[u8], mut at: usize) -> Option<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    loop {
        match *b.get(at)? {
            b'"' => return Some((out, at + 1)),
            b'\\' => {
                let c = *b.get(at + 1)?;
                at += 2;
                out.push(match c {
                    b'\\' => b'\\',
                    b'"' => b'"',
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'x' => {
                        let hex = std::str::from_utf8(b.get(at..at + 2)?).ok()?;
                        at += 2;
                        u8::from_str_radix(hex, 16).ok()?
                    }
                    _ => return None,
                });
            }
            c => {
                out.push(c);
                at += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_line_names_its_address_and_arguments() {
        let l =
            parse(r#"1796312333.451955 [0 127.0.0.1:52144] "SET" "lock:doc" "a" "NX" "PX" "100""#)
                .unwrap();
        assert_eq!(l.ts_us, 1_796_312_333_451_955);
        assert_eq!(l.caller, Caller::Client("127.0.0.1:52144".into()));
        assert_eq!(l.name(), "set");
        assert_eq!(l.args[1], b"lock:doc");
        assert_eq!(l.args.len(), 6);
    }

    #[test]
    fn a_script_line_is_lua_and_escapes_are_undone() {
        let l = parse(r#"1796312333.464294 [0 lua] "set" "k\"q\\" "\x00\xff\n" """#).unwrap();
        assert_eq!(l.caller, Caller::Lua);
        assert_eq!(l.args[1], b"k\"q\\");
        assert_eq!(l.args[2], vec![0u8, 0xff, b'\n']);
        assert_eq!(l.args[3], b"");
    }

    #[test]
    fn malformed_lines_say_what_was_expected() {
        assert_eq!(parse("OK").unwrap_err().expected, "a timestamp and a space");
        assert_eq!(parse("12.5 [0 lua] \"get\"").unwrap_err().column, 1);
        assert_eq!(parse("1.000001 [0 lua]").unwrap_err().expected, "a command");
        assert_eq!(
            parse("1.000001 [0 lua] \"get").unwrap_err().expected,
            "a closed, well-escaped argument"
        );
        assert_eq!(
            parse("1.000001 [x lua] \"get\"").unwrap_err().expected,
            "a database number"
        );
    }
}
