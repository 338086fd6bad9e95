//! The live mode against real servers: each unsafe live scenario finds its
//! violation in most trials, each safe one is clean in every trial, and
//! nothing the harness started or created outlives it — also when the
//! harness itself or one of its servers is killed mid-run.
//!
//! These tests need `redis-server` and PostgreSQL's `initdb`/`postgres`;
//! without them each prints one loud line saying what it skipped and why
//! (`.ci/run` installs the Debian packages so CI always runs them).

use crate::common::{live_exclusive, live_servers_present, live_shared};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn fencesim() -> Command {
    crate::common::fencesim_command()
}

/// Every process on the machine: (pid, ppid, uid, cmdline).
fn processes() -> Vec<(u32, u32, u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |name: &str| -> u32 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        out.push((pid, field("PPid:"), field("Uid:"), cmdline));
    }
    out
}

fn postgres_uid() -> u32 {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    passwd
        .lines()
        .find_map(|l| l.strip_prefix("postgres:"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|u| u.parse().ok())
        .unwrap_or(u32::MAX)
}

/// What the harness created: its temp dir and server pids, from its first line.
struct Started {
    root: PathBuf,
    pids: Vec<u32>,
}

fn parse_started(first_line: &str) -> Started {
    let pids = first_line
        .split("(pid ")
        .skip(1)
        .map(|s| s.split(')').next().unwrap().parse().unwrap())
        .collect();
    let root = PathBuf::from(first_line.rsplit(" in ").next().unwrap().trim());
    Started { root, pids }
}

/// Nothing left: no server pid alive, the directory gone, no process naming
/// the directory (servers, workers), and no PostgreSQL process that was not
/// descended from one that existed before the run (orphaned backends).
fn assert_nothing_left(started: &Started, postgres_before: &BTreeSet<u32>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let procs = processes();
        let alive: Vec<u32> = started
            .pids
            .iter()
            .copied()
            .filter(|p| Path::new(&format!("/proc/{p}")).exists())
            .collect();
        let root = started.root.display().to_string();
        let naming: Vec<String> = procs
            .iter()
            .filter(|p| p.3.contains(&root))
            .map(|p| format!("{} {}", p.0, p.3))
            .collect();
        let pg = postgres_uid();
        let by_pid: std::collections::BTreeMap<u32, (u32, u32)> =
            procs.iter().map(|p| (p.0, (p.1, p.2))).collect();
        let orphans: Vec<u32> = procs
            .iter()
            .filter(|p| p.2 == pg && !postgres_before.contains(&p.0))
            .filter(|p| {
                // Walk up while the parent is a postgres process; a new root is ours.
                let mut pid = p.0;
                while let Some(&(ppid, _)) = by_pid.get(&pid) {
                    if by_pid.get(&ppid).is_some_and(|&(_, uid)| uid == pg) {
                        pid = ppid;
                    } else {
                        break;
                    }
                }
                !postgres_before.contains(&pid)
            })
            .map(|p| p.0)
            .collect();
        let dir_left = started.root.exists();
        if alive.is_empty() && naming.is_empty() && orphans.is_empty() && !dir_left {
            return;
        }
        if Instant::now() > deadline {
            panic!("left behind: server pids {alive:?}, processes {naming:?}, postgres orphans {orphans:?}, dir {dir_left}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn postgres_pids() -> BTreeSet<u32> {
    let pg = postgres_uid();
    processes()
        .into_iter()
        .filter(|p| p.2 == pg)
        .map(|p| p.0)
        .collect()
}

/// Per scenario name: (trials, trials per violation kind, trials with a fence rejection).
#[derive(Default, Debug)]
struct Seen {
    trials: u32,
    kinds: std::collections::BTreeMap<String, u32>,
    clean: u32,
    rejected: u32,
    histories: Vec<PathBuf>,
}

/// `fencesim live` on `paths`, `jobs` trials at a time (each job on its
/// own servers, their lines in the run's order): what each scenario saw,
/// what each job started, and the output.
fn run_live(
    paths: &[&str],
    trials: u32,
    jobs: usize,
    out: &Path,
) -> (
    std::collections::BTreeMap<String, Seen>,
    Vec<Started>,
    String,
) {
    let o = fencesim()
        .arg("live")
        .args(paths)
        .args([
            "--trials",
            &trials.to_string(),
            "--jobs",
            &jobs.to_string(),
            "--out",
        ])
        .arg(out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "fencesim live failed ({}):\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    // One servers line per job ("job j/n: fencesim … live: …" with more than one).
    let started: Vec<Started> = stdout
        .lines()
        .filter(|l| l.contains(" live: ") && l.contains("(pid "))
        .map(parse_started)
        .collect();
    assert_eq!(started.len(), jobs, "a servers line per job:\n{stdout}");
    let mut seen = std::collections::BTreeMap::<String, Seen>::new();
    let mut current = String::new();
    for line in stdout.lines() {
        if line.starts_with("live-") {
            current = line.split_whitespace().next().unwrap().to_string();
        } else if let Some(rest) = line.trim_start().strip_prefix("trial ") {
            let parts: Vec<&str> = rest.split(" — ").collect();
            let s = seen.entry(current.clone()).or_default();
            s.trials += 1;
            if parts[1] == "clean" {
                s.clean += 1;
            } else {
                for k in parts[1].split(", ") {
                    *s.kinds.entry(k.to_string()).or_default() += 1;
                }
            }
            let rejected: u64 = parts[2]
                .trim_start_matches("fence_rejected ")
                .parse()
                .unwrap();
            s.rejected += (rejected > 0) as u32;
            s.histories.push(PathBuf::from(parts[3]));
            assert!(parts[4].ends_with(" ms"), "{line}");
        }
    }
    (seen, started, stdout)
}

const TRIALS: u32 = 6;

#[test]
fn the_article_scenarios_on_real_servers_find_what_the_simulator_finds_and_leave_nothing_behind() {
    if !live_servers_present("the article scenarios on real servers") {
        return;
    }
    let _serial = live_exclusive();
    let out = tempfile::tempdir().unwrap();
    let before = postgres_pids();
    // The Redis/PostgreSQL scenarios: etcd and ZooKeeper have their own
    // files (tests/it/live/etcd.rs, tests/it/live/zk.rs) and their clusters.
    let files: Vec<String> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("live"))
        .expect("live/ is readable")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|f| f.ends_with(".toml") && !f.starts_with("etcd-") && !f.starts_with("zk-"))
        .map(|f| format!("live/{f}"))
        .collect();
    assert!(files.len() >= 12, "{files:?}");
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    // Two jobs, each on its own servers (`live --jobs`, tests/it/live/jobs.rs):
    // the run takes about half the time and the verdicts are the files' own.
    let (seen, started, stdout) = run_live(&args, TRIALS, 2, out.path());
    let get = |name: &str| {
        seen.get(name)
            .unwrap_or_else(|| panic!("{name} not run:\n{stdout}"))
    };

    // Unsafe: the violation in most trials (measured: every trial).
    let plain = get("live-gc-pause-plain-update");
    assert_eq!(plain.trials, TRIALS);
    for kind in ["stale_write", "lost_update"] {
        let found = plain.kinds.get(kind).copied().unwrap_or(0);
        assert!(
            2 * found > TRIALS,
            "plain UPDATE: {kind} in {found}/{TRIALS}\n{stdout}"
        );
    }
    let check_then = get("live-check-then-update-pause");
    let found = check_then.kinds.get("stale_write").copied().unwrap_or(0);
    assert!(
        2 * found > TRIALS,
        "check-then-update: stale_write in {found}/{TRIALS}\n{stdout}"
    );

    let delayed = get("live-delayed-packet-plain-update");
    let found = delayed.kinds.get("stale_write").copied().unwrap_or(0);
    assert!(
        2 * found > TRIALS,
        "delayed packet, plain UPDATE: stale_write in {found}/{TRIALS}\n{stdout}"
    );

    let failover = get("live-incr-beside-lease-failover");
    for kind in ["token_order", "stale_write"] {
        let found = failover.kinds.get(kind).copied().unwrap_or(0);
        assert!(
            2 * found > TRIALS,
            "INCR beside the lease + failover: {kind} in {found}/{TRIALS}\n{stdout}"
        );
    }

    // Safe: clean in every trial, and the hazard was put to the test
    // (rejections) in most: a loaded machine can stretch a real pause's
    // timing so that one trial's late write never becomes stale. Clean is
    // required in every trial; that is the safety claim.
    let delayed_fenced = get("live-delayed-packet-fenced-update");
    assert_eq!(
        delayed_fenced.clean, TRIALS,
        "delayed packet, fenced\n{stdout}"
    );
    assert!(
        2 * delayed_fenced.rejected > TRIALS,
        "delayed packet, fenced: hazard reached in too few trials\n{stdout}"
    );
    let fenced = get("live-gc-pause-fenced-update");
    assert_eq!(fenced.clean, TRIALS, "fenced UPDATE\n{stdout}");
    assert!(
        2 * fenced.rejected > TRIALS,
        "fenced UPDATE: hazard reached in too few trials\n{stdout}"
    );
    let one_db = get("live-one-database-transaction");
    assert_eq!(one_db.clean, TRIALS, "one-database transaction\n{stdout}");

    // Network faults from the proxy: a dropped and a cut UPDATE, retried by
    // the worker's own machine after its request timeout, land after the lease.
    for name in [
        "live-dropped-write-plain-update",
        "live-cut-connection-plain-update",
    ] {
        let found = get(name).kinds.get("stale_write").copied().unwrap_or(0);
        assert!(
            2 * found > TRIALS,
            "{name}: stale_write in {found}/{TRIALS}\n{stdout}"
        );
    }
    let dropped_fenced = get("live-dropped-write-fenced-update");
    assert_eq!(
        dropped_fenced.clean, TRIALS,
        "dropped write, fenced\n{stdout}"
    );
    assert!(
        2 * dropped_fenced.rejected > TRIALS,
        "dropped write, fenced: hazard reached in too few trials\n{stdout}"
    );

    // A Redis without persistence, killed and restarted, forgets the lock
    // and the counter: a second token 1 and a lost update.
    let restart = get("live-redis-restart-loses-lock");
    for kind in ["token_order", "lost_update"] {
        let found = restart.kinds.get(kind).copied().unwrap_or(0);
        assert!(
            2 * found > TRIALS,
            "Redis restart: {kind} in {found}/{TRIALS}\n{stdout}"
        );
    }
    let restart_history = std::fs::read_to_string(&restart.histories[0]).unwrap();
    for record in [
        r#""node":"coord/0","kind":"crash""#,
        r#""node":"coord/0","kind":"restart""#,
    ] {
        assert!(
            restart_history.contains(record),
            "{record} missing:\n{restart_history}"
        );
    }

    // A worker SIGKILLed while it holds the lock and restarted: clean, the
    // crash and the restart are in the history, and the restarted process
    // ran its second op under a new op id (its machine's persisted record).
    let crash = get("live-worker-crash-restart");
    assert_eq!(crash.clean, TRIALS, "worker crash\n{stdout}");
    let crash_history = std::fs::read_to_string(&crash.histories[0]).unwrap();
    for record in [
        r#""node":"worker/A","kind":"crash""#,
        r#""node":"worker/A","kind":"restart""#,
        r#""node":"resource/0","kind":"write_accepted","op_id":1002"#,
    ] {
        assert!(
            crash_history.contains(record),
            "{record} missing:\n{crash_history}"
        );
    }
    assert!(
        !crash_history.contains(r#""kind":"write_sent","op_id":1001"#),
        "the crashed op never wrote:\n{crash_history}"
    );

    // The harness knows when a PX TTL ran out: A's lease expired while it was paused.
    let paused_history = std::fs::read_to_string(&plain.histories[0]).unwrap();
    assert!(
        paused_history.contains(r#""node":"coord/0","kind":"lease_expired","grant_id":1"#),
        "{paused_history}"
    );

    // The written histories are the documented schema: check-history agrees.
    let stale = fencesim()
        .arg("check-history")
        .arg(&plain.histories[0])
        .output()
        .unwrap();
    assert_eq!(
        stale.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&stale.stdout)
    );
    assert!(String::from_utf8_lossy(&stale.stdout).contains("stale_write"));
    let clean = fencesim()
        .arg("check-history")
        .arg(&fenced.histories[0])
        .output()
        .unwrap();
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );

    // The table sets each live result beside its simulated twin.
    assert!(stdout.contains("live vs simulated"), "{stdout}");
    assert!(
        stdout.contains("/200"),
        "the twin's seeds are shown:\n{stdout}"
    );
    for job in &started {
        assert_nothing_left(job, &before);
    }
}

/// Starts `fencesim live` with many trials and returns it once its first trial printed.
fn start_long_run(
    out: &Path,
) -> (
    std::process::Child,
    Started,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
) {
    start_run(out, 500)
}

/// As [`start_long_run`], with `trials` trials.
fn start_run(
    out: &Path,
    trials: u32,
) -> (
    std::process::Child,
    Started,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
) {
    let mut child = fencesim()
        .args(["live", "live/gc-pause-plain-update.toml", "--trials"])
        .arg(trials.to_string())
        .args(["--jobs", "1", "--out"])
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = parse_started(&lines.next().unwrap().unwrap());
    for line in lines.by_ref() {
        if line.unwrap().contains("trial 2/") {
            break;
        }
    }
    (child, started, lines)
}

#[test]
fn a_killed_harness_takes_its_servers_and_workers_with_it_and_the_next_run_sweeps_its_directory() {
    if !live_servers_present("a killed harness leaves nothing") {
        return;
    }
    let _serial = live_exclusive();
    let out = tempfile::tempdir().unwrap();
    let before = postgres_pids();
    let (mut child, started, _lines) = start_long_run(out.path());
    assert!(started.root.exists());
    child.kill().unwrap(); // SIGKILL: no Drop runs; parent-death signals must do it.
    child.wait().unwrap();
    // The directory is left by a SIGKILLed harness; the next start sweeps it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while started
        .pids
        .iter()
        .any(|p| Path::new(&format!("/proc/{p}")).exists())
    {
        assert!(Instant::now() < deadline, "servers outlived the harness");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_, second, _) = run_live(&["live/one-database-transaction.toml"], 1, 1, out.path());
    assert_nothing_left(&started, &before);
    assert_nothing_left(&second[0], &before);
}

#[test]
fn a_killed_server_ends_the_run_with_an_error_and_nothing_left_behind() {
    if !live_servers_present("a killed server leaves nothing") {
        return;
    }
    let _serial = live_exclusive();
    let out = tempfile::tempdir().unwrap();
    let before = postgres_pids();
    let (mut child, started, lines) = start_long_run(out.path());
    // SIGKILL the redis-server (first pid printed) under a running harness.
    assert_eq!(started.pids.len(), 3, "redis, replica and postgres pids");
    unsafe { libc::kill(started.pids[0] as i32, libc::SIGKILL) };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the run went on without its Redis: {rest:?}"
    );
    assert_nothing_left(&started, &before);
}

#[test]
fn an_unsupported_backend_is_an_error_naming_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    let src = std::fs::read_to_string("live/gc-pause-plain-update.toml").unwrap();
    let src = src.replace("lock = \"redis-set-nx-del\"", "lock = \"zookeeper\"");
    let src = src.replace(
        "../scenarios/",
        &format!("{}/scenarios/", env!("CARGO_MANIFEST_DIR")),
    );
    std::fs::write(&file, &src).unwrap();
    let line = src.lines().position(|l| l.starts_with("lock =")).unwrap() + 1;
    let o = fencesim().arg("live").arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("bad.toml:{line}:8")), "{err}");
    assert!(err.contains("unsupported lock \"zookeeper\""), "{err}");
    assert!(err.contains("redis-set-nx-del"), "{err}");
}

