//! One live worker: a real process (`fencesim live-worker`, hidden) that
//! drives the simulator's own sans-IO worker ([`crate::protocol::worker::Worker`])
//! with real I/O — the same state machine, step for step, that every
//! simulated run uses.
//!
//! Why a driver and not a re-implementation: the live mode exists to check
//! the simulator's models against reality, so the worker side must be the
//! code the simulator runs, not a second copy of the discipline. The driver
//! is the machine's "network": an `Effect::Send` to the coordinator becomes
//! Redis calls (`SET key owner NX PX ttl` + `INCR` beside it → `Granted`,
//! nil → `Busy`; `DEL` or the Lua compare-and-delete → `Released`), one to
//! the resource becomes PostgreSQL statements (`SELECT` → `ReadOk`, the
//! scenario's `UPDATE` → `WriteOk`, or `WriteRejected` when 0 rows were
//! updated); timers run on CLOCK_MONOTONIC; `Persist` goes to a state file,
//! so a worker SIGKILLed and restarted boots with `Input::Start { recovered }`
//! exactly as a simulated crash does (op ids never repeat).
//!
//! Each server is reached through a *lane*: a thread that owns one
//! connection and executes one request at a time. A request that gets no
//! answer (a dropped or cut connection) is the machine's business: its
//! request timer fires and it retransmits, and the driver then opens a
//! fresh lane (a new connection) rather than queue behind the stuck one.
//!
//! Where the resource's semantics live in PostgreSQL, not in the worker:
//! `check-then-update` is the resource's non-atomic check (a `SELECT` of the
//! fence, then the plain `UPDATE`, two statements), and with
//! `select-for-update` the database is the lock — `Acquire` is granted by
//! the driver at once (no token) and the row lock is taken by the read's
//! `SELECT … FOR UPDATE`, committed with the write.
//!
//! Talking to the harness: every observation is one JSON line on stdout
//! with a CLOCK_MONOTONIC timestamp; the worker waits for `start` on stdin,
//! and at its gate step (the protocol point a scenario stops it at) prints
//! `{"gate": step}` and waits for a line on stdin. The harness freezes or
//! kills the process *before* answering, so the fault is in force exactly
//! after that step returned.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::emit::{emit, emit_line};
use super::fault::Point;
use super::record::{Lease, Line, Record, WriteOutcome};
use super::{lock_key, monotonic_ns, token_key, LockKind, WriteKind};
use crate::protocol::client::LockKind as ClientLock;
use crate::protocol::msg::{Key, Msg, OpId, Token};
use crate::protocol::node::{Clocks, Effect, Input, Node, NodeId, Observation, TimerId};
use crate::protocol::worker::{MoreLocks, Worker, WorkerConfig};

/// Redis's documented compare-and-delete release (redis.io, "Distributed
/// Locks with Redis"): delete the key only if it still holds our value.
pub const COMPARE_AND_DELETE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// The machine's addresses for the two servers (only the driver reads them).
const COORD: NodeId = NodeId(1000);
const RESOURCE: NodeId = NodeId(1001);

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
    /// 1-based worker index: op ids are `index * 1000 + n` (the simulator's rule).
    #[arg(long)]
    pub index: u16,
    /// Operations this worker runs.
    #[arg(long, default_value_t = 1)]
    pub ops: u32,
    /// The document row it locks and writes (its lock key and token counter follow it).
    #[arg(long, default_value_t = 1)]
    pub document: u32,
    /// Stop and wait for the harness after this step (`read_ok`, `fence_checked`, `write_sent`).
    #[arg(long, value_parser = parse_point)]
    pub gate: Option<Point>,
    /// The machine retransmits a request unanswered for this long.
    #[arg(long, default_value_t = 2_000)]
    pub request_timeout_ms: u64,
    /// Where the machine's synced record lives across a crash and restart.
    #[arg(long)]
    pub state_file: Option<PathBuf>,
    /// Prefix of every Redis key (a run against a user's Redis owns only its prefix).
    #[arg(long, default_value = "")]
    pub key_prefix: String,
    /// PostgreSQL schema holding the run's tables (search_path).
    #[arg(long)]
    pub schema: Option<String>,
    /// etcd or ZooKeeper client endpoints, comma-separated, this worker's own member first.
    #[arg(long, default_value = "")]
    pub cluster: String,
    /// ZooKeeper: what a waiter watches (the recipe's predecessor, or the herd's directory).
    #[arg(long, value_enum, default_value = "predecessor")]
    pub zk_watch: super::zk::WatchMode,
    /// Give up (error) when the workload is not done after this long.
    #[arg(long, default_value_t = 15_000)]
    pub give_up_ms: u64,
}

