//! From a model counterexample to a fully scripted simulator scenario: the mechanical link
//! between the atomic-step models and the message-level protocol code.
//!
//! A counterexample is a sequence of atomic steps; the simulator runs real workers, a
//! coordinator and a resource that exchange messages with random latency. The conversion
//! gives every step its own moment in true time, one slot (`SLOT_MS`, 1 s) apart, which is two
//! orders of magnitude wider than the simulator's latency jitter (1–5 ms per hop), and then
//! makes each step happen at its moment with scripted faults only:
//!
//! | model step | simulator |
//! |---|---|
//! | `Acquire` (generation g) | a fresh worker (one op) starts at the step; the coordinator grants |
//! | `Read` | the worker's read (its 1st message to the resource) is delayed to the step |
//! | `SendWrite` | the worker's `work_ms` ends at the step, so the write leaves then |
//! | `DeliverWrite` | the write (its 2nd message to the resource) is delayed to the step |
//! | `CommitWrite` | the resource's `check_to_write_ms`: the same for every write (see below) |
//! | `Expire` | `ttl_ms`: no lease outlives its model expiry; the holder is never told |
//! | `Failover` (incr) | a `failover` fault at the step; replication never happens (huge lag) |
//! | a read/write the path never performs | that message is dropped |
//!
//! One worker per grant, not per model client: a model client that is granted twice acts for
//! two operations, and a simulator worker waits for its write's answer before its next op, so
//! it could not have two writes in flight. Generations, tokens and the resource's decisions,
//! which is all the properties read, are the same.
//!
//! Two steps have a fixed duration in the simulator: a lease lasts `ttl_ms` and a checked
//! write commits `check_to_write_ms` after its check, for every grant and every write. A lease
//! only has to be gone before the next grant, so `ttl_ms` is the shortest acquire-to-expiry
//! span of the path. The commit delay must be exact, so step times are solved as difference
//! constraints (longest paths, Bellman–Ford): consecutive steps at least a slot apart, and
//! commit − check equal for every write. That needs commits in check order; when the search
//! found checks in the other order, consecutive passing checks are reordered (they commute: a
//! check reads the fence and changes nothing) and the reordered path is replayed through the
//! model, which must still reach the same violation, before anything is written.
//!
//! Steps the simulator has no scripted counterpart for yet — `Replicate`, a second failover,
//! an incr failover whose backup keeps a replicated lease live, consensus failovers,
//! zk-sequential — are reported as errors naming the step, never
//! approximated.

use super::action::{Action, Event, Outcome};
use super::counterexample::{replay, Counterexample, Step};
use super::lock_model::LockModel;
/// The simulator protocol a model's protocol is scripted as (it lives
/// beside the model's protocols, which ask it whether they fence).
pub use super::spec::simulator_protocol;
use super::spec::{Bounds, ModelSpec, Protocol, Violation};
use crate::protocol::ProtocolKind;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Time between consecutive steps of a counterexample in the scripted scenario.
pub const SLOT_MS: u64 = 1_000;

/// Seeds an emitted scenario runs; every one of them must show the violation.
pub const EMITTED_SEEDS: u64 = 20;

/// The history checker's name for a model violation (the same definitions).
pub fn violation_kind(v: Violation) -> crate::check::ViolationKind {
    use crate::check::ViolationKind;
    match v {
        Violation::TokenOrder => ViolationKind::TokenOrder,
        Violation::StaleWrite => ViolationKind::StaleWrite,
        Violation::LostUpdate => ViolationKind::LostUpdate,
        Violation::DuplicateEffect => ViolationKind::DuplicateEffect,
    }
}

/// The scenario file name for a counterexample: `<model>-<violation>.toml`.
pub fn file_name(spec: &ModelSpec, c: &Counterexample) -> String {
    format!(
        "{}-{}.toml",
        spec.name,
        c.violation.name().replace('_', "-")
    )
}

/// What one grant (one simulator worker) does along the path, as step indices.
#[derive(Clone, Copy, Debug, Default)]
struct Grant {
    client: u8,
    acquire: usize,
    read: Option<usize>,
    send: Option<usize>,
    deliver: Option<usize>,
    commit: Option<usize>,
    /// fenced-check-then-write: the delivery passed the check (its commit is separate).
    checked: bool,
    expire: Option<usize>,
}