#[test]
fn a_killed_worker_is_retried_once_then_not_judged_and_nothing_is_left_behind() {
    if !live_servers_present("a killed worker leaves nothing") {
        return;
    }
    let _serial = live_exclusive();
    let out = tempfile::tempdir().unwrap();
    let before = postgres_pids();
    // Trials 1 and 2 run; every worker of trial 3 (its first run and the
    // one retry a failed trial gets) is killed from outside.
    let (mut child, started, lines) = start_run(out.path(), 3);
    let root = started.root.display().to_string();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let killer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut killed = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for p in processes() {
                    if p.3.contains("live-worker") && p.3.contains(&root) {
                        unsafe { libc::kill(p.0 as i32, libc::SIGKILL) };
                        killed += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            killed
        })
    };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let killed = killer.join().unwrap();
    assert!(
        killed >= 2,
        "a worker of each run of trial 3 is killed: {killed}"
    );
    assert_eq!(
        status.code(),
        Some(3),
        "a trial whose worker died twice is not judged: {rest:?}"
    );
    assert_nothing_left(&started, &before);
}

#[test]
fn a_crash_with_both_after_and_at_ms_is_an_error_naming_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    let src = std::fs::read_to_string("live/worker-crash-restart.toml").unwrap();
    let src = src.replace("restart_after_ms = 30", "restart_after_ms = 30\nat_ms = 5");
    let src = src.replace(
        "twins/",
        &format!("{}/live/twins/", env!("CARGO_MANIFEST_DIR")),
    );
    std::fs::write(&file, &src).unwrap();
    let line = src.lines().position(|l| l == "kind = \"crash\"").unwrap() + 1;
    let o = fencesim().arg("live").arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("bad.toml:{line}:8")), "{err}");
    assert!(err.contains("`after` or `at_ms`, not both"), "{err}");
}

