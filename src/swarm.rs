//! Swarm testing (`fencesim run --swarm`): each seed runs a different mix
//! of the scenario's random fault kinds, TigerBeetle-VOPR style.
//!
//! Groce et al. ("Swarm Testing", ISSTA 2012) observed that running every
//! fault at once at a fixed rate hides bugs that need one fault kind to be
//! *absent* or much more frequent: with GC pauses, crashes, partitions,
//! loss and delay all on, a pause long enough to outlive a lease is usually
//! cut short by a crash or a partition that makes the stale write fail. So
//! per seed, each of the five random kinds the scenario enables is switched
//! on or off (probability ½) and, if on, its rate is scaled by a factor
//! from [`RATE_FACTORS`] (clamped to 1). At least one available kind stays
//! on, else the seed would test nothing the scenario is about.
//!
//! Only *random* faults are swarmed: scripted faults are the premise of a
//! scenario ("A pauses after its read") and stay as written. A scenario
//! with no random faults is therefore unchanged by `--swarm`.
//!
//! The choices come from the dedicated named stream `swarm` of the seed
//! (see `sim::rng`), so they shift no other draw: with a mix that keeps
//! every rate, a swarm run is the plain run. Every probability costs the
//! same draws whatever its value, which keeps the streams aligned.

use crate::sim::rng::Rng;
use crate::sim::Options;

/// The random fault kinds, in draw order; bit `i` of a mix is `KINDS[i]`.
pub const KINDS: [&str; 5] = ["pause", "crash", "partition", "loss", "delay"];

/// Multipliers applied to a scenario's base rate when a kind is on.
pub const RATE_FACTORS: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];

/// A set of fault kinds, one bit per entry of [`KINDS`].
pub type Mix = u8;

/// The kinds the scenario can produce at all (base rate > 0).
pub fn available(o: &Options) -> Mix {
    let r = &o.random;
    let n = &o.network;
    let on = [
        r.pause_probability > 0.0 && !r.pause_nodes.is_empty(),
        r.crash_probability > 0.0 && !r.crash_nodes.is_empty(),
        r.partition_probability > 0.0 && o.nodes.len() > 1,
        n.loss_probability > 0.0,
        n.delay_probability > 0.0 && n.delay_max_ns >= 1_000_000,
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

/// The options seed `seed` runs under `--swarm`, and the mix it drew.
pub fn configure(base: &Options, seed: u64) -> (Options, Mix) {
    let avail = available(base);
    let mut rng = Rng::stream(seed, "swarm");
    let mut mix: Mix = 0;
    let mut factor = [1.0; 5];
    for (i, f) in factor.iter_mut().enumerate() {
        // Two draws per kind, always, so the stream layout never depends on
        // which kinds the scenario has.
        let on = rng.chance(0.5);
        *f = RATE_FACTORS[rng.below(RATE_FACTORS.len() as u64) as usize];
        if on && avail & (1 << i) != 0 {
            mix |= 1 << i;
        }
    }
    if mix == 0 && avail != 0 {
        let pick = rng.below(avail.count_ones() as u64) as usize;
        let bit = (0..KINDS.len())
            .filter(|i| avail & (1 << i) != 0)
            .nth(pick)
            .expect("pick < number of available kinds");
        mix = 1 << bit;
        factor[bit] = 1.0;
    }
    debug_assert_eq!(mix & !avail, 0, "a mix only holds available kinds");
    let rate = |base: f64, i: usize| {
        if mix & (1 << i) != 0 {
            (base * factor[i]).min(1.0)
        } else {
            0.0
        }
    };
    let mut o = base.clone();
    o.random.pause_probability = rate(base.random.pause_probability, 0);
    o.random.crash_probability = rate(base.random.crash_probability, 1);
    o.random.partition_probability = rate(base.random.partition_probability, 2);
    o.network.loss_probability = rate(base.network.loss_probability, 3);
    o.network.delay_probability = rate(base.network.delay_probability, 4);
    (o, mix)
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
        assert_eq!(avail, 0b11111, "the bundled random scenario has all five");
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let (o, mix) = configure(&s.options, seed);
            assert_ne!(mix, 0);
            assert_eq!(mix & !avail, 0);
            assert_eq!(o.random.pause_probability > 0.0, mix & 1 != 0);
            assert_eq!(o.network.delay_probability > 0.0, mix & 16 != 0);
            assert!(o.random.crash_probability <= 1.0);
            seen.insert(mix);
        }
        assert!(
            seen.len() > 20,
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
        assert_eq!(label(0b01001), "pause+loss");
        assert_eq!(from_names(names(0b10110)), Ok(0b10110));
        assert!(from_names(["gc"]).is_err());
    }
}
