//! The `MONITOR` connection of one trial: reads the server's feed on a
//! thread into a [`Ledger`], and lets a proxy wait until the feed has
//! caught up with what the server has done.
//!
//! Why a sync point is needed: a fault anchored to "the lock was granted"
//! must strike before the program reads the reply that tells it so, but the
//! reply reaches the proxy on the client's connection while the feed line
//! that shows the grant travels on this one, and either may come first.
//! [`Feed::sync`] sends `ECHO <nonce>` on a connection of the harness's own
//! and waits until the feed shows it: Redis runs commands one at a time, so
//! everything that ran before the echo — the command whose reply the proxy
//! holds included — has been fed to the ledger by then.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::ledger::{Fact, Ledger, TOKEN_COUNTED};
use super::monitor;
use crate::live::common::keys::KeyChoice;
use crate::live::monotonic_ns;

struct State {
    ledger: Ledger,
    /// The highest sync nonce the feed has shown.
    synced: u64,
    /// Feed lines, verbatim, for the trial's record.
    lines: Vec<String>,
    /// The feed broke (unreadable line, closed connection) and why.
    broken: Option<String>,
    /// Feed time of the harness's own last command (the end of the account).
    own_last_us: u64,
    /// Every key's keyspace notifications as Redis sent them: (key, event).
    notified: Vec<(Vec<u8>, String)>,
    /// The highest subscriber pong nonce received.
    ponged: u64,
    /// Worker connections as registered, to replay the feed again.
    clients: Vec<(String, usize)>,
    /// Per worker connection, Redis's answer to each of its `SET NX` of a
    /// key that may be the lock, with the key (None: an answer that says
    /// neither).
    replies: BTreeMap<String, Vec<Answer>>,
}

/// Redis's answer to one `SET NX`: the key, and whether it took it.
type Answer = (Vec<u8>, Option<bool>);

/// Redis's wall-clock stamps (µs) on CLOCK_MONOTONIC, the clock every
/// other record of a live trial is on: the same machine's two clocks, their
/// difference sampled once when the feed starts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Clock {
    wall_minus_mono_us: i128,
}

impl Clock {
    pub fn mono_ns(&self, ts_us: u64) -> u64 {
        ((ts_us as i128 - self.wall_minus_mono_us).max(0) * 1000) as u64
    }
}

