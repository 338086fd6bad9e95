//! Swarm testing (`fencesim run --swarm`): each seed runs a different mix
//! of fault kinds, TigerBeetle-VOPR style.
//!
//! Groce et al. ("Swarm Testing", ISSTA 2012) observed that running every
//! fault at once at a fixed rate hides bugs that need one fault kind to be
//! *absent* or much more frequent: with GC pauses, crashes, partitions,
//! loss and delay all on, a pause long enough to outlive a lease is usually
//! cut short by a crash or a partition that makes the stale write fail. So
//! per seed, every kind of [`KINDS`] the topology allows is switched on or
//! off (probability ½) and, if on, its rate is the scenario's base rate —
//! or [`DEFAULT_RATES`] where the scenario has none — scaled by a factor
//! from [`RATE_FACTORS`] (clamped to 1). At least one available kind stays
//! on, else the seed would test nothing.
//!
//! The vocabulary is the whole fault catalogue, not just what the scenario
//! turned on: pauses, crashes per role (worker, lock server, resource),
//! two-way and one-way partitions, loss, duplication, delay spikes, clock
//! drift with a jump, coordinator failover and anchored faults (see
//! `sim::faults`). A user's own scenario with one random knob therefore
//! gets the full swarm.
//!
//! Only scenarios with random faults are swarmed, and only their random
//! faults: scripted faults are the premise of a scenario ("A pauses after
//! its read") and stay as written. A scenario with no random faults is
//! therefore unchanged by `--swarm`.
//!
//! The swarm's network chaos ends with its fault window
//! ([`crate::sim::CalmNetwork`]): from then on no per-message rate is above
//! the scenario's own, so the end of a swarmed run is a recovery period and
//! a worker still unfinished there is a liveness failure of the protocol,
//! not of a 4x loss rate that never let up.
//!
//! The choices come from the dedicated named stream `swarm` of the seed
//! (see `sim::rng`), so they shift no other draw. Every kind costs the same
//! draws whatever the scenario, which keeps the stream aligned.

use crate::protocol::{NodeId, Role};
use crate::sim::rng::Rng;
use crate::sim::{CalmNetwork, NetworkOptions, Options};

/// The fault kinds, in draw order; bit `i` of a mix is `KINDS[i]`.
pub const KINDS: [&str; 12] = [
    "pause",
    "crash_worker",
    "crash_server",
    "crash_resource",
    "partition",
    "one_way",
    "loss",
    "duplicate",
    "delay",
    "clock",
    "failover",
    "anchored",
];

const PAUSE: usize = 0;
const CRASH_WORKER: usize = 1;
const CRASH_SERVER: usize = 2;
const CRASH_RESOURCE: usize = 3;
const PARTITION: usize = 4;
const ONE_WAY: usize = 5;
const LOSS: usize = 6;
const DUPLICATE: usize = 7;
const DELAY: usize = 8;
const CLOCK: usize = 9;
const FAILOVER: usize = 10;
const ANCHORED: usize = 11;

/// Base rates for kinds the scenario leaves at zero (the bundled random
/// scenarios' rates; `clock` is a drift of 20,000 ppm, `one_way` the
/// chance a partition is one-way).
pub const DEFAULT_RATES: [f64; 12] = [
    0.5, 0.1, 0.1, 0.1, 0.2, 0.5, 0.02, 0.02, 0.03, 0.02, 0.3, 0.5,
];

/// Multipliers applied to a base rate when a kind is on.
pub const RATE_FACTORS: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];

/// A set of fault kinds, one bit per entry of [`KINDS`].
pub type Mix = u16;

const MS: u64 = 1_000_000;

fn has_role(o: &Options, f: impl Fn(&Role) -> bool) -> bool {
    o.nodes.iter().any(|n| f(&n.role))
}

fn is_server(r: &Role) -> bool {
    matches!(r, Role::Coordinator(_) | Role::Server(_))
}

fn is_worker_like(r: &Role) -> bool {
    matches!(r, Role::Worker(_) | Role::Alt(_))
}

/// Whether the scenario has random faults at all (else swarm leaves it be).
pub fn has_random_faults(o: &Options) -> bool {
    let r = &o.random;
    let n = &o.network;
    r.pause_probability > 0.0
        || r.crash_probability > 0.0
        || r.partition_probability > 0.0
        || r.failover_probability > 0.0
        || r.anchored_probability > 0.0
        || n.loss_probability > 0.0
        || n.delay_probability > 0.0
        || n.duplicate_probability > 0.0
}

/// The kinds the scenario's topology allows (none without random faults).
pub fn available(o: &Options) -> Mix {
    if !has_random_faults(o) {
        return 0;
    }
    let several = o.nodes.len() > 1;
    let on = [
        has_role(o, is_worker_like),
        has_role(o, is_worker_like),
        has_role(o, is_server),
        has_role(o, |r| matches!(r, Role::Resource(_))),
        several,
        several,
        true,
        true,
        true,
        true,
        o.protocol.replicas > 1 && has_role(o, |r| matches!(r, Role::Coordinator(_))),
        true,
    ];
    on.iter()
        .enumerate()
        .fold(0, |m, (i, &b)| m | ((b as Mix) << i))
}

