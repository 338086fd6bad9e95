//! Where a live trial's wall time goes (`fencesim live --verbose`).
//!
//! A live trial mostly waits — for servers to start, for a cluster to be
//! repaired, for workers to connect, for a lease to expire in real time —
//! and a speed-up has to know which wait to cut. So the trial marks the
//! `Instant` at which each phase begins ([`Phases::enter`]); a phase lasts
//! until the next mark, and a phase entered more than once (reset, then a
//! cluster start, then reset again) adds up. Because the marks partition the
//! trial's timeline, the phases sum to its wall time by construction: time
//! no mark names (before the first, e.g. choosing the worker mode) is
//! [`Phase::Other`]. Marks may also be placed after the fact
//! ([`Phases::mark`]: a proxy's fault is seen in its log only once the
//! trial is over); the timeline is sorted before it is summed.
//!
//! Recording is a push of one `(Instant, Phase)` per boundary — a dozen a
//! trial — so it is always done; only the output is behind `--verbose`.

use std::fmt;
use std::time::{Duration, Instant};

/// One stretch of a trial (docs/live.md, "Where a live trial's time goes").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// A server or cluster start-up this trial caused (the first trial of a kind).
    Start,
    /// Servers reset, a running cluster repaired and verified, proxies set up.
    Reset,
    /// Workers started until all are connected (built-in), or the user's
    /// programs started until the first lock request passes a proxy.
    Spawn,
    /// From the workers' start to the first fault striking (the whole run
    /// when no fault strikes).
    Run,
    /// While a fault is in force: a pause until its resume, a partition
    /// until its heal, a crash until its restart, a member delay until it
    /// ends, a proxy's hold or drop window; an instant fault (failover)
    /// for as long as the executor takes.
    Fault,
    /// After the faults until every worker finished and was reaped.
    Settle,
    /// Every worker has finished, but a fault's scheduled end (a resume, a
    /// heal, a member's restart) has not come yet: the trial waits for it
    /// before the audit. (Built-in workers only.)
    Tail,
    /// PostgreSQL's audit query and the proxies' logs.
    Audit,
    /// Building the history and running the checker.
    Check,
    /// Whatever no mark names (the remainder).
    Other,
}

/// How many phases there are.
pub const PHASES: usize = 10;

impl Phase {
    pub const ALL: [Phase; PHASES] = [
        Phase::Start,
        Phase::Reset,
        Phase::Spawn,
        Phase::Run,
        Phase::Fault,
        Phase::Settle,
        Phase::Tail,
        Phase::Audit,
        Phase::Check,
        Phase::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Start => "start",
            Phase::Reset => "reset",
            Phase::Spawn => "spawn",
            Phase::Run => "run",
            Phase::Fault => "fault",
            Phase::Settle => "settle",
            Phase::Tail => "tail",
            Phase::Audit => "audit",
            Phase::Check => "check",
            Phase::Other => "other",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A trial's timeline: when it began, the phase marks, when it ended.
#[derive(Clone, Debug)]
pub struct Phases {
    begun: Instant,
    marks: Vec<(Instant, Phase)>,
    ended: Option<Instant>,
}

impl Phases {
    /// A trial that began at `at`, in [`Phase::Other`] until the first mark.
    pub fn begin(at: Instant) -> Phases {
        Phases {
            begun: at,
            marks: Vec::with_capacity(16),
            ended: None,
        }
    }

    /// The phase `phase` begins now.
    pub fn enter(&mut self, phase: Phase) {
        self.mark(Instant::now(), phase);
    }

    /// The phase `phase` began at `at` (clamped into the trial).
    pub fn mark(&mut self, at: Instant, phase: Phase) {
        self.marks.push((at.max(self.begun), phase));
    }

    /// The faults' windows (each from a fault striking to its end: a
    /// resume, a heal, a restart done), marked as [`Phase::Fault`] with
    /// [`Phase::Settle`] after each; overlapping windows are one. Windows
    /// are cut at `until` (the audit's start), which keeps its own mark.
    pub fn faults(&mut self, mut windows: Vec<(Instant, Instant)>, until: Instant) {
        windows.sort();
        let mut merged: Vec<(Instant, Instant)> = Vec::new();
        for (from, to) in windows {
            let to = to.max(from);
            match merged.last_mut() {
                Some(last) if from <= last.1 => last.1 = last.1.max(to),
                _ => merged.push((from, to)),
            }
        }
        for (from, to) in merged {
            if from >= until {
                break;
            }
            self.mark(from, Phase::Fault);
            if to < until {
                self.mark(to, Phase::Settle);
            }
        }
    }

    /// Every worker finished at `done`: what is left of a fault window
    /// from there is [`Phase::Tail`] (the trial waiting for the fault's end).
    pub fn workers_done(&mut self, done: Instant) {
        if self.at(done) == Phase::Fault {
            self.mark(done, Phase::Tail);
        }
    }

    /// The phase in force at `at`: the latest mark at or before it.
    pub fn at(&self, at: Instant) -> Phase {
        self.marks
            .iter()
            .filter(|(t, _)| *t <= at)
            .max_by_key(|(t, _)| *t)
            .map_or(Phase::Other, |(_, p)| *p)
    }

    /// The trial ended at `at` (its wall time is `at - begun`).
    pub fn end(&mut self, at: Instant) {
        self.ended = Some(at.max(self.begun));
    }

    /// Time per phase. Before [`Phases::end`], the trial ends at its last mark.
    pub fn totals(&self) -> PhaseTotals {
        let mut marks = self.marks.clone();
        // Stable: two marks at one instant keep their order (the later one wins).
        marks.sort_by_key(|(t, _)| *t);
        let last = marks.last().map_or(self.begun, |(t, _)| *t);
        let end = self.ended.unwrap_or(last).max(self.begun);
        let mut out = PhaseTotals {
            trials: 1,
            ..PhaseTotals::default()
        };
        let (mut at, mut phase) = (self.begun, Phase::Other);
        for (t, p) in marks {
            let t = t.min(end);
            out.spent[phase.index()] += t - at;
            (at, phase) = (t, p);
        }
        out.spent[phase.index()] += end - at;
        out.wall = end - self.begun;
        out
    }
}

/// Time per phase of one trial or, added up, of several.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseTotals {
    pub spent: [Duration; PHASES],
    pub wall: Duration,
    pub trials: u32,
}

impl PhaseTotals {
    pub fn get(&self, phase: Phase) -> Duration {
        self.spent[phase.index()]
    }

