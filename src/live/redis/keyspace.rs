//! What a Redis command does to the lock key and the token key: the
//! replay half of the server-side account.
//!
//! `MONITOR` says which commands ran, in order, and who ran them, but not
//! what they did. Redis's semantics for a string key are small and exact,
//! so replaying the executed commands on a model of the two keys tells what
//! the server did: whether a `SET … NX` inside a script found the key free,
//! whether a compare-and-delete script deleted it (its `del` line appears
//! only when its `get` matched), when a lease ran out. The one input the
//! feed does not pin down exactly is time: Redis stamps an expiry from its
//! millisecond clock at execution and checks it against the clock at the
//! start of the command (of the script, of the `EXEC`); the feed's
//! microsecond stamps are taken a few microseconds after execution. The
//! replay uses the same millisecond arithmetic on the feed's stamps; a
//! command that ran in the same millisecond as the expiry is counted as
//! borderline, and Redis's keyspace notifications decide which side of the
//! expiry it fell on (`feed.rs`, `settle`).
//!
//! A command this model does not know that names the lock key in a key
//! position is reported as unmodelled, never guessed at.

/// The lock key's state in the replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub value: Vec<u8>,
    /// Unix ms after which the key is gone (Redis: expired when now > when).
    pub expire_at_ms: Option<u64>,
}

/// What one command did to the lock key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockEffect {
    /// Read or refused: nothing changed (a `SET NX` on a held key, a `GET`).
    None,
    /// The key was created or overwritten with this value and expiry.
    Set(Held),
    /// The key's expiry changed (`PEXPIRE`, `SET … XX` or `GETEX` keeping the value).
    Expiry(Option<u64>),
    /// The key was deleted.
    Deleted,
}

/// What one command did to the token key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenEffect {
    None,
    /// The counter now holds this value, as the command's reply said (`INCR`).
    Counted(i64),
    /// Set, deleted or otherwise changed without a reply worth a token.
    Changed(Option<i64>),
}

/// Why a command could not be replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unmodelled(pub String);

fn lower(a: &[u8]) -> String {
    String::from_utf8_lossy(a).to_ascii_lowercase()
}

/// The commands that run a script or a function: their keys come after a
/// key count, their effects on their own `lua` lines of the feed.
pub const SCRIPT_COMMANDS: [&str; 6] = [
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
];

/// Whether `name` (lower case) runs a script or a function.
pub fn is_script(name: &str) -> bool {
    SCRIPT_COMMANDS.contains(&name)
}

fn int(a: &[u8]) -> Option<i64> {
    std::str::from_utf8(a).ok()?.parse().ok()
}

/// Key positions of a command (indices into `args`), for the commands the
/// replay knows; None: unknown command (its first argument is taken as its
/// key, which is where nearly every key command has one).
pub fn key_positions(args: &[Vec<u8>]) -> Option<Vec<usize>> {
    let name = lower(args.first()?);
    let all = || (1..args.len()).collect::<Vec<_>>();
    Some(match name.as_str() {
        "del" | "unlink" | "exists" | "mget" | "touch" | "watch" => all(),
        script if is_script(script) => {
            let n = args.get(2).and_then(|a| int(a)).unwrap_or(0).max(0) as usize;
            (3..(3 + n).min(args.len())).collect()
        }
        "multi" | "exec" | "discard" | "unwatch" | "ping" | "echo" | "select" | "hello"
        | "client" | "script" | "function" | "command" | "info" | "auth" | "quit" | "reset"
        | "readonly" | "readwrite" | "time" | "flushall" | "flushdb" => vec![],
        "set" | "setnx" | "setex" | "psetex" | "getset" | "getdel" | "getex" | "get" | "expire"
        | "pexpire" | "expireat" | "pexpireat" | "persist" | "ttl" | "pttl" | "expiretime"
        | "pexpiretime" | "type" | "strlen" | "getrange" | "dump" | "incr" | "incrby" | "decr"
        | "decrby" | "incrbyfloat" | "append" | "setrange" | "object" => {
            if name == "object" {
                (2..args.len().min(3)).collect()
            } else {
                (1..args.len().min(2)).collect()
            }
        }
        _ => return None,
    })
}

/// Whether `key` stands in one of the command's key positions (for an
/// unknown command: its first argument).
pub fn names_key(args: &[Vec<u8>], key: &[u8]) -> bool {
    match key_positions(args) {
        Some(pos) => pos.iter().any(|&k| args[k] == key),
        None => args.get(1).is_some_and(|a| a == key),
    }
}