/// The feed of one Redis server for one trial.
pub struct Feed {
    state: Arc<(Mutex<State>, Condvar)>,
    sync_conn: Mutex<BufReader<TcpStream>>,
    monitor: TcpStream,
    nonce: AtomicU64,
    /// The keyspace subscriber (None: not our server to configure).
    subscriber: Option<TcpStream>,
    clock: Clock,
    reader: Option<std::thread::JoinHandle<()>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn wall_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn resp_command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads one RESP reply line (`+OK`, `$n` + payload, `-ERR …`) and returns
/// it, for the harness's own two commands.
fn read_reply(r: &mut BufReader<TcpStream>) -> Result<String> {
    let mut first = String::new();
    r.read_line(&mut first).context("reading Redis's reply")?;
    if let Some(n) = first.strip_prefix('$') {
        let n: usize = n.trim().parse().context("a bulk length")?;
        let mut body = vec![0u8; n + 2];
        r.read_exact(&mut body)?;
        return Ok(String::from_utf8_lossy(&body[..n]).into_owned());
    }
    if first.starts_with('-') {
        bail!("Redis answered {}", first.trim());
    }
    let line = first.trim();
    Ok(line.strip_prefix('+').unwrap_or(line).to_string())
}

impl Feed {
    /// Opens the feed on the Redis at `addr` (host:port) for a trial whose
    /// lock key is `lock` (named, or to be found) and whose token key is
    /// given (empty: to be found); the ledger starts empty.
    /// With `keyspace`, the server (the harness's own: it is reconfigured)
    /// also reports every key's keyspace notifications, of which the lock
    /// and token keys' must match the replay's prediction at [`Feed::finish`].
    pub fn start(addr: &str, lock: KeyChoice, token_key: &str, keyspace: bool) -> Result<Feed> {
        let mut mon =
            TcpStream::connect(addr).with_context(|| format!("MONITOR connection to {addr}"))?;
        mon.set_nodelay(true)?;
        mon.write_all(&resp_command(&[b"MONITOR"]))?;
        let mut mon_reader = BufReader::new(mon.try_clone()?);
        let ok = read_reply(&mut mon_reader)?;
        if ok != "OK" {
            bail!("MONITOR answered {ok:?}");
        }
        let sync =
            TcpStream::connect(addr).with_context(|| format!("sync connection to {addr}"))?;
        sync.set_nodelay(true)?;
        sync.set_read_timeout(Some(Duration::from_secs(5)))?;
        let sync_addr = sync.local_addr()?.to_string();
        let state = Arc::new((
            Mutex::new(State {
                ledger: Ledger::finding(lock, token_key.as_bytes(), 0),
                synced: 0,
                lines: Vec::new(),
                broken: None,
                own_last_us: 0,
                notified: Vec::new(),
                ponged: 0,
                clients: Vec::new(),
                replies: BTreeMap::new(),
            }),
            Condvar::new(),
        ));
        let mut sync = BufReader::new(sync);
        let subscriber = if keyspace {
            sync.get_mut().write_all(&resp_command(&[
                b"CONFIG",
                b"SET",
                b"notify-keyspace-events",
                b"Kg$x",
            ]))?;
            read_reply(&mut sync).context("enabling keyspace notifications")?;
            let mut sub = TcpStream::connect(addr)
                .with_context(|| format!("keyspace subscriber to {addr}"))?;
            sub.set_nodelay(true)?;
            // Every key's, on one connection: the lock key may be found only
            // as the trial runs, and the token key's counts come in Redis's
            // own order among the lock key's events — whether a token was
            // drawn before or after the lease ran out in the same
            // millisecond is then Redis's word, not a guess from the stamps.
            sub.write_all(&resp_command(&[b"PSUBSCRIBE", KEYSPACE.as_bytes()]))?;
            let (st, reader) = (state.clone(), sub.try_clone()?);
            std::thread::spawn(move || read_notifications(reader, &st));
            Some(sub)
        } else {
            None
        };
        let (st, own) = (state.clone(), sync_addr);
        let reader = std::thread::spawn(move || read_feed(mon_reader, &st, &own));
        let clock = Clock {
            wall_minus_mono_us: wall_us() as i128 - (monotonic_ns() / 1000) as i128,
        };
        Ok(Feed {
            state,
            sync_conn: Mutex::new(sync),
            monitor: mon,
            nonce: AtomicU64::new(0),
            subscriber,
            clock,
            reader: Some(reader),
        })
    }

    /// Registers a worker's connection by its address as Redis sees it
    /// (the proxy's upstream socket's local address).
    /// Redis answered a `SET NX` of the lock key from `addr` (the worker's
    /// connection as the feed names it): taken, refused, or None when the
    /// answer says neither (an error).
    pub fn replied(&self, addr: &str, key: &[u8], took: Option<bool>) {
        let mut st = lock(&self.state.0);
        let answers = st.replies.entry(addr.to_string()).or_default();
        answers.push((key.to_vec(), took));
    }

    /// The lock key and token key as named or found so far.
    pub fn keys(&self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        self.with(|l| {
            (
                l.lock_key().map(<[u8]>::to_vec),
                l.token_key().map(<[u8]>::to_vec),
            )
        })
    }

    pub fn register(&self, addr: String, worker: usize) {
        let mut st = lock(&self.state.0);
        st.clients.push((addr.clone(), worker));
        st.ledger.register(addr, worker);
    }

