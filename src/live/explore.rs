//! Placements of real faults for `fencesim search` on a live scenario: the
//! catalogue of single faults a live trial can apply (a pause shorter than,
//! about equal to and longer than the lease; a crash with and without a
//! restart, each after a protocol point of a worker; a delay, drop or cut
//! of a worker's UPDATE; for a user's program also of the lock server's
//! reply that carried its grant, and a delay or drop of PostgreSQL's
//! answers to its read and its UPDATE; on a cluster, a crash or pause of the leader and
//! a partition of the holder's member), their combinations of up to K, and
//! each placement written as the live scenario file that runs it.
//!
//! Why a placement is scenario *text*: the file the search writes for a
//! finding is then exactly what it ran, and every placement goes through
//! the one loader that checks a hand-written file — a combination the live
//! mode cannot apply (a worker stopped at two different points, two network
//! faults on one worker) is refused there, counted as not expressible,
//! never run half-applied. This file draws nothing at random and starts
//! nothing: the enumeration order is the catalogue's, so a search is
//! repeatable placement by placement.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};

use super::scenario::{self, LiveScenario, NetMessage, CLIENT_POINTS, PAUSE_POINTS};
use crate::check::ViolationKind;
use crate::history::History;

/// One fault of a placement, as the scenario file spells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Single {
    Pause {
        worker: String,
        point: String,
        duration_ms: u64,
    },
    Crash {
        worker: String,
        point: String,
        restart_after_ms: Option<u64>,
    },
    /// `delay`, `drop` or `cut` of the worker's UPDATE in its PostgreSQL
    /// proxy (`message` "update"), or of the lock server's reply that
    /// carried its grant ("lock_reply"), or of PostgreSQL's answer to its
    /// read ("read_reply") or UPDATE ("update_reply"): replies for a
    /// user's program only.
    Net {
        worker: String,
        kind: &'static str,
        message: &'static str,
        duration_ms: u64,
    },
    /// A crash of the worker at a time after the trial started (the
    /// nemesis draws these; the search's catalogue keeps to points).
    CrashAt {
        worker: String,
        at_ms: u64,
        restart_after_ms: u64,
    },
    /// A pause of a user's program at a time after the trial started
    /// (the nemesis draws these).
    PauseAt {
        worker: String,
        at_ms: u64,
        duration_ms: u64,
    },
    /// A stall of a user's program's link at a time: every UPDATE
    /// ("update") or lock reply ("lock_reply") that reaches its proxy
    /// from `at_ms` on, for `duration_ms`, waits until the window ends
    /// (the nemesis draws these).
    StallAt {
        worker: String,
        message: &'static str,
        at_ms: u64,
        duration_ms: u64,
    },
    /// A crash (`restart_after_ms`) or `pause` of the cluster's leader
    /// after a worker's point, or a `partition` of the member the worker
    /// talks to.
    Member {
        kind: &'static str,
        worker: String,
        point: String,
        duration_ms: u64,
    },
}

