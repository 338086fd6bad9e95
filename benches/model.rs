//! Model-checking throughput, two cases.
//!
//! **consensus-generation**: unique states per second proving consensus-generation, without
//! and with symmetry reduction (criterion's "thrpt" line is unique states/s). Since its
//! quorum rounds became steps of their own (proposals accepted voter by voter), one proof at
//! 5 clients / 8 grants passes 3e7 states (no verdict in 5 minutes on a 2-core machine), so
//! the default bound is 4 clients / 4 grants (850,241 unique states without symmetry, ~1 s);
//! `FENCESIM_BENCH_FULL=1` adds 4 / 5. The unique-state counts are printed once per
//! bound, so the symmetry reduction shows as a ratio next to the times.
//!
//! **fenced-cas vs stateright** (issue #35): `fencesim check`'s proof of a fenced-cas spec
//! (`check` on the parsed spec, 2 threads, no symmetry) against `Lock` below, a minimal
//! lease + fencing-token lock written directly against stateright 0.31 and checked by
//! stateright's own DFS (2 threads). The figure is the ratio of per-transition rates (states
//! generated per second of wall time, duplicates included), fencesim over stateright: above 1,
//! fencesim is faster. Criterion times both at 5 clients / 8 grants; then one pass at the
//! issue's bound, 5 clients / 10 grants, alternates the two `FENCESIM_BENCH_ROUNDS` times
//! (default 3; 0 skips it) and prints each round's ratio, the median and the range.
//!
//! `cargo bench --bench model` (about 4 minutes on 2 cores);
//! `cargo bench --bench model -- stateright` runs only the second case.

#[path = "common/rounds.rs"]
mod rounds;

use criterion::{criterion_group, Criterion, Throughput};
use fencesim::model::{check, parse, prove, Bounds, CheckOptions, LockModel, ModelSpec, Protocol};
use stateright::{Checker, Model, Property};
use std::path::Path;
use std::time::{Duration, Instant};

fn bounds(clients: u8, grants_max: u8, symmetry: bool) -> Bounds {
    Bounds {
        protocol: Protocol::ConsensusGeneration,
        clients,
        grants_max,
        failovers_max: 0,
        replicas: 3,
        reads: false,
        fence_reads: false,
        symmetry,
        fence: true,
    }
}

fn consensus_generation(c: &mut Criterion) {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // 4 clients: the model with its quorum rounds as steps (proposals,
    // acceptances) has ~850,000 states at 4 grants, over 3e7 at 5 clients
    // and 8 grants (no verdict in 5 minutes).
    let clients = 4u8;
    let mut grants = vec![4u8];
    if std::env::var_os("FENCESIM_BENCH_FULL").is_some() {
        grants.push(5);
    }
    let mut group = c.benchmark_group("consensus-generation");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(20));
    for grants_max in grants {
        let mut counts = Vec::new();
        for (symmetry, thread_counts) in [(false, vec![1, threads]), (true, vec![threads])] {
            let model = LockModel::new(bounds(clients, grants_max, symmetry));
            let unique = prove(&model, threads, None).stats.unique_states;
            counts.push(unique);
            group.throughput(Throughput::Elements(unique as u64));
            for t in thread_counts {
                let name = format!(
                    "{clients} clients/{grants_max} grants/{}/{t} thread{}",
                    if symmetry { "symmetry" } else { "no symmetry" },
                    if t == 1 { "" } else { "s" }
                );
                group.bench_function(name, |b| {
                    b.iter(|| {
                        let proof = prove(&model, t, None);
                        assert!(proof.violated.is_empty());
                        assert_eq!(proof.stats.unique_states, unique);
                    })
                });
            }
        }
        eprintln!(
            "consensus-generation {clients} clients/{grants_max} grants: {} unique states without symmetry, {} with ({:.1}x fewer)",
            counts[0],
            counts[1],
            counts[0] as f64 / counts[1] as f64
        );
    }
    group.finish();
}

/// The baseline: a lease + fencing-token lock as a stateright user would write it, checked by
/// stateright's DFS. The same protocol as fencesim's fenced-cas model: one coordinator hands
/// out the lease with token = grant number, the lease may expire at any moment, each grant
/// sends one write that stays in flight until the resource processes it, and the resource
/// accepts a write whose token is at least its fence (and raises the fence to it).
mod baseline {
    use super::*;

    pub const CLIENTS: usize = 5;
    pub const GRANTS_CAP: usize = 10;

    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    pub struct LockState {
        /// Client holding the live lease.
        holder: Option<u8>,
        /// Grants issued so far; the next grant's token is `issued + 1`.
        issued: u8,
        /// Each client's token until it sends its write (0: none).
        held: [u8; CLIENTS],
        /// Writes sent and not yet processed, by token.
        in_flight: [bool; GRANTS_CAP + 1],
        /// Resource: the greatest token accepted.
        fence: u8,
        /// Resource: the token of the write whose value is current (0: initial value).
        written: u8,
        /// Resource: accepted a write older than the current value.
        stale_written: bool,
    }

    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    pub enum LockAction {
        Acquire(u8),
        Expire,
        SendWrite(u8),
        Deliver(u8),
    }

    pub struct Lock {
        pub clients: u8,
        pub grants_max: u8,
    }

    impl Model for Lock {
        type State = LockState;
        type Action = LockAction;

        fn init_states(&self) -> Vec<LockState> {
            vec![LockState {
                holder: None,
                issued: 0,
                held: [0; CLIENTS],
                in_flight: [false; GRANTS_CAP + 1],
                fence: 0,
                written: 0,
                stale_written: false,
            }]
        }