/// Why paths of `protocol` (simulator protocol `kind`) are not scripted, if they are not.
fn unscripted(protocol: Protocol, kind: ProtocolKind) -> Option<String> {
    if kind == ProtocolKind::ZkSequential {
        // The agreement with the simulator is checked (tests/it/model/scenarios.rs);
        // scripting is not: sequential nodes and watches have no scripted form.
        return Some(
            "zk-sequential paths (sequential nodes, watches) are not scripted; the model is safe, so it has no counterexample to emit"
                .into(),
        );
    }
    if protocol.is_pair() {
        // No scripted form for a pair node's own promotion (no worker acquires).
        return Some(format!(
            "{} paths (self-promotions of a pair's nodes) are not scripted; the simulator's bundled scenarios of {} are compared with the model's verdict instead, and `fencesim check --code {}` scripts the code's own counterexample",
            protocol.id(),
            kind.id(),
            kind.id()
        ));
    }
    if protocol.has_revisions() {
        // The agreement with the simulator is checked (tests/it/model/scenarios.rs);
        // scripting is not: a key's put, its answer and the decision on it are separate
        // steps of the model, with no scripted form.
        return Some(format!(
            "{} paths (keys, revisions, answers acted on late) are not scripted; the simulator's bundled scenarios of {} are compared with the model's verdict instead",
            protocol.id(),
            kind.id()
        ));
    }
    if protocol.has_effect_sink() {
        // The agreement with the simulator is checked (tests/it/model/scenarios.rs); the
        // scripting has no form for the sink's requests (a retry needs a worker's request
        // timeout inside the run, which every emitted scenario sets beyond it).
        return Some(format!(
            "{} paths (requests to the effect sink) are not scripted; the simulator's bundled scenarios of {} are compared with the model's verdict instead",
            protocol.id(),
            kind.id()
        ));
    }
    None
}

/// Writes `counterexample` of `spec` as scenario TOML (schema_version 1).
pub fn to_scenario(spec: &ModelSpec, counterexample: &Counterexample) -> Result<String, String> {
    let b = spec.bounds;
    let kind = simulator_protocol(b.protocol).ok_or_else(|| {
        format!(
            "{} has no simulator protocol yet, so its counterexamples cannot be scripted",
            b.protocol.id()
        )
    })?;
    if let Some(why) = unscripted(b.protocol, kind) {
        return Err(why);
    }
    let c = scripted_path(spec, counterexample)?;
    let steps = &c.steps;
    let n = steps.len();
    if n == 0 {
        return Err("an empty counterexample has nothing to script".into());
    }

    let (grants, failovers) = who_does_what(b.protocol, steps)?;

    let (times, check_to_write_ms) = solve_times(n, &grants)?;
    let t = |i: usize| times[i];
    let t_end = times[n - 1];
    // Both fixed durations of the simulator, read off the solved schedule.
    let ttl_ms = grants
        .iter()
        .filter_map(|g| g.expire.map(|e| t(e) - t(g.acquire)))
        .min()
        .unwrap_or(t_end + SLOT_MS);
    let max_time_ms = t_end + SLOT_MS;
    // Never time out and retransmit: a retransmitted write would be a second, undelayed copy.
    let request_timeout_ms = 10 * max_time_ms;

    let mut out = String::new();
    let name = format!(
        "model-{}-{}",
        spec.name,
        c.violation.name().replace('_', "-")
    );
    let _ = writeln!(
        out,
        "# Scripted by `fencesim check --emit-scenario` from the {}-step {} counterexample of model `{}`.",
        n, c.violation, spec.name
    );
    let _ = writeln!(out, "# Step k of the model happens at about k s of true time (timings solved in src/model/to_scenario.rs):");
    for (i, step) in steps.iter().enumerate() {
        let _ = writeln!(
            out,
            "#   {:>6} ms  {:>2}. {}",
            t(i),
            i + 1,
            step.description
        );
    }
    let _ = writeln!(out, "schema_version = 1");
    let _ = writeln!(out, "name = {}", quote(&name));
    let _ = writeln!(
        out,
        "description = {}",
        quote(&format!(
            "Model {} ({}) counterexample for {}, replayed by the simulator: one worker per grant, every step scripted.",
            spec.name,
            b.protocol.id(),
            c.violation
        ))
    );
    let _ = writeln!(out, "seeds = {EMITTED_SEEDS}");
    let _ = writeln!(out, "max_time_ms = {max_time_ms}");
    write_protocol(&mut out, kind, &b, max_time_ms, check_to_write_ms);
    let _ = writeln!(out, "\n[lease]\nttl_ms = {ttl_ms}");
    let _ = writeln!(
        out,
        "\n[workload]\nrequest_timeout_ms = {request_timeout_ms}\nmax_retries = 0"
    );
    let _ = writeln!(out, "\n[network]\nlatency_min_ms = 1\nlatency_max_ms = 5");

    write_workers_and_faults(&mut out, &grants, &failovers, &times, b.reads);

    write_expect(&mut out, &c, b.reads);
    Ok(out)
}

