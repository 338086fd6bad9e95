//! Three-member etcd and ZooKeeper clusters for the live mode, every
//! member's client and peer traffic through a partitionable TCP link inside
//! fencesim, each member in its own data directory under the run's
//! temporary directory; a member can be paused (SIGSTOP), killed (SIGKILL)
//! and restarted on the same ports with its data, cut off from the others,
//! or have every message to and from the others held a fixed time (a delay
//! line per direction: bytes keep their order, only their arrival moves).
//!
//! Why links that know who is calling: a partition of member *i* from the
//! majority must stop *i*'s traffic to the others *and* theirs to *i*, while
//! the clients talking to *i* stay connected (they are on *i*'s side). A
//! member dials the others through their advertised (proxied) peer address
//! from an ephemeral port, so each link asks the kernel who owns the other
//! end of every connection it accepts (`/proc/net/tcp` gives the socket's
//! inode, `/proc/<member pid>/fd` its process). Blocked pairs are refused at
//! accept and their open connections shut down; healing lets them redial.
//! etcd cannot be given a different address per observer (a member's id is
//! a hash of its peer URLs), which is why the source is found this way.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::common::member::Ports;
use super::etcd::{gateway as etcd_gateway, members as etcd_members};
use super::launch::{free_port, log_tail};
use super::process::{die_with_parent, kill};
use super::zk::{ensemble as zk_ensemble, members as zk_members};

// Which consensus service a cluster runs: a word of the whole live room
// (a lock recipe names its cluster), declared beside `LockKind`.
pub use super::ClusterKind;

/// Members in every cluster the harness starts.
pub const MEMBERS: usize = 3;

/// The links' shared view: member pids (0 = down), blocked (from, to)
/// member pairs, and every open connection with its ends.
#[derive(Default)]
struct NetState {
    pids: Vec<u32>,
    blocked: BTreeSet<(usize, usize)>,
    /// (from, to) member pairs whose messages are held this many ms.
    delayed_ms: BTreeMap<(usize, usize), u64>,
    /// (source member if a member dialled, destination member, whether on
    /// a member-to-member port, both sockets).
    conns: Vec<(Option<usize>, usize, bool, TcpStream, TcpStream)>,
    /// A client process (pid) whose new connections to a member are
    /// refused until the instant: a cut client reconnects elsewhere.
    refused_clients: Vec<(u32, usize, Instant)>,
}

type Net = Arc<Mutex<NetState>>;

/// A forwarder from a free 127.0.0.1 port to one member's port.
struct Link {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Link {
    /// `peer`: a member-to-member port (etcd peer, ZooKeeper quorum and
    /// election), where every caller is a member.
    fn start(upstream: u16, member: usize, peer_port: bool, net: Net) -> Result<Link> {
        let listener = TcpListener::bind("127.0.0.1:0").context("link bind")?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        // A blocking accept: a link waits without waking (polling every
        // 2 ms, the 15 links of two clusters woke 7,500 times a second);
        // its Drop wakes it with a connection of its own.
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = conn else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let Ok(peer) = client.peer_addr() else {
                    continue;
                };
                // Each caller is admitted on its own thread: finding who it
                // is reads /proc (thousands of TIME_WAIT lines after a
                // partition's redials), and done here it made every other
                // caller of this port wait. A partitioned ZooKeeper leader
                // redials the others' election ports hundreds of times a
                // second; the majority's own election connections queued
                // behind those, timed out, and it elected no one for the
                // whole 5 s partition (2 trials in 5 of
                // live/zk-partitioned-leader-fenced.toml).
                let net = net.clone();
                std::thread::spawn(move || {
                    admit(client, peer, (port, member, peer_port), upstream, &net)
                });
            }
        });
        Ok(Link { port, stop })
    }
}