/// The key a command creates only if it is absent, if it is one: a `SET …
/// NX` or `SETNX`, or — run by a script or inside a transaction, where the
/// condition is the script's own `EXISTS`/`GET` or the `WATCH` before it —
/// any `SET`, `SETEX` or `PSETEX` (node-redlock's lock script sets after
/// its `exists`). What a lock is made of: the key the server's account
/// takes for the lock when none is named.
pub fn created_conditionally(args: &[Vec<u8>], scripted: bool) -> Option<&[u8]> {
    let key = args.get(1)?;
    let sets = matches!(lower(args.first()?).as_str(), "set" | "setex" | "psetex");
    (takes_if_free(args) || (scripted && sets)).then_some(key.as_slice())
}

/// The key a command counts (`INCR`, `INCRBY`): a token counter's draw.
pub fn counted(args: &[Vec<u8>]) -> Option<&[u8]> {
    let counts = matches!(lower(args.first()?).as_str(), "incr" | "incrby");
    counts.then(|| args.get(1).map(Vec::as_slice)).flatten()
}

/// The lock key's state at `now_ms`: Redis expires a key when now > when.
pub fn alive(held: &Held, now_ms: u64) -> bool {
    held.expire_at_ms.is_none_or(|when| now_ms <= when)
}

/// A command whose reply says whether it took the key: `SETNX`, or `SET …
/// NX` without `GET` (`OK` taken, nil refused).
pub fn takes_if_free(args: &[Vec<u8>]) -> bool {
    let word = |a: &Vec<u8>, w: &str| a.eq_ignore_ascii_case(w.as_bytes());
    match args.first() {
        Some(n) if word(n, "setnx") => true,
        Some(n) if word(n, "set") => {
            let opts = args.get(3..).unwrap_or_default();
            opts.iter().any(|a| word(a, "nx")) && !opts.iter().any(|a| word(a, "get"))
        }
        _ => false,
    }
}

/// Parses `SET`'s options: (nx, xx, expiry). Expiry: None = clear it,
/// Some(None) = keep it (KEEPTTL), Some(Some(when)).
fn set_options(
    args: &[Vec<u8>],
    at_ms: u64,
) -> Result<(bool, bool, Option<Option<u64>>), Unmodelled> {
    let (mut nx, mut xx, mut expiry) = (false, false, None);
    let mut k = 3;
    while k < args.len() {
        let opt = lower(&args[k]);
        let arg = || {
            args.get(k + 1)
                .and_then(|a| int(a))
                .filter(|n| *n > 0)
                .map(|n| n as u64)
                .ok_or_else(|| {
                    Unmodelled(format!(
                        "SET {} without a positive number",
                        opt.to_uppercase()
                    ))
                })
        };
        match opt.as_str() {
            "nx" => nx = true,
            "xx" => xx = true,
            "get" => {}
            "keepttl" => expiry = Some(None),
            "px" => {
                expiry = Some(Some(at_ms + arg()?));
                k += 1;
            }
            "ex" => {
                expiry = Some(Some(at_ms + arg()? * 1000));
                k += 1;
            }
            "pxat" => {
                expiry = Some(Some(arg()?));
                k += 1;
            }
            "exat" => {
                expiry = Some(Some(arg()? * 1000));
                k += 1;
            }
            other => return Err(Unmodelled(format!("SET option {other:?}"))),
        }
        k += 1;
    }
    Ok((nx, xx, expiry))
}