/// The `[protocol]` section: the simulator protocol and what the path
/// needs of it (no replication within the path, the check-to-write step).
fn write_protocol(
    out: &mut String,
    kind: ProtocolKind,
    b: &Bounds,
    max_time_ms: u64,
    check_to_write_ms: u64,
) {
    let _ = writeln!(out, "\n[protocol]\nkind = {}", quote(kind.id()));
    if b.fence_reads {
        let _ = writeln!(out, "fence_reads = true");
    }
    match kind {
        ProtocolKind::IncrBesideLease => {
            let _ = writeln!(out, "replicas = 2");
            let _ = writeln!(
                out,
                "# The path never replicates: the backup never hears of any INCR."
            );
            let _ = writeln!(out, "replication_lag_ms = {}", 10 * max_time_ms);
        }
        ProtocolKind::ConsensusGeneration => {
            let _ = writeln!(out, "replicas = {}", b.replicas);
        }
        ProtocolKind::FencedCheckThenWrite => {
            let _ = writeln!(out, "check_to_write_ms = {check_to_write_ms}");
        }
        _ => {}
    }
}

/// Why a step of this kind has no scripted form, if it has none.
fn unscripted_event(event: &Event) -> Option<&'static str> {
    Some(match event {
        Event::PromotedWithLease { .. } => {
            "a failover whose promoted backup still holds a replicated lease is not scripted yet"
        }
        Event::Replicated { .. } => "replication at a chosen moment is not scripted yet",
        Event::JobDeleted { .. } => {
            "a queue's job deletion (the model's queue-claim is safe; its paths are not scripted)"
        }
        Event::NodeCreated { .. } | Event::NodeDeleted { .. } => {
            "a zk-sequential node creation or deletion (the model's zk-sequential is safe; its paths are not scripted)"
        }
        Event::EffectRequested { .. } | Event::EffectDelivered { .. } => {
            "a request to the effect sink is not scripted"
        }
        Event::SteppedDown { .. } | Event::WriteDropped { .. } => {
            "an active-passive step-down or dropped write is not scripted"
        }
        Event::KeyCreated { .. }
        | Event::KeyDeleted { .. }
        | Event::Answered { .. }
        | Event::AnswerLost { .. }
        | Event::Abandoned { .. }
        | Event::Decided { .. } => "an etcd key, answer or decision is not scripted",
        Event::LeaderStopped { .. } => "a consensus failover is not scripted yet",
        // Every other step has a scripted form (who_does_what): listed,
        // not a wildcard, so a new step is placed here or there on purpose.
        Event::Granted { .. }
        | Event::LeaseExpired { .. }
        | Event::ValueRead { .. }
        | Event::WriteSent { .. }
        | Event::WriteDelivered { .. }
        | Event::WriteCommitted { .. }
        | Event::FailedOver { .. }
        | Event::Proposed { .. }
        | Event::ProposalReached { .. }
        | Event::AckHeard { .. }
        | Event::GaveUp { .. }
        | Event::Reported { .. }
        | Event::Heard { .. } => return None,
    })
}

