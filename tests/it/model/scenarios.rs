//! The link between the model checker and the simulator, tested both ways:
//! - every counterexample of every bundled unsafe model, written as a scripted scenario, makes
//!   the simulator's message-level protocol code fail with the same violation kind, in every
//!   seed (latency jitter differs per seed);
//! - for every protocol both cover, the model's verdict equals the verdict of the bundled
//!   simulator scenarios of that protocol.

use fencesim::check::{self, ViolationKind};
use fencesim::model::to_scenario::{
    simulator_protocol, to_scenario, violation_kind, EMITTED_SEEDS,
};
use fencesim::model::{check as check_model, load, CheckOptions, ModelSpec, Verdict};
use fencesim::protocol::ProtocolKind;
use fencesim::{scenario, sim, suite};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn toml_files(dir: &Path) -> Vec<PathBuf> {
    scenario::collect(&[dir.to_path_buf()]).unwrap_or_else(|e| panic!("{e}"))
}

fn specs() -> Vec<ModelSpec> {
    toml_files(&root().join("models"))
        .iter()
        .map(|p| load(p).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

fn options() -> CheckOptions {
    CheckOptions {
        threads: 2,
        progress: None,
        interrupt: None,
    }
}

#[test]
fn every_counterexample_replays_in_the_simulator_with_the_same_violation_in_every_seed() {
    let mut scripted = 0;
    for spec in specs()
        .into_iter()
        .filter(|s| s.expected.verdict == Verdict::Unsafe)
    {
        let report = check_model(&spec, &options());
        assert!(
            report.meets_expectation(),
            "{}: {:?}",
            spec.name,
            report.mismatches
        );
        for c in report.counterexamples() {
            if spec.bounds.protocol.has_effect_sink()
                || spec.bounds.protocol.is_pair()
                || spec.bounds.protocol.has_revisions()
            {
                // Refused with the reason; its verdict is compared with the
                // simulator's scenarios below.
                let err = to_scenario(&spec, c)
                    .expect_err("effect, pair and etcd paths are not scripted");
                assert!(err.contains("are not scripted"), "{err}");
                continue;
            }
            let text = to_scenario(&spec, c).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            let file = format!("{}-{}.toml", spec.name, c.violation);
            let s = scenario::parse(&text, &file).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(s.seeds.end - s.seeds.start, EMITTED_SEEDS);
            // The same seeds the file names, then others far away: jitter must not matter.
            for seed in s.seeds.clone().chain(1_000_000..1_000_005) {
                let out = sim::run(&s.options, seed, false);
                let found = check::check(&out.history);
                let kinds: Vec<ViolationKind> = found.kinds().collect();
                assert!(
                    kinds.contains(&violation_kind(c.violation)),
                    "{file} seed {seed}: expected {}, simulator found {kinds:?}\n{text}",
                    c.violation
                );
                for k in kinds {
                    assert!(
                        s.expect.tolerates(k),
                        "{file} seed {seed}: unexpected {k}\n{text}"
                    );
                }
            }
            let result = suite::run_scenario(&s, s.seeds.clone(), 1);
            assert!(result.met(), "{file}: {:?}\n{text}", result.problems);
            scripted += 1;
        }
    }
    // no-fence, incr-beside-lease (2), fenced-check-then-write, fenced-cas-unfenced-reads.
    assert!(scripted >= 5, "only {scripted} counterexamples scripted");
}

#[test]
fn a_counterexample_checked_in_the_other_order_is_reordered_and_still_replays() {
    // The search finds generation 1 checked before generation 2 but committed after it; the
    // simulator's resource commits in check order, so the emitted path swaps the two checks.
    let spec = load(&root().join("models/fenced-check-then-write.toml")).expect("bundled");
    let report = check_model(&spec, &options());
    let c = report.shortest().expect("unsafe");
    let text = to_scenario(&spec, c).expect("scripted");
    let checks: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("resource checks"))
        .collect();
    assert_eq!(checks.len(), 2, "{text}");
    assert!(
        checks[0].contains("generation 2") && checks[1].contains("generation 1"),
        "{text}"
    );
}

#[test]
fn a_path_of_a_model_whose_steps_have_no_scripted_form_is_refused_with_a_reason() {
    let zk = load(&root().join("models/zk-sequential.toml")).expect("bundled");
    let no_fence = load(&root().join("models/no-fence.toml")).expect("bundled");
    let report = check_model(&no_fence, &options());
    let c = report.shortest().expect("unsafe");
    let err = to_scenario(&zk, c).expect_err("zk-sequential paths are not scripted");
    assert!(
        err.contains("zk-sequential paths (sequential nodes, watches) are not scripted"),
        "{err}"
    );
    assert_eq!(
        simulator_protocol(zk.bounds.protocol),
        Some(ProtocolKind::ZkSequential),
        "its verdict is still compared with the simulator's"
    );
}

/// The model's verdict against the bundled simulator scenarios of the same protocol: a model
/// proved safe must have no scenario of that protocol (and fence options) that finds one of
/// the model's properties violated, and every unsafe model must have a scenario that finds
/// its violations.
#[test]
fn model_checker_and_simulator_agree_on_every_protocol_both_cover() {
    // (model, simulator protocols that implement it, fence_reads of those scenarios)
    let table: &[(&str, &[ProtocolKind], bool)] = &[
        (
            "no-fence",
            &[ProtocolKind::TtlLeaseDel, ProtocolKind::RedisSetNx],
            false,
        ),
        ("incr-beside-lease", &[ProtocolKind::IncrBesideLease], false),
        (
            "fenced-check-then-write",
            &[ProtocolKind::FencedCheckThenWrite],
            false,
        ),
        ("fenced-cas", &[ProtocolKind::FencedCas], false),
        (
            "fenced-cas-unfenced-reads",
            &[ProtocolKind::FencedCas],
            false,
        ),
        ("fenced-cas-fence-reads", &[ProtocolKind::FencedCas], true),
        (
            "consensus-generation",
            &[ProtocolKind::ConsensusGeneration],
            false,
        ),
        ("zk-sequential", &[ProtocolKind::ZkSequential], false),
        (
            "conditional-write",
            &[ProtocolKind::ObjectStoreCas, ProtocolKind::CacheLease],
            false,
        ),
        ("store-lock", &[ProtocolKind::SingleDb], false),
        ("queue-claim", &[ProtocolKind::QueueClaim], false),
        ("effect-naive", &[ProtocolKind::EffectNaive], false),
        (
            "effect-idempotency-key",
            &[ProtocolKind::EffectIdempotencyKey],
            false,
        ),
        ("effect-outbox", &[ProtocolKind::EffectOutbox], false),
        ("active-passive", &[ProtocolKind::Github2012Pair], false),
        ("etcd-mutex", &[ProtocolKind::EtcdMutex], false),
        (
            "etcd-mutex-no-recheck",
            &[ProtocolKind::EtcdMutexNoRecheck],
            false,
        ),
        ("etcd-mutex-unfenced", &[ProtocolKind::EtcdMutex], false),
    ];
    let scenarios: Vec<scenario::Scenario> = toml_files(&root().join("scenarios"))
        .iter()
        .map(|p| scenario::load(p).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    for spec in specs() {
        let Some(&(_, kinds, fence_reads)) = table.iter().find(|row| row.0 == spec.name) else {
            panic!("{}: add the model to the agreement table", spec.name);
        };
        let model = check_model(&spec, &options());
        assert!(
            model.meets_expectation(),
            "{}: {:?}",
            spec.name,
            model.mismatches
        );
        let properties: Vec<ViolationKind> = fencesim::model::LockModel::new(spec.bounds)
            .violations()
            .into_iter()
            .map(violation_kind)
            .collect();
        let relevant: Vec<&scenario::Scenario> = scenarios
            .iter()
            .filter(|s| {
                let p = &s.options.protocol;
                // The model's resource checks the token: leave out scenarios
                // whose resource does not (consensus-generation, fence = false),
                // and the other way round (the etcd models' `fence = false`).
                kinds.contains(&p.kind)
                    && p.fenced() == (p.kind.is_fenced() && spec.bounds.fence)
                    && p.fence_reads == fence_reads
                    && !p.strict
                    && !p.volatile_fence
                    // The pair's `renew_every_ms` is its heartbeat, no lease renewal.
                    && (p.renew_every_ns.is_none() || p.kind == ProtocolKind::Github2012Pair)
            })
            .collect();
        assert!(
            !relevant.is_empty(),
            "{}: no bundled scenario to compare with",
            spec.name
        );
        let mut found = Vec::new();
        for s in &relevant {
            let seeds = s.seeds.start..s.seeds.start + (s.seeds.end - s.seeds.start).min(40);
            let result = suite::run_scenario(s, seeds, 2);
            for k in &properties {
                if result.agg.failing_seeds[*k as usize] > 0 && !found.contains(k) {
                    found.push(*k);
                }
            }
        }
        let simulator = if found.is_empty() {
            Verdict::Safe
        } else {
            Verdict::Unsafe
        };
        assert_eq!(
            model.verdict,
            simulator,
            "{}: model says {}, simulator scenarios {:?} found {found:?}",
            spec.name,
            model.verdict,
            relevant.iter().map(|s| s.name.as_str()).collect::<Vec<_>>()
        );
        for v in model.violations() {
            assert!(
                found.contains(&violation_kind(v)),
                "{}: the model finds {v}, no bundled scenario does",
                spec.name
            );
        }
    }
}
