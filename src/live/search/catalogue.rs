//! What the live search places: the catalogue of single faults a live
//! trial can apply (a pause shorter than, about equal to and longer than
//! the lease; a crash with and without a restart, each after a protocol
//! point of a worker; a delay, drop or cut of a worker's UPDATE; for a
//! user's program also of the lock server's reply that carried its grant,
//! and a delay or drop of PostgreSQL's answers to its read and its UPDATE;
//! on a cluster, a crash or pause of the leader and a partition of the
//! holder's member) as typed [`Fault`]s, their combinations of up to K,
//! the nemesis's seeded schedules, each placement written as the live
//! scenario file that runs it, and a history's shape.
//!
//! Why a placement is the loader's own fault type: a combination the live
//! mode cannot apply (a worker stopped at two different points, two network
//! faults on one message) is refused by the loader's own rule
//! ([`crate::live::fault::conflict`]), counted as not expressible, never
//! run half-applied; and the file the search writes for a finding spells
//! exactly those faults (a test reads every single back as itself). This
//! file draws nothing at random and starts nothing: the enumeration order
//! is the catalogue's, so a search is repeatable placement by placement.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};

use crate::check::ViolationKind;
use crate::history::History;
use crate::live::fault::{
    Action, Fault, MemberSel, NetMessage, PauseEnd, Point, Target, Trigger, WorkerId,
};
use crate::live::proxy::ProxyMode;
use crate::live::scenario::LiveScenario;
use crate::live::WriteKind;

/// Every single fault the live mode can apply to `s` (run by its built-in
/// worker, or by a user's program when `client`), in a fixed order: per
/// worker, per protocol point, the pauses (shorter than, about, longer
/// than the lease) and crashes; then each worker's network faults; then,
/// on a cluster, the member faults.
pub fn catalogue(s: &LiveScenario, client: bool) -> Vec<Fault> {
    let ttl_ms = s.ttl_ms.max(1);
    // A user's program is seen by the proxies: its grant, its read's
    // answer, its UPDATE (`fence_checked`), the UPDATE's answer.
    let points: &[Point] = match client {
        true => &Point::CONVERSATION,
        false => Point::built_in(s.write == WriteKind::CheckThenUpdate),
    };
    let workers = (0..s.workers.len()).map(WorkerId);
    let mut out = Vec::new();
    for worker in workers.clone() {
        for &point in points {
            let trigger = Trigger::After { worker, point };
            for duration_ms in [ttl_ms / 2, ttl_ms, 3 * ttl_ms] {
                let action = Action::Pause {
                    worker,
                    duration_ms,
                    until: PauseEnd::Elapsed,
                };
                out.push(Fault { trigger, action });
            }
            for restart_after_ms in [None, Some(ttl_ms / 2)] {
                let target = Target::Worker(worker);
                let action = Action::Crash {
                    target,
                    restart_after_ms,
                };
                out.push(Fault { trigger, action });
            }
        }
    }
    out.extend(network_faults(s, client, ttl_ms));
    // A user's program cannot be given a cluster member's faults yet
    // (client/plan.rs refuses them).
    if s.lock.cluster().is_some() && !client {
        for worker in workers {
            for &point in points {
                let trigger = Trigger::After { worker, point };
                let (member, ms) = (MemberSel::Leader, 3 * ttl_ms);
                for action in [
                    Action::Crash {
                        target: Target::Member(member),
                        restart_after_ms: Some(ms),
                    },
                    Action::SlowMember {
                        member,
                        by_ms: None,
                        for_ms: ms,
                    },
                    Action::Partition {
                        member,
                        duration_ms: ms,
                    },
                ] {
                    out.push(Fault { trigger, action });
                }
            }
        }
    }
    out
}

