//! ZooKeeper for the live mode: the ensemble's health and roles through
//! the documented four-letter `srvr` command, and the worker's lock lane:
//! the recipe of zookeeper.apache.org "Recipes and Solutions: Locks"
//! (an ephemeral sequential znode under the lock's node, the lowest
//! sequence owns, each waiter watches its predecessor) through the
//! pure-Rust `zookeeper-client` crate; the owning znode's czxid (the
//! transaction id that created it) is the fencing token.
//!
//! Beside the recipe, its anti-pattern ([`WatchMode::Herd`]): every waiter
//! watches the lock directory's children and re-lists on any change, so
//! each create and delete wakes every waiter — the "herd effect" the
//! recipes page warns about. Each wake-up is a `watch_notified` record, so
//! a run counts the notifications the real ensemble sent in either mode.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use zookeeper_client as zk;

use super::emit::emit;
use super::record::Record;

/// What a waiting worker watches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum WatchMode {
    /// The recipe: only the next lower znode (one wake-up per handover).
    #[default]
    Predecessor,
    /// The anti-pattern: the lock directory's children (every change wakes every waiter).
    Herd,
}

impl WatchMode {
    pub const NAMES: [(&'static str, WatchMode); 2] = [
        ("predecessor", WatchMode::Predecessor),
        ("herd", WatchMode::Herd),
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }
}

/// The answer to a four-letter command, or None when the member does not answer.
fn four_letter(endpoint: &str, cmd: &str) -> Option<String> {
    let addr = endpoint.parse().ok()?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    s.write_all(cmd.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The member's role (`leader`, `follower`), None when it is not serving.
pub fn mode(endpoint: &str) -> Option<String> {
    four_letter(endpoint, "srvr")?
        .lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .map(|m| m.trim().to_string())
}

/// Serving clients as part of a quorum.
pub fn healthy(endpoint: &str) -> bool {
    matches!(mode(endpoint).as_deref(), Some("leader" | "follower"))
}

/// The lock's parent znode for a run's key prefix (`fencesim-live-1-0:` → `/fencesim-live-1-0/lock`).
pub fn lock_dir(key_prefix: &str) -> String {
    format!("/{}/lock", key_prefix.trim_end_matches(':'))
}

/// A runtime for the client's background tasks: one worker thread, so the
/// session's pings go on between requests (and stop with the process).
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the ZooKeeper client's runtime")
}

/// A session with the ensemble. One attempt may time out while a member
/// that was just restarted, paused or partitioned by the previous scenario
/// still syncs with the leader (it already answers `srvr` as a follower),
/// or while a loaded machine starts five workers' sessions at once: the
/// attempt is repeated for up to 10 s before the worker gives up.
async fn connect(endpoints: &[String], session_ms: u64) -> Result<zk::Client> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let attempt = zk::Client::connector()
            .with_session_timeout(Duration::from_millis(session_ms))
            .with_connection_timeout(Duration::from_millis(2_000))
            .connect(&endpoints.join(","))
            .await;
        match attempt {
            Ok(client) => return Ok(client),
            Err(_) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("connecting to ZooKeeper at {}", endpoints.join(",")))
            }
        }
    }
}

/// Removes the run's lock nodes: every trial starts with an empty queue.
pub fn reset(endpoints: &[String], key_prefix: &str) -> Result<()> {
    let dir = lock_dir(key_prefix);
    runtime()?.block_on(async {
        let c = connect(endpoints, 4_000).await?;
        match c.list_children(&dir).await {
            Ok(children) => {
                for child in children {
                    match c.delete(&format!("{dir}/{child}"), None).await {
                        Ok(()) | Err(zk::Error::NoNode) => {}
                        Err(e) => bail!("deleting {dir}/{child}: {e}"),
                    }
                }
                Ok(())
            }
            Err(zk::Error::NoNode) => Ok(()),
            Err(e) => bail!("listing {dir}: {e}"),
        }
    })
}

/// A worker's session with the ensemble and the znode it holds.
pub struct ZkLane {
    rt: tokio::runtime::Runtime,
    endpoints: Vec<String>,
    session_ms: u64,
    client: zk::Client,
    dir: String,
    mine: Option<String>,
    watch: WatchMode,
}