impl Single {
    /// The fault as a `[[fault]]` table (also the nemesis's JSON of it).
    pub fn table(&self) -> toml::Table {
        let mut t = toml::Table::new();
        let mut put = |k: &str, v: toml::Value| {
            t.insert(k.to_string(), v);
        };
        match self {
            Single::Pause {
                worker,
                point,
                duration_ms,
            } => {
                put("kind", "pause".into());
                put("node", format!("worker/{worker}").into());
                put("after", point.as_str().into());
                put("duration_ms", (*duration_ms as i64).into());
            }
            Single::Crash {
                worker,
                point,
                restart_after_ms,
            } => {
                put("kind", "crash".into());
                put("node", format!("worker/{worker}").into());
                put("after", point.as_str().into());
                if let Some(ms) = restart_after_ms {
                    put("restart_after_ms", (*ms as i64).into());
                }
            }
            Single::CrashAt {
                worker,
                at_ms,
                restart_after_ms,
            } => {
                put("kind", "crash".into());
                put("node", format!("worker/{worker}").into());
                put("at_ms", (*at_ms as i64).into());
                put("restart_after_ms", (*restart_after_ms as i64).into());
            }
            Single::PauseAt {
                worker,
                at_ms,
                duration_ms,
            } => {
                put("kind", "pause".into());
                put("node", format!("worker/{worker}").into());
                put("at_ms", (*at_ms as i64).into());
                put("duration_ms", (*duration_ms as i64).into());
            }
            Single::StallAt {
                worker,
                message,
                at_ms,
                duration_ms,
            } => {
                put("kind", "delay".into());
                put("node", format!("worker/{worker}").into());
                put("message", (*message).into());
                put("at_ms", (*at_ms as i64).into());
                put("duration_ms", (*duration_ms as i64).into());
            }
            Single::Net {
                worker,
                kind,
                message,
                duration_ms,
            } => {
                put("kind", (*kind).into());
                put("node", format!("worker/{worker}").into());
                put("message", (*message).into());
                if *kind != "cut" {
                    put("duration_ms", (*duration_ms as i64).into());
                }
            }
            Single::Member {
                kind,
                worker,
                point,
                duration_ms,
            } => {
                put("kind", (*kind).into());
                put("node", "member/leader".into());
                put("after", format!("worker/{worker}:{point}").into());
                match *kind {
                    "crash" => put("restart_after_ms", (*duration_ms as i64).into()),
                    _ => put("duration_ms", (*duration_ms as i64).into()),
                }
            }
        }
        t
    }

    /// One line for the report.
    pub fn label(&self) -> String {
        match self {
            Single::Pause {
                worker,
                point,
                duration_ms,
            } => format!("pause worker/{worker} after {point} for {duration_ms} ms"),
            Single::Crash {
                worker,
                point,
                restart_after_ms: Some(ms),
            } => format!("crash worker/{worker} after {point}, restart after {ms} ms"),
            Single::Crash { worker, point, .. } => {
                format!("crash worker/{worker} after {point}, no restart")
            }
            Single::CrashAt {
                worker,
                at_ms,
                restart_after_ms,
            } => {
                format!("crash worker/{worker} at {at_ms} ms, restart after {restart_after_ms} ms")
            }
            Single::PauseAt {
                worker,
                at_ms,
                duration_ms,
            } => format!("pause worker/{worker} at {at_ms} ms for {duration_ms} ms"),
            Single::StallAt {
                worker,
                message,
                at_ms,
                duration_ms,
            } => format!(
                "stall worker/{worker}'s {} link at {at_ms} ms for {duration_ms} ms",
                message_label(message)
            ),
            Single::Net {
                worker,
                kind: "cut",
                message,
                ..
            } => format!(
                "cut worker/{worker}'s connection at its {}",
                message_label(message)
            ),
            Single::Net {
                worker,
                kind,
                message,
                duration_ms,
            } => format!(
                "{kind} worker/{worker}'s {} for {duration_ms} ms",
                message_label(message)
            ),
            Single::Member {
                kind,
                worker,
                point,
                duration_ms,
            } => format!("{kind} member/leader after worker/{worker}:{point} ({duration_ms} ms)"),
        }
    }
}

fn message_label(message: &str) -> &'static str {
    NetMessage::from_name(message).map_or("UPDATE", NetMessage::label)
}