/// Replays one command on the lock key. `held` is the key as the command
/// found it (already expired keys removed by the caller); `at_ms` the
/// server's millisecond clock when the command executed.
pub fn apply_lock(
    args: &[Vec<u8>],
    held: Option<&Held>,
    at_ms: u64,
) -> Result<LockEffect, Unmodelled> {
    let name = lower(&args[0]);
    let num = |k: usize| args.get(k).and_then(|a| int(a));
    let value = |k: usize| args.get(k).cloned().unwrap_or_default();
    Ok(match name.as_str() {
        "set" => {
            let (nx, xx, expiry) = set_options(args, at_ms)?;
            if (nx && held.is_some()) || (xx && held.is_none()) {
                LockEffect::None
            } else {
                let expire_at_ms = match expiry {
                    None => None,
                    Some(None) => held.and_then(|h| h.expire_at_ms),
                    Some(Some(when)) => Some(when),
                };
                LockEffect::Set(Held {
                    value: value(2),
                    expire_at_ms,
                })
            }
        }
        "setnx" if held.is_some() => LockEffect::None,
        "setnx" | "getset" => LockEffect::Set(Held {
            value: value(2),
            expire_at_ms: None,
        }),
        "setex" | "psetex" => {
            let n = num(2).filter(|n| *n > 0).ok_or_else(|| {
                Unmodelled(format!("{} without a positive ttl", name.to_uppercase()))
            })? as u64;
            let ms = if name == "setex" { n * 1000 } else { n };
            LockEffect::Set(Held {
                value: value(3),
                expire_at_ms: Some(at_ms + ms),
            })
        }
        "del" | "unlink" | "getdel" if held.is_some() => LockEffect::Deleted,
        "expire" | "pexpire" | "expireat" | "pexpireat" if held.is_some() => {
            expire(args, held, at_ms)?
        }
        "persist" if held.is_some_and(|h| h.expire_at_ms.is_some()) => LockEffect::Expiry(None),
        "getex" if held.is_some() => getex(args, at_ms)?,
        "flushall" | "flushdb" if held.is_some() => LockEffect::Deleted,
        "del" | "unlink" | "getdel" | "expire" | "pexpire" | "expireat" | "pexpireat"
        | "persist" | "getex" | "flushall" | "flushdb" | "get" | "exists" | "ttl" | "pttl"
        | "expiretime" | "pexpiretime" | "type" | "strlen" | "getrange" | "dump" | "mget"
        | "touch" | "watch" | "object" => LockEffect::None,
        script if is_script(script) => LockEffect::None,
        other => {
            return Err(Unmodelled(format!(
                "{} on the lock key",
                other.to_uppercase()
            )))
        }
    })
}

/// `EXPIRE`, `PEXPIRE`, `EXPIREAT` or `PEXPIREAT` of the held lock key,
/// with its `NX`/`XX`/`GT`/`LT` condition.
fn expire(args: &[Vec<u8>], held: Option<&Held>, at_ms: u64) -> Result<LockEffect, Unmodelled> {
    let name = lower(&args[0]);
    let n = args
        .get(2)
        .and_then(|a| int(a))
        .ok_or_else(|| Unmodelled(format!("{} without a number", name.to_uppercase())))?;
    let when = match name.as_str() {
        "expire" => at_ms as i64 + n * 1000,
        "pexpire" => at_ms as i64 + n,
        "expireat" => n * 1000,
        _ => n,
    };
    let old = held.and_then(|h| h.expire_at_ms);
    let allowed = match args.get(3).map(|a| lower(a)).as_deref() {
        None => true,
        Some("nx") => old.is_none(),
        Some("xx") => old.is_some(),
        Some("gt") => old.is_some_and(|o| when > o as i64),
        Some("lt") => old.is_none_or(|o| when < o as i64),
        Some(other) => {
            return Err(Unmodelled(format!(
                "{} option {other:?}",
                name.to_uppercase()
            )))
        }
    };
    Ok(if !allowed {
        LockEffect::None
    } else if when <= at_ms as i64 {
        // An expiry in the past deletes the key at once.
        LockEffect::Deleted
    } else {
        LockEffect::Expiry(Some(when as u64))
    })
}

/// `GETEX` of the held lock key: its new expiry, or none (`PERSIST`).
fn getex(args: &[Vec<u8>], at_ms: u64) -> Result<LockEffect, Unmodelled> {
    Ok(match args.get(2).map(|a| lower(a)).as_deref() {
        None => LockEffect::None,
        Some("persist") => LockEffect::Expiry(None),
        Some(opt) => {
            let n = args
                .get(3)
                .and_then(|a| int(a))
                .filter(|n| *n > 0)
                .ok_or_else(|| Unmodelled(format!("GETEX {opt} without a positive number")))?
                as u64;
            LockEffect::Expiry(Some(match opt {
                "px" => at_ms + n,
                "ex" => at_ms + n * 1000,
                "pxat" => n,
                "exat" => n * 1000,
                other => return Err(Unmodelled(format!("GETEX option {other:?}"))),
            }))
        }
    })
}