fn parse_point(name: &str) -> Result<Point, String> {
    Point::from_name(name).ok_or_else(|| format!("unknown protocol point {name:?}"))
}

fn wait_line() -> Result<()> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading stdin")?;
    Ok(())
}

/// What every lane needs to turn a message into server calls.
struct Setup {
    args: WorkerArgs,
    urls: Vec<String>,
    /// Redis owner value prefix: unique per process, so a restarted worker
    /// never releases its previous incarnation's lease by accident.
    owner_prefix: String,
    lock_key: String,
    token_key: String,
}

impl Setup {
    /// The pause/crash point: tell the harness, then wait until it has acted.
    fn gate(&self, step: Point) -> Result<()> {
        if self.args.gate == Some(step) {
            emit_line(&Line::Gate { point: step });
            wait_line()?;
        }
        Ok(())
    }

    fn connect_pg(&self) -> Result<postgres::Client> {
        let mut pg = postgres::Client::connect(&self.args.postgres, postgres::NoTls)
            .context("connecting to PostgreSQL")?;
        if let Some(schema) = &self.args.schema {
            pg.batch_execute(&format!("SET search_path TO \"{schema}\""))?;
        }
        Ok(pg)
    }
}

fn connect_redis(url: &str) -> Result<redis::Connection> {
    redis::Client::open(url)
        .context("redis URL")?
        .get_connection()
        .with_context(|| format!("connecting to Redis at {url}"))
}

/// One connection to one server, owned by a lane thread.
enum Conn {
    Redis {
        con: Option<redis::Connection>,
        server: usize,
    },
    Pg {
        pg: Option<postgres::Client>,
        in_tx: bool,
    },
    /// `select-for-update`: the database is the lock, no lock server.
    NoLock,
    /// The etcd cluster (lease, keep-alive, server-side lock).
    Etcd(Box<super::etcd::EtcdLane>),
    /// The ZooKeeper ensemble (the lock recipe).
    Zk(Box<super::zk::ZkLane>),
}

/// What a lane knows of the operation in progress (for its records).
#[derive(Clone, Copy)]
struct Req {
    msg: Msg,
    op: u64,
}

impl Conn {
    /// Executes one request; `None` is no answer (the machine times out).
    fn execute(&mut self, s: &Setup, req: Req) -> Option<Msg> {
        match self {
            Conn::NoLock => match req.msg {
                Msg::Acquire { req, key, owner } => Some(Msg::Granted {
                    req,
                    key,
                    owner,
                    token: None,
                    ttl_ns: u64::MAX / 4,
                }),
                Msg::Release { req, key, owner } => Some(Msg::Released {
                    req,
                    key,
                    removed: Some(owner),
                }),
                _ => None,
            },
            Conn::Redis { con, server } => redis_execute(s, con, server, req),
            Conn::Etcd(lane) => cluster_execute(req, |acquire| match acquire {
                true => lane.acquire(req.op).map(|(t, _)| Some(t)),
                false => Ok(lane.release().then_some(0)),
            }),
            Conn::Zk(lane) => cluster_execute(req, |acquire| match acquire {
                true => lane.acquire(req.op).map(Some),
                false => Ok(lane.release().then_some(0)),
            }),
            Conn::Pg { pg, in_tx } => match pg_execute(s, pg, in_tx, req) {
                Ok(reply) => reply,
                Err(e) => {
                    // A cut or broken connection: reconnect on the next request.
                    io_error(req.op, format!("{e:#}"));
                    *pg = None;
                    *in_tx = false;
                    None
                }
            },
        }
    }
}