/// Identifies a caller of link `port` (to `member`; `peer_port`: a
/// member-to-member port), refuses it if a partition or a client cut says
/// so, and otherwise connects it to the member and forwards both ways.
fn admit(
    client: TcpStream,
    peer: SocketAddr,
    (port, member, peer_port): (u16, usize, bool),
    upstream: u16,
    net: &Net,
) {
    let _ = client.set_nonblocking(false);
    let pids = net.lock().map(|n| n.pids.clone()).unwrap_or_default();
    let from = member_of(peer, port, &pids);
    if std::env::var_os("FENCESIM_LIVE_DEBUG").is_some() {
        eprintln!(
            "link to member {member} (port {port}): connection from {peer} = member {from:?}"
        );
    }
    // A caller of a peer port that no member owns has already closed its
    // end (a member's connect that timed out): refused while its member is
    // cut off from anyone, failing closed.
    let unknown_peer = peer_port && from.is_none();
    let refused: Vec<u32> = net
        .lock()
        .map(|n| {
            n.refused_clients
                .iter()
                .filter(|(_, m, until)| *m == member && Instant::now() < *until)
                .map(|(pid, _, _)| *pid)
                .collect()
        })
        .unwrap_or_default();
    let refused_client = from.is_none() && member_of(peer, port, &refused).is_some();
    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(c1), Ok(s1), Ok(c2), Ok(s2)) = (
        client.try_clone(),
        server.try_clone(),
        client.try_clone(),
        server.try_clone(),
    ) else {
        return;
    };
    // Whether it is blocked is decided under the same lock that records it,
    // so a partition starting meanwhile either refuses it here or cuts it.
    let admitted = net.lock().is_ok_and(|mut n| {
        let blocked = match from {
            Some(f) => n.blocked.contains(&(f, member)),
            None if unknown_peer => n.blocked.iter().any(|(a, b)| *a == member || *b == member),
            None => refused_client,
        };
        if !blocked {
            n.conns.retain(|(_, _, _, c, _)| c.peer_addr().is_ok());
            n.conns.push((from, member, peer_port, c2, s2));
        }
        !blocked
    });
    if !admitted {
        let _ = client.shutdown(Shutdown::Both);
        let _ = server.shutdown(Shutdown::Both);
        return;
    }
    // Member-to-member bytes go through a delay line per direction.
    let (up, down) = match from {
        Some(f) => (Some((f, member)), Some((member, f))),
        None => (None, None),
    };
    let (net1, net2) = (net.clone(), net.clone());
    std::thread::spawn(move || copy(client, s1, up.map(|p| (p, net1))));
    std::thread::spawn(move || copy(server, c1, down.map(|p| (p, net2))));
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept; refused when the thread is already gone.
        let _ = TcpStream::connect_timeout(
            &SocketAddr::from(([127, 0, 0, 1], self.port)),
            Duration::from_millis(200),
        );
    }
}

/// Forwards `from` to `to`. With `delay` (the member pair this direction
/// carries and the links' state), every chunk is stamped when it was read
/// and written by a second thread no earlier than the pair's delay later:
/// a delay line, so a held message does not slow the ones behind it more
/// than the delay itself, and the byte order stays.
fn copy(mut from: TcpStream, mut to: TcpStream, delay: Option<((usize, usize), Net)>) {
    let mut buf = vec![0u8; 32 * 1024];
    let Some((pair, net)) = delay else {
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
        return;
    };
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let Ok(from2) = from.try_clone() else {
        return;
    };
    let writer = std::thread::spawn(move || {
        for (due, bytes) in rx {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if to.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from2.shutdown(Shutdown::Both);
    });
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        let ms = net
            .lock()
            .map(|s| s.delayed_ms.get(&pair).copied().unwrap_or(0))
            .unwrap_or(0);
        if tx
            .send((
                Instant::now() + Duration::from_millis(ms),
                buf[..n].to_vec(),
            ))
            .is_err()
        {
            break;
        }
    }
    drop(tx);
    let _ = writer.join();
}

