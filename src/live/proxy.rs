//! A TCP proxy inside the harness, between one worker and PostgreSQL, that
//! can hold the bytes of the worker's write for N ms (the article's delayed
//! write packet, made real), drop them for N ms, or cut the connection.
//!
//! Why it parses PostgreSQL messages: holding "the write" must not hold the
//! connection set-up or the read before it, so the client-to-server thread
//! splits its stream into frontend messages (the untyped startup message,
//! then type byte + length; the framer is the decoder's own,
//! [`super::decode::pgframe`]) and starts the hold at the first message whose
//! body names the `UPDATE` (the extended protocol's Parse, or a simple
//! Query). Everything after it waits behind it, so byte order per direction
//! is kept. Connections use `sslmode=disable` (the `postgres` crate does not
//! attempt GSS encryption), so the stream is plain. One thread per direction
//! (std threads: they only copy bytes and never spawn processes).
//!
//! The three modes, all starting at the first message naming the pattern:
//! - *hold*: that message and everything behind it wait N ms, then pass.
//! - *drop*: for N ms every request naming the pattern is discarded with
//!   the rest of its batch (up to its Sync), so the server never sees it
//!   and the connection stays in step; the client waits for an answer that
//!   never comes, and only its own request timeout gets it out.
//! - *cut*: the connection is shut down both ways before the message is
//!   forwarded (the server never sees it; the client reads a closed
//!   connection); new connections are accepted.
//!
//! Without a pattern it is a plain forwarder that can be *cut*: the
//! Redis replication link runs through one, so a failover can lose the
//! primary's last writes (its `SET` and `INCR`) the way the article says.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};

use super::common::bytes::contains;
use super::decode::pgframe::FrontendFramer;

/// What the proxy does to the first message naming its pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyMode {
    Hold { ms: u64 },
    Drop { ms: u64 },
    Cut,
}

/// What the proxy did, for the trial's fault line.
#[derive(Default, Debug)]
pub struct ProxyLog {
    /// CLOCK_MONOTONIC ns of each action on a matching message, and what it was.
    pub events: Vec<(u64, String)>,
    /// When the mode first fired (its window starts there); shared by every connection.
    first_ns: Option<u64>,
    /// When a hold ended (its length, or released early: [`Proxy::release_hold`]).
    pub hold_ended_ns: Option<u64>,
}