/// Who does what, when (step indices): one grant per worker, with the
/// steps of its read, send, delivery, commit and expiry, and the steps at
/// which the primary fails over.
fn who_does_what(protocol: Protocol, steps: &[Step]) -> Result<(Vec<Grant>, Vec<usize>), String> {
    let mut grants: Vec<Grant> = Vec::new();
    let mut by_generation: BTreeMap<u8, usize> = BTreeMap::new();
    let mut failovers = Vec::new();
    let mut holder: Option<usize> = None;
    for (i, step) in steps.iter().enumerate() {
        let unsupported =
            |what: &str| Err(format!("step {} ({}): {what}", i + 1, step.description));
        if let Some(what) = unscripted_event(&step.event) {
            return unsupported(what);
        }
        match step.event {
            Event::Granted {
                client, generation, ..
            } => {
                by_generation.insert(generation, grants.len());
                holder = Some(grants.len());
                grants.push(Grant {
                    client,
                    acquire: i,
                    ..Grant::default()
                });
            }
            Event::LeaseExpired { .. } => {
                let g = holder.take().ok_or("expiry without a holder")?;
                grants[g].expire = Some(i);
            }
            Event::ValueRead { generation, .. } => {
                grant_mut(&mut grants, &by_generation, generation)?.read = Some(i);
            }
            Event::WriteSent { generation, .. } => {
                grant_mut(&mut grants, &by_generation, generation)?.send = Some(i);
            }
            Event::WriteDelivered {
                generation,
                outcome,
                ..
            } => {
                let g = grant_mut(&mut grants, &by_generation, generation)?;
                g.deliver = Some(i);
                g.checked = outcome == Outcome::CheckPassed;
            }
            Event::WriteCommitted { generation, .. } => {
                grant_mut(&mut grants, &by_generation, generation)?.commit = Some(i);
            }
            Event::FailedOver { .. } if protocol == Protocol::IncrBesideLease => {
                if !failovers.is_empty() {
                    return unsupported("a second failover is not scripted yet (the restarted primary's counter differs from the model's backup)");
                }
                failovers.push(i);
                holder = None;
            }
            Event::FailedOver { .. } => {
                return unsupported(
                    "consensus failovers with uncommitted generations are not scripted yet",
                )
            }
            // The quorum rounds' steps script as the grant they end in.
            Event::Proposed { .. }
            | Event::ProposalReached { .. }
            | Event::AckHeard { .. }
            | Event::GaveUp { .. }
            | Event::Reported { .. }
            | Event::Heard { .. } => {}
            // Refused above: `unscripted_event`'s match names every step.
            _ => debug_assert!(unscripted_event(&step.event).is_some()),
        }
    }
    if grants.len() > 26 {
        return Err(format!(
            "{} grants: at most 26 workers are named",
            grants.len()
        ));
    }

    Ok((grants, failovers))
}