    /// Waits until everything the server ran before now is in the ledger.
    pub fn sync(&self, timeout: Duration) -> Result<()> {
        let n = self.nonce.fetch_add(1, Ordering::SeqCst) + 1;
        {
            let mut c = lock(&self.sync_conn);
            let nonce = format!("fencesim-sync-{n}");
            c.get_mut()
                .write_all(&resp_command(&[b"ECHO", nonce.as_bytes()]))?;
            read_reply(&mut c)?;
        }
        let deadline = Instant::now() + timeout;
        let (m, cv) = &*self.state;
        let mut st = lock(m);
        while st.synced < n {
            if let Some(why) = &st.broken {
                bail!("the server's MONITOR feed broke: {why}");
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!(
                    "the server's MONITOR feed did not show the harness's echo within {timeout:?}"
                );
            }
            st = cv
                .wait_timeout(st, left)
                .map_or_else(|p| p.into_inner().0, |(g, _)| g);
        }
        Ok(())
    }

    /// Reads the ledger.
    pub fn with<R>(&self, f: impl FnOnce(&Ledger) -> R) -> R {
        f(&lock(&self.state.0).ledger)
    }

    /// The feed's timestamps on the harness's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Closes the feed: a lease whose time is up is made to run out
    /// (`EXISTS` on the key, Redis's lazy expiry), a last sync, and — with
    /// keyspace notifications — the check that Redis's notifications for
    /// the lock key are the ones the replay predicts. Returns the finished
    /// ledger, the verbatim feed, and why the account cannot be trusted, if
    /// it cannot (a broken feed, a notification the replay did not predict).
    pub fn finish(mut self) -> (Ledger, Vec<String>, Option<String>) {
        let (lock_key, token_key) = self.keys();
        let (lock_key, token_key) = (lock_key.unwrap_or_default(), token_key.unwrap_or_default());
        let touched = match lock_key.is_empty() {
            true => Ok(String::new()),
            false => {
                let mut c = lock(&self.sync_conn);
                c.get_mut()
                    .write_all(&resp_command(&[b"EXISTS", &lock_key]))
                    .map_err(anyhow::Error::from)
                    .and_then(|()| read_reply(&mut c))
            }
        };
        let synced = touched.and_then(|_| self.sync(Duration::from_secs(2)));
        let notified = match (&synced, self.subscriber.take()) {
            (Ok(()), Some(sub)) => self
                .drain_notifications(sub)
                .map(|all| Some(of_lock_and_token(&all, &lock_key, &token_key))),
            _ => Ok(None),
        };
        let _ = self.monitor.shutdown(Shutdown::Both);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let mut st = lock(&self.state.0);
        let mut ledger = std::mem::replace(&mut st.ledger, Ledger::new(b"", b"", 0));
        ledger.finish(st.own_last_us);
        let mut undecided = None;
        if let (Ok(()), Ok(Some(actual))) = (&synced, &notified) {
            // Also when the replay fits: in an expiry's millisecond another
            // choice may fit Redis's notifications as well, with other facts.
            if actual != ledger.notified() || ledger.borderline() > 0 {
                let replies = replies_for(&st.replies, &lock_key);
                let replay = Replay {
                    choice: ledger.choice().clone(),
                    token_key: &token_key,
                    clients: &st.clients,
                    lines: &st.lines,
                    end_us: st.own_last_us,
                    replies: &replies,
                };
                match settle(&replay, actual, ledger.borderline()) {
                    Ok(settled) => ledger = settled,
                    Err(Unsettled::Disagree) => {
                        undecided = Some(
                            "commands ran in the millisecond the lease expired, and Redis's \
                             notifications fit accounts with different facts"
                                .to_string(),
                        )
                    }
                    Err(Unsettled::NoneFits) => {}
                }
            }
        }
        // The feed ends by design once closed; before that, a break is news.
        let broken = match (synced, notified) {
            (Err(e), _) | (_, Err(e)) => Some(format!("{e:#}")),
            _ if undecided.is_some() => undecided,
            (Ok(()), Ok(Some(actual))) if actual != ledger.notified() => Some(format!(
                "Redis notified ({}) for the lock and token keys, the replay of its feed predicts ({})",
                actual.join(", "),
                ledger.notified().join(", ")
            )),
            _ => None,
        };
        (ledger, std::mem::take(&mut st.lines), broken)
    }

