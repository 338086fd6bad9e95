//! Differential test: the streaming checker (`fencesim::check`) and the
//! second checker written from `docs/history.md` (`fencesim::oracle`) must
//! reach the same verdicts — every violation kind, the same records — on
//! every history of every bundled scenario over many seeds, and on
//! generated histories, malformed ones included (those the input rules
//! refuse must be refused, and neither checker may panic on them).
//!
//! A disagreement prints the minimal history (a greedy delta loop drops
//! records while the checkers still disagree on valid input).
//!
//! Knobs (documented in docs/history.md and docs/reproducing.md):
//! `FENCESIM_DIFF_SEEDS` (seeds per bundled scenario, default 200),
//! `FENCESIM_DIFF_DIR` (only scenarios under `scenarios/<DIR>`, e.g.
//! `chaos`), `FENCESIM_DIFF_CASES` (generated histories, default 125,000).
//! The chaos sweep at 100,000 seeds per scenario:
//! `FENCESIM_DIFF_DIR=chaos FENCESIM_DIFF_SEEDS=100000 cargo test --release --test it check::differential::both_checkers_agree_on_every_bundled`

use std::path::PathBuf;

use fencesim::check::{self, ViolationKind};
use fencesim::history::validate::validate;
use fencesim::history::{jsonl, Event, History, Kind};
use fencesim::oracle;
use proptest::prelude::*;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn as_jsonl(h: &History) -> String {
    let mut out = Vec::new();
    jsonl::write(h, &mut out).expect("writes to memory");
    String::from_utf8_lossy(&out).into_owned()
}

/// `None` if both checkers agree; else what differs. The streaming
/// checker's report must also be the one it gives when every record goes
/// to every one of its checkers (its routing by kind blinds none of them).
fn disagreement(h: &History) -> Option<String> {
    let report = check::check(h);
    let found = oracle::check(h);
    let mut diffs = Vec::new();
    let unrouted = check::Checker::default().check_unrouted(h);
    if unrouted != report {
        diffs.push(format!(
            "check routed by kind reports otherwise than unrouted:\n{report:?}\n{unrouted:?}"
        ));
    }
    // A sweep's terse checker: the same report, explanations left out.
    let mut unexplained = report.clone();
    for v in &mut unexplained.violations {
        assert!(!v.explanation.is_empty(), "an explained violation says why");
        v.explanation.clear();
    }
    let terse = check::Checker::terse().check(h);
    if terse != unexplained {
        diffs.push(format!(
            "the terse checker reports otherwise than the explaining one:\n{unexplained:?}\n{terse:?}"
        ));
    }
    for kind in ViolationKind::ALL {
        let theirs: Vec<u64> = found
            .iter()
            .filter(|f| f.kind == kind.name())
            .map(|f| f.seq)
            .collect();
        let ours: Vec<u64> = report
            .violations
            .iter()
            .filter(|v| v.kind == kind)
            .filter_map(|v| v.evidence.last().copied())
            .collect();
        let n = report.count(kind);
        if n != theirs.len() as u64 || theirs[..ours.len().min(theirs.len())] != ours[..] {
            diffs.push(format!(
                "{kind}: check counts {n} at {ours:?}, oracle {} at {theirs:?}",
                theirs.len()
            ));
        }
    }
    for f in &found {
        if ViolationKind::from_name(f.kind).is_none() {
            diffs.push(format!("oracle kind {} unknown to check", f.kind));
        }
    }
    (!diffs.is_empty()).then(|| diffs.join("\n"))
}

/// The smallest history, by a greedy delta loop, on which the checkers
/// still disagree: drop chunks of records (halves, quarters, ... single
/// records) while the rest is valid input and still a disagreement.
fn shrink(h: &History) -> History {
    shrink_by(h, &|c| disagreement(c).is_some())
}

