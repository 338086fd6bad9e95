//! `fencesim live`: the live scenarios against the harness's own Redis and
//! PostgreSQL, N trials each, with a found/N table beside each simulated
//! twin's verdict; and the hidden `fencesim live-worker` that is one
//! worker. The run itself is [`crate::live::run`]'s; this file parses its
//! flags, prints what the run tells as it goes and its table, and writes
//! the reports asked for.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};

use super::flags::JobsFlag;
use super::{check_writable_dir, check_writable_file};
use super::{BadInput, EXIT_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK};
use crate::live::common::keys::KeyChoice;
use crate::live::phases::{PhaseSummary, TrialPhasesLine};
use crate::live::run::verdict::problems;
use crate::live::run::{Progress, RunConfig, RunResult, ScenarioRun};
use crate::live::scenario::{self, LiveScenario};
use crate::live::servers::{ServersInfo, UserServers};
use crate::live::LockKind;
use crate::report;

#[derive(clap::Args, Debug)]
pub struct LiveArgs {
    /// Live scenario files or directories (live/).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Trials per scenario (default: the file's `trials`).
    #[arg(long)]
    pub trials: Option<u32>,
    /// Where each trial's history (JSON lines) is written.
    #[arg(long, default_value = "target/live")]
    pub out: PathBuf,
    /// Run this program (`sh -c CMD`) as every worker instead of the built-in
    /// one: a user's own lock client, judged from what the proxies decode
    /// (README "Validate your own client"). Overrides a scenario's `worker_cmd`.
    #[arg(long, value_name = "CMD")]
    pub worker_cmd: Option<String>,
    /// The lock a --worker-cmd program uses — a Redis key, an etcd key or
    /// key prefix, a ZooKeeper znode: an exact name, a prefix ending in `*`
    /// or a glob (default: the scenario's `lock_key`, else found in the
    /// server's own account: the key created conditionally, or the parent of
    /// the ephemeral znodes, that passed from one worker to another).
    #[arg(long, value_name = "KEY")]
    pub lock_key: Option<String>,
    /// The Redis key a --worker-cmd program counts its tokens on (default:
    /// the scenario's `token_key`, else the first key a worker counts).
    #[arg(long, value_name = "KEY")]
    pub token_key: Option<String>,
    /// A trial that has not finished by then is ended: with --worker-cmd, reported as the program hanging (exit 3).
    /// A built-in worker's trial gets at least its scenario's longest fault plus 10 s.
    #[arg(long, value_name = "MS", default_value_t = 20_000)]
    pub timeout_ms: u64,
    /// Also write the last trial's history (JSON lines) here, for `check-history`.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Trials at a time, each job on its own Redis, PostgreSQL and
    /// etcd/ZooKeeper clusters (default 1: live trials are real timings);
    /// also the simulated twins' threads (default: all cores). The output's
    /// order and the verdict table do not depend on it.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Use this Redis (redis://host:port/db) instead of starting one: the run
    /// touches only keys under its own prefix and deletes them at the end;
    /// server faults (failover, crash of coord/0) are refused.
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// Use this PostgreSQL (postgres://user@host:port/db or key=value)
    /// instead of starting one: the run works in a schema it creates and
    /// drops at the end.
    #[arg(long, value_name = "URL")]
    pub postgres: Option<String>,
    /// Also write the run as JSON (schema `fencesim-live`, docs/live-running.md) to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write JUnit XML (one test case per scenario) to this file.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write a report directory: index.html (a real trial's SVG timeline), summary.md, results.json.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Run the whole suite N times and print, per scenario, in how many
    /// runs it met its expectation (a steadiness check; each run's
    /// histories in OUT/run-K/, the reports are the last run's). The exit
    /// code is the worst run's.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// After each trial line, where its time went (start, reset, spawn,
    /// run, fault, settle, tail, audit, check, other; ms), and per-phase totals
    /// after each scenario and at the end (docs/live-running.md).
    #[arg(short, long)]
    pub verbose: bool,
}