/// Acquire and Release on a consensus cluster: `call(true)` blocks until
/// the lock is held and gives its token; `call(false)` releases it.
fn cluster_execute(req: Req, mut call: impl FnMut(bool) -> Result<Option<u64>>) -> Option<Msg> {
    match req.msg {
        Msg::Acquire {
            req: id,
            key,
            owner,
        } => match call(true) {
            Ok(Some(token)) => Some(Msg::Granted {
                req: id,
                key,
                owner,
                token: Some(Token(token)),
                ttl_ns: u64::MAX / 4,
            }),
            Ok(None) => Some(Msg::Busy { req: id, key }),
            Err(e) => {
                io_error(req.op, format!("{e:#}"));
                None
            }
        },
        Msg::Release {
            req: id,
            key,
            owner,
        } => {
            let removed = matches!(call(false), Ok(Some(_)));
            Some(Msg::Released {
                req: id,
                key,
                removed: removed.then_some(owner),
            })
        }
        _ => None,
    }
}

/// The lock lane for a consensus cluster, endpoints from `--cluster`.
fn cluster_conn(s: &Setup) -> Result<Conn> {
    let endpoints: Vec<String> = s
        .args
        .cluster
        .split(',')
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect();
    Ok(match s.args.lock {
        LockKind::EtcdLock => Conn::Etcd(Box::new(super::etcd::EtcdLane::new(
            endpoints,
            format!("{}fencesim/lock/doc", s.args.key_prefix),
            s.args.ttl_ms,
        )?)),
        _ => Conn::Zk(Box::new(super::zk::ZkLane::new(
            endpoints,
            &s.args.key_prefix,
            s.args.ttl_ms,
            s.args.zk_watch,
        )?)),
    })
}

