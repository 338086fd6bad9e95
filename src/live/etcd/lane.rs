//! The built-in worker's lane to etcd: a lease with a keep-alive thread,
//! the server-side lock (`/v3/lock/lock`, etcd's Mutex recipe run by the
//! server: waiters ordered by their key's create revision), the lock key's
//! create revision as the fencing token, `/v3/lock/unlock` and a lease
//! revoke to release — each step recorded for the history.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use super::gateway::Etcd;
use crate::live::emit::emit;
use crate::live::record::Record;

/// A lease kept alive by a thread of the worker (stopped with the worker
/// by SIGSTOP, as a real client's keep-alive is by a GC pause).
pub struct Lease {
    pub id: u64,
    stop: Arc<AtomicBool>,
}

impl Lease {
    /// Grants a lease of `ttl_ms` (rounded up to whole seconds, as etcd
    /// counts) and keeps it alive every third of its TTL; `report` gets
    /// every failed keep-alive.
    pub fn start(
        endpoints: &[String],
        client: &mut Etcd,
        ttl_ms: u64,
        report: fn(String),
    ) -> Result<Lease> {
        let ttl_s = ttl_ms.div_ceil(1000).max(1);
        let id = client.grant(ttl_s)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let mut ka = Etcd::new(endpoints.to_vec(), Duration::from_millis(ttl_s * 500))?;
        ka.current = client.current();
        std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(ttl_s * 1000 / 3));
                if stop2.load(Ordering::SeqCst) {
                    return;
                }
                match ka.keepalive(id) {
                    Ok(0) => {
                        report(format!("lease {id:x} gone (keep-alive TTL 0)"));
                        return;
                    }
                    Ok(_) => {}
                    Err(e) => report(format!("keep-alive of lease {id:x}: {e:#}")),
                }
            }
        });
        Ok(Lease { id, stop })
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A worker's connection to the etcd cluster: the lease and lock key it holds.
pub struct EtcdLane {
    endpoints: Vec<String>,
    client: Etcd,
    lease: Option<Lease>,
    key: Option<String>,
    /// The lock's name (the run's prefix + the document).
    name: String,
    ttl_ms: u64,
}

fn report_keepalive(detail: String) {
    emit(Record::KeepaliveFailed { detail });
}

impl EtcdLane {
    /// `endpoints` in the worker's order of preference (its own member first).
    pub fn new(endpoints: Vec<String>, name: String, ttl_ms: u64) -> Result<EtcdLane> {
        // A blocking lock waits for the holder's lease: long enough for a pause.
        let client = Etcd::new(endpoints.clone(), Duration::from_secs(30))?;
        Ok(EtcdLane {
            endpoints,
            client,
            lease: None,
            key: None,
            name,
            ttl_ms,
        })
    }

    /// Acquire: lease, keep-alive, server-side lock; the key's create
    /// revision is the token. A failed attempt (a proposal lost with a
    /// leader: etcd answers "request timed out" after 5 s + 2 election
    /// timeouts) is retried with a fresh lease for up to 12 s, as an
    /// application retries clientv3's errors.
    pub fn acquire(&mut self, op: u64) -> Result<(u64, String)> {
        emit(Record::AcquireSent { op: Some(op) });
        let deadline = std::time::Instant::now() + Duration::from_secs(12);
        loop {
            match self.try_acquire(op) {
                Ok(got) => return Ok(got),
                Err(e) if std::time::Instant::now() < deadline => {
                    emit(Record::IoError {
                        op: Some(op),
                        detail: format!("{e:#}; retrying"),
                    });
                    if let Some(l) = self.lease.take() {
                        l.stop();
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn try_acquire(&mut self, op: u64) -> Result<(u64, String)> {
        let lease = match self.lease.take() {
            Some(l) => l,
            None => Lease::start(
                &self.endpoints,
                &mut self.client,
                self.ttl_ms,
                report_keepalive,
            )?,
        };
        let id = lease.id;
        self.lease = Some(lease);
        let key = self.client.lock(&self.name, id)?;
        let (created, _) = self
            .client
            .revisions(&key)?
            .with_context(|| format!("lock key {key} gone right after the lock was granted"))?;
        emit(Record::GrantReceived {
            op: Some(op),
            token: Some(created),
            grant: None,
            server: 0,
            lease: None,
            holds: Some(format!(
                "lease {id:x}, key {key} (member {})",
                self.client.current()
            )),
        });
        self.key = Some(key.clone());
        Ok((created, key))
    }

    /// Release: unlock (delete our key) and revoke the lease; whether the key was deleted.
    pub fn release(&mut self) -> bool {
        emit(Record::ReleaseSent {
            op: None,
            grant: None,
        });
        let unlocked = match self.key.take() {
            Some(k) => self.client.unlock(&k),
            None => Err(anyhow::anyhow!("no lock key held")),
        };
        if let Some(l) = self.lease.take() {
            l.stop();
            let _ = self.client.revoke(l.id);
        }
        emit(Record::ReleaseDone {
            op: None,
            deleted: None,
            detail: Some(match &unlocked {
                Ok(()) => "unlocked".to_string(),
                Err(e) => format!("{e:#}"),
            }),
        });
        unlocked.is_ok()
    }
}
