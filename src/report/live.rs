//! Text for `fencesim live`: the servers line, each scenario's heading and
//! per-trial lines, and the live-vs-simulated table.
//!
//! `report/` sits below `live/` in the layer order, so it cannot name
//! live's types. Instead this file declares the few plain facts it draws
//! (numbers, names, paths; `check`'s kinds and `suite`'s aggregate, both
//! below it) and `cli/live.rs`, above both, fills them from the trials.
//! That keeps the rule without an exception: renderers in `report/`,
//! `live/` runs trials and hands over data.

use std::fmt::Write as _;
use std::path::Path;

use crate::check::{ViolationKind, VIOLATION_KINDS};
use crate::suite::Aggregate;

/// Where the servers of a run are, for the first line.
pub struct ServersLine<'a> {
    /// The harness's own Redis: (port, pid) of the primary and of the replica.
    pub own_redis: Option<((u16, u32), (u16, u32))>,
    /// A user's Redis (`--redis`) and the key prefix the run keeps to.
    pub redis_url: &'a str,
    pub key_prefix: &'a str,
    /// The harness's own PostgreSQL: (port, pid; 0 if unknown).
    pub own_postgres: Option<(u16, u32)>,
    /// A user's PostgreSQL (`--postgres`): the schema the run works in.
    pub schema: &'a str,
    pub root: &'a Path,
    /// Start-up times: redis-server, initdb, postgres.
    pub started_ms: [u128; 3],
}

/// The first two lines: which servers, where, and how long they took to start.
pub fn servers(s: &ServersLine) -> String {
    let redis = match s.own_redis {
        Some(((port, pid), (rep_port, rep_pid))) => format!(
            "redis-server on 127.0.0.1:{port} (pid {pid}), replica on 127.0.0.1:{rep_port} (pid {rep_pid})"
        ),
        None => format!("your Redis at {} (keys {}*)", s.redis_url, s.key_prefix),
    };
    let postgres = match s.own_postgres {
        Some((port, pid)) => format!("postgres on 127.0.0.1:{port} (pid {pid})"),
        None => format!("your PostgreSQL (schema {})", s.schema),
    };
    let [redis_ms, initdb_ms, postgres_ms] = s.started_ms;
    format!(
        "fencesim {} live: {redis}, {postgres}, in {}\n\
         started: redis-server {redis_ms} ms, initdb {initdb_ms} ms, postgres {postgres_ms} ms\n",
        env!("CARGO_PKG_VERSION"),
        s.root.display()
    )
}

/// A scenario's heading: its name, lock and write lanes, and its twin.
pub fn scenario_heading(name: &str, lock: &str, write: &str, twin: &Path) -> String {
    format!(
        "\n{name} ({lock} + {write} UPDATE; twin {})\n",
        twin.display()
    )
}

/// One trial's outcome, as its line shows it.
pub struct TrialLine<'a> {
    /// 1-based trial number and the scenario's trial count.
    pub trial: u32,
    pub trials: u32,
    /// The faults applied, in order, with when.
    pub faults: &'a [String],
    /// Violation kinds found (empty: clean).
    pub kinds: Vec<&'static str>,
    pub fence_rejected: u64,
    /// ZooKeeper lock lanes: the workers' watch notifications and the watch style.
    pub watches: Option<(u64, &'static str)>,
    /// Where the trial's history was written.
    pub history_file: &'a Path,
    pub trial_ms: u128,
}

/// `  trial k/n: faults — kinds — fence_rejected … — file — ms`.
pub fn trial_line(t: &TrialLine) -> String {
    let watch_note = t
        .watches
        .map(|(n, style)| format!(" — watch notifications {n} ({style})"))
        .unwrap_or_default();
    format!(
        "  trial {}/{}: {} — {} — fence_rejected {}{watch_note} — {} — {} ms\n",
        t.trial,
        t.trials,
        t.faults.join("; "),
        if t.kinds.is_empty() {
            "clean".to_string()
        } else {
            t.kinds.join(", ")
        },
        t.fence_rejected,
        t.history_file.display(),
        t.trial_ms
    )
}

/// One scenario's tallies over its trials.
#[derive(Clone)]
pub struct Tally {
    pub trials: u32,
    /// Trials that showed each kind.
    pub found: [u32; VIOLATION_KINDS],
    pub fence_rejected_trials: u32,
    pub min_fence_rejected: u64,
    pub max_fence_rejected: u64,
    pub clean: u32,
    /// ZooKeeper watch notifications over all trials (the workers' wake-ups).
    pub watch_notifications: u64,
    /// The fewest and the most watch notifications in one trial.
    pub min_watch_notifications: u64,
    pub max_watch_notifications: u64,
}

impl Tally {
    /// Nothing tallied yet for a scenario of `trials` trials.
    pub fn new(trials: u32) -> Tally {
        Tally {
            trials,
            found: [0; VIOLATION_KINDS],
            fence_rejected_trials: 0,
            min_fence_rejected: u64::MAX,
            max_fence_rejected: 0,
            clean: 0,
            watch_notifications: 0,
            min_watch_notifications: u64::MAX,
            max_watch_notifications: 0,
        }
    }
}

/// A scenario's row group in the live-vs-simulated table.
pub struct TwinRow<'a> {
    pub name: &'a str,
    pub live: &'a Tally,
    /// The simulated twin's sweep.
    pub sim: &'a Aggregate,
    /// The kinds the scenario expects to find.
    pub find: &'a [ViolationKind],
    pub met: bool,
    /// ZooKeeper lock lanes: the twin's watch notifications per seed.
    pub sim_watches: Option<f64>,
}

