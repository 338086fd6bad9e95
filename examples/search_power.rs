//! Regenerates `docs/search-power.md`: how many seeds (random faults,
//! plain / swarm / anchored + swarm) and how many runs (exhaustive search
//! with K <= 2) it takes to find each unsafe protocol's violation under the
//! *generic* random-faults scenario (scenarios/random/random-faults-fenced-cas.toml
//! with only `[protocol]` changed), and that the K = 2 search is clean on
//! the safe protocols, with the number of distinct executions it covered.
//!
//!     cargo run --release --example search_power > docs/search-power.md
//!
//! A measurement, not a test: the counts are deterministic (every run is a
//! pure function of scenario and seed), so the file changes only when the
//! simulator, the protocols or the fault vocabulary do.

use std::path::Path;

use fencesim::scenario::{self, Scenario};
use fencesim::search::{self, Config};
use fencesim::sim::Options;
use fencesim::suite;
use fencesim::suite::swarm;
use rayon::prelude::*;

const GENERIC: &str = "scenarios/random/random-faults-fenced-cas.toml";
/// The anchored-fault knobs of the anchored modes.
const ANCHORED_P: f64 = 1.0;
const ANCHORED_MAX: u32 = 3;
/// Seeds tried before a mode is reported as not finding the violation.
const MAX_SEEDS: u64 = 10_000;

/// (label, `[protocol]` lines replacing `kind = "fenced-cas"`, violation kind).
const UNSAFE: [(&str, &str, &str); 14] = [
    ("ttl-lease-del", "kind = \"ttl-lease-del\"", "stale_write"),
    (
        "ttl-lease-del",
        "kind = \"ttl-lease-del\"",
        "unsafe_release",
    ),
    ("redis-set-nx", "kind = \"redis-set-nx\"", "stale_write"),
    (
        "check-before-write",
        "kind = \"check-before-write\"",
        "stale_write",
    ),
    (
        "dynamodb-heartbeat",
        "kind = \"dynamodb-heartbeat\"",
        "stale_write",
    ),
    ("redlock", "kind = \"redlock\"", "stale_write"),
    (
        "etcd-mutex-no-recheck, unfenced",
        "kind = \"etcd-mutex-no-recheck\"\nfence = false",
        "stale_write",
    ),
    (
        "zk-sequential, unfenced",
        "kind = \"zk-sequential\"\nfence = false",
        "stale_write",
    ),
    (
        "effect-naive",
        "kind = \"effect-naive\"",
        "duplicate_effect",
    ),
    (
        "incr-beside-lease",
        "kind = \"incr-beside-lease\"",
        "stale_write",
    ),
    (
        "incr-beside-lease",
        "kind = \"incr-beside-lease\"",
        "token_order",
    ),
    (
        "fenced-check-then-write",
        "kind = \"fenced-check-then-write\"",
        "stale_write",
    ),
    (
        "fenced-cas, volatile fence",
        "kind = \"fenced-cas\"\nvolatile_fence = true",
        "stale_write",
    ),
    (
        "github-2012-pair",
        "kind = \"github-2012-pair\"",
        "two_actives",
    ),
];

/// (label, `[protocol]` lines, kinds that are the protocol's documented
/// limit rather than a fault of it: reported, not called violations).
const SAFE: [(&str, &str, &[&str]); 9] = [
    ("zk-sequential", "kind = \"zk-sequential\"", &[]),
    ("etcd-mutex", "kind = \"etcd-mutex\"", &[]),
    ("object-store-cas", "kind = \"object-store-cas\"", &[]),
    (
        "effect-idempotency-key",
        "kind = \"effect-idempotency-key\"",
        &["superseded_effect"],
    ),
    ("effect-outbox", "kind = \"effect-outbox\"", &[]),
    ("fenced-cas", "kind = \"fenced-cas\"", &[]),
    (
        "fenced-cas, strict",
        "kind = \"fenced-cas\"\nstrict = true",
        &[],
    ),
    (
        "fenced-cas, fence_reads",
        "kind = \"fenced-cas\"\nfence_reads = true",
        &[],
    ),
    (
        "consensus-generation",
        "kind = \"consensus-generation\"",
        &[],
    ),
];

fn generic(protocol: &str) -> Scenario {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join(GENERIC)).expect("bundled scenario");
    let mut source = source.replace("kind = \"fenced-cas\"", protocol);
    if protocol.contains("github-2012-pair") {
        // The pair is exactly two nodes: drop worker C.
        let c = source.find("[[worker]]\nname = \"C\"").expect("worker C");
        let end = source[c..].find("\n\n").map_or(source.len(), |e| c + e);
        source.replace_range(c..end, "");
    }
    scenario::parse(&source, GENERIC).unwrap_or_else(|e| panic!("{protocol}: {e}"))
}

#[derive(Clone, Copy)]
enum Mode {
    Plain,
    Anchored,
    Swarm,
    AnchoredSwarm,
}

fn options(s: &Scenario, mode: Mode, seed: u64) -> Options {
    match mode {
        Mode::Plain => s.options.clone(),
        Mode::Anchored => {
            let mut o = s.options.clone();
            o.random.anchored_probability = ANCHORED_P;
            o.random.anchored_max = ANCHORED_MAX;
            o
        }
        Mode::Swarm => swarm::configure(&s.options, seed).0,
        Mode::AnchoredSwarm => {
            // Swarm every other kind; anchored faults always on.
            let (mut o, _) = swarm::configure(&options(s, Mode::Anchored, seed), seed);
            o.random.anchored_probability = o.random.anchored_probability.max(ANCHORED_P);
            o
        }
    }
}

