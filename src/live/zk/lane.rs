//! The built-in worker's lane to ZooKeeper: the recipe of
//! zookeeper.apache.org "Recipes and Solutions: Locks" (an ephemeral
//! sequential znode under the lock's node, the lowest sequence owns, each
//! waiter watches its predecessor) through the pure-Rust
//! `zookeeper-client` crate; the owning znode's czxid (the transaction id
//! that created it) is the fencing token.
//!
//! Beside the recipe, its anti-pattern ([`WatchMode::Herd`]): every waiter
//! watches the lock directory's children and re-lists on any change, so
//! each create and delete wakes every waiter — the "herd effect" the
//! recipes page warns about. Each wake-up is a `watch_notified` record, so
//! a run counts the notifications the real ensemble sent in either mode.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use zookeeper_client as zk;

use super::ensemble::{connect, lock_dir, runtime};
use crate::live::emit::emit;
use crate::live::record::Record;

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
    /// on session events". After that the worker is told the lock is busy
    /// and asks again after its `retry_ms`.
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
