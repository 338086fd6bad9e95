//! `fencesim search` places partitions and message faults too (it finds
//! github-2012-pair's two actives, and not on the storage-fenced twin),
//! splits into shards whose merge is exactly the unsharded search, and
//! refuses, as `validate` does, an implementation the scenario cannot run.

use std::path::Path;

use fencesim::scenario::{self, Scenario};
use fencesim::search::{self, Config};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

const GENERIC: &str = "scenarios/random/random-faults-fenced-cas.toml";

/// The generic random-faults scenario as the pair: worker C dropped.
fn pair_source(fence: bool) -> String {
    let source = std::fs::read_to_string(root().join(GENERIC)).expect("bundled scenario");
    let kind = if fence {
        "kind = \"github-2012-pair\"\nfence = true"
    } else {
        "kind = \"github-2012-pair\""
    };
    let mut source = source.replace("kind = \"fenced-cas\"", kind);
    let c = source.find("[[worker]]\nname = \"C\"").expect("worker C");
    let end = source[c..].find("\n\n").map_or(source.len(), |e| c + e);
    source.replace_range(c..end, "");
    source
}

fn parse(source: &str) -> Scenario {
    scenario::parse(source, GENERIC).unwrap_or_else(|e| panic!("{e}"))
}

fn cfg(k: usize) -> Config {
    Config {
        max_faults: k,
        seed: 0,
        jobs: 2,
    }
}

#[test]
fn search_finds_two_actives_of_the_github_pair_with_one_partition_from_its_peer() {
    let r = search::search(
        &parse(&pair_source(false)),
        &cfg(1),
        &search::builtin,
        &|| {},
    )
    .expect("built-in");
    let found = r
        .found
        .iter()
        .find(|f| f.kind == "two_actives")
        .unwrap_or_else(|| panic!("no two_actives: {:?}", r.found));
    assert_eq!(found.placements.len(), 1);
    assert_eq!(found.placements[0].strike.name(), "partition-from-peers");
    // The written script replays the violation.
    let s = parse(&pair_source(false));
    let base = search::fault_free(&s.options);
    let text =
        scenario::emit::scripted(&pair_source(false), &base, &found.script, 0).expect("emits");
    let scripted = parse(&text);
    let out = fencesim::sim::run(&scripted.options, 0, false);
    let kinds: Vec<&str> = fencesim::check::check(&out.history)
        .kinds()
        .map(|k| k.name())
        .collect();
    assert!(kinds.contains(&"two_actives"), "{kinds:?}\n{text}");
}

#[test]
fn search_is_clean_on_the_storage_fenced_pair_under_the_same_placements() {
    let r = search::search(
        &parse(&pair_source(true)),
        &cfg(1),
        &search::builtin,
        &|| {},
    )
    .expect("built-in");
    assert!(r.is_clean(), "{:?}", r.found);
    // The same placements as the unfenced pair's search, which fails.
    assert!(
        r.distinct > 300,
        "{}",
        fencesim::report::search::coverage(&r, 1)
    );
}

#[test]
fn three_shards_merged_are_exactly_the_unsharded_search() {
    let source = std::fs::read_to_string(root().join(GENERIC))
        .expect("bundled scenario")
        .replace(
            "kind = \"fenced-cas\"",
            "kind = \"fenced-check-then-write\"",
        );
    let s = parse(&source);
    let whole = search::search(&s, &cfg(2), &search::builtin, &|| {}).expect("built-in");
    let shards: Vec<_> = (0..3)
        .map(|i| {
            let ran = search::search_shard(&s, &cfg(2), (i, 3), &search::builtin, &|| {})
                .expect("built-in");
            // Through the JSON the deploy recipe passes between pods.
            let json = search::shard::to_json(&ran, GENERIC, &source);
            search::shard::from_json(&json, "shard.json", &source).expect("reads back")
        })
        .collect();
    assert!(shards.iter().all(|s| s.runs.len() < whole.runs as usize));
    let merged = search::tally(&s, &shards).expect("merges");
    assert_eq!(
        (merged.runs, merged.distinct, &merged.levels),
        (whole.runs, whole.distinct, &whole.levels)
    );
    let first = |r: &search::SearchResult| {
        r.found
            .iter()
            .map(|f| (f.kind, f.run, f.placements.clone(), f.script.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(first(&merged), first(&whole));
    assert!(!whole.found.is_empty());
    // A missing shard is refused, not merged into a smaller coverage.
    assert!(search::tally(&s, &shards[..2]).is_err());
}

#[test]
fn search_refuses_a_python_store_under_the_storage_fenced_pair_as_validate_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("pair-fenced.toml");
    std::fs::write(&path, pair_source(true)).expect("write");
    let out = crate::common::fencesim_command()
        .arg("search")
        .arg(&path)
        .arg("--node")
        .arg("resource=python3 examples/python/fencelock.py")
        .output()
        .expect("run fencesim");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("reserve"), "{text}");
}
