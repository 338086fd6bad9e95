//! The one helper kit of the integration tests: paths, the binary, loading
//! scenarios, and the machine-wide gate that keeps a live run (real
//! servers, real timeouts) from sharing the 2 cores with a test that
//! saturates them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fencesim::protocol::Role;
use fencesim::scenario::Scenario;
use fencesim::sim::RandomFaults;

const MS: u64 = 1_000_000;

/// What runs on the machine now. Live runs start their own servers on
/// their own ports and directories, so a few can share the machine (as
/// `fencesim live --jobs` does); a live test that judges every process on
/// the machine (its leftover checks look for any PostgreSQL backend it did
/// not start) runs alone; tests that keep every core busy for a long time
/// (the madsim build, the chaos and differential sweeps) never run beside a
/// live run, whose timings (leases, session timeouts) suffer on a loaded
/// machine. A waiting exclusive or heavy test holds new live runs back, so
/// neither waits for the whole live suite. This gate is one process's: the
/// test command's runner (`.cargo/runner.sh`) runs the tests with
/// real-time deadlines (the live ones among them) in one process and the
/// CPU-bound rest in another at nice 19, where a heavy test takes only the
/// CPU the live runs leave idle.
#[derive(Default)]
struct Machine {
    live: usize,
    exclusive: bool,
    heavy: usize,
    waiting_alone: usize,
    waiting_heavy: usize,
}

/// Live runs at once (each its own servers): they mostly wait.
/// `FENCESIM_TEST_LIVE_AT_ONCE` overrides it (to measure other widths).
fn live_at_once() -> usize {
    static AT_ONCE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *AT_ONCE.get_or_init(|| {
        std::env::var("FENCESIM_TEST_LIVE_AT_ONCE")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or(2)
    })
}

static MACHINE: std::sync::Mutex<Machine> = std::sync::Mutex::new(Machine {
    live: 0,
    exclusive: false,
    heavy: 0,
    waiting_alone: 0,
    waiting_heavy: 0,
});
static TURN: std::sync::Condvar = std::sync::Condvar::new();

/// A place on the machine, given back on drop: when it was asked for and
/// when it was given (for `FENCESIM_TEST_GATE_LOG`).
pub struct Gate(Place, std::time::Instant, std::time::Instant);

#[derive(Clone, Copy, PartialEq, Debug)]
enum Place {
    Live,
    Alone,
    Heavy,
}

fn machine() -> std::sync::MutexGuard<'static, Machine> {
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}

fn take(place: Place) -> Gate {
    let asked = std::time::Instant::now();
    let mut m = machine();
    match place {
        Place::Alone => m.waiting_alone += 1,
        Place::Heavy => m.waiting_heavy += 1,
        Place::Live => {}
    }
    loop {
        let free = match place {
            Place::Live => {
                !m.exclusive
                    && m.heavy == 0
                    && m.waiting_alone == 0
                    && m.waiting_heavy == 0
                    && m.live < live_at_once()
            }
            Place::Alone => !m.exclusive && m.heavy == 0 && m.live == 0,
            Place::Heavy => !m.exclusive && m.live == 0 && m.waiting_alone == 0,
        };
        if free {
            break;
        }
        m = TURN.wait(m).unwrap_or_else(|e| e.into_inner());
    }
    match place {
        Place::Live => m.live += 1,
        Place::Alone => {
            m.waiting_alone -= 1;
            m.exclusive = true;
        }
        Place::Heavy => {
            m.waiting_heavy -= 1;
            m.heavy += 1;
        }
    }
    Gate(place, asked, std::time::Instant::now())
}

/// With `FENCESIM_TEST_GATE_LOG=FILE`, one line a gated test appends when
/// it gives its place back: its name, place, seconds waited and held
/// (where the test run's minutes go; a test's own time, without the
/// wait, which libtest's times include).
fn log_gate(gate: &Gate) {
    let Some(path) = std::env::var_os("FENCESIM_TEST_GATE_LOG") else {
        return;
    };
    let line = format!(
        "{} {:?} waited {:.1} s held {:.1} s\n",
        std::thread::current().name().unwrap_or("?"),
        gate.0,
        (gate.2 - gate.1).as_secs_f64(),
        gate.2.elapsed().as_secs_f64()
    );
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    if let Ok(mut f) = file {
        use std::io::Write as _;
        let _ = f.write_all(line.as_bytes());
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        log_gate(self);
        let mut m = machine();
        match self.0 {
            Place::Live => m.live -= 1,
            Place::Alone => m.exclusive = false,
            Place::Heavy => m.heavy -= 1,
        }
        TURN.notify_all();
    }
}