/// One `[[worker]]` per grant, then the faults that put each of its
/// messages (and each failover) at its solved time (`times`, per step).
fn write_workers_and_faults(
    out: &mut String,
    grants: &[Grant],
    failovers: &[usize],
    times: &[u64],
    reads: bool,
) {
    let t = |i: usize| times[i];
    let mut faults = String::new();
    for (w, g) in grants.iter().enumerate() {
        let worker = worker_name(w);
        // The read leaves as the grant arrives: at the model's Read step if it has one.
        let read_at = g.read.map_or(t(g.acquire), t);
        let work_ms = match g.send {
            Some(s) => t(s) - read_at,
            None => SLOT_MS,
        };
        let _ = writeln!(
            out,
            "\n# model client {}, generation {}\n[[worker]]\nname = {}\nstart_ms = {}\nops = 1\nwork_ms = {work_ms}",
            g.client,
            w + 1,
            quote(&worker),
            t(g.acquire)
        );
        let link = format!(
            "from = {}\nto = \"resource/0\"",
            quote(&format!("worker/{worker}"))
        );
        if reads {
            match g.read {
                Some(r) if t(r) > t(g.acquire) => {
                    let _ = writeln!(faults, "\n# {worker}'s read reaches the resource at step {}\n[[fault]]\nkind = \"delay\"\n{link}\nnth = 1\ndelay_ms = {}", r + 1, t(r) - t(g.acquire));
                }
                Some(_) => {}
                None => {
                    let _ = writeln!(faults, "\n# {worker} never reads within the path\n[[fault]]\nkind = \"drop\"\n{link}\nnth = 1");
                    continue;
                }
            }
        }
        match (g.send, g.deliver) {
            (Some(s), Some(d)) => {
                let _ = writeln!(faults, "\n# {worker}'s write, sent at step {}, reaches the resource at step {}\n[[fault]]\nkind = \"delay\"\n{link}\nnth = 2\ndelay_ms = {}", s + 1, d + 1, t(d) - t(s));
            }
            (Some(s), None) => {
                let _ = writeln!(faults, "\n# {worker}'s write (step {}) never arrives within the path\n[[fault]]\nkind = \"drop\"\n{link}\nnth = 2", s + 1);
            }
            (None, _) => {
                let _ = writeln!(faults, "\n# {worker} never writes within the path\n[[fault]]\nkind = \"drop\"\n{link}\nnth = 2");
            }
        }
    }
    for &f in failovers {
        let _ = writeln!(faults, "\n# step {}: the primary fails before replicating\n[[fault]]\nkind = \"failover\"\nat_ms = {}", f + 1, t(f));
    }
    out.push_str(&faults);
}

/// The `[expect]` section: every violation the path shows must be found on
/// every emitted seed; what the script cannot judge is allowed.
fn write_expect(out: &mut String, c: &Counterexample, reads: bool) {
    let mut found: Vec<Violation> = c
        .steps
        .iter()
        .flat_map(|s| s.violations.iter().copied())
        .collect();
    found.sort();
    found.dedup();
    assert!(
        found.contains(&c.violation),
        "the path ends in its violation"
    );
    let must: Vec<String> = found
        .iter()
        .map(|v| {
            format!(
                "{{ kind = {}, min_failing_seeds = {EMITTED_SEEDS} }}",
                quote(v.name())
            )
        })
        .collect();
    let _ = writeln!(out, "\n[expect]\nmust_find = [{}]", must.join(", "));
    // The script drops the requests the path never completes and disables
    // retransmission, so those workers never finish: the run's liveness is
    // not what the model judges. Without reads it does not judge lost
    // updates either (the simulator's workers do read).
    let allowed = if reads {
        r#"["liveness"]"#
    } else {
        r#"["lost_update", "liveness"]"#
    };
    let _ = writeln!(out, "allow = {allowed}");
}

fn grant_mut<'a>(
    grants: &'a mut [Grant],
    by_generation: &BTreeMap<u8, usize>,
    generation: u8,
) -> Result<&'a mut Grant, String> {
    let i = by_generation
        .get(&generation)
        .ok_or_else(|| format!("generation {generation} acts before it is granted"))?;
    Ok(&mut grants[*i])
}

fn worker_name(index: usize) -> String {
    char::from(b'A' + index as u8).to_string()
}