    /// Every notification Redis sent before now: a `PING` on the
    /// subscriber's own connection comes back after them.
    fn drain_notifications(&self, mut sub: TcpStream) -> Result<Vec<(Vec<u8>, String)>> {
        let n = self.nonce.fetch_add(1, Ordering::SeqCst) + 1;
        let nonce = format!("fencesim-sync-{n}");
        sub.write_all(&resp_command(&[b"PING", nonce.as_bytes()]))?;
        let deadline = Instant::now() + Duration::from_secs(2);
        let (m, cv) = &*self.state;
        let mut st = lock(m);
        while st.ponged < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("the keyspace subscriber did not answer the harness's ping within 2 s");
            }
            st = cv
                .wait_timeout(st, left)
                .map_or_else(|p| p.into_inner().0, |(g, _)| g);
        }
        let _ = sub.shutdown(Shutdown::Both);
        Ok(std::mem::take(&mut st.notified))
    }
}

/// The channel pattern of every key's keyspace notifications in db 0.
const KEYSPACE: &str = "__keyspace@0__:*";

/// The notifications the replay predicts, from every key's: the lock key's
/// events, and each count of the token key (`incrby`/`decrby`: what INCR,
/// INCRBY, DECR and DECRBY notify) as [`TOKEN_COUNTED`]; the token key's
/// other events are not predicted and not kept.
fn of_lock_and_token(all: &[(Vec<u8>, String)], lock_key: &[u8], token_key: &[u8]) -> Vec<String> {
    all.iter()
        .filter_map(|(key, event)| {
            if !lock_key.is_empty() && key == lock_key {
                Some(event.clone())
            } else if !token_key.is_empty() && key == token_key {
                matches!(event.as_str(), "incrby" | "decrby").then(|| TOKEN_COUNTED.to_string())
            } else {
                None
            }
        })
        .collect()
}

/// Each connection's answers to its `SET NX`s of `lock_key`.
fn replies_for(
    all: &BTreeMap<String, Vec<Answer>>,
    lock_key: &[u8],
) -> BTreeMap<String, Vec<Option<bool>>> {
    all.iter()
        .map(|(addr, answers)| {
            let mine = answers.iter().filter(|(k, _)| k == lock_key);
            (addr.clone(), mine.map(|(_, took)| *took).collect())
        })
        .collect()
}

/// A trial's feed, to be replayed again.
struct Replay<'a> {
    /// The lock key as named (a key found again the same way).
    choice: KeyChoice,
    token_key: &'a [u8],
    clients: &'a [(String, usize)],
    lines: &'a [String],
    end_us: u64,
    /// Redis's answers to each connection's `SET NX`s.
    replies: &'a BTreeMap<String, Vec<Option<bool>>>,
}

/// The replay whose sub-millisecond decisions Redis's notifications
/// confirm: where commands ran in the very millisecond the key expired,
/// the feed's stamps cannot say which side of the expiry they fell on;
/// every combination of those decisions (up to 10 of them) is replayed and
/// the one account whose predicted notifications are Redis's is taken
/// (several combinations may fit when they lead to the same facts in the
/// same order, at instants a retry apart: the first, the least flipped,
/// is taken).
fn settle(r: &Replay, actual: &[String], borderline: u64) -> Result<Ledger, Unsettled> {
    let parsed: Vec<monitor::MonitorLine> = r
        .lines
        .iter()
        .filter_map(|l| monitor::parse(l).ok())
        .collect();
    let k = borderline.min(10) as u32;
    let mut fits = Vec::new();
    for mask in 0u32..(1 << k) {
        let flips = (0..k).map(|i| mask & (1 << i) != 0).collect();
        let mut l = Ledger::finding(r.choice.clone(), r.token_key, 0)
            .flipping(flips)
            .with_replies(r.replies.clone());
        for (addr, w) in r.clients {
            l.register(addr.clone(), *w);
        }
        for line in &parsed {
            l.feed(line);
        }
        l.finish(r.end_us);
        // A reading fits when Redis's notifications are the ones it
        // predicts and no `SET NX` went otherwise than Redis answered.
        if l.notified() == actual && l.contradictions() == 0 {
            fits.push(l);
        }
    }
    // Flips that differ only where nothing follows from them (a script's
    // later command at the same frozen time) give one account: it stands.
    let first = fits.first().ok_or(Unsettled::NoneFits)?;
    let shape = |l: &Ledger| l.facts().iter().map(Fact::shape).collect::<Vec<_>>();
    let one = fits
        .iter()
        .all(|l| shape(l) == shape(first) && l.problems() == first.problems());
    match one {
        true => Ok(fits.swap_remove(0)),
        false => Err(Unsettled::Disagree),
    }
}