pub fn cmd_live(args: LiveArgs) -> Result<ExitCode> {
    let scenarios = load_scenarios(&args)?;
    // Output paths too: an unwritable --junit must not cost the servers and trials.
    check_outputs(&args)?;
    crate::live::install_interrupt_handler();
    let config = |out: PathBuf| -> Result<RunConfig> {
        Ok(RunConfig {
            trials: args.trials,
            out,
            history: args.history.clone(),
            worker_cmd: args.worker_cmd.clone(),
            timeout: Duration::from_millis(args.timeout_ms),
            // Live trials are real timings: one at a time unless asked.
            jobs: args.jobs.unwrap_or(1),
            twin_threads: JobsFlag { jobs: args.jobs }.resolve(),
            user: UserServers {
                redis: args.redis.clone(),
                postgres: args.postgres.clone(),
            },
            exe: std::env::current_exe()?,
        })
    };
    let mut steadiness: Vec<report::live::Steadiness> = (scenarios.iter())
        .map(|s| report::live::Steadiness {
            name: s.name.clone(),
            ..Default::default()
        })
        .collect();
    let (mut worst, mut runs, mut runs_all_met) = (EXIT_OK, 0, 0);
    for n in 1..=args.repeat {
        if args.repeat > 1 {
            println!("\n=== run {n}/{} ===", args.repeat);
        }
        // Each run's histories apart: a miss in run 1 is still there after run 2.
        let out = match args.repeat {
            1 => args.out.clone(),
            _ => args.out.join(format!("run-{n}")),
        };
        let code = one_run(&args, &scenarios, &config(out)?, (n, &mut steadiness))?;
        worst = worst_exit(worst, code);
        runs += 1;
        runs_all_met += u32::from(code == EXIT_OK);
        if code == EXIT_INTERRUPTED {
            break;
        }
    }
    if args.repeat > 1 {
        print!(
            "{}",
            report::live::steadiness_table(&steadiness, runs, runs_all_met)
        );
    }
    Ok(ExitCode::from(worst))
}