/// Seeds of the failing-fraction sample.
const SAMPLE_SEEDS: u64 = 2_000;

fn fails(s: &Scenario, mode: Mode, kind: &str, seed: u64) -> bool {
    let run = suite::seed::run(&options(s, mode, seed), seed, suite::RunSeed::default());
    let found = run.report.kinds().any(|k| k.name() == kind);
    found
}

/// `first (1/p)`: the 1-based count of seeds up to the first that shows
/// `kind`, and the mean seeds per hit implied by the failing fraction over
/// seeds `0..SAMPLE_SEEDS` (one first-hit is a single noisy sample).
fn cell(s: &Scenario, mode: Mode, kind: &str) -> String {
    // Seeds in parallel; `find_first` keeps the answer the sequential one.
    let first = (0..MAX_SEEDS)
        .into_par_iter()
        .find_first(|&seed| fails(s, mode, kind, seed));
    let hits = (0..SAMPLE_SEEDS)
        .into_par_iter()
        .filter(|&seed| fails(s, mode, kind, seed))
        .count() as u64;
    let mean = if hits == 0 {
        format!(">{SAMPLE_SEEDS}")
    } else {
        format!("{:.0}", SAMPLE_SEEDS as f64 / hits as f64)
    };
    match first {
        Some(seed) => format!("{} ({mean})", seed + 1),
        None => format!("none in {MAX_SEEDS} ({mean})"),
    }
}

fn main() {
    let cfg = Config {
        max_faults: 2,
        seed: 0,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    println!("# Search power: seeds and runs to the first violation\n");
    println!("Regenerate: `cargo run --release --example search_power > docs/search-power.md`.\n");
    println!(
        "Every row runs the generic random-faults scenario ({GENERIC}) with only `[protocol]` \
         changed (github-2012-pair: worker C dropped, the pair takes exactly two). *plain*, *anchored* \
         and *swarm*: the 1-based number of seeds (from seed 0) up to the first seed showing the \
         violation, at most {MAX_SEEDS} tried, and in parentheses 1/p, the mean number of seeds per \
         violating seed over seeds 0..{SAMPLE_SEEDS}. *anchored* adds `anchored_probability = {ANCHORED_P:?}`, \
         `anchored_max = {ANCHORED_MAX}` to `[random]`; *swarm* is `run --swarm`, whose mixes switch anchored \
         faults on and off like every other kind; *anchored + swarm* swarms every other kind and \
         keeps anchored faults on (rate >= {ANCHORED_P:?}). *search*: \
         `fencesim search FILE --faults 2` (seed 0): the position of the first violating execution \
         in the enumeration (the fault-free run is 1), the placements it needed, and the distinct \
         executions of the whole K <= 2 search.\n"
    );
    println!("## Unsafe protocols\n");
    println!("| protocol | violation | plain | anchored | swarm | anchored + swarm | search: runs to first | search: faults | search: distinct executions (K <= 2) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    // `SEARCH_POWER_ONLY=volatile` computes only the rows whose label
    // contains the text (for iterating on one row; the committed table is
    // always the whole run).
    let only = std::env::var("SEARCH_POWER_ONLY").unwrap_or_default();
    for (label, protocol, kind) in UNSAFE {
        if !label.contains(only.as_str()) {
            continue;
        }
        let s = generic(protocol);
        let plain = cell(&s, Mode::Plain, kind);
        let anchored = cell(&s, Mode::Anchored, kind);
        let swarmed = cell(&s, Mode::Swarm, kind);
        let both = cell(&s, Mode::AnchoredSwarm, kind);
        let r = search::search(&s, &cfg, &search::builtin, &|| {}).expect("built-in nodes");
        let found = r.found.iter().find(|f| f.kind == kind);
        let tolerated = r.tolerated.contains(&kind);
        let (runs, faults) = match found {
            Some(f) => (f.run.to_string(), f.placements.len().to_string()),
            None if tolerated => ("(tolerated)".into(), "-".into()),
            None => ("not found".into(), "-".into()),
        };
        println!(
            "| {label} | {kind} | {} | {} | {} | {} | {runs} | {faults} | {} |",
            plain, anchored, swarmed, both, r.distinct
        );
    }
    println!("\n## Safe protocols: the K = 2 search\n");
    println!("| protocol | verdict | distinct executions | runs | tolerated kinds seen |");
    println!("|---|---|---:|---:|---|");
    for (label, protocol, limits) in SAFE {
        if !label.contains(only.as_str()) {
            continue;
        }
        let s = generic(protocol);
        let r = search::search(&s, &cfg, &search::builtin, &|| {}).expect("built-in nodes");
        let (limit, faults): (Vec<&str>, Vec<&str>) = r
            .found
            .iter()
            .map(|f| f.kind)
            .partition(|k| limits.contains(k));
        let verdict = match (faults.is_empty(), limit.is_empty()) {
            (true, true) => "clean".to_string(),
            (true, false) => format!("clean; {} found, its documented limit", limit.join(", ")),
            (false, _) => format!("VIOLATIONS: {}", faults.join(", ")),
        };
        println!(
            "| {label} | {verdict} | {} | {} | {} |",
            r.distinct,
            r.runs,
            if r.tolerated.is_empty() {
                "-".to_string()
            } else {
                r.tolerated.join(", ")
            }
        );
    }
}
