//! The harness's own servers: a `redis-server` and a PostgreSQL cluster on
//! free 127.0.0.1 ports, each in a temporary directory, never the system
//! instances.
//!
//! Why so careful: a live run pauses and kills processes on purpose, so a
//! leaked server or directory is the likeliest failure. Every child gets
//! PR_SET_PDEATHSIG (spawned from the main thread, which lives as long as
//! the harness), every server is stopped by a Drop guard, PostgreSQL is
//! stopped through its postmaster with SIGINT (fast shutdown; its backends
//! are their own sessions, a process-group kill would not reach them), and
//! directories left by a killed harness are swept at the next start.
//! PostgreSQL refuses to run as root, so as root it runs with the `postgres`
//! user's uid/gid directly (not through `runuser`, which would hide the
//! postmaster's pid).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::launch::{find_binary, free_port, log_tail};
use super::pg_template;
use super::process::{die_with_parent, kill};

/// Prefix of every temporary directory the harness creates under the system temp dir.
pub const TEMP_PREFIX: &str = "fencesim-live-";

/// Whether the live mode can run here with its own servers: every server binary present.
pub fn binaries_present() -> Result<()> {
    find_binary("redis-server", "redis-server")?;
    find_binary("initdb", "postgresql")?;
    find_binary("postgres", "postgresql")?;
    Ok(())
}

/// The `postgres` system user's (uid, gid) when we are root, else None (run as ourselves).
fn postgres_identity() -> Result<Option<(u32, u32)>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let passwd = fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
    for line in passwd.lines() {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() > 3 && f[0] == "postgres" {
            return Ok(Some((f[2].parse()?, f[3].parse()?)));
        }
    }
    bail!("running as root and there is no `postgres` user to run PostgreSQL as (PostgreSQL refuses root); install the Debian package `postgresql`, which creates it")
}

/// A directory under the system temp dir, removed on drop.
pub struct TempRoot {
    pub path: PathBuf,
}

