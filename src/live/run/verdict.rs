//! A live scenario's verdict: its trials tallied, its simulated twin run
//! beside it, and whether the expectation the file writes down was met —
//! an unsafe scenario must show each expected kind in most trials, a safe
//! one must be clean in every trial, fence rejections and watch
//! notifications, when bounded, within their bounds in every trial.

use anyhow::Result;

use crate::check::{Report, ViolationKind};
use crate::live::scenario::LiveScenario;
use crate::live::LockKind;
use crate::report::live::Tally;
use crate::suite::ScenarioResult;

/// One trial's verdict into the scenario's tally.
pub fn tally(t: &mut Tally, report: &Report) {
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
pub struct Row {
    pub name: String,
    pub live: Tally,
    pub sim: ScenarioResult,
    pub find: Vec<ViolationKind>,
    pub met: bool,
    /// A ZooKeeper lock's twin: its watch notifications per seed (the
    /// mean of its first 20 seeds).
    pub sim_watches: Option<f64>,
}

/// Runs the scenario's simulated twin (on `jobs` threads) and judges the
/// live tally.
pub fn twin_row(s: &LiveScenario, t: Tally, jobs: usize) -> Result<Row> {
    let twin = crate::scenario::load(&s.twin)?;
    let sim = crate::suite::run_scenario(&twin, twin.seeds.clone(), jobs);
    let sim_watches = (s.lock == LockKind::ZkLock).then(|| {
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

/// Why the expectation is not met (empty: met).
pub fn problems(s: &LiveScenario, t: &Tally) -> Vec<String> {
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
    out.extend(bounds(s, t));
    out
}

/// The per-trial bounds of fence rejections and watch notifications not kept.
fn bounds(s: &LiveScenario, t: &Tally) -> Vec<String> {
    let mut out = Vec::new();
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