/// Which member process owns the socket at `peer` (connected to our `port`).
/// A JVM's sockets are IPv6 ones (IPv4-mapped), listed in `/proc/net/tcp6`.
/// Lines of sockets no process owns (inode 0: TIME_WAIT) are skipped: with
/// `net.ipv4.tcp_tw_reuse = 2` (Linux's default) loopback connections
/// reuse a port still in TIME_WAIT, so a member redialling an election
/// port has two lines with the same ports, and taking the dead one made the
/// new connection "a client" that a partition let through — the
/// partitioned ZooKeeper leader kept voting for itself and the majority
/// elected no one for the whole partition (2 trials in 5).
///
/// The kernel is asked for that one socket first ([`super::sockdiag`]):
/// the scan of `/proc/net/tcp` walks its whole connection table and was
/// most of a multi-job run's CPU. The scan stays for what the lookup cannot
/// answer (it names a TIME_WAIT twin, or netlink is unavailable).
fn member_of(peer: SocketAddr, port: u16, pids: &[u32]) -> Option<usize> {
    let inode = super::sockdiag::loopback_inode(peer.port(), port)
        .map(|i| i.to_string())
        .or_else(|| scanned_inode(peer, port))?;
    let want = format!("socket:[{inode}]");
    pids.iter().position(|&pid| {
        pid != 0
            && fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|d| {
                d.flatten()
                    .any(|e| fs::read_link(e.path()).is_ok_and(|l| l.as_os_str() == want.as_str()))
            })
    })
}

/// The inode of the socket at `peer` connected to `port`, from the
/// kernel's connection listing (TIME_WAIT lines, inode 0, skipped).
fn scanned_inode(peer: SocketAddr, port: u16) -> Option<String> {
    let tcp = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| fs::read_to_string(f).ok())
        .collect::<Vec<_>>()
        .join("\n");
    let inode = tcp.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let local_port = u16::from_str_radix(f.get(1)?.rsplit(':').next()?, 16).ok()?;
        let rem_port = u16::from_str_radix(f.get(2)?.rsplit(':').next()?, 16).ok()?;
        let inode = f.get(9).filter(|i| **i != "0")?;
        (local_port == peer.port() && rem_port == port).then(|| inode.to_string())
    });
    inode
}

/// One member: how to (re)start it and its ports.
struct Member {
    bin: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    log: PathBuf,
    child: Option<Child>,
    /// The port clients use: the member's client link.
    client_port: u16,
    paused: bool,
}

/// A running three-member cluster; every member killed on drop.
pub struct Cluster {
    pub kind: ClusterKind,
    members: Vec<Member>,
    net: Net,
    _links: Vec<Link>,
    /// Start-up time of the whole cluster (ms), until it answered a write.
    pub started_ms: u128,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

impl Cluster {
    /// Starts a cluster of `kind` in `dir` (created; the caller removes it).
    pub fn start(kind: ClusterKind, dir: &Path) -> Result<Cluster> {
        fs::create_dir_all(dir)?;
        let t = Instant::now();
        let net: Net = Arc::new(Mutex::new(NetState {
            pids: vec![0; MEMBERS],
            ..NetState::default()
        }));
        // Each member's ports (slot 0: clients'), and a link in front of each.
        let peer = match kind {
            ClusterKind::Etcd => &etcd_members::PEER_PORTS[..],
            ClusterKind::Zk => &zk_members::PEER_PORTS[..],
        };
        let real: Vec<Vec<u16>> = (0..MEMBERS)
            .map(|_| peer.iter().map(|_| free_port()).collect())
            .collect::<Result<_>>()?;
        let mut links = Vec::new();
        let mut linked = Vec::new();
        for (i, ports) in real.iter().enumerate() {
            let mut mine = Vec::new();
            for (port, peer) in ports.iter().zip(peer) {
                let link = Link::start(*port, i, *peer, net.clone())?;
                mine.push(link.port);
                links.push(link);
            }
            linked.push(mine);
        }
        let ports = Ports {
            real: &real,
            linked: &linked,
        };
        let commands = match kind {
            ClusterKind::Etcd => etcd_members::commands(dir, &ports)?,
            ClusterKind::Zk => zk_members::commands(dir, &ports)?,
        };
        let members = (commands.into_iter().zip(&linked))
            .map(|(c, linked)| Member {
                bin: c.bin,
                args: c.args,
                env: Vec::new(),
                log: c.log,
                child: None,
                client_port: linked[0],
                paused: false,
            })
            .collect();
        let mut c = Cluster {
            kind,
            members,
            net,
            _links: links,
            started_ms: 0,
        };
        for i in 0..MEMBERS {
            c.spawn(i)?;
        }
        c.wait_healthy(Duration::from_secs(60))?;
        c.started_ms = t.elapsed().as_millis();
        Ok(c)
    }