    /// Adds another trial's (or total's) time.
    pub fn add(&mut self, other: &PhaseTotals) {
        for (a, b) in self.spent.iter_mut().zip(other.spent) {
            *a += b;
        }
        self.wall += other.wall;
        self.trials += other.trials;
    }

    /// The phase that took the most time (ties: the earlier phase).
    pub fn dominant(&self) -> Phase {
        let mut best = Phase::Other;
        for p in Phase::ALL {
            if self.get(p) > self.get(best) || (self.get(p) == self.get(best) && p < best) {
                best = p;
            }
        }
        best
    }

    /// `phase`'s share of the wall time, in percent.
    pub fn percent(&self, phase: Phase) -> f64 {
        if self.wall.is_zero() {
            return 0.0;
        }
        100.0 * self.get(phase).as_secs_f64() / self.wall.as_secs_f64()
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One trial's breakdown, the line under its trial line:
/// `    phases: start 0.0 ms · reset 12.3 ms · … · other 0.1 ms (wall 692.3 ms)`.
pub struct TrialPhasesLine<'a>(pub &'a PhaseTotals);

impl fmt::Display for TrialPhasesLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        write!(f, "    phases:")?;
        for (k, p) in Phase::ALL.into_iter().enumerate() {
            let sep = if k == 0 { " " } else { " · " };
            write!(f, "{sep}{} {:.1} ms", p.name(), ms(t.get(p)))?;
        }
        writeln!(f, " (wall {:.1} ms)", ms(t.wall))
    }
}

/// Totals over several trials (`what`: "scenario x" or "run"): one line
/// per phase with its ms and its share of the wall time.
pub struct PhaseSummary<'a> {
    pub what: &'a str,
    pub totals: &'a PhaseTotals,
}