/// The greedy delta loop of [`shrink`], for any property `still`.
fn shrink_by(h: &History, still: &dyn Fn(&History) -> bool) -> History {
    let mut cur = h.clone();
    let mut chunk = cur.events.len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        let mut dropped = false;
        while i < cur.events.len() {
            let mut cand = cur.clone();
            let end = (i + chunk).min(cand.events.len());
            cand.events.drain(i..end);
            if !cand.events.is_empty() && validate(&cand).is_ok() && still(&cand) {
                cur = cand;
                dropped = true;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 && !dropped {
            return cur;
        }
        if !dropped {
            chunk = chunk.div_ceil(2);
        }
    }
}

/// Panics with the disagreement, the minimal history and the repro line.
fn report_disagreement(path: &std::path::Path, seed: u64, h: &History, d: &str) -> ! {
    let small = shrink(h);
    panic!(
        "{} seed {seed}: the checkers disagree:\n{d}\nminimal history ({} of {} records; on it: {}):\n{}(full: fencesim replay {} --seed {seed} --history h.jsonl)",
        path.display(),
        small.events.len(),
        h.events.len(),
        disagreement(&small).unwrap_or_default().replace('\n', "; "),
        as_jsonl(&small),
        path.display()
    );
}

/// Every scenario under `scenarios/` (or under `scenarios/$FENCESIM_DIFF_DIR`),
/// `FENCESIM_DIFF_SEEDS` seeds each (default 200), on every core: each
/// history must be valid input, and both checkers must reach the same
/// verdicts on it. Returns (histories, violations) judged.
fn sweep_bundled(dir: &str, seeds: u64) -> (Vec<PathBuf>, u64, u64) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(dir);
    let paths = fencesim::scenario::collect(&[root]).expect("bundled scenarios");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let histories = std::sync::atomic::AtomicU64::new(0);
    let violations = std::sync::atomic::AtomicU64::new(0);
    // One checker per thread, reused across every scenario and seed it
    // judges, as a sweep's thread does: it must report what a fresh one does.
    let mut checkers: Vec<check::Checker> =
        (0..threads).map(|_| check::Checker::default()).collect();
    for path in &paths {
        let s = fencesim::scenario::load(path).unwrap_or_else(|e| panic!("{e}"));
        std::thread::scope(|scope| {
            for (t, checker) in checkers.iter_mut().enumerate() {
                let t = t as u64;
                let (s, histories, violations) = (&s, &histories, &violations);
                scope.spawn(move || {
                    let start = s.seeds.start;
                    for seed in (start + t..start + seeds).step_by(threads as usize) {
                        let (opts, _) = fencesim::suite::seed_options(s, seed, false);
                        let h = fencesim::sim::run(&opts, seed, false).history;
                        if let Err(r) = validate(&h) {
                            panic!(
                                "{} seed {seed}: the simulator wrote a history the input rules refuse: {r}",
                                path.display()
                            );
                        }
                        if let Some(d) = disagreement(&h) {
                            report_disagreement(path, seed, &h, &d);
                        }
                        let fresh = check::check(&h);
                        assert!(
                            checker.check(&h) == fresh,
                            "{} seed {seed}: a reused checker reports otherwise than a fresh one",
                            path.display()
                        );
                        let found = fresh.counts.iter().sum::<u64>();
                        histories.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        violations.fetch_add(found, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
        });
    }
    (paths, histories.into_inner(), violations.into_inner())
}

/// The default run: every bundled scenario, `scenarios/chaos/` (clean ones
/// and their unfenced twins) included, at >= 200 seeds each. The long
/// chaos sweep (docs/reproducing.md):
/// `FENCESIM_DIFF_DIR=chaos FENCESIM_DIFF_SEEDS=100000 cargo test --release --test it check::differential::both_checkers_agree_on_every_bundled`
#[test]
fn both_checkers_agree_on_every_bundled_scenario_history() {
    let _heavy = crate::common::heavy();
    let seeds = env_or("FENCESIM_DIFF_SEEDS", 200);
    let dir = std::env::var("FENCESIM_DIFF_DIR").unwrap_or_default();
    let (paths, histories, violations) = sweep_bundled(&dir, seeds);
    assert_eq!(histories, paths.len() as u64 * seeds);
    if dir.is_empty() || dir.starts_with("chaos") {
        let chaos = paths
            .iter()
            .filter(|p| p.components().any(|c| c.as_os_str() == "chaos"))
            .count();
        assert!(chaos >= 15, "every chaos scenario is swept: {chaos}");
    }
    eprintln!(
        "checker_differential: {} scenarios x {seeds} seeds = {histories} histories, {violations} violations, checkers agree",
        paths.len()
    );
    assert!(
        violations > 0,
        "the sweep must contain violations for agreement to mean anything"
    );
}

#[test]
fn a_disagreement_is_shrunk_to_the_records_that_cause_it() {
    let _heavy = crate::common::heavy();
    // The checkers agree on every history we have, so the greedy loop is
    // held to a stand-in property ("two grants are issued"): of 40
    // records it must keep exactly the two that make it true.
    let mut h = History {
        nodes: NODES.map(String::from).to_vec(),
        keys: vec!["doc".into()],
        events: vec![],
    };
    for i in 1..=40u64 {
        let mut e = Event::new(i, i * 1_000_000, W0, Kind::Pause);
        if i == 17 || i == 31 {
            e = Event::new(i, i * 1_000_000, COORD, Kind::GrantIssued);
            e.grant_id = Some(i);
            e.key = Some(0);
        }
        h.events.push(e);
    }
    let keeps = |h: &History| {
        h.events
            .iter()
            .filter(|e| e.kind == Kind::GrantIssued)
            .count()
            == 2
    };
    let small = shrink_by(&h, &keeps);
    assert_eq!(small.events.len(), 2, "{}", as_jsonl(&small));
    assert!(small.events.iter().all(|e| e.kind == Kind::GrantIssued));
}

// ---- generated histories ----------------------------------------------

const NODES: [&str; 9] = [
    "worker/A",
    "worker/B",
    "worker/C",
    "coord/0",
    "coord/1",
    "resource/0",
    "resource/1",
    "sink/0",
    "dispatcher/0",
];
const W0: u16 = 0;
const COORD: u16 = 3;
const RES: u16 = 5;

/// One generated step; a few expand to two records.
#[derive(Clone, Debug)]
enum Step {
    /// A coordinator issues grant g (issuer, key and token follow from g and
    /// the history's salts, so re-issues are re-sends unless `rogue`).
    Issue {
        g: u64,
        rogue: bool,
    },
    /// A worker decides it holds grant g (client-decided: issued and received by it).
    Decide {
        w: u16,
        g: u64,
    },
    Receive {
        w: u16,
        g: u64,
    },
    Acquire {
        w: u16,
        key: u16,
    },
    Read {
        w: u16,
        op: u64,
        value: u64,
    },
    Send {
        w: u16,
        op: u64,
        key: u16,
        token: Option<u64>,
        grant: Option<u64>,
    },
    Resource {
        r: u16,
        op: u64,
        key: u16,
        token: Option<u64>,
        accepted: bool,
    },
    Expire {
        g: u64,
    },
    Renew {
        g: u64,
    },
    Release {
        g: u64,
        removed: u64,
    },
    /// A worker asks to release grant g (it settles a provisional adoption).
    ReleaseSent {
        w: u16,
        g: u64,
    },
    EffectSent {
        w: u16,
        op: u64,
        key: u16,
    },
    EffectPerformed {
        op: u64,
        key: u16,
    },
    Became {
        w: u16,
        g: u64,
    },
    SteppedDown {
        w: u16,
        key: u16,
    },
    Life {
        w: u16,
        kind: u8,
    },
    Unfinished {
        w: u16,
    },
}

#[derive(Clone, Debug)]
struct Gen {
    /// 0: untokened grants; else the token salt.
    token_salt: u64,
    /// Grants from two coordinators (a failover) when set.
    two_issuers: bool,
    /// Every grant is client-decided (issues become decisions) when set.
    client_decided: bool,
    /// Receipts may go to any worker (a grant with two holders) when set.
    stray: bool,
    steps: Vec<(Step, u8)>,
}

fn step() -> impl Strategy<Value = Step> {
    let w = 0u16..3;
    let g = 1u64..6;
    let op = 1u64..5;
    let key = 0u16..2;
    let token = prop::option::of(0u64..7);
    prop_oneof![
        3 => (g.clone(), prop::bool::weighted(0.01)).prop_map(|(g, rogue)| Step::Issue { g, rogue }),
        1 => (w.clone(), g.clone()).prop_map(|(w, g)| Step::Decide { w, g }),
        3 => (w.clone(), g.clone()).prop_map(|(w, g)| Step::Receive { w, g }),
        2 => (w.clone(), key.clone()).prop_map(|(w, key)| Step::Acquire { w, key }),
        2 => (w.clone(), op.clone(), 0u64..5).prop_map(|(w, op, value)| Step::Read { w, op, value }),
        3 => (w.clone(), op.clone(), key.clone(), token.clone(), prop::option::of(1u64..6))
            .prop_map(|(w, op, key, token, grant)| Step::Send { w, op, key, token, grant: grant.filter(|g| g % 3 == 0) }),
        4 => (0u16..2, op.clone(), key.clone(), token, prop::bool::weighted(0.8))
            .prop_map(|(r, op, key, token, accepted)| Step::Resource { r, op, key, token, accepted }),
        1 => g.clone().prop_map(|g| Step::Expire { g }),
        1 => g.clone().prop_map(|g| Step::Renew { g }),
        1 => (g.clone(), g.clone()).prop_map(|(g, removed)| Step::Release { g, removed }),
        1 => (w.clone(), g.clone()).prop_map(|(w, g)| Step::ReleaseSent { w, g }),
        2 => (w.clone(), op.clone(), key.clone()).prop_map(|(w, op, key)| Step::EffectSent { w, op, key }),
        2 => (op, key.clone()).prop_map(|(op, key)| Step::EffectPerformed { op, key }),
        1 => (w.clone(), g).prop_map(|(w, g)| Step::Became { w, g }),
        1 => (w.clone(), key).prop_map(|(w, key)| Step::SteppedDown { w, key }),
        1 => (w.clone(), 0u8..4).prop_map(|(w, kind)| Step::Life { w, kind }),
        1 => w.prop_map(|w| Step::Unfinished { w }),
    ]
}

/// Steps around one key's adoptions: asks, issues, late and fresh
/// answers, and the writes and requests that settle them (grants 1, 3, 5
/// of key 1; worker 1 holds 1 and 3, worker 0 holds 5).
fn adoption_step() -> impl Strategy<Value = Step> {
    let w = 0u16..2;
    let g = prop::sample::select(vec![1u64, 3, 5]);
    let op = 1u64..4;
    let token = prop::option::of(0u64..7);
    prop_oneof![
        3 => g.clone().prop_map(|g| Step::Issue { g, rogue: false }),
        4 => (w.clone(), g.clone()).prop_map(|(w, g)| Step::Receive { w, g }),
        3 => w.clone().prop_map(|w| Step::Acquire { w, key: 1 }),
        3 => (w.clone(), op.clone(), token.clone())
            .prop_map(|(w, op, token)| Step::Send { w, op, key: 1, token, grant: None }),
        3 => (op.clone(), token, prop::bool::weighted(0.9))
            .prop_map(|(op, token, accepted)| Step::Resource { r: 0, op, key: 1, token, accepted }),
        1 => (w.clone(), g.clone()).prop_map(|(w, g)| Step::ReleaseSent { w, g }),
        1 => (w.clone(), op.clone()).prop_map(|(w, op)| Step::EffectSent { w, op, key: 1 }),
        1 => op.prop_map(|op| Step::EffectPerformed { op, key: 1 }),
        1 => g.prop_map(|g| Step::Expire { g }),
        1 => (w, 0u8..4).prop_map(|(w, kind)| Step::Life { w, kind }),
    ]
}

fn adoption_gen() -> impl Strategy<Value = Gen> {
    (
        0u64..4,
        prop::bool::weighted(0.1),
        prop::collection::vec((adoption_step(), 0u8..4), 1..24),
    )
        .prop_map(|(token_salt, stray, steps)| Gen {
            token_salt,
            two_issuers: false,
            client_decided: false,
            stray,
            steps,
        })
}

fn gen() -> impl Strategy<Value = Gen> {
    (
        0u64..4,
        prop::bool::ANY,
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.05),
        // The u8 is the time step: 0 (a tie) up to 3 ms; 255 goes backwards (malformed).
        prop::collection::vec(
            (step(), prop_oneof![300 => 0u8..4, 1 => Just(255u8)]),
            0..28,
        ),
    )
        .prop_map(
            |(token_salt, two_issuers, client_decided, stray, steps)| Gen {
                token_salt,
                two_issuers,
                client_decided,
                stray,
                steps,
            },
        )
}

impl Gen {
    fn grant_key(&self, g: u64) -> u16 {
        (g % 2) as u16
    }
    fn grant_token(&self, g: u64) -> Option<u64> {
        (self.token_salt != 0).then(|| (g * self.token_salt + g / 3) % 7)
    }
    /// The server's order where `g`'s ownership ends (some salts only; some
    /// grants' ends carry none): at or a little past its token.
    fn end_order(&self, g: u64) -> Option<u64> {
        let t = self.grant_token(g)?;
        (self.token_salt % 3 != 0 && g % 4 != 3).then_some(t + g % 3)
    }

    fn history(&self) -> History {
        let mut h = History {
            nodes: NODES.map(String::from).to_vec(),
            keys: vec!["doc".into(), "other".into()],
            events: vec![],
        };
        let mut t: u64 = 1_000_000_000;
        for (step, dt) in &self.steps {
            t = if *dt == 255 {
                t.saturating_sub(5_000_000)
            } else {
                t + *dt as u64 * 1_000_000
            };
            let mut push = |node: u16, kind: Kind, f: &dyn Fn(&mut Event)| {
                let mut e = Event::new(h.events.len() as u64 + 1, t, node, kind);
                f(&mut e);
                h.events.push(e);
            };
            // Worker 1 holds grants 1 and 3 (key 1), worker 2 grants 2 and 4 (key 0):
            // a holder with two grants of a key meets late and fresh answers.
            let holder = |w: u16, g: u64| {
                if self.stray {
                    w
                } else {
                    [0, 1, 2, 1, 2, 0][g as usize % 6]
                }
            };
            let step = match *step {
                Step::Issue { g, .. } if self.client_decided => Step::Decide { w: holder(0, g), g },
                Step::Receive { w, g } => Step::Receive { w: holder(w, g), g },
                // Promotions number their own grants (ids 11..): a pair node is their issuer.
                Step::Became { w, g } => Step::Became {
                    w: holder(w, g),
                    g: g + 10,
                },
                Step::Decide { w, g } if !self.client_decided => {
                    Step::Receive { w: holder(w, g), g }
                }
                ref other => other.clone(),
            };
            match step {
                Step::Issue { g, rogue } => {
                    let coord = COORD + (self.two_issuers && g > 3) as u16 + rogue as u16;
                    let (key, token) = (self.grant_key(g), self.grant_token(g));
                    push(coord.min(COORD + 1), Kind::GrantIssued, &|e| {
                        e.grant_id = Some(g);
                        e.key = Some(key);
                        e.token = if rogue { token.map(|t| t + 1) } else { token };
                    });
                }
                Step::Decide { w, g } => {
                    let (key, token) = (self.grant_key(g), self.grant_token(g));
                    for kind in [Kind::GrantIssued, Kind::GrantReceived] {
                        push(W0 + w, kind, &|e| {
                            e.grant_id = Some(g);
                            e.key = Some(key);
                            e.token = token;
                        });
                    }
                }
                Step::Receive { w, g } => {
                    let (key, token) = (self.grant_key(g), self.grant_token(g));
                    push(W0 + w, Kind::GrantReceived, &|e| {
                        e.grant_id = Some(g);
                        e.key = Some(key);
                        e.token = token;
                    });
                }
                Step::Acquire { w, key } => push(W0 + w, Kind::AcquireSent, &|e| e.key = Some(key)),
                Step::Read { w, op, value } => push(W0 + w, Kind::ReadOk, &|e| {
                    e.op_id = Some(op);
                    e.value = Some(value);
                    e.key = Some(0);
                }),
                Step::Send {
                    w,
                    op,
                    key,
                    token,
                    grant,
                } => push(W0 + w, Kind::WriteSent, &|e| {
                    e.op_id = Some(op);
                    e.key = Some(key);
                    e.token = token;
                    e.grant_id = grant;
                    e.value = Some(op);
                }),
                Step::Resource {
                    r,
                    op,
                    key,
                    token,
                    accepted,
                } => {
                    let kind = if accepted {
                        Kind::WriteAccepted
                    } else {
                        Kind::WriteRejected
                    };
                    push(RES + r, kind, &|e| {
                        e.op_id = Some(op);
                        e.key = Some(key);
                        e.token = token;
                        e.value = Some(op);
                    });
                }
                Step::Expire { g } => push(COORD, Kind::LeaseExpired, &|e| {
                    e.grant_id = Some(g);
                    e.key = Some(self.grant_key(g));
                    e.order = self.end_order(g);
                }),
                Step::Renew { g } => push(COORD, Kind::RenewOk, &|e| {
                    e.grant_id = Some(g);
                    e.key = Some(self.grant_key(g));
                    e.value = Some(0);
                }),
                Step::Release { g, removed } => push(COORD, Kind::ReleaseApplied, &|e| {
                    e.grant_id = Some(g);
                    e.removed_grant_id = Some(removed);
                    e.key = Some(self.grant_key(g));
                    e.order = self.end_order(removed);
                }),
                Step::ReleaseSent { w, g } => push(W0 + w, Kind::ReleaseSent, &|e| {
                    e.grant_id = Some(g);
                    // a release naming no key is keyed by its grant
                    e.key = (g != 4).then(|| self.grant_key(g));
                }),
                Step::EffectSent { w, op, key } => {
                    // worker 2 stands in for an outbox dispatcher sometimes
                    let node = if w == 2 && op % 2 == 0 { 8 } else { W0 + w };
                    push(node, Kind::EffectSent, &|e| {
                        e.op_id = Some(op);
                        e.key = Some(key);
                    })
                }
                Step::EffectPerformed { op, key } => push(7, Kind::EffectPerformed, &|e| {
                    e.op_id = Some(op);
                    e.key = Some(key);
                }),
                Step::Became { w, g } => push(W0 + w, Kind::BecameActive, &|e| {
                    e.grant_id = Some(g);
                    e.key = Some(self.grant_key(g));
                    e.token = self.grant_token(g);
                }),
                Step::SteppedDown { w, key } => {
                    push(W0 + w, Kind::SteppedDown, &|e| e.key = Some(key))
                }
                Step::Life { w, kind } => {
                    let kind =
                        [Kind::Pause, Kind::Resume, Kind::Crash, Kind::Restart][kind as usize];
                    push(W0 + w, kind, &|_| {})
                }
                Step::Unfinished { w } => push(W0 + w, Kind::Unfinished, &|_| {}),
            }
        }
        h
    }
}

/// The generated histories come from a fixed seed, so every machine and
/// every run judges the same ones: with proptest's random seed the
/// per-kind floor below once failed by chance (superseded_effect in 48
/// histories of the 50 it asked for). `PROPTEST_RNG_SEED=N` explores
/// other histories.
fn seeded(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = proptest::test_runner::RngSeed::Fixed(0x5eed_d1ff);
    }
    config
}

#[test]
fn both_checkers_agree_on_generated_histories_and_refused_ones_are_refused() {
    let _heavy = crate::common::heavy();
    let cases = env_or("FENCESIM_DIFF_CASES", 125_000) as u32;
    let config = seeded(cases);
    let refused = std::cell::Cell::new(0u64);
    let judged = std::cell::Cell::new(0u64);
    let violating = std::cell::Cell::new(0u64);
    let per_kind = std::cell::RefCell::new([0u64; check::VIOLATION_KINDS]);
    proptest!(config, |(g in gen())| {
        let h = g.history();
        let backwards = h.events.windows(2).any(|w| w[1].t_true_ns < w[0].t_true_ns);
        match validate(&h) {
            Err(_) => {
                refused.set(refused.get() + 1);
                // Neither checker may panic on what the rules refuse.
                let _ = check::check(&h);
                let _ = oracle::check(&h);
            }
            Ok(()) => {
                prop_assert!(!backwards, "time going backwards must be refused:\n{}", as_jsonl(&h));
                prop_assert!(!h.events.is_empty(), "an empty history must be refused");
                judged.set(judged.get() + 1);
                let d = disagreement(&h);
                prop_assert!(d.is_none(), "the checkers disagree:\n{}\non this history (shrunk):\n{}", d.unwrap_or_default(), as_jsonl(&shrink(&h)));
                let report = check::check(&h);
                violating.set(violating.get() + (!report.is_clean()) as u64);
                for kind in report.kinds() {
                    per_kind.borrow_mut()[kind as usize] += 1;
                }
            }
        }
    });
    let (refused, judged, violating) = (refused.get(), judged.get(), violating.get());
    assert_eq!(refused + judged, cases as u64);
    // Both sides of the boundary are exercised: refused and judged inputs,
    // clean and violating verdicts.
    assert!(refused >= cases as u64 / 50, "refused {refused}");
    assert!(judged * 10 >= cases as u64 * 8, "judged {judged}");
    assert!(
        violating >= judged / 10,
        "violating {violating} of {judged}"
    );
    // Agreement on a kind means something only where the kind occurs. The
    // rarest kind occurs about once in 2,500 histories: the floor is half
    // that, so another seed does not fail it by chance.
    let per_kind = per_kind.into_inner();
    for kind in ViolationKind::ALL {
        assert!(
            per_kind[kind as usize] >= cases as u64 / 5000,
            "{kind} occurs in only {} generated histories: {per_kind:?}",
            per_kind[kind as usize]
        );
    }
}

#[test]
fn both_checkers_agree_on_generated_adoptions_late_and_fresh_answers_included() {
    let _heavy = crate::common::heavy();
    let cases = (env_or("FENCESIM_DIFF_CASES", 125_000) / 2) as u32;
    let config = seeded(cases);
    let stale = std::cell::Cell::new(0u64);
    proptest!(config, |(g in adoption_gen())| {
        let h = g.history();
        if validate(&h).is_ok() {
            let d = disagreement(&h);
            prop_assert!(d.is_none(), "the checkers disagree:\n{}\non this history (shrunk):\n{}", d.unwrap_or_default(), as_jsonl(&shrink(&h)));
            stale.set(stale.get() + (check::check(&h).count(ViolationKind::StaleWrite) > 0) as u64);
        }
    });
    // About 2 % of these histories hold a stale write (a redelivery the
    // document absorbed is not one): enough to exercise the rule.
    assert!(
        stale.get() >= cases as u64 / 100,
        "stale writes in only {} of {cases} histories",
        stale.get()
    );
}