fn redis_execute(
    s: &Setup,
    con: &mut Option<redis::Connection>,
    server: &mut usize,
    req: Req,
) -> Option<Msg> {
    let op = req.op;
    loop {
        if con.is_none() {
            *con = connect_redis(s.urls.get(*server)?).ok();
        }
        let c = con.as_mut()?;
        let answer = match req.msg {
            Msg::Acquire {
                req: id,
                key,
                owner,
            } => {
                emit(Record::AcquireSent { op: Some(op) });
                let value = format!("{}:{owner}", s.owner_prefix);
                redis::cmd("SET")
                    .arg(&s.lock_key)
                    .arg(&value)
                    .arg("NX")
                    .arg("PX")
                    .arg(s.args.ttl_ms)
                    .query::<Option<String>>(c)
                    .map(|set| set.map(|_| monotonic_ns()))
                    .and_then(|set| match set {
                        Some(set_ns) => redis::cmd("INCR")
                            .arg(&s.token_key)
                            .query::<u64>(c)
                            .map(|t| Some((set_ns, t))),
                        None => Ok(None),
                    })
                    .map(|got| match got {
                        Some((set_ns, t)) => {
                            emit(Record::GrantReceived {
                                op: Some(op),
                                token: Some(t),
                                grant: None,
                                server: *server as u16,
                                lease: Some(Lease {
                                    set_ns,
                                    ttl_ms: s.args.ttl_ms,
                                }),
                                holds: None,
                            });
                            Msg::Granted {
                                req: id,
                                key,
                                owner,
                                token: Some(Token(t)),
                                ttl_ns: s.args.ttl_ms * 1_000_000,
                            }
                        }
                        None => Msg::Busy { req: id, key },
                    })
            }
            Msg::Release {
                req: id,
                key,
                owner,
            } => {
                emit(Record::ReleaseSent {
                    op: Some(op),
                    grant: None,
                });
                let value = format!("{}:{owner}", s.owner_prefix);
                let removed: redis::RedisResult<i64> = match s.args.lock {
                    LockKind::RedisSetNxCad => redis::cmd("EVAL")
                        .arg(COMPARE_AND_DELETE)
                        .arg(1)
                        .arg(&s.lock_key)
                        .arg(&value)
                        .query(c),
                    _ => redis::cmd("DEL").arg(&s.lock_key).query(c),
                };
                match removed {
                    Ok(n) => {
                        emit(Record::ReleaseDone {
                            op: Some(op),
                            deleted: Some(n),
                            detail: None,
                        });
                        Ok(Msg::Released {
                            req: id,
                            key,
                            removed: (n > 0).then_some(owner),
                        })
                    }
                    // A release that cannot reach its server (killed in a
                    // failover) is not the worker's failure: the lease
                    // expires by itself.
                    Err(e) => {
                        emit(Record::ReleaseDone {
                            op: Some(op),
                            deleted: None,
                            detail: Some(e.to_string()),
                        });
                        return Some(Msg::Released {
                            req: id,
                            key,
                            removed: None,
                        });
                    }
                }
            }
            // Renewal is off in every live scenario (renew_every_ns = None).
            _ => return None,
        };
        match answer {
            Ok(reply) => return Some(reply),
            // The primary is gone: move to the next server (the promoted replica) and ask again.
            Err(e) if *server + 1 < s.urls.len() => {
                *server += 1;
                let detail = format!("{e}; now server {server}");
                emit(Record::Moved { detail });
                *con = None;
            }
            Err(e) => {
                io_error(op, e.to_string());
                *con = None;
                return None;
            }
        }
    }
}

fn pg_execute(
    s: &Setup,
    pg: &mut Option<postgres::Client>,
    in_tx: &mut bool,
    req: Req,
) -> Result<Option<Msg>> {
    if pg.is_none() {
        *pg = Some(s.connect_pg()?);
    }
    let Some(pg) = pg.as_mut() else {
        return Ok(None);
    };
    let doc = i32::try_from(s.args.document).context("--document")?;
    match req.msg {
        Msg::Read {
            req: id,
            key,
            op,
            token,
        } => {
            let one_db = s.args.write == WriteKind::SelectForUpdate;
            emit(Record::ReadSent {
                op: op.0,
                token: token.map(|t| t.0),
            });
            let select = if one_db {
                if *in_tx {
                    pg.batch_execute("ROLLBACK")?;
                }
                pg.batch_execute("BEGIN")?;
                *in_tx = true;
                "SELECT body FROM documents WHERE id = $1 FOR UPDATE"
            } else {
                "SELECT body FROM documents WHERE id = $1"
            };
            let seen: i64 = pg.query_one(select, &[&doc]).context("read")?.get(0);
            let value = u64::try_from(seen).ok();
            emit(Record::ReadOk { op: op.0, value });
            s.gate(Point::ReadOk)?;
            Ok(Some(Msg::ReadOk {
                req: id,
                key,
                op,
                value: OpId(seen as u64),
            }))
        }
        Msg::Write {
            req: id,
            key,
            op,
            token,
            value,
        } => {
            let token_sql = token.map_or(0, |t| t.0 as i64);
            emit(Record::WriteSent {
                op: op.0,
                token: token.map(|t| t.0),
                value: Some(value.0),
                grant: None,
            });
            s.gate(Point::WriteSent)?;
            if s.args.write == WriteKind::CheckThenUpdate {
                let fence: i64 = pg
                    .query_one("SELECT fencing_token FROM documents WHERE id = $1", &[&doc])
                    .context("fence check")?
                    .get(0);
                emit(Record::FenceChecked {
                    op: op.0,
                    value: fence,
                });
                if fence >= token_sql {
                    emit(Record::WriteAcked {
                        op: op.0,
                        token: token.map(|t| t.0),
                        outcome: WriteOutcome::Rejected,
                    });
                    return Ok(Some(Msg::WriteRejected {
                        req: id,
                        key,
                        op,
                        fence: Token(fence as u64),
                    }));
                }
                s.gate(Point::FenceChecked)?;
            }
            let sql = match s.args.write {
                WriteKind::Fenced => {
                    "UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3 AND fencing_token < $2"
                }
                _ => "UPDATE documents SET body = $1, fencing_token = $2 WHERE id = $3",
            };
            let rows = pg
                .execute(sql, &[&(value.0 as i64), &token_sql, &doc])
                .context("write")?;
            if *in_tx {
                pg.batch_execute("COMMIT").context("COMMIT")?;
                *in_tx = false;
            }
            let ok = rows == 1;
            emit(Record::WriteAcked {
                op: op.0,
                token: token.map(|t| t.0),
                outcome: match ok {
                    true => WriteOutcome::Ok,
                    false => WriteOutcome::Rejected,
                },
            });
            Ok(Some(if ok {
                Msg::WriteOk { req: id, key, op }
            } else {
                Msg::WriteRejected {
                    req: id,
                    key,
                    op,
                    fence: Token(token_sql as u64),
                }
            }))
        }
        _ => Ok(None),
    }
}