impl fmt::Display for PhaseSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.totals;
        writeln!(
            f,
            "  time by phase, {} ({} trial(s), wall {:.1} ms; most: {}):",
            self.what,
            t.trials,
            ms(t.wall),
            t.dominant().name()
        )?;
        for p in Phase::ALL {
            // Unaligned: tables are src/report/'s (tests/it/architecture.rs).
            writeln!(
                f,
                "    {} {:.1} ms {:.1}%",
                p.name(),
                ms(t.get(p)),
                t.percent(p)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    /// A trial that runs from its start and is audited from 100 ms.
    fn run_then_audit_at_100_ms() -> (Instant, Phases) {
        let t0 = Instant::now();
        let mut p = Phases::begin(t0);
        p.mark(t0, Phase::Run);
        p.mark(t0 + d(100), Phase::Audit);
        (t0, p)
    }

    #[test]
    fn phases_partition_the_wall_time() {
        let t0 = Instant::now();
        let mut p = Phases::begin(t0);
        p.mark(t0 + d(5), Phase::Reset);
        p.mark(t0 + d(15), Phase::Start);
        p.mark(t0 + d(115), Phase::Reset);
        p.mark(t0 + d(120), Phase::Spawn);
        p.mark(t0 + d(150), Phase::Run);
        p.end(t0 + d(200));
        let t = p.totals();
        assert_eq!(t.get(Phase::Other), d(5));
        assert_eq!(t.get(Phase::Reset), d(15), "two stretches add up");
        assert_eq!(t.get(Phase::Start), d(100));
        assert_eq!(t.get(Phase::Spawn), d(30));
        assert_eq!(t.get(Phase::Run), d(50));
        assert_eq!(t.wall, d(200));
        assert_eq!(t.spent.iter().sum::<Duration>(), t.wall);
        assert_eq!(t.dominant(), Phase::Start);
        assert!((t.percent(Phase::Start) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn marks_placed_after_the_fact_are_sorted_in() {
        let (t0, mut p) = run_then_audit_at_100_ms();
        // A proxy's hold, seen in its log after the trial.
        p.mark(t0 + d(40), Phase::Fault);
        p.mark(t0 + d(60), Phase::Settle);
        assert_eq!(p.at(t0 + d(50)), Phase::Fault);
        p.end(t0 + d(110));
        let t = p.totals();
        assert_eq!(t.get(Phase::Run), d(40));
        assert_eq!(t.get(Phase::Fault), d(20));
        assert_eq!(t.get(Phase::Settle), d(40));
        assert_eq!(t.get(Phase::Audit), d(10));
        assert_eq!(t.get(Phase::Other), Duration::ZERO);
        assert_eq!(t.spent.iter().sum::<Duration>(), t.wall);
    }

    #[test]
    fn marks_outside_the_trial_are_clamped() {
        let t0 = Instant::now() + d(1000);
        let mut p = Phases::begin(t0);
        p.mark(t0 - d(500), Phase::Reset);
        p.mark(t0 + d(300), Phase::Check);
        p.end(t0 + d(100));
        let t = p.totals();
        assert_eq!(t.get(Phase::Reset), d(100));
        assert_eq!(t.get(Phase::Check), Duration::ZERO);
        assert_eq!(t.wall, d(100));
        // Not ended: it ends at its last mark.
        let mut q = Phases::begin(t0);
        q.mark(t0 + d(7), Phase::Spawn);
        assert_eq!(q.totals().wall, d(7));
        assert_eq!(q.totals().get(Phase::Other), d(7));
    }

    #[test]
    fn totals_add_across_trials() {
        let t0 = Instant::now();
        let mut a = Phases::begin(t0);
        a.mark(t0, Phase::Start);
        a.end(t0 + d(30));
        let mut b = Phases::begin(t0);
        b.mark(t0, Phase::Fault);
        b.end(t0 + d(10));
        let mut sum = PhaseTotals::default();
        sum.add(&a.totals());
        sum.add(&b.totals());
        assert_eq!(sum.trials, 2);
        assert_eq!(sum.wall, d(40));
        assert_eq!(sum.get(Phase::Start), d(30));
        assert_eq!(sum.get(Phase::Fault), d(10));
        assert!((sum.percent(Phase::Fault) - 25.0).abs() < 1e-9);
        assert_eq!(PhaseTotals::default().percent(Phase::Run), 0.0);
    }

    #[test]
    fn fault_windows_merge_and_stop_at_the_audit() {
        let (t0, mut p) = run_then_audit_at_100_ms();
        p.faults(
            vec![
                (t0 + d(30), t0 + d(40)),
                (t0 + d(10), t0 + d(20)),
                (t0 + d(15), t0 + d(25)),
                (t0 + d(90), t0 + d(150)),
                (t0 + d(120), t0 + d(130)),
            ],
            t0 + d(100),
        );
        p.end(t0 + d(105));
        let t = p.totals();
        assert_eq!(t.get(Phase::Run), d(10), "until the first fault");
        assert_eq!(t.get(Phase::Fault), d(15 + 10 + 10));
        assert_eq!(t.get(Phase::Settle), d(5 + 50));
        assert_eq!(t.get(Phase::Audit), d(5));
        assert_eq!(t.spent.iter().sum::<Duration>(), t.wall);
        // The workers were done at 35 ms: the rest of that window is tail.
        p.workers_done(t0 + d(35));
        assert_eq!(p.totals().get(Phase::Tail), d(5));
        assert_eq!(p.totals().get(Phase::Fault), d(30));
        // Done while no fault is in force: no tail.
        p.workers_done(t0 + d(50));
        assert_eq!(p.totals().get(Phase::Tail), d(5));
    }

    #[test]
    fn the_lines_name_every_phase_with_a_number() {
        let t0 = Instant::now();
        let mut p = Phases::begin(t0);
        p.mark(t0 + d(2), Phase::Reset);
        p.end(t0 + d(12));
        let t = p.totals();
        let line = TrialPhasesLine(&t).to_string();
        assert_eq!(
            line,
            "    phases: start 0.0 ms · reset 10.0 ms · spawn 0.0 ms · run 0.0 ms · fault 0.0 ms · \
             settle 0.0 ms · tail 0.0 ms · audit 0.0 ms · check 0.0 ms · other 2.0 ms (wall 12.0 ms)\n"
        );
        let summary = PhaseSummary {
            what: "run",
            totals: &t,
        }
        .to_string();
        assert!(summary.contains("most: reset"), "{summary}");
        assert!(summary.contains("\n    reset 10.0 ms 83.3%\n"), "{summary}");
    }
}
