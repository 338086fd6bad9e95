//! `fencesim live`: the live scenarios against the harness's own Redis and
//! PostgreSQL, N trials each, with a found/N table beside each simulated
//! twin's verdict; and the hidden `fencesim live-worker` that is one worker.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};

use super::flags::JobsFlag;
use super::{check_writable_dir, check_writable_file};
use super::{BadInput, EXIT_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK};
use crate::live::phases::{PhaseSummary, PhaseTotals, Phases, TrialPhasesLine};
use crate::live::{client, history, jobs, scenario, servers::Servers, trial};
use crate::report::{self, live::Tally};

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
    /// A trial that has not finished by then is ended: with --worker-cmd, reported as the program hanging (exit 3).
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
    /// Also write the run as JSON (schema `fencesim-live`, docs/live.md) to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write JUnit XML (one test case per scenario) to this file.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write a report directory: index.html (a real trial's SVG timeline), summary.md, results.json.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// After each trial line, where its time went (start, reset, spawn,
    /// run, fault, settle, audit, check, other; ms), and per-phase totals
    /// after each scenario and at the end (docs/live.md).
    #[arg(short, long)]
    pub verbose: bool,
}

pub fn cmd_live(args: LiveArgs) -> Result<ExitCode> {
    let scenarios = load_scenarios(&args)?;
    // Output paths too: an unwritable --junit must not cost the servers and trials.
    check_outputs(&args)?;
    crate::live::install_interrupt_handler();
    let exe = std::env::current_exe()?;
    // The run's trials in its order (scenario by scenario, trial by trial).
    let units: Vec<Unit> = scenarios
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            (1..=args.trials.unwrap_or(s.trials)).map(move |k| Unit { scenario: i, k })
        })
        .collect();
    let live_jobs = args.jobs.unwrap_or(1).clamp(1, units.len().max(1));
    let user = crate::live::servers::UserServers {
        redis: args.redis.clone(),
        postgres: args.postgres.clone(),
    };
    let start = |home: u8| {
        let mut servers = Servers::start(&user)?;
        if let Some(kind) = cluster_of_group(home) {
            servers.ensure_cluster(kind)?;
        }
        Ok(servers)
    };
    let rig = jobs::Rigging {
        start: &start,
        announce: &servers_line,
    };
    let twin_threads = JobsFlag { jobs: args.jobs }.resolve();
    std::fs::create_dir_all(&args.out)?;
    let weights: Vec<u64> = units
        .iter()
        .map(|u| scenarios[u.scenario].estimated_trial_ms())
        .collect();
    // A `--jobs` run homes each cluster kind on its own jobs (src/live/jobs.rs).
    let groups: Vec<u8> = units
        .iter()
        .map(|u| group_of_cluster(scenarios[u.scenario].lock.cluster()))
        .collect();
    let timeout = Duration::from_millis(args.timeout_ms);
    let run = |u: &Unit, servers: &mut Servers| {
        let s = &scenarios[u.scenario];
        let call = TrialCall {
            s,
            worker_cmd: args.worker_cmd.as_deref().or(s.worker_cmd.as_deref()),
            exe: &exe,
            timeout,
            k: u.k,
        };
        execute(call, servers)
    };
    let panicked = || Ran {
        result: Err(anyhow::anyhow!("a live job panicked")),
        trial_ms: 0,
        phases: PhaseTotals::default(),
    };
    let mut rows = Vec::new();
    let mut runs = Vec::new();
    let mut phases = PhaseTotals::default();
    let mut stopped = None;
    let judged = jobs::with_jobs(
        live_jobs,
        rig,
        jobs::Work {
            units: &units,
            weights: &weights,
            groups: &groups,
            run: &run,
            panicked: &panicked,
        },
        |trials| {
            let mut first = 0;
            for s in &scenarios {
                let run = run_trials(&args, s, trials, first)?;
                first += args.trials.unwrap_or(s.trials) as usize;
                phases.add(&run.phases);
                if run.interrupted {
                    // Ctrl-C: the trials that finished go in the reports, no verdict.
                    stopped = Some(format!(
                        "interrupted in {} after {} of {} trial(s): no verdict",
                        s.name,
                        run.trials.len(),
                        args.trials.unwrap_or(s.trials)
                    ));
                    runs.push((s, run, None));
                    break;
                }
                if run.not_judged {
                    // A user's program misbehaved: no verdict (exit 3), the reports say why.
                    runs.push((s, run, None));
                    return Ok(false);
                }
                let row = twin_row(s, run.tally.clone(), twin_threads)?;
                runs.push((s, run, Some(sim_json(s, &row.sim))));
                rows.push(row);
            }
            anyhow::Ok(true)
        },
    )?;
    if !judged {
        write_outputs(&args, &runs, EXIT_INTERNAL)?;
        return Ok(ExitCode::from(EXIT_INTERNAL));
    }
    let all_met = rows.iter().all(|r| r.met);
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
    if args.verbose {
        let what = format!("all {} scenario(s)", scenarios.len());
        print!(
            "{}",
            PhaseSummary {
                what: &what,
                totals: &phases
            }
        );
    }
    let code = match &stopped {
        Some(why) => {
            println!("{why}");
            EXIT_INTERRUPTED
        }
        None if all_met => EXIT_OK,
        None => EXIT_FAILED,
    };
    write_outputs(&args, &runs, code)?;
    Ok(ExitCode::from(code))
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