/// Why [`settle`] found no one account.
#[derive(Debug)]
enum Unsettled {
    /// No choice fits Redis's notifications (the replay's mismatch stands).
    NoneFits,
    /// Choices with different facts fit them alike: no verdict.
    Disagree,
}

/// Collects every key's events, in Redis's order.
fn read_notifications(from: TcpStream, state: &Arc<(Mutex<State>, Condvar)>) {
    let (m, cv) = &**state;
    let mut frames = super::resp::FrameBuffer::default();
    let mut from = from;
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        for frame in frames.push(&buf[..n]) {
            let Some(args) = super::resp::command_args(&frame) else {
                continue;
            };
            let word = |k: usize| args.get(k).map(|a| String::from_utf8_lossy(a).into_owned());
            let mut st = lock(m);
            match word(0).as_deref() {
                Some("pmessage") => {
                    let prefix = &KEYSPACE.as_bytes()[..KEYSPACE.len() - 1];
                    let key = args.get(2).and_then(|c| c.strip_prefix(prefix));
                    if let (Some(key), Some(event)) = (key, word(3)) {
                        st.notified.push((key.to_vec(), event));
                    }
                }
                Some("pong") => {
                    if let Some(n) =
                        word(1).and_then(|w| w.strip_prefix("fencesim-sync-")?.parse().ok())
                    {
                        st.ponged = st.ponged.max(n);
                        cv.notify_all();
                    }
                }
                _ => {}
            }
        }
    }
}

fn read_feed(mut r: BufReader<TcpStream>, state: &Arc<(Mutex<State>, Condvar)>, own: &str) {
    let (m, cv) = &**state;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim_end_matches(['\r', '\n']);
        let Some(line) = line.strip_prefix('+') else {
            let mut st = lock(m);
            st.broken = Some(format!("a feed line that is not a status line: {line:?}"));
            break;
        };
        let mut st = lock(m);
        match monitor::parse(line) {
            Ok(parsed) => {
                let ours = parsed.caller == monitor::Caller::Client(own.to_string());
                if ours {
                    st.own_last_us = parsed.ts_us;
                    let nonce = parsed
                        .args
                        .get(1)
                        .and_then(|a| std::str::from_utf8(a).ok())
                        .and_then(|s| s.strip_prefix("fencesim-sync-"))
                        .and_then(|n| n.parse::<u64>().ok());
                    if let Some(n) = nonce {
                        st.synced = st.synced.max(n);
                        cv.notify_all();
                    }
                    continue;
                }
                st.ledger.feed(&parsed);
                st.lines.push(line.to_string());
            }
            Err(e) => {
                st.broken = Some(format!("unreadable feed line ({e}): {line:?}"));
                cv.notify_all();
                break;
            }
        }
    }
    let mut st = lock(m);
    if st.broken.is_none() {
        st.broken = Some("the feed connection closed".into());
    }
    cv.notify_all();
}

#[cfg(test)]
mod tests {
    use super::super::ledger::Fact;
    use super::*;
    use crate::live::servers::{Redis, TempRoot};