/// A failed request the machine retries (its lane reconnects).
fn io_error(op: u64, detail: String) {
    emit(Record::IoError {
        op: Some(op),
        detail,
    });
}

/// A lane: its thread's request queue and whether a request is in flight.
struct Lane {
    tx: mpsc::Sender<Req>,
    busy: bool,
}

/// A reply (or the lack of one) from lane `lane` of server `from`.
struct Reply {
    from: NodeId,
    lane: u64,
    msg: Option<Msg>,
}

fn spawn_lane(
    setup: &Arc<Setup>,
    from: NodeId,
    id: u64,
    mut conn: Conn,
    replies: &mpsc::Sender<Reply>,
) -> Lane {
    let (tx, rx) = mpsc::channel::<Req>();
    let (setup, replies) = (setup.clone(), replies.clone());
    std::thread::spawn(move || {
        for req in rx {
            let msg = conn.execute(&setup, req);
            if replies
                .send(Reply {
                    from,
                    lane: id,
                    msg,
                })
                .is_err()
            {
                return;
            }
        }
    });
    Lane { tx, busy: false }
}

/// The machine's configuration for a live worker: one op at a time on one
/// key, the token sent with reads and writes (the SQL decides whether the
/// fence is checked), no renewal, no client-side lease check.
fn machine_config(args: &WorkerArgs) -> WorkerConfig {
    WorkerConfig {
        id: NodeId(args.index - 1),
        index: args.index,
        key: Key(0),
        coordinator: COORD,
        resource: RESOURCE,
        start_ns: 0,
        ops: args.ops,
        work_ns: args.work_ms * 1_000_000,
        think_ns: 0,
        retry_ns: args.retry_ms * 1_000_000,
        request_timeout_ns: args.request_timeout_ms * 1_000_000,
        max_retries: 3,
        send_token: true,
        token_on_reads: true,
        check_lease_before_write: false,
        renew_every_ns: None,
        write_if_match: false,
        lock: ClientLock::Lease,
        effect: None,
        more_locks: MoreLocks::NONE,
    }
}

fn clocks() -> Clocks {
    // A live worker's wall clock is the machine's, as a real client's is.
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Clocks {
        wall_ns: i64::try_from(wall.as_nanos()).unwrap_or(i64::MAX),
        mono_ns: monotonic_ns(),
    }
}