/// A scenario's trials as the reports carry them.
struct ScenarioRun {
    tally: Tally,
    trials: Vec<report::live_reports::TrialJson>,
    /// The trial the report draws: the first with a violation, else the last.
    drawn: Option<(u32, history::TrialResult, PathBuf)>,
    /// The last trial could not be judged (a user's program misbehaved).
    not_judged: bool,
    /// Ctrl-C stopped it: `trials` are those that finished.
    interrupted: bool,
    /// Where the judged trials' time went, added up.
    phases: PhaseTotals,
}

/// The simulated twin's sweep for the JSON report.
fn sim_json(
    s: &scenario::LiveScenario,
    sim: &crate::suite::ScenarioResult,
) -> report::live_reports::SimulatedJson {
    report::live_reports::SimulatedJson {
        scenario: s.twin.display().to_string(),
        seeds: sim.agg.seeds,
        seeds_with: report::live_reports::per_kind(|k| sim.agg.failing_seeds[k as usize]),
        fence_rejected_total: sim.agg.fence_rejected_total,
    }
}

type Run<'a> = (
    &'a scenario::LiveScenario,
    ScenarioRun,
    Option<report::live_reports::SimulatedJson>,
);

/// `--json`, `--junit` and `--report`, each when asked.
fn write_outputs(args: &LiveArgs, runs: &[Run], code: u8) -> Result<()> {
    use report::live_reports::{self as lr, Drawn, ScenarioJson};
    let scenarios: Vec<ScenarioJson> = runs
        .iter()
        .map(|(s, run, sim)| {
            let t = &run.tally;
            let problems = if run.interrupted {
                vec!["interrupted: no verdict".to_string()]
            } else if run.not_judged {
                vec!["a trial could not be judged: no verdict".to_string()]
            } else {
                problems(s, t)
            };
            ScenarioJson {
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
                simulated: sim.clone(),
                met: problems.is_empty(),
                problems,
                interrupted: run.interrupted,
            }
        })
        .collect();
    let json = lr::LiveJson::new(scenarios, code);
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
        let drawn: Vec<Option<Drawn>> = runs
            .iter()
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
/// the run cannot give: a server fault on a user's Redis, a cluster lock
/// for a user's program.
fn load_scenarios(args: &LiveArgs) -> Result<Vec<scenario::LiveScenario>> {
    let files = crate::scenario::collect(&args.paths).map_err(|e| BadInput(e.to_string()))?;
    let scenarios = files
        .iter()
        .map(|p| scenario::load(p).map_err(|e| BadInput(format!("{e:#}"))))
        .collect::<Result<Vec<_>, _>>()?;
    if args.redis.is_some() {
        // Only worker-side and network faults can be applied to a server we do not own.
        if let Some((s, fault)) = scenarios
            .iter()
            .find_map(|s| s.server_fault().map(|f| (s, f)))
        {
            return Err(BadInput(format!(
                "{}: the fault `{fault}` kills or promotes the Redis server, which --redis does not let fencesim do; \
                 with --redis only worker-side and network faults apply (run this scenario without --redis)",
                s.path.display()
            ))
            .into());
        }
    }
    // A user's program (--worker-cmd, or a file's worker_cmd) cannot be
    // given every fault: refused before any server starts.
    if let Some(why) = scenarios
        .iter()
        .filter(|s| args.worker_cmd.is_some() || s.worker_cmd.is_some())
        .find_map(crate::live::client::refusal)
    {
        return Err(BadInput(why).into());
    }
    servers_installed(&scenarios, crate::live::cluster::binaries_present)?;
    Ok(scenarios)
}

/// Every binary the scenarios need, checked before anything is started:
/// a run that would stop at its first etcd scenario must not have started
/// Redis and run initdb first.
fn servers_installed(
    scenarios: &[scenario::LiveScenario],
    present: impl Fn(crate::live::ClusterKind) -> Result<()>,
) -> Result<()> {
    for s in scenarios {
        if let Some(kind) = s.lock.cluster() {
            if let Err(e) = present(kind) {
                return Err(BadInput(format!(
                    "{}: its {} lock needs a {} cluster: {e:#} (nothing was started)",
                    s.path.display(),
                    s.lock.name(),
                    kind.name()
                ))
                .into());
            }
        }
    }
    Ok(())
}

/// Starts (or connects to the user's) servers and announces them.
pub(super) fn start_own_servers(user: crate::live::servers::UserServers) -> Result<Servers> {
    let servers = Servers::start(&user)?;
    print!("{}", servers_line(&servers));
    Ok(servers)
}

/// The servers' line: where they listen, how long they took to start.
fn servers_line(servers: &Servers) -> String {
    let own_redis = match (&servers.redis, &servers.replica) {
        (Some(r), Some(rep)) => Some(((r.port, r.pid()), (rep.port, rep.pid()))),
        _ => None,
    };
    report::live::servers(&report::live::ServersLine {
        own_redis,
        redis_url: &servers.redis_url,
        key_prefix: &servers.key_prefix,
        own_postgres: servers
            .postgres
            .as_ref()
            .map(|pg| (pg.port, pg.pid().unwrap_or(0))),
        schema: &servers.schema,
        root: &servers.root.path,
        started_ms: servers.started_ms,
    })
}

/// A scenario's trials, each printed and tallied, taken from `trials`
/// from the run's trial `first` on. `not_judged`: a user's program
/// misbehaved (reported on stderr; no verdict, exit 3).
fn run_trials(
    args: &LiveArgs,
    s: &scenario::LiveScenario,
    trials: &mut jobs::Trials<Unit, Ran>,
    first: usize,
) -> Result<ScenarioRun> {
    let n = args.trials.unwrap_or(s.trials);
    print!(
        "{}",
        report::live::scenario_heading(&s.name, s.lock.name(), s.write.name(), &s.twin)
    );
    let t = Tally::new(n);
    let mut run = ScenarioRun {
        tally: t,
        trials: Vec::new(),
        drawn: None,
        not_judged: false,
        interrupted: false,
        phases: PhaseTotals::default(),
    };
    for k in 1..=n {
        let jobs::Slot::Ran(ran) = trials.take(first + k as usize - 1) else {
            // Ctrl-C came before this trial started.
            run.interrupted = true;
            break;
        };
        let r = match ran.result {
            // Ctrl-C reaches the trial (and a user's program, which then
            // looks as if it crashed): the trial ends unjudged, not in error.
            Err(_) | Ok(Err(_)) if crate::live::interrupted() => {
                run.interrupted = true;
                break;
            }
            Err(e) => return Err(e),
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                eprintln!("error: trial {k}/{n} of {}: {e}", s.name);
                run.trials.push(report::live_reports::TrialJson {
                    index: k,
                    violations: Vec::new(),
                    fence_rejected: 0,
                    faults: Vec::new(),
                    history_file: None,
                    trial_ms: ran.trial_ms as u64,
                    not_judged: Some(e),
                });
                run.not_judged = true;
                return Ok(run);
            }
        };
        let trial_ms = ran.trial_ms;
        let file = args.out.join(format!("{}-trial-{k}.jsonl", s.name));
        history::write_history(&r.history, &file)?;
        if let Some(h) = &args.history {
            history::write_history(&r.history, h)?;
        }
        tally(&mut run.tally, &r.report);
        let zk = s.lock == crate::live::LockKind::ZkLock;
        print!(
            "{}",
            report::live::trial_line(&report::live::TrialLine {
                trial: k,
                trials: n,
                faults: &r.faults,
                kinds: r.report.kinds().map(|k| k.name()).collect(),
                fence_rejected: r.report.info.fence_rejected_total,
                watches: zk.then(|| (r.report.info.watch_notifications, s.zk_watch.name())),
                history_file: &file,
                trial_ms,
            })
        );
        run.phases.add(&ran.phases);
        if args.verbose {
            print!("{}", TrialPhasesLine(&ran.phases));
        }
        run.trials.push(report::live_reports::TrialJson {
            index: k,
            violations: r.report.kinds().map(|k| k.name().to_string()).collect(),
            fence_rejected: r.report.info.fence_rejected_total,
            faults: r.faults.clone(),
            history_file: Some(file.display().to_string()),
            trial_ms: trial_ms as u64,
            not_judged: None,
        });
        // Drawn: the first trial with a violation, else the last one.
        if run
            .drawn
            .as_ref()
            .is_none_or(|(_, d, _)| d.report.is_clean())
        {
            run.drawn = Some((k, r, file));
        }
    }
    if args.verbose {
        let what = format!("scenario {}", s.name);
        print!(
            "{}",
            PhaseSummary {
                what: &what,
                totals: &run.phases
            }
        );
    }
    Ok(run)
}