impl ZkLane {
    /// Connects (session timeout `session_ms`) before the trial starts.
    pub fn new(
        endpoints: Vec<String>,
        key_prefix: &str,
        session_ms: u64,
        watch: WatchMode,
    ) -> Result<ZkLane> {
        let rt = runtime()?;
        let client = rt.block_on(connect(&endpoints, session_ms))?;
        Ok(ZkLane {
            rt,
            endpoints,
            session_ms,
            client,
            dir: lock_dir(key_prefix),
            mine: None,
            watch,
        })
    }

    /// The recipe: create `n-` ephemeral sequential, then until ours is the
    /// lowest, watch the next lower one (herd mode: the directory's
    /// children) and wait for it to change. The token is our znode's czxid.
    /// A session that expired while waiting (its client could not reach a
    /// serving member in time: a leader election) is replaced by a new one
    /// and the recipe starts over, for up to 12 s — the recipe's "re-check
    /// on session events".
    pub fn acquire(&mut self, op: u64) -> Result<u64> {
        emit(Record::AcquireSent { op: Some(op) });
        let deadline = std::time::Instant::now() + Duration::from_secs(12);
        loop {
            match self.try_acquire(op) {
                Ok(t) => return Ok(t),
                Err(e) if std::time::Instant::now() < deadline => {
                    emit(Record::IoError {
                        op: Some(op),
                        detail: format!("{e:#}; new session, retrying"),
                    });
                    std::thread::sleep(Duration::from_millis(50));
                    if let Ok(c) = self.rt.block_on(connect(&self.endpoints, self.session_ms)) {
                        self.client = c;
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn try_acquire(&mut self, op: u64) -> Result<u64> {
        let (c, dir, herd) = (
            &self.client,
            self.dir.clone(),
            self.watch == WatchMode::Herd,
        );
        let (path, czxid, watches) = self.rt.block_on(async {
            let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
            match c.mkdir(&dir, &persistent).await {
                Ok(()) | Err(zk::Error::NodeExists) => {}
                Err(e) => bail!("creating {dir}: {e}"),
            }
            let ephemeral = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
            let (stat, seq) = c
                .create(&format!("{dir}/n-"), b"", &ephemeral)
                .await
                .with_context(|| format!("creating {dir}/n-"))?;
            let name = format!("n-{seq}");
            // Watch notifications this acquire woke up on.
            let mut watches = 0u32;
            loop {
                let (mut children, herd_watch) = if herd {
                    let (children, watcher) = c
                        .list_and_watch_children(&dir)
                        .await
                        .with_context(|| format!("listing and watching {dir}"))?;
                    (children, Some(watcher))
                } else {
                    let children = c
                        .list_children(&dir)
                        .await
                        .with_context(|| format!("listing {dir}"))?;
                    (children, None)
                };
                children.sort();
                if !children.contains(&name) {
                    bail!("our znode {dir}/{name} is gone (session expired)");
                }
                let Some(pred) = children.iter().rev().find(|n| **n < name) else {
                    return Ok((format!("{dir}/{name}"), stat.czxid, watches));
                };
                let event = match herd_watch {
                    Some(watcher) => Some(watcher.changed().await),
                    None => {
                        let (exists, watcher) = c
                            .check_and_watch_stat(&format!("{dir}/{pred}"))
                            .await
                            .with_context(|| format!("watching {dir}/{pred}"))?;
                        match exists {
                            Some(_) => Some(watcher.changed().await),
                            None => None,
                        }
                    }
                };
                // A session event (disconnected, expired) is the client's own, not the server's notification.
                if let Some(event) = event.filter(|e| e.event_type != zk::EventType::Session) {
                    watches += 1;
                    emit(Record::WatchNotified {
                        op,
                        detail: format!("{:?} {}", event.event_type, event.path),
                    });
                }
            }
        })?;
        let token = u64::try_from(czxid).context("negative czxid")?;
        emit(Record::GrantReceived {
            op: Some(op),
            token: Some(token),
            grant: None,
            server: 0,
            lease: None,
            holds: Some(format!("znode {path} ({watches} watch notifications)")),
        });
        self.mine = Some(path);
        Ok(token)
    }

    /// Deletes our znode; whether it was still there.
    pub fn release(&mut self) -> bool {
        emit(Record::ReleaseSent {
            op: None,
            grant: None,
        });
        let Some(path) = self.mine.take() else {
            return false;
        };
        let done = self.rt.block_on(self.client.delete(&path, None));
        emit(Record::ReleaseDone {
            op: None,
            deleted: None,
            detail: Some(match &done {
                Ok(()) => format!("deleted {path}"),
                Err(e) => format!("{path}: {e}"),
            }),
        });
        done.is_ok()
    }
}