/// `s` as a TOML string.
pub fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Step times in ms: `t[i+1] >= t[i] + SLOT_MS`; commit − check equal for every committed
/// write; a check that never commits within the path commits after its end. Longest paths over
/// difference constraints; a positive cycle means no schedule exists. Also returns the
/// check-to-write delay.
fn solve_times(n: usize, grants: &[Grant]) -> Result<(Vec<u64>, u64), String> {
    let slot = SLOT_MS as i64;
    let committed: Vec<(usize, usize)> = grants
        .iter()
        .filter_map(|g| Some((g.deliver.filter(|_| g.checked)?, g.commit?)))
        .collect();
    let pending: Vec<usize> = grants
        .iter()
        .filter(|g| g.checked && g.commit.is_none())
        .filter_map(|g| g.deliver)
        .collect();
    // The delay every committed write needs at least; stretching makes the others match.
    let mut delay = committed
        .iter()
        .map(|&(d, c)| (c - d) as i64 * slot)
        .max()
        .unwrap_or(0);
    if committed.is_empty() {
        // Nothing commits within the path: commit well after it.
        delay = (n as i64 + 2) * slot;
    }
    // Edges (from, to, w): t[to] >= t[from] + w.
    let mut edges: Vec<(usize, usize, i64)> =
        (0..n.saturating_sub(1)).map(|i| (i, i + 1, slot)).collect();
    for &(d, c) in &committed {
        edges.push((d, c, delay));
        edges.push((c, d, -delay));
    }
    for &d in &pending {
        edges.push((n - 1, d, 2 * slot - delay));
    }
    let t = longest_paths(n, &edges, slot).ok_or(
        "no schedule: the checked writes commit in an order a constant check-to-write delay cannot produce",
    )?;
    for &(d, c) in &committed {
        assert_eq!(
            t[c] - t[d],
            delay,
            "every write commits after the same delay"
        );
    }
    Ok((t.into_iter().map(|x| x as u64).collect(), delay as u64))
}

/// Longest paths over difference constraints `(from, to, w)`, meaning
/// `t[to] >= t[from] + w`, with every `t` at least `floor` (Bellman–Ford);
/// None when a positive cycle means no schedule exists.
pub fn longest_paths(n: usize, edges: &[(usize, usize, i64)], floor: i64) -> Option<Vec<i64>> {
    let mut t = vec![floor; n];
    for _ in 0..=n {
        let mut changed = false;
        for &(from, to, w) in edges {
            if t[to] < t[from] + w {
                t[to] = t[from] + w;
                changed = true;
            }
        }
        if !changed {
            return Some(t);
        }
    }
    None
}

/// The path the scenario scripts: the counterexample itself, or, for fenced-check-then-write,
/// the counterexample with its checks in commit order. The simulator's resource commits each
/// checked write a fixed time after its check, so commits follow check order; if the search
/// found them in another order, the runs of consecutive passing checks are reordered to match
/// the commits, and the model replays the new path, which must reach the same violation.
pub fn scripted_path(spec: &ModelSpec, c: &Counterexample) -> Result<Counterexample, String> {
    let commit_order: Vec<u8> = c
        .steps
        .iter()
        .filter_map(|s| match s.event {
            Event::WriteCommitted { generation, .. } => Some(generation),
            _ => None,
        })
        .collect();
    let is_check = |e: &Event| {
        matches!(
            e,
            Event::WriteDelivered {
                outcome: Outcome::CheckPassed,
                ..
            }
        )
    };
    let check_order: Vec<u8> = c
        .steps
        .iter()
        .filter_map(|s| match s.event {
            Event::WriteDelivered {
                generation,
                outcome: Outcome::CheckPassed,
                ..
            } if commit_order.contains(&generation) => Some(generation),
            _ => None,
        })
        .collect();
    if check_order == commit_order {
        return Ok(c.clone());
    }
    let mut actions = c.actions();
    let mut i = 0;
    while i < c.steps.len() {
        if !is_check(&c.steps[i].event) {
            i += 1;
            continue;
        }
        let run_end = (i..c.steps.len())
            .find(|&j| !is_check(&c.steps[j].event))
            .unwrap_or(c.steps.len());
        let mut gens: Vec<u8> = actions[i..run_end]
            .iter()
            .map(|a| match a {
                Action::DeliverWrite { gen } => *gen,
                _ => unreachable!("a check is a DeliverWrite"),
            })
            .collect();
        let rank = |g: &u8| {
            commit_order
                .iter()
                .position(|x| x == g)
                .unwrap_or(usize::MAX)
        };
        gens.sort_by_key(rank);
        for (k, gen) in gens.into_iter().enumerate() {
            actions[i + k] = Action::DeliverWrite { gen };
        }
        i = run_end;
    }
    let mut bounds = spec.bounds;
    bounds.symmetry = false;
    let reordered = replay(&LockModel::new(bounds), c.violation, &actions)
        .map_err(|e| format!("reordering the checks to commit order broke the path: {e}"))?;
    Ok(reordered)
}