    /// A real redis-server, or None with one line on the unbuffered stderr
    /// (a skipped test must be seen; under CI it is a failure).
    fn redis() -> Option<(TempRoot, Redis)> {
        let started = TempRoot::new().and_then(|root| {
            let r = Redis::start(&root.path.join("redis"), Duration::from_secs(15))?;
            Ok((root, r))
        });
        match started {
            Ok(x) => Some(x),
            Err(e) if std::env::var("CI").as_deref() != Ok("true") => {
                let _ = writeln!(std::io::stderr(), "!!! LIVE TEST SKIPPED: feed: {e:#}");
                None
            }
            Err(e) => panic!("CI=true and no redis-server: {e:#}"),
        }
    }

    /// The address Redis sees a connection come from.
    fn addr_of(c: &mut redis::Connection) -> String {
        let info: String = redis::cmd("CLIENT").arg("INFO").query(c).unwrap();
        info.split(' ')
            .find_map(|kv| kv.strip_prefix("addr="))
            .unwrap()
            .to_string()
    }

    fn eval(c: &mut redis::Connection, body: &str, keys: &[&str], args: &[&str]) -> redis::Value {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(body).arg(keys.len()).arg(keys).arg(args);
        cmd.query(c).unwrap()
    }

    /// Each fact's kind and worker (`usize::MAX`: an expiry's, which has none).
    fn fact_words(facts: &[Fact]) -> Vec<(&'static str, usize)> {
        facts
            .iter()
            .map(|f| match f {
                Fact::Granted { worker, .. } => ("granted", *worker),
                Fact::Deleted { worker, .. } => ("deleted", *worker),
                Fact::Token { worker, .. } => ("token", *worker),
                Fact::Renewed { worker, .. } => ("renewed", *worker),
                Fact::Expired { .. } => ("expired", usize::MAX),
            })
            .collect()
    }

