//! `protocol/` is built in wings (core, lease, systems, alternatives): a
//! file may use files of other wings, but within a wing the imports form no
//! cycle, so each wing reads bottom-up. Read from the source, so a new
//! import that closes a loop fails here with the loop named.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Files of `wing` that `text` names, by flat path (`protocol::worker`),
/// wing path (`protocol::lease::worker`) or `super::worker`; comments aside.
fn named_files(text: &str, wing: &str, files: &BTreeSet<String>) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    files
        .iter()
        .filter(|f| {
            [
                format!("protocol::{f}::"),
                format!("protocol::{wing}::{f}::"),
                format!("super::{f}::"),
            ]
            .iter()
            .any(|p| code.contains(p.as_str()))
        })
        .cloned()
        .collect()
}

fn cycle_from(
    node: &str,
    graph: &BTreeMap<String, BTreeSet<String>>,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(i) = path.iter().position(|p| p == node) {
        let mut cycle = path[i..].to_vec();
        cycle.push(node.to_string());
        return Some(cycle);
    }
    if done.contains(node) {
        return None;
    }
    path.push(node.to_string());
    for next in graph.get(node).into_iter().flatten() {
        if let Some(c) = cycle_from(next, graph, path, done) {
            return Some(c);
        }
    }
    path.pop();
    done.insert(node.to_string());
    None
}

#[test]
fn no_file_of_a_protocol_wing_imports_one_that_imports_it_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/protocol");
    let wings = ["core", "lease", "systems", "alternatives"];
    let mut edges_seen = 0;
    for wing in wings {
        let dir = root.join(wing);
        let files: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_suffix(".rs")
                    .map(str::to_string)
            })
            .filter(|f| f != "mod")
            .collect();
        assert!(files.len() >= 3, "{wing}: {files:?}");
        let mut graph = BTreeMap::new();
        for f in &files {
            let text = std::fs::read_to_string(dir.join(format!("{f}.rs"))).unwrap();
            let mut uses = named_files(&text, wing, &files);
            uses.remove(f);
            edges_seen += uses.len();
            graph.insert(f.clone(), uses);
        }
        let mut done = BTreeSet::new();
        for f in &files {
            if let Some(cycle) = cycle_from(f, &graph, &mut Vec::new(), &mut done) {
                panic!(
                    "protocol/{wing}/ has an import cycle: {}",
                    cycle.join(" -> ")
                );
            }
        }
    }
    // The reader sees the imports it should (a wing without edges would pass vacuously).
    assert!(
        edges_seen >= 8,
        "only {edges_seen} imports within wings found"
    );
}

#[test]
fn the_cycle_finder_names_a_loop() {
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"])]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.into_iter().map(str::to_string).collect()))
            .collect();
    let cycle = cycle_from("a", &graph, &mut Vec::new(), &mut BTreeSet::new());
    assert_eq!(cycle.unwrap(), ["a", "b", "c", "a"]);
}