/// Every single fault the live mode can apply to `s` (run by its built-in
/// worker, or by a user's program when `client`), in a fixed order: per
/// worker, per protocol point, the pauses (shorter than, about, longer
/// than the lease) and crashes; then each worker's network faults; then,
/// on a cluster, the member faults.
pub fn catalogue(s: &LiveScenario, client: bool) -> Vec<Single> {
    let ttl_ms = s.ttl_ms.max(1);
    let points: Vec<&str> = if client {
        // A user's program is seen by the proxies: its grant, its read's
        // answer, its UPDATE (`fence_checked`), the UPDATE's answer.
        debug_assert_eq!(CLIENT_POINTS, ["lock_granted", "write_acked"]);
        vec![
            CLIENT_POINTS[0],
            PAUSE_POINTS[0],
            PAUSE_POINTS[1],
            CLIENT_POINTS[1],
        ]
    } else {
        PAUSE_POINTS.to_vec()
    };
    let mut out = Vec::new();
    for w in &s.workers {
        for point in &points {
            let (worker, point) = (w.name.clone(), point.to_string());
            for duration_ms in [ttl_ms / 2, ttl_ms, 3 * ttl_ms] {
                out.push(Single::Pause {
                    worker: worker.clone(),
                    point: point.clone(),
                    duration_ms,
                });
            }
            for restart_after_ms in [None, Some(ttl_ms / 2)] {
                out.push(Single::Crash {
                    worker: worker.clone(),
                    point: point.clone(),
                    restart_after_ms,
                });
            }
        }
    }
    // A user's program reaches its lock server through fencesim's proxy
    // too: its grant's reply can be held or lost (only held on a cluster);
    // and PostgreSQL's answers to its read and its UPDATE held or lost (a
    // cut of an answer loses it as a drop does, only sooner: left out).
    let messages: &[NetMessage] = if client {
        &NetMessage::ALL
    } else {
        &[NetMessage::Update]
    };
    for w in &s.workers {
        for &message in messages {
            for kind in ["delay", "drop", "cut"] {
                let left_out = match message {
                    NetMessage::Update => false,
                    NetMessage::LockReply => kind != "delay" && s.lock.cluster().is_some(),
                    NetMessage::ReadReply | NetMessage::UpdateReply => kind == "cut",
                };
                if left_out {
                    continue;
                }
                out.push(Single::Net {
                    worker: w.name.clone(),
                    kind,
                    message: message.name(),
                    duration_ms: 3 * ttl_ms,
                });
            }
        }
    }
    // A user's program cannot be given a cluster member's faults yet
    // (client/plan.rs refuses them).
    if s.lock.cluster().is_some() && !client {
        for w in &s.workers {
            for point in &points {
                for kind in ["crash", "pause", "partition"] {
                    out.push(Single::Member {
                        kind,
                        worker: w.name.clone(),
                        point: point.to_string(),
                        duration_ms: 3 * ttl_ms,
                    });
                }
            }
        }
    }
    out
}

/// Every combination of 1..=k distinct singles (indices into the
/// catalogue, increasing), smaller ones first.
pub fn placements(n: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut level: Vec<Vec<usize>> = vec![Vec::new()];
    for _ in 0..k {
        let mut next = Vec::new();
        for p in &level {
            let from = p.last().map_or(0, |l| l + 1);
            for i in from..n {
                let mut q = p.clone();
                q.push(i);
                next.push(q);
            }
        }
        out.extend(next.iter().cloned());
        level = next;
    }
    out
}

/// The base scenario's text, read as a table, with its faults and
/// expectation taken out (a placement brings its own).
pub fn base_table(src: &str, path: &Path) -> Result<toml::Table> {
    let mut t: toml::Table =
        toml::from_str(src).with_context(|| format!("{}: not a TOML table", path.display()))?;
    t.remove("fault");
    t.remove("expect");
    Ok(t)
}

/// The live scenario file that runs `faults` on `base`, expecting `find`
/// (empty: clean), with a comment saying where it came from.
pub fn placement_text(
    base: &toml::Table,
    name: &str,
    worker_cmd: Option<&str>,
    faults: &[&Single],
    find: &[ViolationKind],
    header: &str,
) -> String {
    let mut t = base.clone();
    t.insert("name".into(), name.into());
    if let Some(cmd) = worker_cmd {
        t.insert("worker_cmd".into(), cmd.into());
    }
    t.insert(
        "fault".into(),
        toml::Value::Array(
            faults
                .iter()
                .map(|f| toml::Value::Table(f.table()))
                .collect(),
        ),
    );
    let mut expect = toml::Table::new();
    expect.insert(
        "find".into(),
        toml::Value::Array(find.iter().map(|k| k.name().into()).collect()),
    );
    t.insert("expect".into(), toml::Value::Table(expect));
    let body = toml::to_string(&t).unwrap_or_default();
    let comment: String = header.lines().map(|l| format!("# {l}\n")).collect();
    format!("{comment}{body}")
}