    #[test]
    fn the_feed_attributes_scripts_transactions_and_pipelines_to_their_connections() {
        let Some((_root, r)) = redis() else { return };
        let addr = format!("127.0.0.1:{}", r.port);
        let feed = Feed::start(
            &addr,
            KeyChoice::Exact("lock:doc".into()),
            "fence:doc",
            true,
        )
        .unwrap();
        let client = redis::Client::open(r.url()).unwrap();
        let (mut a, mut b) = (
            client.get_connection().unwrap(),
            client.get_connection().unwrap(),
        );
        feed.register(addr_of(&mut a), 0);
        feed.register(addr_of(&mut b), 1);
        // A takes lock and token in one script; B's transaction is refused.
        let take = "if redis.call('set',KEYS[1],ARGV[1],'NX','PX',ARGV[2]) then return redis.call('incr',KEYS[2]) end return false";
        let tok = eval(&mut a, take, &["lock:doc", "fence:doc"], &["a", "60000"]);
        assert_eq!(tok, redis::Value::Int(1));
        let (set,): (Option<String>,) = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg("lock:doc")
            .arg("b")
            .arg("NX")
            .arg("PX")
            .arg(60_000)
            .query(&mut b)
            .unwrap();
        assert_eq!(set, None);
        // A read-only script, then A's compare-and-delete, then B's pipelined grant.
        eval(
            &mut b,
            "return redis.call('pttl',KEYS[1])",
            &["lock:doc"],
            &[],
        );
        let cad = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) end return 0";
        assert_eq!(
            eval(&mut b, cad, &["lock:doc"], &["b"]),
            redis::Value::Int(0)
        );
        assert_eq!(
            eval(&mut a, cad, &["lock:doc"], &["a"]),
            redis::Value::Int(1)
        );
        let (_, n): (Option<String>, i64) = redis::pipe()
            .cmd("SET")
            .arg("lock:doc")
            .arg("b")
            .arg("NX")
            .arg("PX")
            .arg(60_000)
            .cmd("INCR")
            .arg("fence:doc")
            .query(&mut b)
            .unwrap();
        assert_eq!(n, 2);
        feed.sync(Duration::from_secs(5)).unwrap();
        assert_eq!(feed.with(|l| l.grants_of(1).to_vec()), vec![2]);
        // B lets go; A's short lease runs out untouched (finish makes Redis notice).
        let _: i64 = redis::cmd("DEL").arg("lock:doc").query(&mut b).unwrap();
        let _: () = redis::cmd("SET")
            .arg("lock:doc")
            .arg("a")
            .arg("PX")
            .arg(20)
            .query(&mut a)
            .unwrap();
        std::thread::sleep(Duration::from_millis(60));
        let (ledger, lines, broken) = feed.finish();
        assert!(ledger.problems().is_empty(), "{:?}", ledger.problems());
        assert_eq!(
            fact_words(ledger.facts()),
            [
                ("granted", 0),
                ("token", 0),
                ("deleted", 0),
                ("granted", 1),
                ("token", 1),
                ("deleted", 1),
                ("granted", 0),
                ("expired", usize::MAX)
            ],
            "feed:\n{}",
            lines.join("\n")
        );
        assert_eq!(broken, None, "Redis's notifications agree with the replay");
    }

    #[test]
    fn redis_s_replies_settle_which_poller_took_the_key_in_its_expiry_millisecond() {
        // A's key (PX 100 at 1000.000) runs out in the millisecond B and a
        // restarted C both poll with SET NX: "B in the expiry ms" and "C
        // just after it" predict the same notifications; only Redis's
        // replies (B refused, C took it) say which happened.
        let lines: Vec<String> = [
            r#"1000.000000 [0 127.0.0.1:1001] "SET" "lock:doc" "a" "NX" "PX" "100""#,
            r#"1000.100400 [0 127.0.0.1:1002] "SET" "lock:doc" "b" "NX" "PX" "100""#,
            r#"1000.100900 [0 127.0.0.1:1003] "SET" "lock:doc" "c" "NX" "PX" "100""#,
        ]
        .map(String::from)
        .to_vec();
        let clients = [
            ("127.0.0.1:1001".to_string(), 0),
            ("127.0.0.1:1002".to_string(), 1),
            ("127.0.0.1:1003".to_string(), 2),
        ];
        let actual: Vec<String> = ["set", "expire", "expired", "set", "expire"]
            .map(String::from)
            .to_vec();
        let no_replies = BTreeMap::new();
        let mut replay = Replay {
            choice: KeyChoice::Exact("lock:doc".into()),
            token_key: b"fence:doc",
            clients: &clients,
            lines: &lines,
            end_us: 1_000_150_000,
            replies: &no_replies,
        };
        assert!(
            matches!(settle(&replay, &actual, 2), Err(Unsettled::Disagree)),
            "without the replies, two stories fit"
        );
        let replies: BTreeMap<String, Vec<Option<bool>>> = [
            ("127.0.0.1:1001".to_string(), vec![Some(true)]),
            ("127.0.0.1:1002".to_string(), vec![Some(false)]),
            ("127.0.0.1:1003".to_string(), vec![Some(true)]),
        ]
        .into_iter()
        .collect();
        replay.replies = &replies;
        let settled = settle(&replay, &actual, 2).expect("one reading fits the replies");
        assert!(settled.grants_of(1).is_empty());
        assert_eq!(settled.grants_of(2), &[2]);
    }

    #[test]
    fn redis_s_notifications_settle_a_command_in_the_expiry_millisecond() {
        // B's SET NX ran in the millisecond A's key expired; the stamps say
        // "still alive", Redis's notifications say it expired and B got it.
        let lines: Vec<String> = [
            r#"1000.000000 [0 127.0.0.1:1001] "SET" "lock:doc" "a" "NX" "PX" "100""#,
            r#"1000.100400 [0 127.0.0.1:1002] "SET" "lock:doc" "b" "NX" "PX" "100""#,
        ]
        .map(String::from)
        .to_vec();
        let clients = [
            ("127.0.0.1:1001".to_string(), 0),
            ("127.0.0.1:1002".to_string(), 1),
        ];
        let replay = Replay {
            choice: KeyChoice::Exact("lock:doc".into()),
            token_key: b"fence:doc",
            clients: &clients,
            lines: &lines,
            end_us: 1_000_150_000,
            replies: &BTreeMap::new(),
        };
        let actual: Vec<String> = ["set", "expire", "expired", "set", "expire"]
            .map(String::from)
            .to_vec();
        let settled = settle(&replay, &actual, 1).expect("one replay fits");
        assert_eq!(settled.grants_of(1), &[2]);
        // Notifications that no decision explains settle nothing.
        let odd: Vec<String> = ["set", "del"].map(String::from).to_vec();
        assert!(matches!(settle(&replay, &odd, 1), Err(Unsettled::NoneFits)));
    }

    #[test]
    fn redlock_s_script_in_the_expiry_millisecond_settles_to_one_account() {
        // node-redlock's acquire script: EXISTS, then a plain SET PX. B's
        // script ran in the millisecond A's key expired; whichever of its
        // commands saw the key gone, the account is the same one, so the
        // several fitting replays are not an ambiguity (CI, stop 37).
        let lines: Vec<String> = [
            r#"1000.000000 [0 127.0.0.1:1001] "EVALSHA" "abc" "1" "lock:doc" "a" "1000""#,
            r#"1000.000040 [0 lua] "exists" "lock:doc""#,
            r#"1000.000050 [0 lua] "set" "lock:doc" "a" "PX" "1000""#,
            r#"1001.000300 [0 127.0.0.1:1002] "EVALSHA" "abc" "1" "lock:doc" "b" "1000""#,
            r#"1001.000340 [0 lua] "exists" "lock:doc""#,
            r#"1001.000350 [0 lua] "set" "lock:doc" "b" "PX" "1000""#,
            r#"1001.100000 [0 127.0.0.1:1002] "EVALSHA" "def" "1" "lock:doc" "b""#,
            r#"1001.100040 [0 lua] "get" "lock:doc""#,
            r#"1001.100050 [0 lua] "del" "lock:doc""#,
        ]
        .map(String::from)
        .to_vec();
        let clients = [
            ("127.0.0.1:1001".to_string(), 0),
            ("127.0.0.1:1002".to_string(), 1),
        ];
        let replay = Replay {
            choice: KeyChoice::Exact("lock:doc".into()),
            token_key: b"fence:doc",
            clients: &clients,
            lines: &lines,
            end_us: 1_002_000_000,
            replies: &BTreeMap::new(),
        };
        let mut plain = Ledger::new(b"lock:doc", b"fence:doc", 0);
        for (addr, w) in &clients {
            plain.register(addr.clone(), *w);
        }
        for l in &lines {
            plain.feed(&monitor::parse(l).unwrap());
        }
        assert_eq!(
            plain.borderline(),
            2,
            "the script's own line looks nothing up"
        );
        let actual: Vec<String> = ["set", "expire", "expired", "set", "expire", "del"]
            .map(String::from)
            .to_vec();
        let settled = settle(&replay, &actual, plain.borderline()).expect("one account fits");
        assert_eq!(settled.grants_of(1), &[2]);
        assert!(settled.facts().iter().any(|f| matches!(
            f,
            Fact::Expired {
                grant: 1,
                at_ms: 1_001_000
            }
        )));
    }

    #[test]
    fn a_change_the_replay_cannot_see_is_caught_by_the_keyspace_notifications() {
        let Some((_root, r)) = redis() else { return };
        let feed = Feed::start(
            &format!("127.0.0.1:{}", r.port),
            KeyChoice::Exact("lock:doc".into()),
            "fence:doc",
            true,
        )
        .unwrap();
        let mut a = r.connection().unwrap();
        // RENAME names the lock key only as its second key: the replay,
        // which reads a command it does not know by its first, misses it.
        let _: () = redis::cmd("SET")
            .arg("other")
            .arg("x")
            .query(&mut a)
            .unwrap();
        let _: () = redis::cmd("RENAME")
            .arg("other")
            .arg("lock:doc")
            .query(&mut a)
            .unwrap();
        let (ledger, _, broken) = feed.finish();
        assert!(ledger.facts().is_empty());
        let broken = broken.expect("the notifications disagree with the replay");
        assert!(broken.contains("rename_to"), "{broken}");
    }
}