pub struct Proxy {
    pub port: u16,
    stop: Arc<AtomicBool>,
    /// Set: a hold in progress (or still to come) ends at once ([`HoldRelease`]).
    release: Arc<AtomicBool>,
    pub log: Arc<Mutex<ProxyLog>>,
    /// Every socket it opened, so a cut can close them all.
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// Listens on a free 127.0.0.1 port, forwarding to 127.0.0.1:`upstream`;
    /// with a `mode`, the PostgreSQL messages from the client containing the
    /// pattern are held, dropped or cut (without, bytes pass as they come).
    pub fn start(upstream: &str, hold: Option<(&'static str, ProxyMode)>) -> Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").context("proxy bind")?;
        let port = listener.local_addr()?.port();
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let release = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(ProxyLog::default()));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let (stop2, log2, streams2) = (stop.clone(), log.clone(), streams.clone());
        let release2 = release.clone();
        let upstream = upstream.to_string();
        std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        if let Ok(server) = TcpStream::connect(upstream.as_str()) {
                            if let (Ok(mut all), Ok(c), Ok(s)) =
                                (streams2.lock(), client.try_clone(), server.try_clone())
                            {
                                all.push(c);
                                all.push(s);
                            }
                            pipe(client, server, hold, (log2.clone(), release2.clone()));
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Ok(Proxy {
            port,
            stop,
            release,
            log,
            streams,
        })
    }

    /// What ends its hold or drop window early: anchored on another
    /// worker's operation ending (`until = "other_op_done"`).
    pub fn hold_release(&self) -> HoldRelease {
        HoldRelease(self.release.clone())
    }

    /// Cuts the link: every connection closed, new ones refused.
    pub fn cut(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(all) = self.streams.lock() {
            for s in all.iter() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Ends a proxy's hold now (or lets the held message through at once if it
/// has not come yet), or its drop window.
#[derive(Clone)]
pub struct HoldRelease(Arc<AtomicBool>);

impl HoldRelease {
    pub fn release(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
    }
}

fn pipe(
    client: TcpStream,
    server: TcpStream,
    hold: Option<(&'static str, ProxyMode)>,
    (log, release): (Arc<Mutex<ProxyLog>>, Arc<AtomicBool>),
) {
    let (c2, s2) = match (client.try_clone(), server.try_clone()) {
        (Ok(c), Ok(s)) => (c, s),
        _ => return,
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    // server -> client: plain copy.
    std::thread::spawn(move || {
        let (mut from, mut to) = (s2, c2);
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Both);
    });
    // client -> server: message by message, holding the first match.
    std::thread::spawn(move || {
        let (mut from, mut to) = (client, server);
        let _ = match hold {
            Some((pattern, mode)) => {
                forward_messages(&mut from, &mut to, (pattern, mode), &log, &release)
            }
            None => std::io::copy(&mut from, &mut to).map(|_| ()),
        };
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}

/// Reads frontend messages from `from` (cut by the one PostgreSQL framer,
/// [`FrontendFramer`]) and writes them to `to` unchanged, except those the
/// mode holds, drops or cuts.
fn forward_messages(
    from: &mut TcpStream,
    to: &mut TcpStream,
    (pattern, mode): (&str, ProxyMode),
    log: &Mutex<ProxyLog>,
    release: &AtomicBool,
) -> std::io::Result<()> {
    let mut framer = FrontendFramer::default();
    let mut buf = vec![0u8; 64 * 1024];
    // Dropping the rest of a dropped request's batch, up to its Sync.
    let mut dropping_batch = false;
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        framer.push(&buf[..n]);
        while let Some(msg) = framer.next_message() {
            // The startup message (and an SSL/GSS request before it) passes.
            let Some(kind) = msg.kind() else {
                to.write_all(&msg.bytes)?;
                continue;
            };
            if dropping_batch {
                dropping_batch = kind != b'S';
                continue;
            }
            let matches = matches!(kind, b'P' | b'Q') && contains(msg.body(), pattern.as_bytes());
            if matches {
                let now = super::monotonic_ns();
                let Ok(mut l) = log.lock() else {
                    return Ok(());
                };
                let first = *l.first_ns.get_or_insert(now);
                match mode {
                    ProxyMode::Hold { ms } if first == now => {
                        l.events.push((now, format!("held for {ms} ms")));
                        drop(l);
                        let end = now + ms * 1_000_000;
                        while !release.load(Ordering::SeqCst) && super::monotonic_ns() < end {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        if let Ok(mut l) = log.lock() {
                            l.hold_ended_ns = Some(super::monotonic_ns());
                        }
                    }
                    ProxyMode::Drop { ms }
                        if now < first + ms * 1_000_000 && !release.load(Ordering::SeqCst) =>
                    {
                        l.events.push((now, format!("dropped (window {ms} ms)")));
                        dropping_batch = kind == b'P';
                        continue;
                    }
                    ProxyMode::Cut if first == now => {
                        l.events
                            .push((now, "cut (connection shut down)".to_string()));
                        let _ = to.shutdown(Shutdown::Both);
                        let _ = from.shutdown(Shutdown::Both);
                        return Ok(());
                    }
                    _ => {}
                }
            }
            to.write_all(&msg.bytes)?;
        }
        if framer.is_broken() {
            // Not PostgreSQL's framing: nothing to hold, the rest passes as it comes.
            to.write_all(&framer.take_rest())?;
            return std::io::copy(from, to).map(|_| ());
        }
    }
}

/// Sees one direction of one proxied connection: called with each chunk
/// *before* it is forwarded, so it may hold the chunk (by blocking), stop
/// the program that will receive it, or lose the chunk and close the
/// connection ([`Flow`]). `fencesim live --worker-cmd` decodes a user's
/// client through it ([`super::client`]).
pub type Observer = Box<dyn FnMut(&[u8]) -> Flow + Send>;

/// What an [`Observer`] has the proxy do with the chunk it saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Forward it.
    Pass,
    /// Forward only its first `forward` bytes (the rest is lost), wait
    /// `after_ms`, then shut the connection down both ways.
    Cut { forward: usize, after_ms: u64 },
}

impl Proxy {
    /// A plain forwarder whose every new connection gets a pair of
    /// observers from `observe` (client→server, server→client), given the
    /// address the server sees the connection come from (its local end), so
    /// what the server says about a connection can be tied to the worker.
    pub fn start_observed(
        upstream: &str,
        observe: impl Fn(std::net::SocketAddr) -> (Observer, Observer) + Send + 'static,
    ) -> Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").context("proxy bind")?;
        let port = listener.local_addr()?.port();
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let (stop2, streams2) = (stop.clone(), streams.clone());
        let upstream = upstream.to_string();
        std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let _ = client.set_nonblocking(false);
                let Ok(server) = TcpStream::connect(upstream.as_str()) else {
                    continue;
                };
                let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                if let (Ok(mut all), Ok(c2), Ok(s2)) =
                    (streams2.lock(), client.try_clone(), server.try_clone())
                {
                    all.push(c2);
                    all.push(s2);
                }
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let Ok(seen_as) = server.local_addr() else {
                    continue;
                };
                let (up, down) = observe(seen_as);
                std::thread::spawn(move || copy_observed(client, s, up));
                std::thread::spawn(move || copy_observed(server, c, down));
            }
        });
        Ok(Proxy {
            port,
            stop,
            // An observed program's faults are its observers' own.
            release: Arc::new(AtomicBool::new(false)),
            log: Arc::new(Mutex::new(ProxyLog::default())),
            streams,
        })
    }
}

fn copy_observed(mut from: TcpStream, mut to: TcpStream, mut observer: Observer) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        match observer(&buf[..n]) {
            Flow::Pass => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Flow::Cut { forward, after_ms } => {
                let _ = to.write_all(&buf[..forward.min(n)]);
                std::thread::sleep(Duration::from_millis(after_ms));
                break;
            }
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PostgreSQL startup message (protocol 3.0, no parameters) and a
    /// simple Query naming `sql`, as a client sends them.
    fn startup_and_query(sql: &str) -> Vec<u8> {
        let mut out = 8u32.to_be_bytes().to_vec();
        out.extend(196_608u32.to_be_bytes());
        out.push(b'Q');
        out.extend((4 + sql.len() as u32 + 1).to_be_bytes());
        out.extend(sql.as_bytes());
        out.push(0);
        out
    }

    #[test]
    fn a_released_hold_lets_the_held_update_through_before_its_length() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let upstream = format!("127.0.0.1:{}", server.local_addr().unwrap().port());
        let hold = ProxyMode::Hold { ms: 60_000 };
        let proxy = Proxy::start(&upstream, Some(("UPDATE documents", hold))).unwrap();
        let mut client = TcpStream::connect(("127.0.0.1", proxy.port)).unwrap();
        let (mut seen, _) = server.accept().unwrap();
        let sent = startup_and_query("UPDATE documents SET body = 1");
        client.write_all(&sent).unwrap();
        // The startup message passes; the UPDATE is held.
        let mut got = vec![0u8; 8];
        seen.read_exact(&mut got).unwrap();
        seen.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut first = [0u8; 1];
        assert!(seen.read(&mut first).is_err(), "the UPDATE is held");
        proxy.hold_release().release();
        // Let through at once, not after its 60 s: the read below would time out.
        seen.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut rest = vec![0u8; sent.len() - 8];
        seen.read_exact(&mut rest).unwrap();
        assert_eq!(rest, sent[8..]);
        assert!(proxy.log.lock().unwrap().hold_ended_ns.is_some());
    }
}
