//! One trial of a live scenario, by the built-in workers ([`crate::live::trial`])
//! or by a user's program ([`crate::live::client`]): the one place that
//! chooses, and says what came of it — a judged trial, or one that cannot
//! be judged (the program misbehaved, or what the servers saw is not
//! enough) and why.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::live::client::{self, CannotJudge, ClientFailed};
use crate::live::history::TrialResult;
use crate::live::phases::{PhaseTotals, Phases};
use crate::live::scenario::LiveScenario;
use crate::live::servers::Servers;
use crate::live::trial;

/// What a trial gave, when the harness did not fail.
pub enum TrialOutcome {
    Judged(Box<TrialResult>),
    /// No verdict: the user's program misbehaved (exit code, signal, hang)
    /// or the trial cannot be judged; why.
    NotJudged(String),
}

/// What a trial is run with, besides the servers.
#[derive(Clone, Copy)]
pub struct TrialCall<'a> {
    pub s: &'a LiveScenario,
    /// A user's program run as every worker (None: the built-in worker).
    pub worker_cmd: Option<&'a str>,
    /// This binary: the built-in worker is `EXE live-worker`.
    pub exe: &'a Path,
    pub timeout: Duration,
    /// The trial's number (1, 2, …).
    pub k: u32,
}

/// One trial, its phases marked in `phases` (which the caller ends). Err:
/// the harness failed.
pub fn run(call: TrialCall, servers: &mut Servers, phases: &mut Phases) -> Result<TrialOutcome> {
    let TrialCall {
        s,
        worker_cmd,
        exe,
        timeout,
        k,
    } = call;
    match worker_cmd {
        None => Ok(TrialOutcome::Judged(Box::new(trial::run(
            s, servers, exe, timeout, phases,
        )?))),
        Some(cmd) => match client::run(s, cmd, servers, timeout, k, phases) {
            Ok(r) => Ok(TrialOutcome::Judged(Box::new(r))),
            Err(e) if e.is::<ClientFailed>() || e.is::<CannotJudge>() => {
                Ok(TrialOutcome::NotJudged(e.to_string()))
            }
            Err(e) => Err(e),
        },
    }
}

/// One trial whose phases are measured but not shown (a live search
/// prints no breakdown).
pub fn untimed(call: TrialCall, servers: &mut Servers) -> Result<TrialOutcome> {
    let mut phases = Phases::begin(Instant::now());
    run(call, servers, &mut phases)
}

/// What one trial gave, with its wall time and where that went.
pub struct Ran {
    pub outcome: Result<TrialOutcome>,
    pub trial_ms: u128,
    pub phases: PhaseTotals,
}

/// Runs one trial on `servers`, timed: its wall time and its phases end
/// at one instant.
pub fn timed(call: TrialCall, servers: &mut Servers) -> Ran {
    let started = Instant::now();
    let mut phases = Phases::begin(started);
    let outcome = run(call, servers, &mut phases);
    let ended = Instant::now();
    phases.end(ended);
    Ran {
        outcome,
        trial_ms: (ended - started).as_millis(),
        phases: phases.totals(),
    }
}