impl TempRoot {
    pub fn new() -> Result<TempRoot> {
        sweep_stale();
        let base = std::env::temp_dir();
        for n in 0..1000u32 {
            let path = base.join(format!("{TEMP_PREFIX}{}-{n}", std::process::id()));
            if fs::create_dir(&path).is_ok() {
                fs::set_permissions(&path, fs::Permissions::from_mode(0o755))?;
                return Ok(TempRoot { path });
            }
        }
        bail!(
            "could not create a temporary directory under {}",
            base.display()
        )
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Removes the directories of harnesses that are gone (killed before their Drop ran).
pub fn sweep_stale() {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(TEMP_PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// Polls `ready` until it succeeds or `timeout` passes; on timeout the error
/// carries the server's log tail.
fn wait_ready(
    what: &str,
    log: &Path,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<()> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    bail!(
        "{what} did not accept connections within {} ms; last lines of {}:\n{}",
        timeout.as_millis(),
        log.display(),
        log_tail(log, 20)
    )
}

/// Our own `redis-server`; restartable on the same port (a killed primary).
pub struct Redis {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Redis {
    pub fn start(dir: &Path, timeout: Duration) -> Result<Redis> {
        fs::create_dir_all(dir)?;
        let mut r = Redis {
            port: free_port()?,
            dir: dir.to_path_buf(),
            child: None,
        };
        r.spawn(timeout)?;
        Ok(r)
    }

    fn spawn(&mut self, timeout: Duration) -> Result<()> {
        let bin = find_binary("redis-server", "redis-server")?;
        let log = self.dir.join("redis.log");
        let mut cmd = Command::new(&bin);
        cmd.args([
            "--port",
            &self.port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        // A replica's full sync starts at once (the default waits 5 s for more replicas).
        .args(["--repl-diskless-sync-delay", "0"])
        .arg("--dir")
        .arg(&self.dir)
        .arg("--logfile")
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        die_with_parent(&mut cmd);
        self.child = Some(
            cmd.spawn()
                .with_context(|| format!("starting {}", bin.display()))?,
        );
        let url = self.url();
        wait_ready("redis-server", &log, timeout, || {
            redis::Client::open(url.as_str())
                .and_then(|c| c.get_connection())
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                .is_ok()
        })
        .inspect_err(|_| self.stop())
    }

    /// Starts it again (same port, empty: no persistence) if it was killed.
    pub fn ensure_running(&mut self) -> Result<()> {
        if self.child.is_none() {
            self.spawn(Duration::from_secs(15))?;
        }
        Ok(())
    }

    pub fn connection(&self) -> Result<redis::Connection> {
        Ok(redis::Client::open(self.url().as_str())?.get_connection()?)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// SIGKILL (a crash: no persistence, so everything it held is gone) and reap.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill(child.id(), libc::SIGKILL);
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Our own PostgreSQL cluster: initdb once per harness run, one postmaster,
/// Unix socket in its own directory, TCP on 127.0.0.1 only.
pub struct Postgres {
    pub port: u16,
    pub socket_dir: PathBuf,
    child: Option<Child>,
}

/// `initdb`'s arguments after `-D DIR`: the template cache is keyed by them.
const INITDB_ARGS: &[&str] = &[
    "-U",
    "postgres",
    "--auth=trust",
    "--no-sync",
    "-E",
    "UTF8",
    "--no-instructions",
];

/// `initdb` into `data`, as the user PostgreSQL runs as; its log in `dir`.
fn run_initdb(initdb: &Path, data: &Path, dir: &Path, ident: Option<(u32, u32)>) -> Result<()> {
    let init_log = dir.join("initdb.log");
    let mut init = Command::new(initdb);
    init.arg("-D")
        .arg(data)
        .args(INITDB_ARGS)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&init_log)?)
        .stderr(fs::File::create(&init_log)?.try_clone()?);
    if let Some((uid, gid)) = ident {
        init.uid(uid).gid(gid);
    }
    die_with_parent(&mut init);
    let status = init
        .status()
        .with_context(|| format!("running {}", initdb.display()))?;
    if !status.success() {
        bail!(
            "initdb failed ({status}); last lines of {}:\n{}",
            init_log.display(),
            log_tail(&init_log, 20)
        );
    }
    Ok(())
}

impl Postgres {
    /// Starts the cluster; also returns how long initdb took (ms).
    pub fn start(dir: &Path, timeout: Duration) -> Result<(Postgres, u128)> {
        let initdb = find_binary("initdb", "postgresql")?;
        let postgres = find_binary("postgres", "postgresql")?;
        let ident = postgres_identity()?;
        fs::create_dir_all(dir)?;
        let data = dir.join("data");
        let socket_dir = dir.to_path_buf();
        if let Some((uid, gid)) = ident {
            std::os::unix::fs::chown(dir, Some(uid), Some(gid)).context("chown to postgres")?;
        }
        let as_postgres = |cmd: &mut Command| {
            if let Some((uid, gid)) = ident {
                cmd.uid(uid).gid(gid);
            }
        };
        let t = Instant::now();
        match pg_template::find(&initdb, INITDB_ARGS) {
            Some(template) => pg_template::copy_into(&template, &data, ident)?,
            None => {
                run_initdb(&initdb, &data, dir, ident)?;
                pg_template::publish(&initdb, INITDB_ARGS, &data);
            }
        }
        let initdb_ms = t.elapsed().as_millis();
        let port = free_port()?;
        let log = dir.join("postgres.log");
        let mut cmd = Command::new(&postgres);
        cmd.arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string()])
            .arg("-k")
            .arg(&socket_dir)
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ])
            .stdin(Stdio::null())
            .stdout(fs::File::create(&log)?)
            .stderr(fs::File::create(&log)?.try_clone()?);
        as_postgres(&mut cmd);
        die_with_parent(&mut cmd);
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", postgres.display()))?;
        let mut pg = Postgres {
            port,
            socket_dir,
            child: Some(child),
        };
        let conn = pg.conn_string();
        wait_ready("postgres", &log, timeout, || {
            postgres::Client::connect(&conn, postgres::NoTls).is_ok()
        })
        .inspect_err(|_| pg.stop())?;
        Ok((pg, initdb_ms))
    }

    /// Connection string over the Unix socket in our directory; TLS and GSS
    /// encryption off (the `postgres` crate speaks neither here).
    pub fn conn_string(&self) -> String {
        format!(
            "host={} port={} user=postgres dbname=postgres sslmode=disable",
            self.socket_dir.display(),
            self.port
        )
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Fast shutdown through the postmaster (SIGINT), SIGKILL after 10 s.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        kill(child.id(), libc::SIGINT);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        kill(child.id(), libc::SIGKILL);
        let _ = child.wait();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The schema every trial starts from: the document rows (1 to
/// [`super::DOCUMENTS_MAX`]; most scenarios write only row 1), and an audit
/// trigger that records, in the same transaction as every applied write,
/// the op id written, its token and a commit sequence. Row locks serialise
/// writes of one row, so per row the sequence is their commit order. Every
/// name is unqualified: it lands in the run's own schema (search_path).
pub const SCHEMA_SQL: &str = "
DROP TABLE IF EXISTS documents, audit CASCADE;
DROP SEQUENCE IF EXISTS commit_seq;
CREATE TABLE documents (id int PRIMARY KEY, body bigint NOT NULL, fencing_token bigint NOT NULL);
CREATE SEQUENCE commit_seq;
CREATE TABLE audit (commit_seq bigint NOT NULL, op_id bigint NOT NULL, token bigint NOT NULL);
CREATE OR REPLACE FUNCTION audit_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO audit VALUES (nextval('commit_seq'), NEW.body, NEW.fencing_token);
  RETURN NEW;
END $$;
CREATE TRIGGER audit_write AFTER UPDATE ON documents FOR EACH ROW EXECUTE FUNCTION audit_write();
INSERT INTO documents SELECT id, 0, 0 FROM generate_series(1, 4) AS id;
";

/// The `application_name` of a built-in worker's PostgreSQL connections in
/// `schema` (a run's job has its own schema), which is how the harness
/// finds them once the trial's workers are gone ([`Servers::end_worker_backends`]).
pub fn worker_backend_name(schema: &str) -> String {
    let mut name = format!("fencesim-worker {schema}");
    // PostgreSQL keeps 63 bytes of it; the harness must ask for what it keeps.
    while name.len() > 63 {
        name.pop();
    }
    name
}

/// Servers the user already runs (`--redis URL`, `--postgres URL`); each
/// one given replaces the harness's own instance of that server.
#[derive(Clone, Debug, Default)]
pub struct UserServers {
    pub redis: Option<String>,
    pub postgres: Option<String>,
}

/// How to reach PostgreSQL: directly, or through a proxy on 127.0.0.1.
#[derive(Clone, Debug)]
pub struct PgTarget {
    config: postgres::Config,
    /// `host:port` for a proxy to forward to (None: a Unix socket only).
    pub tcp: Option<String>,
}

/// A libpq key=value, quoted (spaces, quotes and backslashes survive).
fn kv(key: &str, value: &str) -> String {
    format!(
        "{key}='{}'",
        value.replace('\\', "\\\\").replace('\'', "\\'")
    )
}

impl PgTarget {
    fn parse(url: &str) -> Result<PgTarget> {
        let config: postgres::Config = url.parse().with_context(|| {
            format!("--postgres {url:?} is not a PostgreSQL URL or connection string")
        })?;
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let tcp = config.get_hosts().iter().find_map(|h| match h {
            postgres::config::Host::Tcp(host) => Some(format!("{host}:{port}")),
            _ => None,
        });
        Ok(PgTarget { config, tcp })
    }

    /// The connection string, with the host and port replaced by `via` when given.
    pub fn conn_string(&self, via: Option<u16>) -> String {
        let c = &self.config;
        let mut parts = Vec::new();
        match via {
            Some(port) => {
                parts.push(kv("host", "127.0.0.1"));
                parts.push(kv("port", &port.to_string()));
            }
            None => {
                for h in c.get_hosts() {
                    parts.push(kv(
                        "host",
                        &match h {
                            postgres::config::Host::Tcp(t) => t.clone(),
                            postgres::config::Host::Unix(p) => p.display().to_string(),
                        },
                    ));
                }
                if let Some(p) = c.get_ports().first() {
                    parts.push(kv("port", &p.to_string()));
                }
            }
        }
        if let Some(u) = c.get_user() {
            parts.push(kv("user", u));
        }
        if let Some(p) = c.get_password() {
            parts.push(kv("password", &String::from_utf8_lossy(p)));
        }
        if let Some(d) = c.get_dbname() {
            parts.push(kv("dbname", d));
        }
        // The `postgres` crate speaks neither TLS nor GSS encryption here.
        parts.push("sslmode=disable".into());
        parts.join(" ")
    }
}

/// Where a run's servers are and how long they took to start: what its
/// first line says.
pub struct ServersInfo {
    /// The harness's own Redis: (port, pid) of the primary and of the replica.
    pub own_redis: Option<((u16, u32), (u16, u32))>,
    /// A user's Redis (`--redis`) and the key prefix the run keeps to.
    pub redis_url: String,
    pub key_prefix: String,
    /// The harness's own PostgreSQL: (port, pid; 0 if unknown).
    pub own_postgres: Option<(u16, u32)>,
    /// The schema the run works in.
    pub schema: String,
    pub root: PathBuf,
    /// Start-up times: redis-server, initdb, postgres (ms).
    pub started_ms: [u128; 3],
}

/// Both servers of one harness run (its own, or the user's), and the
/// schema and key prefix the run owns on them.
pub struct Servers {
    /// Start-up times: redis-server, initdb, postgres (ms; 0 for a user's server).
    pub started_ms: [u128; 3],
    /// The harness's own Redis primary (None: the user's, at `redis_url`).
    pub redis: Option<Redis>,
    /// A second redis-server for failover scenarios (replica of `redis` per trial).
    pub replica: Option<Redis>,
    /// More independent Redis masters beside `redis`, for a Redlock over N
    /// (started on the first scenario that asks, kept for the run).
    pub more_masters: Vec<Redis>,
    pub postgres: Option<Postgres>,
    pub redis_url: String,
    pub pg: PgTarget,
    /// The PostgreSQL schema the run creates, works in and drops.
    pub schema: String,
    /// Every Redis key the run touches starts with it.
    pub key_prefix: String,
    /// The etcd or ZooKeeper cluster the current trial uses, started by
    /// the first scenario that needs it.
    pub cluster: Option<super::cluster::Cluster>,
    /// Clusters of the other kind, kept running while a trial uses
    /// `cluster`: scenarios of both kinds in turn (a `--jobs` run takes
    /// them longest first) start each kind once, not at every change.
    parked: Vec<super::cluster::Cluster>,
    // Dropped last: the servers stop before their directory goes.
    pub root: TempRoot,
}

impl Servers {
    /// Where they are and how long they took to start.
    pub fn info(&self) -> ServersInfo {
        let own_redis = match (&self.redis, &self.replica) {
            (Some(r), Some(rep)) => Some(((r.port, r.pid()), (rep.port, rep.pid()))),
            _ => None,
        };
        ServersInfo {
            own_redis,
            redis_url: self.redis_url.clone(),
            key_prefix: self.key_prefix.clone(),
            own_postgres: (self.postgres.as_ref()).map(|pg| (pg.port, pg.pid().unwrap_or(0))),
            schema: self.schema.clone(),
            root: self.root.path.clone(),
            started_ms: self.started_ms,
        }
    }

    pub fn start(user: &UserServers) -> Result<Servers> {
        if user.redis.is_none() {
            find_binary("redis-server", "redis-server")?;
        }
        if user.postgres.is_none() {
            find_binary("initdb", "postgresql")?;
            find_binary("postgres", "postgresql")?;
        }
        let root = TempRoot::new()?;
        let timeout = Duration::from_secs(15);
        let run_name = root
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let schema = run_name.replace('-', "_");
        let key_prefix = format!("{run_name}:");
        let t = Instant::now();
        let (redis, replica, redis_url) = match &user.redis {
            Some(url) => {
                redis::Client::open(url.as_str())
                    .and_then(|c| c.get_connection())
                    .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                    .with_context(|| format!("--redis {url}: no answer to PING"))?;
                (None, None, url.clone())
            }
            None => {
                let redis = Redis::start(&root.path.join("redis"), timeout)?;
                let replica = Redis::start(&root.path.join("replica"), timeout)?;
                let url = redis.url();
                (Some(redis), Some(replica), url)
            }
        };
        let redis_ms = if redis.is_some() {
            t.elapsed().as_millis()
        } else {
            0
        };
        let t = Instant::now();
        let (postgres, pg, initdb_ms) = match &user.postgres {
            Some(url) => (None, PgTarget::parse(url)?, 0),
            None => {
                let (pg, initdb_ms) = Postgres::start(&root.path.join("pg"), timeout)?;
                let target = PgTarget::parse(&pg.conn_string())?;
                let target = PgTarget {
                    tcp: Some(format!("127.0.0.1:{}", pg.port)),
                    ..target
                };
                (Some(pg), target, initdb_ms)
            }
        };
        let postgres_ms = if postgres.is_some() {
            t.elapsed().as_millis() - initdb_ms
        } else {
            0
        };
        let servers = Servers {
            started_ms: [redis_ms, initdb_ms, postgres_ms],
            redis,
            replica,
            more_masters: Vec::new(),
            postgres,
            redis_url,
            pg,
            schema,
            key_prefix,
            cluster: None,
            parked: Vec::new(),
            root,
        };
        let mut c = servers.pg_admin()?;
        c.batch_execute(&format!("CREATE SCHEMA \"{}\"", servers.schema))
            .with_context(|| format!("creating schema {}", servers.schema))?;
        Ok(servers)
    }

    /// The `n` independent Redis masters as `host:port`, the run's own
    /// primary first; the others are started on first need. Each is
    /// emptied (FLUSHDB: a new trial's lock starts free, whatever its key).
    pub fn ensure_masters(&mut self, n: u32) -> Result<Vec<String>> {
        let Some(primary) = self.redis.as_ref() else {
            bail!("redis_masters needs the harness's own Redis, not --redis");
        };
        let mut masters = vec![format!("127.0.0.1:{}", primary.port)];
        // Every key: a program names its own (its lock, a library's signal
        // list), and a trial must not meet the last one's.
        redis::cmd("FLUSHDB").query::<()>(&mut primary.connection()?)?;
        while self.more_masters.len() + 1 < n as usize {
            let dir = self
                .root
                .path
                .join(format!("redis-master-{}", self.more_masters.len() + 1));
            self.more_masters
                .push(Redis::start(&dir, Duration::from_secs(15))?);
        }
        for r in self.more_masters.iter().take(n as usize - 1) {
            redis::cmd("FLUSHDB").query::<()>(&mut r.connection()?)?;
            masters.push(format!("127.0.0.1:{}", r.port));
        }
        Ok(masters)
    }

    /// The cluster `kind`, started (once per run, in the run's directory) if
    /// it is not running yet, and repaired: every member up, connected and
    /// answering, and emptied for the trial (ZooKeeper: every znode but its
    /// own; etcd: the run's lock keys).
    pub fn ensure_cluster(
        &mut self,
        kind: super::cluster::ClusterKind,
    ) -> Result<&mut super::cluster::Cluster> {
        use super::cluster::{Cluster, ClusterKind};
        if self.cluster.as_ref().is_some_and(|c| c.kind != kind) {
            self.parked.extend(self.cluster.take());
        }
        if self.cluster.is_none() {
            if let Some(i) = self.parked.iter().position(|c| c.kind == kind) {
                self.cluster = Some(self.parked.swap_remove(i));
            }
        }
        let prefix = self.key_prefix.clone();
        let cluster = match self.cluster.take() {
            Some(mut c) => {
                c.repair()?;
                c
            }
            None => {
                let dir = self.cluster_dir(kind);
                // A port taken between its probe and the member's bind (by
                // another process on the machine) is a start-up failure, not
                // the scenario's: start again on fresh ports, twice at most.
                let mut attempt = 0;
                let c = loop {
                    attempt += 1;
                    match Cluster::start(kind, &dir) {
                        Ok(c) => break c,
                        Err(e)
                            if attempt < 3
                                && format!("{e:#}")
                                    .to_lowercase()
                                    .contains("address already in use") =>
                        {
                            eprintln!(
                                "fencesim live: {} cluster start {attempt} lost a port race, starting again: {e:#}",
                                kind.name()
                            );
                            let _ = std::fs::remove_dir_all(&dir);
                        }
                        Err(e) => return Err(e),
                    }
                };
                println!(
                    "started: {} cluster of {} members in {} ms (pids {:?})",
                    kind.name(),
                    super::cluster::MEMBERS,
                    c.started_ms,
                    c.pids()
                );
                c
            }
        };
        match kind {
            ClusterKind::Etcd => {
                super::etcd::gateway::Etcd::new(cluster.endpoints(), Duration::from_secs(5))?
                    .delete_prefix(&format!("{prefix}fencesim/"))?;
            }
            ClusterKind::Zk => super::zk::ensemble::reset(&cluster.endpoints())?,
        }
        Ok(self.cluster.insert(cluster))
    }

    /// Stops the cluster the last trial used and removes its data: a
    /// trial that could not run (no leader elected, a member that did not
    /// come back) is retried on a cluster started afresh, not on the one
    /// that failed it.
    pub fn discard_cluster(&mut self) {
        if let Some(c) = self.cluster.take() {
            let kind = c.kind;
            drop(c);
            let _ = std::fs::remove_dir_all(self.cluster_dir(kind));
        }
    }

    /// Where a `kind` cluster keeps its members' data.
    fn cluster_dir(&self, kind: super::cluster::ClusterKind) -> std::path::PathBuf {
        use super::cluster::ClusterKind;
        self.root.path.join(match kind {
            ClusterKind::Etcd => "etcd",
            ClusterKind::Zk => "zookeeper",
        })
    }

    /// Whether a trial needing a `kind` cluster has to start one (it is
    /// neither the current cluster nor parked).
    pub fn cluster_starts(&self, kind: super::cluster::ClusterKind) -> bool {
        self.cluster
            .iter()
            .chain(&self.parked)
            .all(|c| c.kind != kind)
    }

    /// A connection to PostgreSQL, without the run's search_path.
    fn pg_admin(&self) -> Result<postgres::Client> {
        postgres::Client::connect(&self.pg.conn_string(None), postgres::NoTls)
            .context("connecting to PostgreSQL")
    }

    /// A connection working in the run's schema.
    pub fn pg_client(&self) -> Result<postgres::Client> {
        let mut c = self.pg_admin()?;
        c.batch_execute(&format!("SET search_path TO \"{}\"", self.schema))?;
        Ok(c)
    }

    /// The Redis keys the run creates (each document's lock and token counter).
    pub fn redis_keys(&self) -> Vec<String> {
        (1..=super::DOCUMENTS_MAX)
            .flat_map(|doc| [super::lock_key(doc), super::token_key(doc)])
            .map(|key| format!("{}{key}", self.key_prefix))
            .collect()
    }

    /// Whether the harness owns the Redis it talks to (server faults allowed).
    pub fn own_redis(&self) -> bool {
        self.redis.is_some()
    }

    /// Ends every PostgreSQL backend the trial's built-in workers left,
    /// and waits until they are gone. A worker exits once its answer has
    /// come, but a retransmission of the same write may still be on its
    /// way or queued in a starved server: executed later, it would land
    /// in the *next* trial's fresh table (seen: a retried `UPDATE` of B's,
    /// sent on a second connection, committed after the reset and was
    /// read by the next trial's A). The trial ends with its workers; what
    /// they left in flight is cancelled here, before the audit is read.
    pub fn end_worker_backends(&self) -> Result<()> {
        let name = worker_backend_name(&self.schema);
        let mut c = self.pg_admin()?;
        let left = |c: &mut postgres::Client| -> Result<i64> {
            Ok(c.query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&name],
            )?
            .get(0))
        };
        let start = Instant::now();
        while left(&mut c)? > 0 {
            c.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                &[&name],
            )?;
            if start.elapsed() > Duration::from_secs(10) {
                bail!("PostgreSQL backends of the trial's workers ({name:?}) still there 10 s after they were ended");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// Fresh state for a trial: the run's keys gone, the schema's tables recreated.
    pub fn reset(&mut self) -> Result<()> {
        if let Some(r) = self.redis.as_mut() {
            r.ensure_running()?;
        }
        for r in self.redis.iter().chain(self.replica.iter()) {
            let mut con = r.connection()?;
            // A replica promoted in the last trial is a primary again until the next REPLICAOF.
            redis::cmd("REPLICAOF")
                .arg("NO")
                .arg("ONE")
                .query::<()>(&mut con)?;
        }
        self.delete_keys()?;
        if let Some(r) = self.replica.as_ref() {
            let mut con = r.connection()?;
            redis::cmd("DEL")
                .arg(&self.redis_keys()[..])
                .query::<()>(&mut con)?;
        }
        let mut pg = self.pg_client()?;
        pg.batch_execute(SCHEMA_SQL)
            .context("creating the live schema")?;
        Ok(())
    }

    fn delete_keys(&self) -> Result<()> {
        let mut con = redis::Client::open(self.redis_url.as_str())?.get_connection()?;
        redis::cmd("DEL")
            .arg(&self.redis_keys()[..])
            .query::<()>(&mut con)?;
        Ok(())
    }

    /// Removes what the run created on the servers: its keys and its schema.
    /// (The harness's own servers go with their directory anyway.)
    pub fn clean_up(&mut self) -> Result<()> {
        if let Some(r) = self.redis.as_mut() {
            r.ensure_running()?;
        }
        self.delete_keys()?;
        let mut c = self.pg_admin()?;
        c.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
            self.schema
        ))?;
        Ok(())
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        // Only a user's servers outlive the run; ours stop right after this.
        if self.redis.is_none() || self.postgres.is_none() {
            if let Err(e) = self.clean_up() {
                eprintln!("fencesim live: cleaning up the run's keys/schema: {e:#}");
            }
        }
    }
}
