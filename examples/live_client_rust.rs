//! A lock client as a Rust application would write it, with the `redis`
//! (1.x, sync) and `postgres` (0.19) crates: `SET NX PX` for the lock, a
//! Lua compare-and-delete to release it, `INCR` beside it for a fencing
//! token, then read the document and write it back. fencesim runs it
//! unchanged and watches its connections (README "Validate your own client"):
//!
//! ```sh
//! cargo build --release --example live_client_rust
//! fencesim live examples/live-clients/gc-pause-rust-fenced.toml
//! ```
//!
//! `--fenced` takes a fencing token (`INCR`) and writes with the article's
//! `… AND fencing_token < $token`; without it there is no token and the
//! UPDATE is plain. `--fenced` draws its token *beside* the lease, after the
//! `SET NX` came back: paused between the two past the lease, it draws a
//! token newer than the next holder's (the catalogue's INCR-beside-a-lease,
//! which `fencesim search` finds at `lock_granted`). `--fenced-held` draws
//! it with one script that `INCR`s only while the lock key still holds this
//! worker's value, and starts over when it does not, so every token is
//! issued to the holder of the lock at that moment, in grant order. A write that fails (its connection was cut) is given up,
//! the lock released and the program goes on, as an application would.
//! Settings come from the environment that `fencesim live --worker-cmd` sets.
//! With `FENCESIM_SIDE_ACCOUNT=FILE` it also appends its own account of
//! each operation to FILE as JSON lines (examples/live-clients/LIBRARIES.md):
//! fencesim never reads it; the library-matrix test compares it with the
//! history fencesim decoded from the servers.

use std::io::Write;
use std::time::Duration;

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// Appends one line to the side account, if one was asked for.
fn side(line: String) {
    if let Ok(path) = std::env::var("FENCESIM_SIDE_ACCOUNT") {
        if let Some(dir) = std::path::Path::new(&path).parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let held = std::env::args().any(|a| a == "--fenced-held");
    let fenced = held || std::env::args().any(|a| a == "--fenced");
    let mut r = redis::Client::open(env("FENCESIM_REDIS_URL", "redis://127.0.0.1:6379/"))?
        .get_connection()?;
    let pg_url = env(
        "FENCESIM_POSTGRES_URL",
        "postgresql://postgres@127.0.0.1/postgres",
    );
    let mut pg = postgres::Client::connect(&pg_url, postgres::NoTls)?;
    let (lock_key, token_key) = (
        env("FENCESIM_LOCK_KEY", "lock:doc"),
        env("FENCESIM_TOKEN_KEY", "fence:doc"),
    );
    let doc: i32 = env("FENCESIM_DOC_ID", "1").parse()?;
    let ttl_ms: u64 = env("FENCESIM_TTL_MS", "1000").parse()?;
    let me = format!("{}-{}", env("FENCESIM_WORKER_ID", "w"), std::process::id());
    for op in 1..=env("FENCESIM_OPS", "1").parse::<u32>()? {
        let token: Option<i64> = loop {
            let got: Option<String> = redis::cmd("SET")
                .arg(&lock_key)
                .arg(&me)
                .arg("NX")
                .arg("PX")
                .arg(ttl_ms)
                .query(&mut r)?;
            if got.is_none() {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            if !fenced {
                break None;
            }
            if !held {
                break Some(redis::cmd("INCR").arg(&token_key).query(&mut r)?);
            }
            // The token only while the lock is still ours; else take it again.
            let drawn: Option<i64> = redis::cmd("EVAL")
                .arg("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('incr', KEYS[2]) else return false end")
                .arg(2)
                .arg(&lock_key)
                .arg(&token_key)
                .arg(&me)
                .query(&mut r)?;
            if drawn.is_some() {
                break drawn;
            }
        };
        let shown = token.map_or("null".to_string(), |t| t.to_string());
        side(format!(
            r#"{{"event":"acquired","op":{op},"token":{shown}}}"#
        ));
        let body: i64 = pg
            .query_one("SELECT body FROM documents WHERE id = $1", &[&doc])?
            .get(0);
        let written = match token {
            Some(token) => pg.execute(
                "UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3 AND fencing_token < $2",
                &[&(body + 1), &token, &doc],
            ),
            None => pg.execute(
                "UPDATE documents SET body = $1 WHERE id = $2",
                &[&(body + 1), &doc],
            ),
        };
        let rows = written
            .as_ref()
            .map_or("null".to_string(), |n| n.to_string());
        side(format!(
            r#"{{"event":"write","op":{op},"token":{shown},"rows":{rows}}}"#
        ));
        if let Err(e) = written {
            eprintln!("{me}: the write failed, given up: {e}");
            if pg.is_closed() {
                pg = postgres::Client::connect(&pg_url, postgres::NoTls)?;
            }
        }
        // Release only our own lock (it may have expired and been taken).
        let released = redis::cmd("EVAL")
            .arg("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end")
            .arg(1)
            .arg(&lock_key)
            .arg(&me)
            .query::<i64>(&mut r)?;
        let deleted = released == 1;
        side(format!(
            r#"{{"event":"released","op":{op},"deleted":{deleted}}}"#
        ));
    }
    Ok(())
}