/// A cluster kind as a `--jobs` group ([`crate::live::jobs`]; 0: none).
fn group_of_cluster(kind: Option<crate::live::ClusterKind>) -> u8 {
    match kind {
        None => 0,
        Some(crate::live::ClusterKind::Etcd) => 1,
        Some(crate::live::ClusterKind::Zk) => 2,
    }
}

/// The cluster kind of a `--jobs` group.
fn cluster_of_group(group: u8) -> Option<crate::live::ClusterKind> {
    [crate::live::ClusterKind::Etcd, crate::live::ClusterKind::Zk]
        .into_iter()
        .find(|k| group_of_cluster(Some(*k)) == group)
}

/// One trial of the run: its scenario (index in the run's list) and number.
struct Unit {
    scenario: usize,
    k: u32,
}

/// What one trial gave, with its wall time and where that went.
struct Ran {
    /// Err: the harness failed; inner Err: the trial could not be judged.
    result: Result<Result<history::TrialResult, String>>,
    trial_ms: u128,
    phases: PhaseTotals,
}

/// Runs one trial on `servers`, timed: its wall time and its phases end
/// at one instant.
fn execute(call: TrialCall, servers: &mut Servers) -> Ran {
    let started = std::time::Instant::now();
    let mut phases = Phases::begin(started);
    let result = one_trial_phased(call, servers, &mut phases);
    let ended = std::time::Instant::now();
    phases.end(ended);
    Ran {
        result,
        trial_ms: (ended - started).as_millis(),
        phases: phases.totals(),
    }
}