/// Each worker's network faults: a delay, drop or cut of its UPDATE; for
/// a user's program, which reaches its lock server through fencesim's
/// proxy too, of its grant's reply (only held on a cluster), and of
/// PostgreSQL's answers to its read and its UPDATE held or lost (a cut of
/// an answer loses it as a drop does, only sooner: left out).
fn network_faults(s: &LiveScenario, client: bool, ttl_ms: u64) -> Vec<Fault> {
    let messages: &[NetMessage] = match client {
        true => &NetMessage::ALL,
        false => &[NetMessage::Update],
    };
    let ms = 3 * ttl_ms;
    let mut out = Vec::new();
    for worker in (0..s.workers.len()).map(WorkerId) {
        for &message in messages {
            for mode in [
                ProxyMode::Hold { ms },
                ProxyMode::Drop { ms },
                ProxyMode::Cut,
            ] {
                let held = matches!(mode, ProxyMode::Hold { .. });
                let left_out = match message {
                    NetMessage::Update => false,
                    NetMessage::LockReply => !held && s.lock.cluster().is_some(),
                    NetMessage::ReadReply | NetMessage::UpdateReply => mode == ProxyMode::Cut,
                };
                if left_out {
                    continue;
                }
                let action = Action::Net {
                    worker,
                    message,
                    mode,
                    until: PauseEnd::Elapsed,
                };
                out.push(Fault {
                    trigger: Trigger::Passing,
                    action,
                });
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

/// The live scenario file that runs `faults` on `base` (whose workers are
/// `names`), expecting `find` (empty: clean), with a comment saying where
/// it came from.
pub fn placement_text(
    base: &toml::Table,
    name: &str,
    worker_cmd: Option<&str>,
    (faults, names): (&[Fault], &[String]),
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
                .map(|f| toml::Value::Table(f.table(names)))
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
    catalogue: &[Fault],
    (seed, trial): (u64, u32),
    max_faults: usize,
    client: bool,
    expressible: impl Fn(&[Fault]) -> bool,
) -> Vec<Fault> {
    let mut rng = crate::sim::rng::Rng::stream(seed, &format!("live-chaos/{trial}"));
    for _ in 0..100 {
        let n = 1 + rng.below(max_faults.max(1) as u64) as usize;
        let mut schedule: Vec<Fault> = Vec::new();
        for _ in 0..n {
            let f = if rng.below(4) == 0 && !s.workers.is_empty() {
                timed_fault(s, &mut rng, client)
            } else {
                catalogue[rng.below(catalogue.len() as u64) as usize]
            };
            if !schedule.contains(&f) {
                schedule.push(f);
            }
        }
        if expressible(&schedule) {
            return schedule;
        }
    }
    Vec::new()
}

/// A fault of a worker at a time within three leases of the start: a
/// crash, or for a user's program also a pause or a stalled link.
fn timed_fault(s: &LiveScenario, rng: &mut crate::sim::rng::Rng, client: bool) -> Fault {
    let ttl_ms = s.ttl_ms.max(1);
    let worker = WorkerId(rng.below(s.workers.len() as u64) as usize);
    let at_ms = rng.below(3 * ttl_ms);
    let trigger = Trigger::AtMs(at_ms);
    let action = match if client { rng.below(3) } else { 2 } {
        0 => Action::Pause {
            worker,
            duration_ms: ttl_ms * (1 + rng.below(3)),
            until: PauseEnd::Elapsed,
        },
        1 => {
            let message = NetMessage::ALL[rng.below(NetMessage::ALL.len() as u64) as usize];
            let ms = ttl_ms * (1 + rng.below(3));
            Action::Net {
                worker,
                message,
                mode: ProxyMode::Hold { ms },
                until: PauseEnd::Elapsed,
            }
        }
        _ => Action::Crash {
            target: Target::Worker(worker),
            restart_after_ms: Some(ttl_ms / 2),
        },
    };
    Fault { trigger, action }
}

/// Loads a rendered placement; Err: the live mode cannot apply this
/// combination (the loader's reason).
#[cfg(test)]
fn load_text(text: &str, path: &Path) -> Result<LiveScenario, String> {
    crate::live::scenario::parse(text, path).map_err(|e| e.to_string())
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

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::scenario;

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
    fn every_single_of_the_catalogue_renders_to_a_scenario_the_loader_reads_back_as_it() {
        let (src, path) = gc_pause();
        let s = scenario::parse(&src, &path).expect("bundled scenario");
        let names = s.worker_names();
        let base = base_table(&src, &path).expect("table");
        for client in [false, true] {
            let cmd = client.then_some("true");
            for f in catalogue(&s, client) {
                let text = placement_text(&base, "x", cmd, (&[f], &names), &[], "placement");
                let loaded = load_text(&text, &path)
                    .unwrap_or_else(|e| panic!("{}: {e}\n{text}", f.label(&names)));
                assert_eq!(loaded.find, Vec::<ViolationKind>::new());
                assert_eq!(loaded.faults, vec![f], "{text}");
            }
        }
    }

    #[test]
    fn the_built_in_worker_is_placed_at_fence_checked_only_when_it_checks_the_fence() {
        let (src, path) = gc_pause();
        let plain = scenario::parse(&src, &path).expect("bundled scenario");
        let at_fence = |s: &LiveScenario, client: bool| {
            catalogue(s, client).iter().any(|f| {
                matches!(
                    f.trigger,
                    Trigger::After {
                        point: Point::FenceChecked,
                        ..
                    }
                )
            })
        };
        assert!(
            !at_fence(&plain, false),
            "a plain UPDATE never checks the fence"
        );
        assert!(
            at_fence(&plain, true),
            "a program's UPDATE reaches its proxy"
        );
        let checking = LiveScenario {
            write: WriteKind::CheckThenUpdate,
            ..plain
        };
        assert!(at_fence(&checking, false));
    }

    /// Whether the loader takes `faults` on the bundled scenario.
    fn loads(base: &toml::Table, path: &Path, cmd: Option<&str>, faults: &[Fault]) -> bool {
        let names = ["A".to_string(), "B".to_string()];
        load_text(
            &placement_text(base, "x", cmd, (faults, &names), &[], ""),
            path,
        )
        .is_ok()
    }

    #[test]
    fn the_nemesis_draws_the_same_applicable_schedule_for_the_same_seed_and_trial() {
        let (src, path) = gc_pause();
        let s = scenario::parse(&src, &path).expect("bundled scenario");
        let base = base_table(&src, &path).expect("table");
        let cat = catalogue(&s, false);
        let ok = |f: &[Fault]| loads(&base, &path, None, f);
        let draws: Vec<Vec<Fault>> = (1..=20)
            .map(|t| chaos_schedule(&s, &cat, (7, t), 3, false, ok))
            .collect();
        for (t, d) in draws.iter().enumerate() {
            assert!(!d.is_empty() && d.len() <= 3);
            assert!(ok(d));
            assert_eq!(
                d,
                &chaos_schedule(&s, &cat, (7, t as u32 + 1), 3, false, ok)
            );
        }
        assert!(
            draws.windows(2).any(|w| w[0] != w[1]),
            "trials draw different schedules"
        );
        assert_ne!(
            draws[0..5],
            (1..=5)
                .map(|t| chaos_schedule(&s, &cat, (8, t), 3, false, ok))
                .collect::<Vec<_>>()[..]
        );
    }

    #[test]
    fn the_nemesis_pauses_and_stalls_a_users_program_at_a_time_and_every_schedule_loads() {
        let (src, path) = gc_pause();
        let s = scenario::parse(&src, &path).expect("bundled scenario");
        let base = base_table(&src, &path).expect("table");
        let cat = catalogue(&s, true);
        let ok = |f: &[Fault]| loads(&base, &path, Some("true"), f);
        let draws: Vec<Fault> = (1..=40)
            .flat_map(|t| chaos_schedule(&s, &cat, (3, t), 3, true, ok))
            .collect();
        let timed = |f: &Fault| f.at_ms().is_some();
        assert!(
            draws
                .iter()
                .any(|f| timed(f) && matches!(f.action, Action::Pause { .. })),
            "{draws:?}"
        );
        assert!(
            draws
                .iter()
                .any(|f| timed(f) && matches!(f.action, Action::Crash { .. })),
            "{draws:?}"
        );
        for message in NetMessage::ALL {
            let stall = |f: &&Fault| {
                f.is_stall() && matches!(f.action, Action::Net { message: m, .. } if m == message)
            };
            assert!(
                draws.iter().any(|f| stall(&f)),
                "no {message:?} stall in {draws:?}"
            );
        }
    }

    #[test]
    fn a_worker_stopped_at_two_points_is_not_expressible() {
        let (src, path) = gc_pause();
        let base = base_table(&src, &path).expect("table");
        let at = |point: Point| Fault {
            trigger: Trigger::After {
                worker: WorkerId(0),
                point,
            },
            action: Action::Pause {
                worker: WorkerId(0),
                duration_ms: 100,
                until: PauseEnd::Elapsed,
            },
        };
        let two = [at(Point::ReadOk), at(Point::WriteSent)];
        assert!(!loads(&base, &path, None, &two));
        assert!(crate::live::fault::conflict(&two, &["A".to_string()]).is_some());
    }

    #[test]
    fn a_rendered_finding_carries_its_expectation() {
        let (src, path) = gc_pause();
        let s = scenario::parse(&src, &path).expect("bundled scenario");
        let base = base_table(&src, &path).expect("table");
        let f = catalogue(&s, false)[2];
        let text = placement_text(
            &base,
            "found",
            None,
            (&[f], &s.worker_names()),
            &[ViolationKind::StaleWrite],
            "found by search",
        );
        assert!(text.starts_with("# found by search\n"), "{text}");
        let loaded = load_text(&text, &path).expect("loads");
        assert_eq!(loaded.name, "found");
        assert_eq!(loaded.find, vec![ViolationKind::StaleWrite]);
    }
}