/// Replays one command on the token key (a counter without expiry).
pub fn apply_token(args: &[Vec<u8>], value: Option<i64>) -> Result<TokenEffect, Unmodelled> {
    let name = lower(&args[0]);
    let by = |k: usize| {
        args.get(k)
            .and_then(|a| int(a))
            .ok_or_else(|| Unmodelled(format!("{} without an integer", name.to_uppercase())))
    };
    let now = value.unwrap_or(0);
    Ok(match name.as_str() {
        "incr" => TokenEffect::Counted(now + 1),
        "decr" => TokenEffect::Counted(now - 1),
        "incrby" => TokenEffect::Counted(now + by(2)?),
        "decrby" => TokenEffect::Counted(now - by(2)?),
        "set" | "getset" | "setnx" => {
            if name == "setnx" && value.is_some() {
                TokenEffect::None
            } else {
                TokenEffect::Changed(args.get(2).and_then(|a| int(a)))
            }
        }
        "del" | "unlink" | "getdel" | "flushall" | "flushdb" => TokenEffect::Changed(None),
        "get" | "exists" | "ttl" | "pttl" | "type" | "strlen" | "mget" | "watch" | "touch"
        | "dump" | "object" => TokenEffect::None,
        script if is_script(script) => TokenEffect::None,
        other => {
            return Err(Unmodelled(format!(
                "{} on the token key",
                other.to_uppercase()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(s: &str) -> Vec<Vec<u8>> {
        s.split(' ').map(|a| a.as_bytes().to_vec()).collect()
    }

    fn held(v: &str, when: Option<u64>) -> Held {
        Held {
            value: v.into(),
            expire_at_ms: when,
        }
    }

    #[test]
    fn set_nx_px_takes_a_free_key_and_is_refused_on_a_held_one() {
        let set = cmd("SET lock a NX PX 100");
        assert_eq!(
            apply_lock(&set, None, 1000),
            Ok(LockEffect::Set(held("a", Some(1100))))
        );
        assert_eq!(
            apply_lock(&set, Some(&held("b", None)), 1000),
            Ok(LockEffect::None)
        );
        assert_eq!(
            apply_lock(&cmd("set lock a nx exat 7"), None, 1000),
            Ok(LockEffect::Set(held("a", Some(7000))))
        );
        assert_eq!(
            apply_lock(&cmd("SET lock a XX KEEPTTL"), Some(&held("a", Some(5))), 1),
            Ok(LockEffect::Set(held("a", Some(5))))
        );
    }

    #[test]
    fn expiry_commands_renew_and_a_past_expiry_deletes() {
        let h = held("a", Some(1100));
        assert_eq!(
            apply_lock(&cmd("PEXPIRE lock 500"), Some(&h), 1050),
            Ok(LockEffect::Expiry(Some(1550)))
        );
        assert_eq!(
            apply_lock(&cmd("PEXPIRE lock 500"), None, 1050),
            Ok(LockEffect::None)
        );
        assert_eq!(
            apply_lock(&cmd("PEXPIRE lock 0"), Some(&h), 1050),
            Ok(LockEffect::Deleted)
        );
        assert_eq!(
            apply_lock(&cmd("PEXPIRE lock 10 GT"), Some(&h), 1050),
            Ok(LockEffect::None)
        );
        assert_eq!(
            apply_lock(&cmd("PTTL lock"), Some(&h), 1050),
            Ok(LockEffect::None)
        );
    }

    #[test]
    fn unknown_writes_on_the_lock_key_are_unmodelled_not_guessed() {
        assert!(apply_lock(&cmd("APPEND lock x"), None, 0).is_err());
        assert!(apply_lock(&cmd("SET lock a PX -1"), None, 0).is_err());
        assert!(apply_token(&cmd("HSET fence f 1"), None).is_err());
    }

    #[test]
    fn the_counter_counts_from_absent() {
        assert_eq!(
            apply_token(&cmd("INCR fence"), None),
            Ok(TokenEffect::Counted(1))
        );
        assert_eq!(
            apply_token(&cmd("INCRBY fence 5"), Some(2)),
            Ok(TokenEffect::Counted(7))
        );
        assert_eq!(
            apply_token(&cmd("GET fence"), Some(2)),
            Ok(TokenEffect::None)
        );
    }

    #[test]
    fn key_positions_read_script_key_counts() {
        let ev = cmd("EVALSHA abc 2 lock fence v 100");
        assert!(names_key(&ev, b"lock") && names_key(&ev, b"fence"));
        assert!(!names_key(&ev, b"v"));
        assert!(names_key(&cmd("DEL other lock"), b"lock"));
        assert!(!names_key(&cmd("PUBLISH chan lock"), b"lock"));
        assert!(alive(&held("a", Some(10)), 10) && !alive(&held("a", Some(10)), 11));
    }
}