/// One trial, by the built-in worker or by `worker_cmd`. Inner Err: the
/// user's program misbehaved or the trial cannot be judged (no verdict).
pub(super) fn one_trial(
    s: &scenario::LiveScenario,
    worker_cmd: Option<&str>,
    servers: &mut Servers,
    exe: &std::path::Path,
    timeout: Duration,
    k: u32,
) -> Result<Result<history::TrialResult, String>> {
    // Its phases are measured but not shown (a live search prints no breakdown).
    let mut phases = Phases::begin(std::time::Instant::now());
    let call = TrialCall {
        s,
        worker_cmd,
        exe,
        timeout,
        k,
    };
    one_trial_phased(call, servers, &mut phases)
}

/// What a trial is run with, besides the servers.
struct TrialCall<'a> {
    s: &'a scenario::LiveScenario,
    worker_cmd: Option<&'a str>,
    exe: &'a std::path::Path,
    timeout: Duration,
    /// The trial's number (1, 2, …).
    k: u32,
}

/// [`one_trial`], its phases marked in `phases` (which the caller ends).
fn one_trial_phased(
    call: TrialCall,
    servers: &mut Servers,
    phases: &mut Phases,
) -> Result<Result<history::TrialResult, String>> {
    let TrialCall {
        s,
        worker_cmd,
        exe,
        timeout,
        k,
    } = call;
    match worker_cmd {
        None => Ok(Ok(trial::run(s, servers, exe, timeout, phases)?)),
        Some(cmd) => match client::run(s, cmd, servers, timeout, k, phases) {
            Ok(r) => Ok(Ok(r)),
            Err(e) if e.is::<client::ClientFailed>() || e.is::<client::CannotJudge>() => {
                Ok(Err(e.to_string()))
            }
            Err(e) => Err(e),
        },
    }
}