/// The nemesis's schedule for trial `trial` of seed `seed`: one to
/// `max_faults` faults, each drawn from the catalogue or (one in four) a
/// crash of a worker — or, for a user's program (`client`), as often a
/// pause of one to three leases or a stall of its UPDATE's or its lock
/// replies' link as long — at a time within three leases of the start, drawn
/// again until the live mode can apply the whole schedule (`expressible`).
/// The same (seed, trial) always draws the same schedule.
pub fn chaos_schedule(
    s: &LiveScenario,
    catalogue: &[Single],
    seed: u64,
    trial: u32,
    max_faults: usize,
    client: bool,
    expressible: impl Fn(&[&Single]) -> bool,
) -> Vec<Single> {
    let mut rng = crate::sim::rng::Rng::stream(seed, &format!("live-chaos/{trial}"));
    let ttl_ms = s.ttl_ms.max(1);
    for _ in 0..100 {
        let n = 1 + rng.below(max_faults.max(1) as u64) as usize;
        let mut schedule: Vec<Single> = Vec::new();
        for _ in 0..n {
            let f = if rng.below(4) == 0 && !s.workers.is_empty() {
                let w = &s.workers[rng.below(s.workers.len() as u64) as usize];
                let at_ms = rng.below(3 * ttl_ms);
                let worker = w.name.clone();
                match if client { rng.below(3) } else { 2 } {
                    0 => Single::PauseAt {
                        worker,
                        at_ms,
                        duration_ms: ttl_ms * (1 + rng.below(3)),
                    },
                    1 => Single::StallAt {
                        worker,
                        message: NetMessage::ALL[rng.below(NetMessage::ALL.len() as u64) as usize]
                            .name(),
                        at_ms,
                        duration_ms: ttl_ms * (1 + rng.below(3)),
                    },
                    _ => Single::CrashAt {
                        worker,
                        at_ms,
                        restart_after_ms: ttl_ms / 2,
                    },
                }
            } else {
                catalogue[rng.below(catalogue.len() as u64) as usize].clone()
            };
            if !schedule.contains(&f) {
                schedule.push(f);
            }
        }
        if expressible(&schedule.iter().collect::<Vec<_>>()) {
            return schedule;
        }
    }
    Vec::new()
}

/// Loads a rendered placement; Err: the live mode cannot apply this
/// combination (the loader's reason).
pub fn load_text(text: &str, path: &Path) -> Result<LiveScenario, String> {
    scenario::parse(text, path).map_err(|e| e.to_string())
}

/// What a trial's history looks like with its times taken out: who did
/// what with which outcome, in order. Two trials with the same shape
/// explored the same interleaving.
pub fn shape(h: &History) -> String {
    let mut s = String::new();
    for e in &h.events {
        s.push_str(&format!(
            "{}:{:?}:{:?}:{:?};",
            h.node_name(e.node),
            e.kind,
            e.outcome,
            e.grant_id
        ));
    }
    s
}

/// The distinct shapes seen so far.
#[derive(Default)]
pub struct Shapes(BTreeSet<String>);

impl Shapes {
    /// True when this shape is new.
    pub fn add(&mut self, shape: String) -> bool {
        self.0.insert(shape)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gc_pause() -> (String, std::path::PathBuf) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("live/gc-pause-plain-update.toml");
        (std::fs::read_to_string(&path).expect("bundled"), path)
    }

    #[test]
    fn placements_of_up_to_two_are_every_single_then_every_pair() {
        let p = placements(4, 2);
        assert_eq!(p.len(), 4 + 6);
        assert_eq!(p[0], vec![0]);
        assert_eq!(p[4], vec![0, 1]);
        assert!(p.iter().all(|q| q.windows(2).all(|w| w[0] < w[1])));
    }

