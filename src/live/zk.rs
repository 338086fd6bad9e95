//! ZooKeeper for the live mode: the ensemble's health and roles through
//! the documented four-letter `srvr` command, and the worker's lock lane:
//! the recipe of zookeeper.apache.org "Recipes and Solutions: Locks"
//! (an ephemeral sequential znode under the lock's node, the lowest
//! sequence owns, each waiter watches its predecessor) through the
//! pure-Rust `zookeeper-client` crate; the owning znode's czxid (the
//! transaction id that created it) is the fencing token.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

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

/// A worker's session with the ensemble and the znode it holds.
pub struct ZkLane {
    endpoints: Vec<String>,
    root: String,
    session_ms: u64,
}

impl ZkLane {
    pub fn new(endpoints: Vec<String>, root: String, session_ms: u64) -> anyhow::Result<ZkLane> {
        Ok(ZkLane {
            endpoints,
            root,
            session_ms,
        })
    }

    pub fn acquire(&mut self, _op: u64) -> anyhow::Result<u64> {
        anyhow::bail!(
            "ZooKeeper lock not implemented ({} {} {})",
            self.endpoints.join(","),
            self.root,
            self.session_ms
        )
    }

    pub fn release(&mut self) -> bool {
        false
    }
}

/// Removes the run's lock nodes (a stub until the ZooKeeper lane lands).
pub fn reset(_endpoints: &[String], _prefix: &str) -> anyhow::Result<()> {
    Ok(())
}
