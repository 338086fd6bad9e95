//! A ZooKeeper ensemble's health and roles through the documented
//! four-letter `srvr` command, and sessions with it through the pure-Rust
//! `zookeeper-client` crate: what the cluster's health checks, the trial's
//! reset and the built-in worker's lane ([`super::lane`]) share.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use zookeeper_client as zk;

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
pub(super) fn runtime() -> Result<tokio::runtime::Runtime> {
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
pub(super) async fn connect(endpoints: &[String], session_ms: u64) -> Result<zk::Client> {
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

/// Empties the ensemble for a trial: every znode but ZooKeeper's own
/// `/zookeeper` goes, deepest first. The ensemble is the job's own, and a
/// user's program may name any path: a persistent parent the last
/// scenario's recipe left (kazoo's `Lock` and `Semaphore` keep theirs) is
/// the very path another program creates as its ephemeral lock znode, which
/// would then never be free (the kazoo single-znode files hung 20 s behind
/// the semaphore files in one job). The built-in lock's directory
/// ([`lock_dir`]) goes with the rest.
pub fn reset(endpoints: &[String]) -> Result<()> {
    runtime()?.block_on(async {
        let c = connect(endpoints, 4_000).await?;
        // Every path below the root, then deleted deepest first.
        let mut tree: Vec<String> = Vec::new();
        let mut next = vec!["/".to_string()];
        while let Some(path) = next.pop() {
            let children = match c.list_children(&path).await {
                Ok(children) => children,
                Err(zk::Error::NoNode) => continue,
                Err(e) => bail!("listing {path}: {e}"),
            };
            for child in children {
                let full = match path.as_str() {
                    "/" if child == "zookeeper" => continue,
                    "/" => format!("/{child}"),
                    _ => format!("{path}/{child}"),
                };
                tree.push(full.clone());
                next.push(full);
            }
        }
        tree.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
        for path in tree {
            match c.delete(&path, None).await {
                Ok(()) | Err(zk::Error::NoNode) => {}
                Err(e) => bail!("deleting {path}: {e}"),
            }
        }
        Ok(())
    })
}
