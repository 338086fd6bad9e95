//! What starting a server binary needs: the binary itself (found on PATH or
//! where Debian puts it, or an error naming the package), a free loopback
//! port to bind, and the tail of its log when it does not come up.
//!
//! Shared by the Redis and PostgreSQL servers ([`super::servers`]) and the
//! etcd and ZooKeeper clusters ([`super::cluster`]); kept below both so
//! neither imports the other for them.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::monotonic_ns;

/// Where Debian and the PostgreSQL packages put the binaries, after PATH.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for d in ["/usr/local/bin", "/usr/bin", "/usr/sbin", "/usr/local/sbin"] {
        dirs.push(PathBuf::from(d));
    }
    // /usr/lib/postgresql/<version>/bin, newest version first.
    if let Ok(entries) = fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        versions.sort();
        for v in versions.into_iter().rev() {
            dirs.push(v.join("bin"));
        }
    }
    dirs
}

/// The environment variable that names the file to run as `binary`
/// instead of searching for it: `FENCESIM_ETCD_BIN`,
/// `FENCESIM_REDIS_SERVER_BIN`, … (a server installed elsewhere; a test
/// gives a server that cannot start).
pub fn override_var(binary: &str) -> String {
    format!("FENCESIM_{}_BIN", binary.to_uppercase().replace('-', "_"))
}

/// Finds `binary` (or the file its [`override_var`] names), or says which
/// Debian package provides it.
pub fn find_binary(binary: &str, debian_package: &str) -> Result<PathBuf> {
    let var = override_var(binary);
    if let Some(path) = std::env::var_os(&var) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("{var}={}: no such file", path.display());
        }
        return Ok(path);
    }
    search_dirs()
        .into_iter()
        .map(|d| d.join(binary))
        .find(|p| p.is_file())
        .with_context(|| {
            format!(
                "`{binary}` not found on PATH, in /usr/bin, /usr/local/bin or /usr/lib/postgresql/*/bin; \
                 install the Debian package `{debian_package}` (apt-get install {debian_package})"
            )
        })
}

/// A free port on 127.0.0.1 for a server to bind, found by trying to bind
/// it and released at once.
///
/// Chosen *below* the kernel's ephemeral range (`ip_local_port_range`):
/// between our release and the server's own bind, any `connect()` on the
/// machine (our links, health checks, other runs' clients) may take an
/// ephemeral port as its source, and a port the kernel handed out with
/// `bind(0)` is one it hands out again — the server then dies with
/// "address already in use" before it is up. Ports outside the range are
/// never picked by the kernel. Each call goes on from the last one (a
/// random start per process), so one run never hands out a port twice.
pub fn free_port() -> Result<u16> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    let (low, high) = (10_000u32, ephemeral_low.min(65_536));
    if high <= low + 1_000 {
        // No room below the ephemeral range: let the kernel choose.
        let l = std::net::TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
        return Ok(l.local_addr()?.port());
    }
    let span = high - low;
    let start = (std::process::id().wrapping_mul(7_919) ^ (monotonic_ns() as u32)) % span;
    let _ = NEXT.compare_exchange(0, start + 1, Ordering::SeqCst, Ordering::SeqCst);
    for _ in 0..span {
        let k = NEXT.fetch_add(1, Ordering::SeqCst) % span;
        let port = (low + k) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    bail!("no free port on 127.0.0.1 in {low}..{high}")
}

/// The last `n` lines of a log file, for start-up errors.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
