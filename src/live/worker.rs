//! One live worker: a real process (`fencesim live-worker`, hidden) with its
//! own Redis and PostgreSQL connections, running one operation of the lock
//! discipline — acquire, read, work, write, release — as the simulator's
//! workers do.
//!
//! It does not drive the sans-IO worker of `protocol/worker.rs` (that state
//! machine speaks the simulator's message types and timers; mapping them to
//! blocking client calls was more than this slice could carry); it follows
//! the same discipline step for step, and docs/live.md says so.
//!
//! Talking to the harness: every observation is one JSON line on stdout with
//! a CLOCK_MONOTONIC timestamp; the worker waits for `start` on stdin before
//! its first request, and at its gate step (the protocol point a scenario
//! pauses it at) prints `{"gate": step}` and waits for a line on stdin. The
//! harness freezes the process with SIGSTOP *before* answering, so the pause
//! is in force exactly after that step returned.

use std::io::{BufRead, Write};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::json;

use super::{monotonic_ns, LockKind, WriteKind, DOC_ID, LOCK_KEY, TOKEN_KEY};

/// Redis's documented compare-and-delete release (redis.io, "Distributed
/// Locks with Redis"): delete the key only if it still holds our value.
pub const COMPARE_AND_DELETE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

#[derive(clap::Args, Debug, Clone)]
pub struct WorkerArgs {
    #[arg(long)]
    pub name: String,
    /// redis://127.0.0.1:PORT/ (unused with `--lock none`); a comma-separated
    /// list after a failover-capable set-up: primary first, then the replica
    /// the worker moves to when the primary stops answering.
    #[arg(long, default_value = "")]
    pub redis: String,
    /// A libpq-style connection string (sslmode=disable).
    #[arg(long)]
    pub postgres: String,
    #[arg(long, value_enum)]
    pub lock: LockKind,
    #[arg(long, value_enum)]
    pub write: WriteKind,
    #[arg(long)]
    pub ttl_ms: u64,
    #[arg(long)]
    pub retry_ms: u64,
    #[arg(long, default_value_t = 0)]
    pub work_ms: u64,
    #[arg(long)]
    pub op_id: u64,
    /// Stop and wait for the harness after this step (`read_ok`, `fence_checked`).
    #[arg(long)]
    pub gate: Option<String>,
    /// Give up acquiring after this long.
    #[arg(long, default_value_t = 5_000)]
    pub acquire_timeout_ms: u64,
}

struct Out {
    stdout: std::io::Stdout,
    stdin: std::io::StdinLock<'static>,
    gate: Option<String>,
}

impl Out {
    fn emit(&mut self, mut record: serde_json::Value) {
        record["t_ns"] = json!(monotonic_ns());
        let mut lock = self.stdout.lock();
        // The harness reading our stdout is the only observer; if it is gone, so are we.
        let _ = writeln!(lock, "{record}");
        let _ = lock.flush();
    }

    fn wait_line(&mut self) -> Result<()> {
        let mut line = String::new();
        self.stdin.read_line(&mut line).context("reading stdin")?;
        Ok(())
    }

    /// The pause point: tell the harness, then wait until it has frozen us
    /// (SIGSTOP) and thawed us again.
    fn gate(&mut self, step: &str) -> Result<()> {
        if self.gate.as_deref() == Some(step) {
            self.emit(json!({ "gate": step }));
            self.wait_line()?;
        }
        Ok(())
    }
}

fn connect_redis(url: &str) -> Result<redis::Connection> {
    redis::Client::open(url)
        .context("redis URL")?
        .get_connection()
        .with_context(|| format!("connecting to Redis at {url}"))
}