pub fn run(args: &WorkerArgs) -> Result<()> {
    if args.index == 0 {
        bail!("--index is 1-based");
    }
    let setup = Arc::new(Setup {
        args: args.clone(),
        urls: args
            .redis
            .split(',')
            .filter(|u| !u.is_empty())
            .map(str::to_string)
            .collect(),
        owner_prefix: format!("{}:{}", args.name, std::process::id()),
        lock_key: format!("{}{}", args.key_prefix, lock_key(args.document)),
        token_key: format!("{}{}", args.key_prefix, token_key(args.document)),
    });
    // Connections are made before `ready`: set-up is not part of the trial.
    let coord_conn = match args.lock {
        LockKind::None => Conn::NoLock,
        LockKind::EtcdLock | LockKind::ZkLock => cluster_conn(&setup)?,
        _ => Conn::Redis {
            con: Some(connect_redis(
                setup.urls.first().map_or("", String::as_str),
            )?),
            server: 0,
        },
    };
    let pg_conn = Conn::Pg {
        pg: Some(setup.connect_pg()?),
        in_tx: false,
    };
    let recovered = match &args.state_file {
        Some(p) if p.exists() => {
            let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
            // The machine asserts its record's size; a file of another size
            // is a harness fault, said as one.
            if bytes.len() != 8 && bytes.len() != 12 {
                bail!(
                    "{} holds {} bytes, not a worker's 8- or 12-byte record",
                    p.display(),
                    bytes.len()
                );
            }
            Some(bytes)
        }
        _ => None,
    };
    let (reply_tx, reply_rx) = mpsc::channel::<Reply>();
    let mut d = Driver {
        args,
        setup,
        lanes: BTreeMap::new(),
        next_lane: 0,
        reply_tx,
        timers: BTreeMap::new(),
        op: 0,
    };
    d.open_lane(COORD, coord_conn);
    d.open_lane(RESOURCE, pg_conn);

    emit_line(&Line::Ready);
    wait_line()?;
    if recovered.is_some() {
        emit(Record::Restarted);
    }
    drive(&mut d, recovered.as_deref(), &reply_rx)
}

/// Replaces the state file in one step: the record goes to a file beside
/// it, which is then renamed over it. A `Persist` is atomic in the model
/// (the simulator's disk keeps a whole record or the previous one); a plain
/// truncate-and-write let a SIGKILL between the two leave an empty or short
/// file that the restarted worker could not read (the nemesis hit it).
fn persist_atomically(p: &std::path::Path, record: &[u8]) -> Result<()> {
    let mut tmp = p.as_os_str().to_owned();
    tmp.push(".writing");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, record).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, p)
        .with_context(|| format!("renaming {} over {}", tmp.display(), p.display()))
}