/// A live run beside at most one other (each its own servers, ports and
/// directories), never beside a heavy test.
pub fn live_shared() -> Gate {
    take(Place::Live)
}

/// A live run alone on the machine: for a test whose checks judge every
/// process on the machine, or kill a process found by its command line.
pub fn live_exclusive() -> Gate {
    take(Place::Alone)
}

/// A test that saturates the cores: it may run beside other heavy tests,
/// never beside a live run.
pub fn heavy() -> Gate {
    take(Place::Heavy)
}

/// A live test cannot run here (a server, interpreter or library is
/// missing): one line straight to the process's stderr, which the test
/// harness does not capture, so the skip shows in the run's output beside
/// the summary; under `CI=true` (where `.ci/run` installs everything) a
/// skip is a failure.
pub fn skip(test: &str, why: &str) {
    use std::io::Write;
    let line = format!("!!! LIVE TEST SKIPPED: {test}: {why}");
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{line} (CI=true: every live suite must run)");
    }
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Whether the live mode's Redis and PostgreSQL binaries are here; if not,
/// the test is skipped ([`skip`]).
pub fn live_servers_present(test: &str) -> bool {
    match fencesim::live::servers::binaries_present() {
        Ok(()) => true,
        Err(e) => {
            skip(test, &format!("{e:#}"));
            false
        }
    }
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn scenario_path(rel: &str) -> PathBuf {
    root().join("scenarios").join(rel)
}

/// The `fencesim` binary built for this test profile: the one place the
/// integration tests name it.
pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_fencesim"))
}

/// The binary as a `Command`, run from the repository root without
/// backtraces: for runs that need more than [`fencesim`] (path arguments,
/// an environment, piped output, a child to signal). The child dies with
/// the test's thread (PR_SET_PDEATHSIG): a test binary killed mid-run
/// (a CI timeout, Ctrl-C) leaves no `fencesim search` or `live` behind,
/// and those take their servers with them.
pub fn fencesim_command() -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(bin());
    cmd.current_dir(root()).env("RUST_BACKTRACE", "0");
    // SAFETY: prctl is async-signal-safe; nothing else runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd
}

/// Runs the `fencesim` binary built for this test profile.
pub fn fencesim(args: &[&str]) -> Output {
    fencesim_command()
        .args(args)
        .output()
        .expect("fencesim binary runs")
}

/// Runs a prepared [`fencesim_command`]: its exit code (-1 if killed by a
/// signal) and its stdout followed by its stderr.
pub fn run_text(cmd: &mut Command) -> (i32, String) {
    let out = cmd.output().expect("fencesim binary runs");
    (
        out.status.code().unwrap_or(-1),
        stdout(&out) + &stderr(&out),
    )
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn load(path: &Path) -> fencesim::scenario::Scenario {
    fencesim::scenario::load(path).unwrap_or_else(|e| panic!("{e}"))
}

/// A bundled scenario under random pauses, crashes and partitions instead of
/// one scripted pause, with workers busy for the whole fault window.
pub fn with_random_faults(mut s: Scenario) -> Scenario {
    let workers: Vec<_> = s.options.workers().map(|(id, _)| id).collect();
    for node in &mut s.options.nodes {
        if let Role::Worker(w) = &mut node.role {
            w.ops = 20;
            w.work_ns = 500 * MS;
            w.think_ns = 200 * MS;
        }
    }
    s.options.max_time_ns = 120_000 * MS;
    s.options.faults.clear();
    s.options.random = RandomFaults {
        window_ns: 20_000 * MS,
        pause_probability: 0.5,
        pause_min_ns: 1_000 * MS,
        pause_max_ns: 15_000 * MS,
        pause_nodes: workers.clone(),
        crash_probability: 0.1,
        restart_min_ns: 500 * MS,
        restart_max_ns: 3_000 * MS,
        crash_nodes: workers,
        partition_probability: 0.2,
        partition_min_ns: 1_000 * MS,
        partition_max_ns: 12_000 * MS,
        failover_probability: 0.0,
        ..RandomFaults::default()
    };
    s
}

/// Reads a spawned fencesim's stdout until a line for which `until` holds,
/// waits `then`, sends it SIGINT (Ctrl-C), and returns every line it
/// printed and how it ended.
pub fn interrupt_after(
    child: &mut std::process::Child,
    until: impl Fn(&str) -> bool,
    then: std::time::Duration,
) -> (String, std::process::ExitStatus) {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("stdout piped");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("utf-8");
        let stop = until(&line);
        seen.push(line);
        if stop {
            break;
        }
    }
    std::thread::sleep(then);
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    seen.extend(lines.map_while(Result::ok));
    let status = child.wait().expect("fencesim ends");
    (seen.join("\n"), status)
}