pub fn run(args: &WorkerArgs) -> Result<()> {
    let mut out = Out {
        stdout: std::io::stdout(),
        stdin: std::io::stdin().lock(),
        gate: args.gate.clone(),
    };
    let urls: Vec<&str> = args.redis.split(',').filter(|u| !u.is_empty()).collect();
    let mut server = 0usize;
    let mut redis = match args.lock {
        LockKind::None => None,
        _ => Some(connect_redis(urls.first().copied().unwrap_or(""))?),
    };
    let mut pg = postgres::Client::connect(&args.postgres, postgres::NoTls)
        .context("connecting to PostgreSQL")?;
    out.emit(json!({ "ready": true }));
    out.wait_line()?;
    let op = args.op_id;
    let owner = format!("{}:{}", args.name, std::process::id());

    // Acquire: SET NX PX, retried every retry_ms; the token is INCR beside it.
    let mut token: Option<u64> = None;
    if let Some(con) = redis.as_mut() {
        let deadline = monotonic_ns() + args.acquire_timeout_ms * 1_000_000;
        loop {
            out.emit(json!({ "kind": "acquire_sent", "op": op }));
            let got = redis::cmd("SET")
                .arg(LOCK_KEY)
                .arg(&owner)
                .arg("NX")
                .arg("PX")
                .arg(args.ttl_ms)
                .query::<Option<String>>(con)
                .and_then(|got| match got {
                    Some(_) => redis::cmd("INCR")
                        .arg(TOKEN_KEY)
                        .query::<u64>(con)
                        .map(Some),
                    None => Ok(None),
                });
            match got {
                Ok(Some(t)) => {
                    token = Some(t);
                    out.emit(
                        json!({ "kind": "grant_received", "op": op, "token": t, "server": server }),
                    );
                    break;
                }
                Ok(None) => {}
                // The primary is gone: move to the next server (the promoted replica).
                Err(e) if server + 1 < urls.len() => {
                    server += 1;
                    out.emit(
                        json!({ "kind": "moved", "detail": format!("{e}; now server {server}") }),
                    );
                    *con = connect_redis(urls[server])?;
                    continue;
                }
                Err(e) => return Err(e).context("SET NX PX / INCR"),
            }
            if monotonic_ns() > deadline {
                out.emit(
                    json!({ "kind": "op_abandoned", "op": op, "detail": "acquire timed out" }),
                );
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(args.retry_ms));
        }
    }
    let token_sql = token.unwrap_or(0) as i64;

    let in_tx = if args.write == WriteKind::SelectForUpdate {
        pg.batch_execute("BEGIN").context("BEGIN")?;
        true
    } else {
        false
    };
    // Read, carrying the token for the record.
    out.emit(json!({ "kind": "read_sent", "op": op, "token": token }));
    let select = if in_tx {
        "SELECT body FROM documents WHERE id = $1 FOR UPDATE"
    } else {
        "SELECT body FROM documents WHERE id = $1"
    };
    let row = pg.query_one(select, &[&DOC_ID]).context("read")?;
    let seen: i64 = row.get(0);
    out.emit(json!({ "kind": "read_ok", "op": op, "value": seen }));
    out.gate("read_ok")?;
    if args.work_ms > 0 {
        std::thread::sleep(Duration::from_millis(args.work_ms));
    }

    if args.write == WriteKind::CheckThenUpdate {
        let fence: i64 = pg
            .query_one(
                "SELECT fencing_token FROM documents WHERE id = $1",
                &[&DOC_ID],
            )
            .context("fence check")?
            .get(0);
        out.emit(json!({ "kind": "fence_checked", "op": op, "value": fence }));
        if fence >= token_sql {
            out.emit(json!({ "kind": "op_abandoned", "op": op, "detail": "fence check refused" }));
            release(&mut out, redis.as_mut(), args.lock, &owner, op)?;
            return Ok(());
        }
        out.gate("fence_checked")?;
    }

    // Write: the op id is the value, so the audit row names the op.
    let sql = match args.write {
        WriteKind::Fenced => {
            "UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3 AND fencing_token < $2"
        }
        _ => "UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3",
    };
    out.emit(json!({ "kind": "write_sent", "op": op, "token": token, "value": op }));
    let rows = pg
        .execute(sql, &[&(op as i64), &token_sql, &DOC_ID])
        .context("write")?;
    if in_tx {
        pg.batch_execute("COMMIT").context("COMMIT")?;
    }
    let outcome = if rows == 1 { "ok" } else { "rejected" };
    out.emit(json!({ "kind": "write_acked", "op": op, "token": token, "outcome": outcome }));

    release(&mut out, redis.as_mut(), args.lock, &owner, op)?;
    out.emit(json!({ "kind": "workload_done" }));
    Ok(())
}

fn release(
    out: &mut Out,
    redis: Option<&mut redis::Connection>,
    lock: LockKind,
    owner: &str,
    op: u64,
) -> Result<()> {
    let Some(con) = redis else { return Ok(()) };
    out.emit(json!({ "kind": "release_sent", "op": op }));
    let removed: redis::RedisResult<i64> = match lock {
        LockKind::RedisSetNxCad => redis::cmd("EVAL")
            .arg(COMPARE_AND_DELETE)
            .arg(1)
            .arg(LOCK_KEY)
            .arg(owner)
            .query(con),
        _ => redis::cmd("DEL").arg(LOCK_KEY).query(con),
    };
    // A release that cannot reach its server (killed in a failover) is not
    // the worker's failure: the lease expires by itself.
    match removed {
        Ok(n) => out.emit(json!({ "kind": "release_done", "op": op, "value": n })),
        Err(e) => out.emit(json!({ "kind": "release_done", "op": op, "detail": e.to_string() })),
    }
    Ok(())
}
