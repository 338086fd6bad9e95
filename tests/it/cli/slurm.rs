//! The Slurm recipe run on a real Slurm: a one-node cluster started here
//! from Debian's packages (`munge`, `slurmctld`, `slurmd`, `slurm-client`;
//! `.ci/run` installs them) — its own munge key and socket, its own ports,
//! state and spool in a temporary directory, `proctrack/linuxproc` and
//! `task/none` (cgroup tracking does not work on this kind of machine), the
//! node line from `slurmd -C` — then `deploy/slurm/submit.sh` submits a
//! real job array and a merge job that depends on it, for a sweep and for a
//! campaign. The merged results must equal the unsharded run's byte for
//! byte (JSON with its digest, table, JUnit, HTML, exit code). Every daemon
//! is stopped at the end, and no process of the cluster may be left.
//!
//! Without the packages the test is skipped, and fails under `CI=true`.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::deploy::{assert_same_as_unsharded, base_path, bin_dir, machine, sh, show, unsharded};

/// A bundled scenario with violations its expectation tolerates and a
/// random-faults one: the merged verdict has something to carry.
const SCENARIOS: &str =
    "scenarios/article/gc-pause-stale-write.toml scenarios/random/random-faults-fenced-cas.toml";
const SEEDS: &str = "240";
const SHARDS: &str = "4";
/// How long a submitted array and its merge may take.
const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// Two ports nobody listens on now.
fn free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

fn output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A one-node Slurm cluster of this test's own; stopped on drop.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    /// munged, slurmctld, slurmd, in start order, each in the foreground.
    daemons: Vec<Child>,
}