/// Kind names of a mix, in [`KINDS`] order.
pub fn names(mix: Mix) -> Vec<&'static str> {
    KINDS
        .iter()
        .enumerate()
        .filter(|(i, _)| mix & (1 << i) != 0)
        .map(|(_, k)| *k)
        .collect()
}

/// `pause+loss`, or `none`.
pub fn label(mix: Mix) -> String {
    let n = names(mix);
    if n.is_empty() {
        "none".to_string()
    } else {
        n.join("+")
    }
}

/// The mix named by kind names (inverse of [`names`]).
pub fn from_names<'a>(kinds: impl IntoIterator<Item = &'a str>) -> Result<Mix, String> {
    kinds.into_iter().try_fold(0, |m, k| {
        KINDS
            .iter()
            .position(|n| *n == k)
            .map(|i| m | (1 << i))
            .ok_or_else(|| format!("unknown swarm fault kind {k:?}; expected one of {KINDS:?}"))
    })
}

/// `base` if the scenario set it, else the default rate of kind `i`.
fn base_or_default(base: f64, i: usize) -> f64 {
    if base > 0.0 {
        base
    } else {
        DEFAULT_RATES[i]
    }
}

/// `(lo, hi)` if the scenario set a range, else the default one.
fn range_or(lo: u64, hi: u64, default: (u64, u64)) -> (u64, u64) {
    if hi > 0 {
        (lo, hi)
    } else {
        default
    }
}

/// The options seed `seed` runs under `--swarm`, and the mix it drew.
pub fn configure(base: &Options, seed: u64) -> (Options, Mix) {
    let avail = available(base);
    if avail == 0 {
        return (base.clone(), 0);
    }
    let mut rng = Rng::stream(seed, "swarm");
    let mut mix: Mix = 0;
    let mut factor = [1.0; KINDS.len()];
    for (i, f) in factor.iter_mut().enumerate() {
        // Two draws per kind, always, so the stream layout never depends on
        // which kinds the scenario has.
        let on = rng.chance(0.5);
        *f = RATE_FACTORS[rng.below(RATE_FACTORS.len() as u64) as usize];
        if on && avail & (1 << i) != 0 {
            mix |= 1 << i;
        }
    }
    // The clock kind's shape: which node, drift sign, jump time and size.
    let clock_node = rng.below(base.nodes.len().max(1) as u64) as usize;
    let drift_negative = rng.chance(0.5);
    let ttl_ms = (base.protocol.lease_ttl_ns / MS).max(1);
    let window_ms = (base.random.window_ns / MS)
        .max(base.max_time_ns / MS / 2)
        .max(1);
    let jump_at_ms = rng.below(window_ms);
    let jump_ms = rng.between(ttl_ms / 2, ttl_ms * 2) as i64;
    let jump_back = rng.chance(0.5);
    // "one_way" only shapes a partition: alone it would test nothing.
    if mix & !(1 << ONE_WAY) == 0 && avail != 0 {
        let bit = pick_kind(&mut rng, avail & !(1 << ONE_WAY));
        mix |= 1 << bit;
        factor[bit] = 1.0;
    }
    debug_assert_eq!(mix & !avail, 0, "a mix only holds available kinds");
    let on = |i: usize| mix & (1 << i) != 0;
    let rate = |b: f64, i: usize| {
        if on(i) {
            (base_or_default(b, i) * factor[i]).min(1.0)
        } else {
            0.0
        }
    };
    let mut o = base.clone();
    let b = &base.random;
    let r = &mut o.random;
    if r.window_ns == 0 {
        r.window_ns = window_ms * MS;
    }
    let workers: Vec<NodeId> = (0..base.nodes.len() as u16)
        .map(NodeId)
        .filter(|id| is_worker_like(&base.nodes[id.0 as usize].role))
        .collect();
    r.pause_probability = rate(b.pause_probability, PAUSE);
    if r.pause_nodes.is_empty() {
        r.pause_nodes = workers;
    }
    (r.pause_min_ns, r.pause_max_ns) = range_or(
        b.pause_min_ns,
        b.pause_max_ns,
        (1_000 * MS, 3 * ttl_ms * MS),
    );
    // Crashes: one rate, over the nodes of every role switched on.
    let crash_roles = [CRASH_WORKER, CRASH_SERVER, CRASH_RESOURCE];
    let crash_on: Vec<usize> = crash_roles.into_iter().filter(|&i| on(i)).collect();
    r.crash_probability = crash_on
        .first()
        .map_or(0.0, |&i| rate(b.crash_probability, i));
    r.crash_nodes = crash_nodes(base, &on);
    (r.restart_min_ns, r.restart_max_ns) =
        range_or(b.restart_min_ns, b.restart_max_ns, (500 * MS, 3_000 * MS));
    r.partition_probability = rate(b.partition_probability, PARTITION);
    r.partition_one_way = on(ONE_WAY);
    (r.partition_min_ns, r.partition_max_ns) = range_or(
        b.partition_min_ns,
        b.partition_max_ns,
        (1_000 * MS, 2 * ttl_ms * MS),
    );
    r.failover_probability = rate(b.failover_probability, FAILOVER);
    r.anchored_probability = rate(b.anchored_probability, ANCHORED);
    if r.anchored_max == 0 {
        r.anchored_max = 2;
    }
    let window_ns = o.random.window_ns;
    swarm_network(&mut o.network, &base.network, window_ns, ttl_ms, &rate);
    if on(CLOCK) {
        let ppm = (DEFAULT_RATES[CLOCK] * factor[CLOCK] * 1e6) as i64;
        let c = &mut o.nodes[clock_node].clock;
        c.drift_ppm = if drift_negative { -ppm } else { ppm };
        c.jumps.push((
            jump_at_ms * MS,
            if jump_back { -jump_ms } else { jump_ms } * MS as i64,
        ));
        c.jumps.sort_unstable();
    }
    (o, mix)
}