/// Runs the machine until its workload is done: its effects carried out,
/// its timers fired, its servers' answers delivered.
fn drive(d: &mut Driver, recovered: Option<&[u8]>, reply_rx: &mpsc::Receiver<Reply>) -> Result<()> {
    let args = d.args;
    let give_up = monotonic_ns() + args.give_up_ms * 1_000_000;
    let mut machine = Worker::new(machine_config(args));
    let mut fx = Vec::new();
    machine.handle(clocks(), Input::Start { recovered }, &mut fx);
    loop {
        let mut done = false;
        for effect in fx.drain(..) {
            done |= d.apply(effect)?;
        }
        if done {
            return Ok(());
        }
        let now = monotonic_ns();
        if now > give_up {
            bail!("worker {} not done after {} ms", args.name, args.give_up_ms);
        }
        let due = d
            .timers
            .iter()
            .min_by_key(|(_, at)| **at)
            .map(|(t, at)| (*t, *at));
        if let Some((timer, at)) = due.filter(|(_, at)| *at <= now) {
            let _ = at;
            d.timers.remove(&timer);
            machine.handle(clocks(), Input::Timer { timer }, &mut fx);
            continue;
        }
        let wait_ns = due.map_or(50_000_000, |(_, at)| at - now).min(50_000_000);
        match reply_rx.recv_timeout(Duration::from_nanos(wait_ns)) {
            Ok(Reply { from, lane, msg }) => {
                if let Some((current, l)) = d.lanes.get_mut(&from) {
                    if *current == lane {
                        l.busy = false;
                    }
                }
                // Late replies from an abandoned lane are delivered too, as a
                // network would; the machine ignores answers it no longer awaits.
                if let Some(msg) = msg {
                    machine.handle(clocks(), Input::Message { from, msg }, &mut fx);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => bail!("every lane is gone"),
        }
    }
}

/// What carries out the machine's effects with real I/O: a lane per server
/// it talks to, its timers on CLOCK_MONOTONIC, the op it is on.
struct Driver<'a> {
    args: &'a WorkerArgs,
    setup: Arc<Setup>,
    /// The current lane to each server, with its number.
    lanes: BTreeMap<NodeId, (u64, Lane)>,
    next_lane: u64,
    reply_tx: mpsc::Sender<Reply>,
    /// Each timer's deadline (monotonic ns).
    timers: BTreeMap<TimerId, u64>,
    op: u64,
}

impl Driver<'_> {
    /// A new lane to `to` over `conn`, replacing the current one.
    fn open_lane(&mut self, to: NodeId, conn: Conn) {
        let lane = spawn_lane(&self.setup, to, self.next_lane, conn, &self.reply_tx);
        self.lanes.insert(to, (self.next_lane, lane));
        self.next_lane += 1;
    }

    /// Carries out one effect; true once the workload is done.
    fn apply(&mut self, effect: Effect) -> Result<bool> {
        let args = self.args;
        match effect {
            Effect::Send { to, msg } => self.send(to, msg)?,
            Effect::SetTimer { timer, after_ns } => {
                self.timers
                    .insert(timer, monotonic_ns().saturating_add(after_ns));
            }
            Effect::CancelTimer { timer } => {
                self.timers.remove(&timer);
            }
            Effect::Persist { record, .. } => {
                // The record's first word is ops_started: the op being begun.
                if record.len() >= 4 {
                    let started = u32::from_le_bytes([record[0], record[1], record[2], record[3]]);
                    self.op = args.index as u64 * 1000 + started as u64;
                }
                if let Some(p) = &args.state_file {
                    persist_atomically(p, &record)?;
                }
            }
            Effect::Observe(Observation::WorkloadDone) => {
                emit(Record::WorkloadDone);
                return Ok(true);
            }
            Effect::Observe(Observation::OpAbandoned { op }) => {
                emit(Record::OpAbandoned {
                    op: Some(op.0),
                    detail: None,
                });
            }
            Effect::Observe(_) => {}
        }
        Ok(false)
    }

    /// A request on `to`'s lane; while the previous request is stuck (a
    /// retransmission), on a fresh connection, as a real client reconnects.
    fn send(&mut self, to: NodeId, msg: Msg) -> Result<()> {
        let (_, lane) = self
            .lanes
            .get_mut(&to)
            .context("message to an unknown node")?;
        if lane.busy {
            let conn = if to == COORD {
                match self.args.lock {
                    LockKind::None => Conn::NoLock,
                    LockKind::EtcdLock | LockKind::ZkLock => cluster_conn(&self.setup)?,
                    _ => Conn::Redis {
                        con: None,
                        server: 0,
                    },
                }
            } else {
                Conn::Pg {
                    pg: None,
                    in_tx: false,
                }
            };
            self.open_lane(to, conn);
        }
        let (_, lane) = self.lanes.get_mut(&to).context("lane")?;
        lane.busy = true;
        lane.tx
            .send(Req { msg, op: self.op })
            .map_err(|_| anyhow::anyhow!("lane thread gone"))
    }
}