/// Trials (live) beside seeds (simulated) with each violation kind found
/// on either side or expected; for a scenario with none, the clean runs.
pub fn twin_table(rows: &[TwinRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nlive vs simulated (trials / seeds with the violation; for `none`, clean ones):"
    );
    let _ = writeln!(
        s,
        "  {:<36} {:<22} {:>9} {:>13}  expectation",
        "scenario", "violation", "live", "simulated"
    );
    for r in rows {
        let (name, t, sim) = (r.name, r.live, r.sim);
        let mut kinds: Vec<ViolationKind> = ViolationKind::ALL
            .into_iter()
            .filter(|k| {
                t.found[*k as usize] > 0 || sim.failing_seeds[*k as usize] > 0 || r.find.contains(k)
            })
            .collect();
        kinds.dedup();
        let verdict = if r.met { "met" } else { "NOT MET" };
        if kinds.is_empty() {
            // No kind found on either side: both columns count clean runs instead.
            let _ = writeln!(
                s,
                "  {name:<36} {:<22} {:>9} {:>13}  {verdict}",
                "none (clean runs)",
                format!("{}/{}", t.clean, t.trials),
                format!("{}/{}", sim.seeds, sim.seeds)
            );
        }
        for k in kinds {
            let (l, m) = (t.found[k as usize], sim.failing_seeds[k as usize]);
            let disagree = if (l > 0) != (m > 0) {
                "  (live and model disagree)"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "  {name:<36} {:<22} {:>9} {:>13}  {verdict}{disagree}",
                k.name(),
                format!("{l}/{}", t.trials),
                format!("{m}/{}", sim.seeds)
            );
        }
        if t.fence_rejected_trials > 0 {
            let _ = writeln!(
                s,
                "  {name:<36} {:<22} {:>9} {:>13}",
                "fence_rejected ≥ 1",
                format!("{}/{}", t.fence_rejected_trials, t.trials),
                format!("{} total", sim.fence_rejected_total)
            );
        }
        if let Some(sim_watches) = r.sim_watches {
            // Per trial / per seed: how many wake-ups the waiters had.
            let _ = writeln!(
                s,
                "  {name:<36} {:<22} {:>9} {:>13}",
                "watch_notified/trial",
                format!(
                    "{:.1}",
                    t.watch_notifications as f64 / t.trials.max(1) as f64
                ),
                format!("{sim_watches:.1}")
            );
        }
    }
    s
}

/// The trials of a run that could not be judged, one line each: scenario,
/// trial, why (their scenarios have no verdict: exit 3).
pub fn not_judged_list(trials: &[(&str, u32, &str)]) -> String {
    let mut s = String::new();
    if trials.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "\nnot judged ({} trial(s); their scenarios have no verdict):",
        trials.len()
    );
    for (name, k, why) in trials {
        // The first line: a server's log tail is in the retry's message above and in --json.
        let first = why.lines().next().unwrap_or("").trim_end_matches(':');
        let _ = writeln!(s, "  {name} trial {k}: {first}");
    }
    s
}

/// How one scenario fared over `fencesim live --repeat N`'s runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Steadiness {
    pub name: String,
    /// Runs whose verdict on it was "met".
    pub met: u32,
    /// Runs (1-based) whose verdict was "not met".
    pub not_met: Vec<u32>,
    /// Runs (1-based) in which a trial of it could not be judged.
    pub not_judged: Vec<u32>,
}

/// `--repeat N`'s table: per scenario how many of the runs met, which did
/// not and which could not be judged, then a summary line.
pub fn steadiness_table(rows: &[Steadiness], runs: u32, runs_all_met: u32) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\nsteadiness over {runs} run(s) (runs that met / runs):");
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    for r in rows {
        let mut notes = Vec::new();
        if !r.not_met.is_empty() {
            notes.push(format!("NOT MET in run {}", list(&r.not_met)));
        }
        if !r.not_judged.is_empty() {
            notes.push(format!("not judged in run {}", list(&r.not_judged)));
        }
        let seen = r.met as usize + r.not_met.len() + r.not_judged.len();
        let _ = writeln!(
            s,
            "  {:<40} {:>7}  {}",
            r.name,
            format!("{}/{seen}", r.met),
            notes.join("; ")
        );
    }
    let steady = rows
        .iter()
        .filter(|r| r.not_met.is_empty() && r.not_judged.is_empty())
        .count();
    let _ = writeln!(
        s,
        "steadiness: {runs_all_met} of {runs} run(s) met every expectation; {steady} of {} scenario(s) met in every run",
        rows.len()
    );
    s
}

#[cfg(test)]
mod steadiness_tests {
    use super::*;

    #[test]
    fn the_steadiness_table_names_the_runs_a_scenario_missed_and_counts_the_steady_ones() {
        let rows = [
            Steadiness {
                name: "live-a".into(),
                met: 3,
                ..Steadiness::default()
            },
            Steadiness {
                name: "live-b".into(),
                met: 1,
                not_met: vec![2],
                not_judged: vec![3],
            },
        ];
        let text = steadiness_table(&rows, 3, 1);
        assert!(text.contains("live-a") && text.contains("3/3"), "{text}");
        assert!(
            text.contains("1/3  NOT MET in run 2; not judged in run 3"),
            "{text}"
        );
        assert!(
            text.contains("steadiness: 1 of 3 run(s) met every expectation; 1 of 2 scenario(s) met in every run"),
            "{text}"
        );
    }
}