/// The nodes the swarm may crash: those of every role whose crash kind is
/// `on`.
fn crash_nodes(base: &Options, on: &dyn Fn(usize) -> bool) -> Vec<NodeId> {
    (0..base.nodes.len() as u16)
        .map(NodeId)
        .filter(|id| {
            let role = &base.nodes[id.0 as usize].role;
            (on(CRASH_WORKER) && is_worker_like(role))
                || (on(CRASH_SERVER) && is_server(role))
                || (on(CRASH_RESOURCE) && matches!(role, Role::Resource(_)))
        })
        .collect()
}

/// One of the kinds in `choices`, drawn evenly.
fn pick_kind(rng: &mut Rng, choices: Mix) -> usize {
    let pick = rng.below(choices.count_ones() as u64) as usize;
    (0..KINDS.len())
        .filter(|i| choices & (1 << i) != 0)
        .nth(pick)
        .expect("pick < number of available kinds")
}

/// The swarm's network rates (`rate`: a kind's rate, 0 when it is off),
/// calmed to the scenario's own after the fault window (`window_ns`).
fn swarm_network(
    n: &mut NetworkOptions,
    bn: &NetworkOptions,
    window_ns: u64,
    ttl_ms: u64,
    rate: &dyn Fn(f64, usize) -> f64,
) {
    n.loss_probability = rate(bn.loss_probability, LOSS);
    n.duplicate_probability = rate(bn.duplicate_probability, DUPLICATE);
    n.delay_probability = rate(bn.delay_probability, DELAY);
    if n.delay_max_ns == 0 {
        n.delay_max_ns = 2 * ttl_ms * MS;
    }
    // The chaos ends with the fault window: after it, no rate above the
    // scenario's own, so liveness is judged on a run that could recover.
    let calm = CalmNetwork {
        after_ns: window_ns,
        loss_probability: n.loss_probability.min(bn.loss_probability),
        delay_probability: n.delay_probability.min(bn.delay_probability),
        duplicate_probability: n.duplicate_probability.min(bn.duplicate_probability),
    };
    n.calm = (calm.rates() != n.rates()).then_some(calm);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_scenario() -> crate::scenario::Scenario {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenarios/random/random-faults-ttl-lease-del.toml"
        );
        crate::scenario::load(std::path::Path::new(path)).expect("bundled scenario loads")
    }

    #[test]
    fn every_seed_keeps_at_least_one_available_kind_and_only_those() {
        let s = random_scenario();
        let avail = available(&s.options);
        assert_eq!(
            avail,
            0b1011_1111_1111,
            "all but failover (one coordinator): {}",
            label(avail)
        );
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let (o, mix) = configure(&s.options, seed);
            assert_ne!(mix & !(1 << ONE_WAY), 0);
            assert_eq!(mix & !avail, 0);
            assert_eq!(o.random.pause_probability > 0.0, mix & 1 != 0);
            assert_eq!(o.network.delay_probability > 0.0, mix & (1 << DELAY) != 0);
            assert!(o.random.crash_probability <= 1.0);
            seen.insert(mix);
        }
        assert!(
            seen.len() > 100,
            "200 seeds explore many mixes: {}",
            seen.len()
        );
    }

    #[test]
    fn a_scenario_without_random_faults_is_unchanged() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenarios/article/gc-pause-stale-write.toml"
        );
        let s = crate::scenario::load(std::path::Path::new(path)).unwrap();
        let (o, mix) = configure(&s.options, 3);
        assert_eq!(mix, 0);
        assert_eq!(o, s.options);
    }

    #[test]
    fn mix_names_round_trip() {
        assert_eq!(label(0b01000001), "pause+loss");
        assert_eq!(from_names(names(0b1010_0110)), Ok(0b1010_0110));
        assert!(from_names(["gc"]).is_err());
    }
}