/// One trial's verdict into the scenario's tally.
fn tally(t: &mut Tally, report: &crate::check::Report) {
    for kind in report.kinds() {
        t.found[kind as usize] += 1;
    }
    let rejected = report.info.fence_rejected_total;
    t.fence_rejected_trials += (rejected > 0) as u32;
    t.min_fence_rejected = t.min_fence_rejected.min(rejected);
    t.max_fence_rejected = t.max_fence_rejected.max(rejected);
    t.clean += report.is_clean() as u32;
    let watches = report.info.watch_notifications;
    t.watch_notifications += watches;
    t.min_watch_notifications = t.min_watch_notifications.min(watches);
    t.max_watch_notifications = t.max_watch_notifications.max(watches);
}

/// A scenario's live tally beside its simulated twin's verdict.
struct Row {
    name: String,
    live: Tally,
    sim: crate::suite::ScenarioResult,
    find: Vec<crate::check::ViolationKind>,
    met: bool,
    sim_watches: Option<f64>,
}

/// Runs the scenario's simulated twin and judges the live tally.
fn twin_row(s: &scenario::LiveScenario, t: Tally, jobs: usize) -> Result<Row> {
    let twin = crate::cli::load(&s.twin)?;
    let sim = crate::suite::run_scenario(&twin, twin.seeds.clone(), jobs);
    // The twin's watch notifications per seed (mean of its first 20 seeds).
    let sim_watches = (s.lock == crate::live::LockKind::ZkLock).then(|| {
        let seeds: Vec<u64> = twin.seeds.clone().take(20).collect();
        let total: u64 = seeds
            .iter()
            .map(|seed| {
                crate::suite::run_seed(&twin, *seed)
                    .report
                    .info
                    .watch_notifications
            })
            .sum();
        total as f64 / seeds.len().max(1) as f64
    });
    Ok(Row {
        name: s.name.clone(),
        met: problems(s, &t).is_empty(),
        live: t,
        sim,
        find: s.find.clone(),
        sim_watches,
    })
}

/// Why the expectation is not met (empty: met). An unsafe scenario must
/// show each expected kind in most trials; a safe one must be clean in
/// every trial; fence rejections and watch notifications, when bounded,
/// within their bounds in every trial.
fn problems(s: &scenario::LiveScenario, t: &Tally) -> Vec<String> {
    let mut out = Vec::new();
    if s.find.is_empty() && t.clean != t.trials {
        out.push(format!(
            "expected every trial clean; {} of {} were",
            t.clean, t.trials
        ));
    }
    for k in &s.find {
        let n = t.found[*k as usize];
        if 2 * n <= t.trials {
            out.push(format!(
                "expected {} in most trials; found in {n} of {}",
                k.name(),
                t.trials
            ));
        }
    }
    if s.min_fence_rejected > 0 && t.min_fence_rejected < s.min_fence_rejected {
        out.push(format!(
            "expected the fence to reject at least {} write(s) in every trial; the fewest was {}",
            s.min_fence_rejected, t.min_fence_rejected
        ));
    }
    if let Some(max) = s.max_fence_rejected.filter(|m| t.max_fence_rejected > *m) {
        out.push(format!(
            "expected at most {max} fence rejection(s) per trial; the most was {}",
            t.max_fence_rejected
        ));
    }
    if let Some(min) = s
        .min_watch_notified
        .filter(|m| t.min_watch_notifications < *m)
    {
        out.push(format!(
            "expected at least {min} watch notification(s) per trial; the fewest was {}",
            t.min_watch_notifications
        ));
    }
    if let Some(max) = s
        .max_watch_notified
        .filter(|m| t.max_watch_notifications > *m)
    {
        out.push(format!(
            "expected at most {max} watch notification(s) per trial; the most was {}",
            t.max_watch_notifications
        ));
    }
    out
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
        assert!(servers_installed(std::slice::from_ref(&redis), no_etcd).is_ok());
        let e = servers_installed(&[redis, etcd], no_etcd).unwrap_err();
        assert!(e.is::<BadInput>(), "exit 2, bad input");
        let text = format!("{e:#}");
        assert!(
            text.contains("etcd-gc-pause-plain-update.toml") && text.contains("`etcd` not found"),
            "{text}"
        );
    }
}
