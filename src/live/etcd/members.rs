//! How an etcd cluster's members start: each with a client and a peer
//! port, advertising the links in front of them (so a partition cuts what
//! they say to each other), fast elections on loopback.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::live::common::member::{MemberCommand, Ports};
use crate::live::launch::find_binary;

/// A member's ports: clients', peers' (slot 0 is the client port).
pub(crate) const PEER_PORTS: [bool; 2] = [false, true];

/// The `etcd` binary (the Debian package `etcd-server`).
pub(crate) fn binary() -> Result<PathBuf> {
    find_binary("etcd", "etcd-server")
}

/// Each member's command, its data under `dir`.
pub(crate) fn commands(dir: &Path, ports: &Ports) -> Result<Vec<MemberCommand>> {
    let bin = binary()?;
    let url = |p: u16| format!("http://127.0.0.1:{p}");
    let members = ports.real.len();
    let initial: Vec<String> = (0..members)
        .map(|i| format!("m{i}={}", url(ports.linked[i][1])))
        .collect();
    let token = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = Vec::new();
    for i in 0..members {
        let (real, linked) = (&ports.real[i], &ports.linked[i]);
        let data = dir.join(format!("m{i}"));
        let args = vec![
            format!("--name=m{i}"),
            format!("--data-dir={}", data.display()),
            format!("--listen-client-urls={}", url(real[0])),
            format!("--advertise-client-urls={}", url(linked[0])),
            format!("--listen-peer-urls={}", url(real[1])),
            format!("--initial-advertise-peer-urls={}", url(linked[1])),
            format!("--initial-cluster={}", initial.join(",")),
            "--initial-cluster-state=new".into(),
            format!("--initial-cluster-token={token}"),
            // Fast elections on loopback; the minimum lease TTL
            // becomes 1 s (3/2 election ticks of 50 ms, rounded up).
            "--heartbeat-interval=50".into(),
            "--election-timeout=500".into(),
            "--pre-vote=true".into(),
            "--logger=zap".into(),
            "--log-outputs=stderr".into(),
        ];
        out.push(MemberCommand {
            bin: bin.clone(),
            args,
            log: dir.join(format!("m{i}.log")),
        });
    }
    Ok(out)
}