    #[test]
    fn every_single_of_the_catalogue_renders_to_a_scenario_the_loader_accepts() {
        let (src, path) = gc_pause();
        let s = scenario::parse(&src, &path).expect("bundled scenario");
        let base = base_table(&src, &path).expect("table");
        for client in [false, true] {
            let cmd = client.then_some("true");
            for f in catalogue(&s, client) {
                let text = placement_text(&base, "x", cmd, &[&f], &[], "placement");
                let loaded = load_text(&text, &path)
                    .unwrap_or_else(|e| panic!("{}: {e}\n{text}", f.label()));
                assert_eq!(loaded.find, Vec::<ViolationKind>::new());
            }
        }
    }

    #[test]
    fn the_nemesis_draws_the_same_applicable_schedule_for_the_same_seed_and_trial() {
        let (src, path) = gc_pause();
        let s = scenario::parse(&src, &path).expect("bundled scenario");
        let base = base_table(&src, &path).expect("table");
        let cat = catalogue(&s, false);
        let ok =
            |f: &[&Single]| load_text(&placement_text(&base, "x", None, f, &[], ""), &path).is_ok();
        let draws: Vec<Vec<Single>> = (1..=20)
            .map(|t| chaos_schedule(&s, &cat, 7, t, 3, false, ok))
            .collect();
        for (t, d) in draws.iter().enumerate() {
            assert!(!d.is_empty() && d.len() <= 3);
            assert!(ok(&d.iter().collect::<Vec<_>>()));
            assert_eq!(d, &chaos_schedule(&s, &cat, 7, t as u32 + 1, 3, false, ok));
        }
        assert!(
            draws.windows(2).any(|w| w[0] != w[1]),
            "trials draw different schedules"
        );
        assert_ne!(
            draws[0..5],
            (1..=5)
                .map(|t| chaos_schedule(&s, &cat, 8, t, 3, false, ok))
                .collect::<Vec<_>>()[..]
        );
    }

    #[test]
    fn the_nemesis_pauses_and_stalls_a_users_program_at_a_time_and_every_schedule_loads() {
        let (src, path) = gc_pause();
        let s = scenario::parse(&src, &path).expect("bundled scenario");
        let base = base_table(&src, &path).expect("table");
        let cat = catalogue(&s, true);
        let ok = |f: &[&Single]| {
            load_text(&placement_text(&base, "x", Some("true"), f, &[], ""), &path).is_ok()
        };
        let draws: Vec<Single> = (1..=40)
            .flat_map(|t| chaos_schedule(&s, &cat, 3, t, 3, true, ok))
            .collect();
        assert!(
            draws.iter().any(|f| matches!(f, Single::PauseAt { .. })),
            "{draws:?}"
        );
        assert!(
            draws.iter().any(|f| matches!(f, Single::CrashAt { .. })),
            "{draws:?}"
        );
        for message in NetMessage::ALL.map(NetMessage::name) {
            let stall =
                |f: &Single| matches!(f, Single::StallAt { message: m, .. } if *m == message);
            assert!(draws.iter().any(stall), "no {message} stall in {draws:?}");
        }
    }

    #[test]
    fn a_worker_stopped_at_two_points_is_not_expressible() {
        let (src, path) = gc_pause();
        let base = base_table(&src, &path).expect("table");
        let at = |point: &str| Single::Pause {
            worker: "A".into(),
            point: point.into(),
            duration_ms: 100,
        };
        let text = placement_text(
            &base,
            "x",
            None,
            &[&at("read_ok"), &at("write_sent")],
            &[],
            "",
        );
        assert!(load_text(&text, &path).is_err());
    }

    #[test]
    fn a_rendered_finding_carries_its_expectation() {
        let (src, path) = gc_pause();
        let s = scenario::parse(&src, &path).expect("bundled scenario");
        let base = base_table(&src, &path).expect("table");
        let f = &catalogue(&s, false)[2];
        let text = placement_text(
            &base,
            "found",
            None,
            &[f],
            &[ViolationKind::StaleWrite],
            "found by search",
        );
        assert!(text.starts_with("# found by search\n"), "{text}");
        let loaded = load_text(&text, &path).expect("loads");
        assert_eq!(loaded.name, "found");
        assert_eq!(loaded.find, vec![ViolationKind::StaleWrite]);
    }
}