/// Keys, schemas and tables of a PostgreSQL/Redis pair as a user would have them.
fn user_state(redis_url: &str, pg_url: &str) -> (Vec<String>, Vec<String>) {
    let mut r = redis::Client::open(redis_url)
        .unwrap()
        .get_connection()
        .unwrap();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut r).unwrap();
    keys.sort();
    let mut pg = postgres::Client::connect(pg_url, postgres::NoTls).unwrap();
    let tables = pg
        .query(
            "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect::<Vec<String>>();
    let schemas = pg
        .query(
            "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' AND nspname <> 'information_schema' ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get::<_, String>(0))
        .collect::<Vec<String>>();
    (keys, tables.into_iter().chain(schemas).collect())
}

#[test]
fn a_users_servers_given_as_urls_keep_nothing_of_the_run_and_server_faults_are_refused() {
    if !live_servers_present("a user's servers given as URLs") {
        return;
    }
    let _serial = live_shared();
    use fencesim::live::servers::{Postgres, Redis, TempRoot};
    // Stand-ins for the user's servers (never the system ones on 6379/5432).
    let root = TempRoot::new().unwrap();
    let redis = Redis::start(&root.path.join("redis"), Duration::from_secs(15)).unwrap();
    let (pg, _) = Postgres::start(&root.path.join("pg"), Duration::from_secs(15)).unwrap();
    let redis_url = redis.url();
    let pg_url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
        pg.port
    );
    {
        let mut r = redis.connection().unwrap();
        redis::cmd("SET")
            .arg("users:own")
            .arg("keep")
            .query::<()>(&mut r)
            .unwrap();
        let mut c = postgres::Client::connect(&pg_url, postgres::NoTls).unwrap();
        c.batch_execute("CREATE TABLE public.users_own (id int)")
            .unwrap();
    }
    let before = user_state(&redis_url, &pg_url);
    let out = tempfile::tempdir().unwrap();
    let o = fencesim()
        .args([
            "live",
            "live/gc-pause-fenced-update.toml",
            "live/delayed-packet-plain-update.toml",
            "live/worker-crash-restart.toml",
            "--trials",
            "2",
            "--jobs",
            "1",
            "--redis",
            &redis_url,
            "--postgres",
            &pg_url,
            "--out",
        ])
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.lines().next().unwrap().contains("your Redis at"),
        "{stdout}"
    );
    assert!(
        stdout.contains("live-delayed-packet-plain-update     stale_write"),
        "{stdout}"
    );
    assert!(stdout.contains(" met"), "{stdout}");
    assert!(!stdout.contains("NOT MET"), "{stdout}");
    assert_eq!(
        user_state(&redis_url, &pg_url),
        before,
        "the run left something"
    );

    // Killing or promoting the user's Redis is refused, before anything is created.
    let o = fencesim()
        .args([
            "live",
            "live/redis-restart-loses-lock.toml",
            "--redis",
            &redis_url,
            "--postgres",
            &pg_url,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("redis-restart-loses-lock.toml"), "{err}");
    assert!(
        err.contains("only worker-side and network faults apply"),
        "{err}"
    );
    assert_eq!(user_state(&redis_url, &pg_url), before);
}