/// The worse of two runs' exit codes: met (0) < not met (1) < not judged
/// (3) < interrupted (130).
fn worst_exit(a: u8, b: u8) -> u8 {
    let rank = |c: u8| match c {
        EXIT_OK => 0,
        EXIT_FAILED => 1,
        EXIT_INTERNAL => 2,
        _ => 3,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// One run of the suite: its trials told as they go, its table, the
/// trials it could not judge, its reports; each scenario's outcome added
/// to `steadiness` as run `n`'s. Its exit code: interrupted, else a trial
/// not judged (3), else whether every expectation was met.
fn one_run(
    args: &LiveArgs,
    scenarios: &[LiveScenario],
    cfg: &RunConfig,
    (n, steadiness): (u32, &mut [report::live::Steadiness]),
) -> Result<u8> {
    let verbose = args.verbose;
    let result = crate::live::run::run(scenarios, cfg, &|p| print_progress(p, cfg, verbose))?;
    let rows: Vec<_> = result
        .runs
        .iter()
        .filter_map(|(_, _, row)| row.as_ref())
        .collect();
    let table: Vec<report::live::TwinRow> = rows
        .iter()
        .map(|r| report::live::TwinRow {
            name: &r.name,
            live: &r.live,
            sim: &r.sim.agg,
            find: &r.find,
            met: r.met,
            sim_watches: r.sim_watches,
        })
        .collect();
    print!("{}", report::live::twin_table(&table));
    let unjudged: Vec<(&str, u32, &str)> = (result.not_judged_trials().into_iter())
        .map(|(i, k, why)| (scenarios[i].name.as_str(), k, why))
        .collect();
    print!("{}", report::live::not_judged_list(&unjudged));
    if verbose {
        let what = format!("all {} scenario(s)", scenarios.len());
        let totals = &result.phases;
        print!(
            "{}",
            PhaseSummary {
                what: &what,
                totals
            }
        );
    }
    for (i, run, row) in &result.runs {
        let st = &mut steadiness[*i];
        match row {
            _ if run.interrupted => {}
            Some(r) if r.met => st.met += 1,
            Some(_) => st.not_met.push(n),
            None => st.not_judged.push(n),
        }
    }
    let code = match &result.stopped {
        Some(why) => {
            println!("{why}");
            EXIT_INTERRUPTED
        }
        None if result.not_judged() => EXIT_INTERNAL,
        None if rows.iter().all(|r| r.met) => EXIT_OK,
        None => EXIT_FAILED,
    };
    write_outputs(args, scenarios, &result, code)?;
    Ok(code)
}

/// What the run tells as it goes, printed: the servers, each scenario's
/// heading, its trial lines (and with `--verbose` where their time went),
/// a trial that could not be judged (on stderr).
fn print_progress(p: Progress, cfg: &RunConfig, verbose: bool) {
    match p {
        Progress::Servers { job, info } => match job {
            Some((j, n)) => print!("job {j}/{n}: {}", servers_line(info)),
            None => print!("{}", servers_line(info)),
        },
        Progress::Scenario(s) => print!(
            "{}",
            report::live::scenario_heading(&s.name, s.lock.name(), s.write.name(), &s.twin)
        ),
        Progress::Trial {
            s,
            k,
            result: r,
            file,
            trial_ms,
            phases,
        } => {
            let zk = s.lock == LockKind::ZkLock;
            // What the account found, once: the lock a program uses.
            for note in r.notes.iter().filter(|_| k == 1) {
                println!("  {note}");
            }
            // What happened to the account in this trial alone.
            for note in &r.trial_notes {
                println!("  trial {k}: {note}");
            }
            print!(
                "{}",
                report::live::trial_line(&report::live::TrialLine {
                    trial: k,
                    trials: cfg.trials_of(s),
                    faults: &r.faults,
                    kinds: r.report.kinds().map(|k| k.name()).collect(),
                    fence_rejected: r.report.info.fence_rejected_total,
                    watches: zk.then(|| (r.report.info.watch_notifications, s.zk_watch.name())),
                    history_file: file,
                    trial_ms,
                })
            );
            if verbose {
                print!("{}", TrialPhasesLine(phases));
            }
        }
        Progress::Retrying { s, k, why } => {
            eprintln!(
                "fencesim live: trial {k}/{} of {} could not run, retrying it once: {why}",
                cfg.trials_of(s),
                s.name
            );
        }
        Progress::NotJudged { s, k, why } => {
            eprintln!(
                "error: trial {k}/{} of {} cannot be judged: {why}",
                cfg.trials_of(s),
                s.name
            );
        }
        Progress::ScenarioDone { s, phases } if verbose => {
            let what = format!("scenario {}", s.name);
            print!(
                "{}",
                PhaseSummary {
                    what: &what,
                    totals: phases
                }
            );
        }
        Progress::ScenarioDone { .. } => {}
    }
}

/// Fails before any server starts if `--json`, `--junit` or `--report` cannot be written.
fn check_outputs(args: &LiveArgs) -> Result<(), BadInput> {
    for (flag, file) in [("--json", &args.json), ("--junit", &args.junit)] {
        if let Some(file) = file {
            check_writable_file(flag, file)?;
        }
    }
    if let Some(dir) = &args.report {
        check_writable_dir("--report", dir)?;
    }
    Ok(())
}

/// The simulated twin's sweep for the JSON report.
fn sim_json(
    s: &LiveScenario,
    sim: &crate::suite::ScenarioResult,
) -> report::live_reports::SimulatedJson {
    report::live_reports::SimulatedJson {
        scenario: s.twin.display().to_string(),
        seeds: sim.agg.seeds,
        seeds_with: report::live_reports::per_kind(|k| sim.agg.failing_seeds[k as usize]),
        fence_rejected_total: sim.agg.fence_rejected_total,
    }
}

/// A scenario's run as the JSON report carries it.
fn scenario_json(
    s: &LiveScenario,
    run: &ScenarioRun,
    sim: Option<report::live_reports::SimulatedJson>,
) -> report::live_reports::ScenarioJson {
    use report::live_reports as lr;
    let t = &run.tally;
    let problems = if run.interrupted {
        vec!["interrupted: no verdict".to_string()]
    } else if run.not_judged {
        vec!["a trial could not be judged: no verdict".to_string()]
    } else {
        problems(s, t)
    };
    lr::ScenarioJson {
        name: s.name.clone(),
        path: s.path.display().to_string(),
        lock: s.lock.name().to_string(),
        write: s.write.name().to_string(),
        twin: s.twin.display().to_string(),
        find: s.find.iter().map(|k| k.name().to_string()).collect(),
        trials: run.trials.clone(),
        live_trials_with: lr::per_kind(|k| t.found[k as usize] as u64),
        clean_trials: t.clean as u64,
        fence_rejected_trials: t.fence_rejected_trials as u64,
        simulated: sim,
        met: problems.is_empty(),
        problems,
        interrupted: run.interrupted,
    }
}

/// `--json`, `--junit` and `--report`, each when asked.
fn write_outputs(
    args: &LiveArgs,
    scenarios: &[LiveScenario],
    result: &RunResult,
    code: u8,
) -> Result<()> {
    use report::live_reports::{self as lr, Drawn};
    let json: Vec<lr::ScenarioJson> = (result.runs.iter())
        .map(|(i, run, row)| {
            let s = &scenarios[*i];
            scenario_json(s, run, row.as_ref().map(|r| sim_json(s, &r.sim)))
        })
        .collect();
    let json = lr::LiveJson::new(json, code);
    let put = |file: &std::path::Path, text: String| {
        std::fs::write(file, text).with_context(|| format!("writing {}", file.display()))
    };
    if let Some(file) = &args.json {
        put(file, lr::to_json(&json))?;
    }
    if let Some(file) = &args.junit {
        put(file, lr::junit(&json))?;
    }
    if let Some(dir) = &args.report {
        let drawn: Vec<Option<Drawn>> = (result.runs.iter())
            .map(|(_, run, _)| {
                run.drawn.as_ref().map(|(k, r, file)| Drawn {
                    trial: *k,
                    reason: if r.report.is_clean() {
                        "the last trial (none showed a violation)".to_string()
                    } else {
                        "the first trial with a violation".to_string()
                    },
                    history: &r.history,
                    report: &r.report,
                    history_file: file,
                })
            })
            .collect();
        report::write::write(dir, &lr::doc(&json, &drawn))?;
        println!("report written to {}", dir.join("index.html").display());
    }
    Ok(())
}

/// The scenarios, refused before any server starts when they ask for what
/// the run cannot give ([`crate::live::run::refusal`]).
fn load_scenarios(args: &LiveArgs) -> Result<Vec<LiveScenario>> {
    let files = crate::scenario::collect(&args.paths).map_err(|e| BadInput(e.to_string()))?;
    let mut scenarios = files
        .iter()
        .map(|p| scenario::load(p).map_err(|e| BadInput(format!("{e:#}"))))
        .collect::<Result<Vec<_>, _>>()?;
    name_keys(&mut scenarios, args)?;
    let asked = (args.redis.is_some(), args.worker_cmd.as_deref());
    match crate::live::run::refusal(&scenarios, asked, crate::live::cluster::binaries_present) {
        Some(why) => Err(BadInput(why).into()),
        None => Ok(scenarios),
    }
}

/// `--lock-key` and `--token-key` over each scenario's own: the lock on
/// Redis, etcd or ZooKeeper, the token key on Redis only.
fn name_keys(scenarios: &mut [LiveScenario], args: &LiveArgs) -> Result<(), BadInput> {
    let lock = match &args.lock_key {
        Some(k) => Some(KeyChoice::parse(k).map_err(|why| BadInput(format!("--lock-key: {why}")))?),
        None => None,
    };
    if let Some(t) = args
        .token_key
        .as_ref()
        .filter(|t| t.is_empty() || t.contains(['*', '?', '[']))
    {
        return Err(BadInput(format!(
            "--token-key {t:?}: expected one exact key (no `*`, `?`, `[`)"
        )));
    }
    let flag = match (&args.lock_key, &args.token_key) {
        (Some(_), _) => "--lock-key",
        (None, Some(_)) => "--token-key",
        (None, None) => return Ok(()),
    };
    for s in scenarios.iter_mut() {
        let redis = matches!(s.lock, LockKind::RedisSetNxDel | LockKind::RedisSetNxCad);
        let cluster = s.lock.cluster().is_some() && args.token_key.is_none();
        if !redis && !cluster {
            return Err(BadInput(format!(
                "{flag} names a {}, and {} locks on {}",
                if args.token_key.is_some() {
                    "Redis key"
                } else {
                    "lock server's key"
                },
                s.path.display(),
                s.lock.name()
            )));
        }
        s.lock_key = lock.clone().or(s.lock_key.take());
        s.token_key = args.token_key.clone().or(s.token_key.take());
    }
    Ok(())
}

/// The servers' line: where they listen, how long they took to start.
pub(super) fn servers_line(info: &ServersInfo) -> String {
    report::live::servers(&report::live::ServersLine {
        own_redis: info.own_redis,
        redis_url: &info.redis_url,
        key_prefix: &info.key_prefix,
        own_postgres: info.own_postgres,
        schema: &info.schema,
        root: &info.root,
        started_ms: info.started_ms,
    })
}

pub fn cmd_worker(args: crate::live::worker::WorkerArgs) -> Result<ExitCode> {
    crate::live::worker::run(&args)?;
    Ok(ExitCode::from(EXIT_OK))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_cluster_binary_is_named_before_any_server_starts() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("live");
        let redis = scenario::load(&root.join("gc-pause-plain-update.toml")).unwrap();
        let etcd = scenario::load(&root.join("etcd-gc-pause-plain-update.toml")).unwrap();
        let no_etcd = |k: crate::live::ClusterKind| match k {
            crate::live::ClusterKind::Etcd => anyhow::bail!("`etcd` not found"),
            crate::live::ClusterKind::Zk => Ok(()),
        };
        let refusal = |s: &[LiveScenario]| crate::live::run::refusal(s, (false, None), no_etcd);
        assert_eq!(refusal(std::slice::from_ref(&redis)), None);
        let text = refusal(&[redis, etcd]).expect("refused");
        assert!(
            text.contains("etcd-gc-pause-plain-update.toml") && text.contains("`etcd` not found"),
            "{text}"
        );
    }
}