        fn actions(&self, s: &LockState, actions: &mut Vec<LockAction>) {
            for c in 0..self.clients {
                let held = s.held[c as usize];
                if s.holder.is_none() && s.issued < self.grants_max && held == 0 {
                    actions.push(LockAction::Acquire(c));
                }
                if held != 0 {
                    actions.push(LockAction::SendWrite(c));
                }
            }
            if s.holder.is_some() {
                actions.push(LockAction::Expire);
            }
            for token in 1..=self.grants_max {
                if s.in_flight[token as usize] {
                    actions.push(LockAction::Deliver(token));
                }
            }
        }

        fn next_state(&self, s: &LockState, action: LockAction) -> Option<LockState> {
            let mut n = s.clone();
            match action {
                LockAction::Acquire(c) => {
                    n.issued += 1;
                    n.held[c as usize] = n.issued;
                    n.holder = Some(c);
                }
                LockAction::Expire => n.holder = None,
                LockAction::SendWrite(c) => {
                    n.in_flight[s.held[c as usize] as usize] = true;
                    n.held[c as usize] = 0;
                }
                LockAction::Deliver(token) => {
                    n.in_flight[token as usize] = false;
                    if token >= s.fence {
                        n.stale_written |= token < s.written;
                        n.fence = token;
                        n.written = token;
                    }
                }
            }
            Some(n)
        }

        fn properties(&self) -> Vec<Property<Self>> {
            vec![
                Property::always("stale write rejected", |_, s: &LockState| !s.stale_written),
                Property::sometimes("write accepted", |_, s: &LockState| s.written > 0),
            ]
        }
    }
}

const THREADS: usize = 2;

fn fenced_cas_spec(clients: u8, grants_max: u8) -> ModelSpec {
    let text = format!(
        "schema_version = 1\nprotocol = \"fenced-cas\"\nclients = {clients}\n\
         grants_max = {grants_max}\n\n[expect]\nverdict = \"safe\"\n"
    );
    parse(Path::new("bench.toml"), "bench", &text).expect("bench spec parses")
}

/// One `fencesim check` proof: (transitions, unique states, wall time).
fn run_fencesim(spec: &ModelSpec) -> (usize, usize, Duration) {
    let options = CheckOptions {
        threads: THREADS,
        progress: None,
        interrupt: None,
    };
    let started = Instant::now();
    let report = check(spec, &options);
    let elapsed = started.elapsed();
    assert!(report.meets_expectation(), "{:?}", report.mismatches);
    let stats = report.proof.expect("a safe spec is proved").stats;
    (stats.total_states, stats.unique_states, elapsed)
}

/// One stateright DFS of the baseline: (transitions, unique states, wall time).
fn run_stateright(clients: u8, grants_max: u8) -> (usize, usize, Duration) {
    assert!(clients as usize <= baseline::CLIENTS && grants_max as usize <= baseline::GRANTS_CAP);
    let started = Instant::now();
    let checker = baseline::Lock {
        clients,
        grants_max,
    }
    .checker()
    .threads(THREADS)
    .spawn_dfs()
    .join();
    let elapsed = started.elapsed();
    checker.assert_properties();
    (checker.state_count(), checker.unique_state_count(), elapsed)
}

fn rate((transitions, _, elapsed): (usize, usize, Duration)) -> f64 {
    transitions as f64 / elapsed.as_secs_f64()
}

fn fenced_cas_vs_stateright(c: &mut Criterion) {
    let (clients, grants_max) = (5, 8);
    let spec = fenced_cas_spec(clients, grants_max);
    let mut group = c.benchmark_group("fenced-cas vs stateright");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(run_fencesim(&spec).0 as u64));
    group.bench_function(
        format!("fencesim check/{clients} clients/{grants_max} grants"),
        |b| b.iter(|| run_fencesim(&spec)),
    );
    group.throughput(Throughput::Elements(
        run_stateright(clients, grants_max).0 as u64,
    ));
    group.bench_function(
        format!("stateright dfs/{clients} clients/{grants_max} grants"),
        |b| b.iter(|| run_stateright(clients, grants_max)),
    );
    group.finish();
}

/// The bound, fencesim and stateright alternately, one ratio per round.
fn alternating_rounds(rounds: usize) {
    let (clients, grants_max) = (5, 10);
    let spec = fenced_cas_spec(clients, grants_max);
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let ours = run_fencesim(&spec);
        let theirs = run_stateright(clients, grants_max);
        let ratio = rate(ours) / rate(theirs);
        println!(
            "round {round}: fencesim {} transitions ({} unique) in {:.2} s = {:.2} M/s; \
             stateright {} ({} unique) in {:.2} s = {:.2} M/s; ratio {ratio:.2}x",
            ours.0,
            ours.1,
            ours.2.as_secs_f64(),
            rate(ours) / 1e6,
            theirs.0,
            theirs.1,
            theirs.2.as_secs_f64(),
            rate(theirs) / 1e6,
        );
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    if let (Some(low), Some(high)) = (ratios.first(), ratios.last()) {
        println!(
            "fenced-cas {clients} clients/{grants_max} grants, {THREADS} threads: fencesim check \
             at {:.2}x stateright's per-transition rate (median of {rounds} alternating rounds; \
             range {low:.2}-{high:.2}x; target >= 1.5x)",
            ratios[ratios.len() / 2]
        );
    }
}

criterion_group!(benches, consensus_generation, fenced_cas_vs_stateright);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    let rounds = rounds::rounds();
    let filtered_out = std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"fenced-cas vs stateright".contains(a.as_str()));
    if !filtered_out {
        alternating_rounds(rounds);
    }
}