impl Cluster {
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn spawn(&mut self, program: &str, args: &[String]) {
        let log = std::fs::File::create(self.path(&format!("{program}.out"))).unwrap();
        let child = Command::new(program)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        self.daemons.push(child);
    }

    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Cluster {
            conf: dir.path().join("slurm.conf"),
            dir,
            daemons: Vec::new(),
        };
        let d = c.dir.path().display().to_string();
        for sub in ["state", "spool"] {
            std::fs::create_dir(c.path(sub)).unwrap();
        }
        output(
            "mungekey",
            &["--create", &format!("--keyfile={d}/munge.key")],
        );
        c.spawn(
            "munged",
            &[
                "--foreground".into(),
                "--force".into(),
                format!("--key-file={d}/munge.key"),
                format!("--socket={d}/munge.sock"),
                format!("--pid-file={d}/munged.pid"),
                format!("--log-file={d}/munged.log"),
                format!("--seed-file={d}/munged.seed"),
            ],
        );
        let host = output("hostname", &["-s"]).trim().to_string();
        let node = output("slurmd", &["-C"])
            .lines()
            .next()
            .expect("slurmd -C prints the node line")
            .to_string();
        let (ctld_port, slurmd_port) = free_ports();
        let conf = format!(
            "ClusterName=fencesimtest\nSlurmctldHost={host}\nSlurmctldPort={ctld_port}\nSlurmdPort={slurmd_port}\n\
             SlurmUser=root\nAuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={d}/munge.sock\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\nReturnToService=2\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n\
             SchedulerParameters=batch_sched_delay=0\n\
             {node} State=UNKNOWN\nPartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
        );
        std::fs::write(&c.conf, conf).unwrap();
        let f = c.conf.display().to_string();
        // munged makes its socket before it serves: wait for it.
        c.wait_for("munged's socket", || c.path("munge.sock").exists());
        c.spawn("slurmctld", &["-D".into(), "-f".into(), f.clone()]);
        c.spawn("slurmd", &["-D".into(), "-f".into(), f]);
        c.wait_for("the node to be idle", || {
            c.client("sinfo", &["-h", "-o", "%T"])
                .is_some_and(|s| s.trim() == "idle")
        });
        c
    }

    /// A client command against this cluster: its stdout, if it succeeded.
    fn client(&self, program: &str, args: &[&str]) -> Option<String> {
        let out = Command::new(program)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn wait_for(&self, what: &str, ready: impl Fn() -> bool) {
        let start = Instant::now();
        while !ready() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "timed out waiting for {what}; logs in {}:\n{}",
                self.dir.path().display(),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn logs(&self) -> String {
        [
            "slurmctld.log",
            "slurmd.log",
            "munged.log",
            "slurmctld.out",
            "slurmd.out",
        ]
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(self.path(f)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            format!(
                "== {f}\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
    }

    /// Waits until the controller knows no job that has not ended.
    fn wait_idle(&self, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self
                .client("squeue", &["-h", "-o", "%i"])
                .is_some_and(|s| s.trim().is_empty())
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        false
    }

    /// Processes whose environment names this cluster's configuration:
    /// every job's (the tasks inherit the submitter's environment).
    fn job_processes(&self) -> Vec<String> {
        let needle = format!("SLURM_CONF={}", self.conf.display());
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if pid == std::process::id() {
                continue;
            }
            let env = std::fs::read(entry.path().join("environ")).unwrap_or_default();
            if env.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
                let cmd = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                found.push(format!("{pid}: {}", String::from_utf8_lossy(&cmd)));
            }
        }
        found
    }

    /// Cancels what is left, stops slurmd, slurmctld and munged (in that
    /// order) by their pids and reaps them; the processes left, if any.
    fn stop(&mut self) -> Vec<String> {
        if self.daemons.is_empty() {
            // Stopped already (the Drop after the test's own stop): with no
            // controller, every client call would wait out its timeouts
            // (measured: 55 s of a 63 s test).
            return self.job_processes();
        }
        if !self.wait_idle(Duration::from_millis(1)) {
            let _ = self.client("scancel", &["--user", "root"]);
            self.wait_idle(Duration::from_secs(20));
        }
        for mut d in self.daemons.drain(..).rev() {
            // SIGTERM: each daemon shuts down cleanly.
            unsafe {
                libc::kill(d.id() as i32, libc::SIGTERM);
            }
            let start = Instant::now();
            while d.try_wait().unwrap().is_none() {
                if start.elapsed() > Duration::from_secs(10) {
                    let _ = d.kill();
                    let _ = d.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        self.job_processes()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether the cluster's programs are installed; if not, the test is skipped.
fn slurm_present(test: &str) -> bool {
    let missing: Vec<&str> = [
        "munged",
        "mungekey",
        "slurmctld",
        "slurmd",
        "sbatch",
        "squeue",
        "sinfo",
    ]
    .into_iter()
    .filter(|p| {
        ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
            .iter()
            .all(|d| !Path::new(d).join(p).exists())
    })
    .collect();
    if missing.is_empty() {
        return true;
    }
    crate::common::skip(
        test,
        &format!(
            "{} not installed (apt-get install slurm-wlm munge)",
            missing.join(", ")
        ),
    );
    false
}

/// Runs `deploy/slurm/submit.sh` with `vars` from `cwd`, waits for its
/// merge job, and returns the results directory's exit-code file.
fn submit(cluster: &Cluster, cwd: &Path, vars: &[(&str, &str)]) -> Option<i32> {
    let mut env = BTreeMap::from([
        (
            "PATH".to_string(),
            format!("{}:{}:/usr/sbin", bin_dir().display(), base_path()),
        ),
        ("SLURM_CONF".to_string(), cluster.conf.display().to_string()),
        ("HOME".to_string(), cwd.display().to_string()),
    ]);
    for (k, v) in vars {
        env.insert(k.to_string(), v.to_string());
    }
    let script = crate::common::root().join("deploy/slurm/submit.sh");
    let out = sh(&["sh"], &script.display().to_string(), cwd, &env);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let merge_job = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(merge_job.parse::<u64>().is_ok(), "a job id: {}", show(&out));
    let results = PathBuf::from(&env["RESULTS_DIR"]);
    let start = Instant::now();
    while !cluster.wait_idle(Duration::from_millis(500)) || !results.join("exit-code").exists() {
        assert!(
            start.elapsed() < JOB_TIMEOUT,
            "the array and merge job {merge_job} did not finish: {}\n{}",
            cluster
                .client("squeue", &["-o", "%i %j %T %r"])
                .unwrap_or_default(),
            cluster.logs()
        );
    }
    let code = std::fs::read_to_string(results.join("exit-code")).unwrap();
    Some(code.trim().parse().expect("an exit code"))
}

#[test]
fn a_slurm_job_array_and_its_merge_give_the_unsharded_sweep_and_campaign() {
    let test = "a_slurm_job_array_and_its_merge_give_the_unsharded_sweep_and_campaign";
    if !slurm_present(test) {
        return;
    }
    let _heavy = crate::common::heavy();
    let root = tempfile::tempdir().unwrap();
    let mut cluster = Cluster::start();
    // The sweep: 4 array tasks over 240 seeds, then the merge.
    let submit_dir = machine(root.path(), "submit");
    let results = root.path().join("sweep-results");
    let results_var = results.display().to_string();
    let code = submit(
        &cluster,
        &submit_dir,
        &[
            ("SHARDS", SHARDS),
            ("SEEDS", SEEDS),
            ("SCENARIOS", SCENARIOS),
            ("RESULTS_DIR", &results_var),
        ],
    );
    for i in 0..4 {
        assert!(
            results.join(format!("shard-{i}.json")).exists(),
            "task {i} ran"
        );
    }
    let base = unsharded(root.path(), SCENARIOS, SEEDS);
    assert_same_as_unsharded(
        &base,
        code,
        &std::fs::read(results.join("report.json")).unwrap(),
        &results.join("junit.xml"),
        &results.join("html"),
    );
    let table = crate::common::fencesim_command()
        .current_dir(&submit_dir)
        .args(["run", "--seeds", SEEDS])
        .args(SCENARIOS.split(' '))
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    // `run` heads its table with the job count; the merge runs no jobs.
    let (_, table) = table.split_once('\n').unwrap();
    assert_eq!(
        std::fs::read_to_string(results.join("report.txt")).unwrap(),
        table,
        "the merged table"
    );
    // The campaign: 4 slices of 300 draws from campaign seed 7, merged.
    let results = root.path().join("campaign-results");
    let results_var = results.display().to_string();
    let scenarios = "scenarios/random/random-faults-ttl-lease-del.toml scenarios/random/random-faults-fenced-cas.toml";
    let code = submit(
        &cluster,
        &submit_dir,
        &[
            ("MODE", "campaign"),
            ("SHARDS", SHARDS),
            ("CAMPAIGN_SEED", "7"),
            ("BUDGET_SEEDS", "300"),
            ("SCENARIOS", scenarios),
            ("RESULTS_DIR", &results_var),
        ],
    );
    let whole = crate::common::fencesim_command()
        .current_dir(&submit_dir)
        .args(["campaign", "--campaign-seed", "7", "--budget-seeds", "300"])
        .args(["--format", "json"])
        .args(scenarios.split(' '))
        .output()
        .unwrap();
    assert_eq!(code, whole.status.code(), "the merged campaign's exit code");
    let merged = std::fs::read_to_string(results.join("report.json")).unwrap();
    assert_eq!(
        merged,
        String::from_utf8_lossy(&whole.stdout),
        "the merged campaign"
    );
    let c: serde_json::Value = serde_json::from_str(&merged).unwrap();
    assert_eq!(c["seeds"], 300);
    assert!(!c["failures"].as_array().unwrap().is_empty(), "{merged}");
    let left = cluster.stop();
    assert!(
        left.is_empty(),
        "processes of the cluster left running: {left:?}"
    );
}