    fn spawn(&mut self, i: usize) -> Result<()> {
        let m = &mut self.members[i];
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&m.log)?;
        let mut cmd = Command::new(&m.bin);
        cmd.args(&m.args)
            .envs(m.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        die_with_parent(&mut cmd);
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", m.bin.display()))?;
        if let Ok(mut n) = self.net.lock() {
            n.pids[i] = child.id();
        }
        m.child = Some(child);
        m.paused = false;
        Ok(())
    }

    /// The client addresses, each through its member's link: etcd
    /// `http://127.0.0.1:P`, ZooKeeper `127.0.0.1:P`.
    pub fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| match self.kind {
                ClusterKind::Etcd => format!("http://127.0.0.1:{}", m.client_port),
                ClusterKind::Zk => format!("127.0.0.1:{}", m.client_port),
            })
            .collect()
    }

    pub fn pid(&self, i: usize) -> u32 {
        self.members[i].child.as_ref().map_or(0, Child::id)
    }

    pub fn pids(&self) -> Vec<u32> {
        (0..self.members.len()).map(|i| self.pid(i)).collect()
    }

    /// SIGKILL member `i` and reap it (its data directory stays).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            kill(child.id(), libc::SIGCONT);
            kill(child.id(), libc::SIGKILL);
            let _ = child.wait();
        }
        if let Ok(mut n) = self.net.lock() {
            n.pids[i] = 0;
        }
    }

    /// Starts a killed member again on the same ports, from its data.
    pub fn restart(&mut self, i: usize) -> Result<()> {
        if self.members[i].child.is_none() {
            self.spawn(i)?;
        }
        Ok(())
    }

    pub fn pause(&mut self, i: usize) {
        kill(self.pid(i), libc::SIGSTOP);
        self.members[i].paused = true;
    }

    pub fn resume(&mut self, i: usize) {
        kill(self.pid(i), libc::SIGCONT);
        self.members[i].paused = false;
    }

    /// Cuts member `i` off from every other member, both ways; its
    /// clients stay connected to it.
    pub fn partition(&mut self, i: usize) {
        let Ok(mut n) = self.net.lock() else {
            return;
        };
        for j in 0..MEMBERS {
            if j != i {
                n.blocked.insert((i, j));
                n.blocked.insert((j, i));
            }
        }
        let blocked = n.blocked.clone();
        // A member-to-member connection whose caller was not identified
        // when it was admitted may be the cut-off member's: cut, failing
        // closed as admission does (an innocent one redials and is
        // identified then). Left open, one such link kept a partitioned
        // ZooKeeper leader talking to the majority through the whole
        // partition — A's session lived, B never got the lock (2 trials
        // of 44 in the runs of docs/live.md, "Trials side by side").
        n.conns.retain(|(from, to, peer_port, c, s)| {
            let cut = match from {
                Some(f) => blocked.contains(&(*f, *to)),
                None => *peer_port,
            };
            if cut {
                let _ = c.shutdown(Shutdown::Both);
                let _ = s.shutdown(Shutdown::Both);
            }
            !cut
        });
    }

    /// Shuts down every connection client process `pid` has to a member's
    /// client port (a reset, as a dead NAT entry or a load balancer gives)
    /// and refuses its new ones to those members for `refuse_ms`, so it
    /// must reconnect to another member. The members it was connected to.
    pub fn cut_client(&mut self, pid: u32, refuse_ms: u64) -> Vec<usize> {
        let Ok(mut n) = self.net.lock() else {
            return Vec::new();
        };
        let mut cut = Vec::new();
        n.conns.retain(|(from, to, _, c, s)| {
            let owned = from.is_none()
                && match (c.peer_addr(), c.local_addr()) {
                    (Ok(peer), Ok(local)) => member_of(peer, local.port(), &[pid]).is_some(),
                    _ => false,
                };
            if owned {
                let _ = c.shutdown(Shutdown::Both);
                let _ = s.shutdown(Shutdown::Both);
                cut.push(*to);
            }
            !owned
        });
        cut.sort_unstable();
        cut.dedup();
        let until = Instant::now() + Duration::from_millis(refuse_ms);
        n.refused_clients.retain(|(p, _, _)| *p != pid);
        n.refused_clients
            .extend(cut.iter().map(|m| (pid, *m, until)));
        cut
    }

    pub fn heal(&mut self) {
        if let Ok(mut n) = self.net.lock() {
            n.blocked.clear();
            n.refused_clients.clear();
        }
    }

    /// Holds every message between member `i` and the others, both ways,
    /// `by_ms` (connections open now and later); its clients' are not held.
    pub fn delay(&mut self, i: usize, by_ms: u64) {
        if let Ok(mut n) = self.net.lock() {
            for j in (0..MEMBERS).filter(|j| *j != i) {
                n.delayed_ms.insert((i, j), by_ms);
                n.delayed_ms.insert((j, i), by_ms);
            }
        }
    }

    /// Ends every member delay (bytes already held still arrive on time).
    pub fn undelay(&mut self) {
        if let Ok(mut n) = self.net.lock() {
            n.delayed_ms.clear();
        }
    }

    /// Every member running, unpaused and connected, a leader elected, and
    /// a write through each member answered.
    pub fn repair(&mut self) -> Result<()> {
        self.heal();
        self.undelay();
        for i in 0..MEMBERS {
            if self.members[i].paused {
                self.resume(i);
            }
            self.restart(i)?;
        }
        self.wait_healthy(Duration::from_secs(30))
    }

    fn wait_healthy(&mut self, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        let eps = self.endpoints();
        loop {
            let ok = match self.kind {
                ClusterKind::Etcd => eps.iter().all(|e| {
                    etcd_gateway::Etcd::new(vec![e.clone()], Duration::from_millis(500))
                        .and_then(|mut c| c.put("fencesim/health", "ok"))
                        .is_ok()
                }),
                ClusterKind::Zk => eps.iter().all(|e| zk_ensemble::healthy(e)),
            };
            if ok {
                return Ok(());
            }
            for (i, m) in self.members.iter_mut().enumerate() {
                if let Some(Ok(Some(status))) = m.child.as_mut().map(Child::try_wait) {
                    bail!(
                        "{} member {i} exited ({status}); last lines of {}:\n{}",
                        self.kind.name(),
                        m.log.display(),
                        log_tail(&m.log, 20)
                    );
                }
            }
            if start.elapsed() > timeout {
                bail!(
                    "{} cluster not healthy within {} ms; last lines of {}:\n{}",
                    self.kind.name(),
                    timeout.as_millis(),
                    self.members[0].log.display(),
                    log_tail(&self.members[0].log, 20)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether every member serves clients as part of a quorum.
    pub fn all_serving(&self) -> bool {
        match self.kind {
            ClusterKind::Etcd => etcd_gateway::leader(&self.endpoints()).is_some(),
            ClusterKind::Zk => self.endpoints().iter().all(|e| zk_ensemble::healthy(e)),
        }
    }

    /// The member that leads now, if one does.
    pub fn leader(&self) -> Option<usize> {
        match self.kind {
            ClusterKind::Etcd => etcd_gateway::leader(&self.endpoints()),
            ClusterKind::Zk => self
                .endpoints()
                .iter()
                .position(|e| zk_ensemble::mode(e).as_deref() == Some("leader")),
        }
    }
}

/// Whether the server binaries for `kind` are installed (for tests that skip).
pub fn binaries_present(kind: ClusterKind) -> Result<()> {
    match kind {
        ClusterKind::Etcd => etcd_members::binary().map(|_| ()),
        ClusterKind::Zk => zk_members::runtime().map(|_| ()),
    }
}
