//! Where `search` writes what it found: `--out` names a file only when
//! there is one violation; with several it must name a directory (created
//! if missing) or the command is refused. Nothing is ever written beside
//! the input scenario when `--out` is given.

use std::path::{Path, PathBuf};

use crate::common;

/// A temporary directory holding `in/two.toml`: the generic random-faults
/// scenario under a plain TTL lease, where one fault finds both
/// `unsafe_release` and `stale_write`.
fn scenario_with_two_violations() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in");
    std::fs::create_dir(&input).expect("mkdir");
    let source = std::fs::read_to_string(common::scenario_path(
        "random/random-faults-fenced-cas.toml",
    ))
    .expect("bundled scenario");
    let path = input.join("two.toml");
    std::fs::write(
        &path,
        source.replace("kind = \"fenced-cas\"", "kind = \"ttl-lease-del\""),
    )
    .expect("write scenario");
    (dir, input, path)
}

fn search(scenario: &Path, out: &Path) -> std::process::Output {
    common::fencesim(&[
        "search",
        "--faults",
        "1",
        "--jobs",
        "2",
        "--no-shrink",
        "--out",
        out.to_str().expect("utf-8 path"),
        scenario.to_str().expect("utf-8 path"),
    ])
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn search_out_naming_a_file_with_several_violations_is_refused_and_writes_nothing() {
    let (dir, input, scenario) = scenario_with_two_violations();
    let out = search(&scenario, &dir.path().join("found.toml"));
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}{err}", common::stdout(&out));
    assert!(
        err.contains("--out") && err.contains("directory"),
        "a clear error naming --out: {err}"
    );
    assert_eq!(
        files_in(&input),
        vec!["two.toml"],
        "nothing beside the input"
    );
    assert!(!dir.path().join("found.toml").exists());
}

#[test]
fn search_out_naming_a_missing_directory_with_several_violations_creates_it() {
    let (dir, input, scenario) = scenario_with_two_violations();
    let found = dir.path().join("found");
    let out = search(&scenario, &found);
    let text = common::stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", common::stderr(&out));
    assert_eq!(
        files_in(&input),
        vec!["two.toml"],
        "nothing beside the input"
    );
    assert_eq!(
        files_in(&found),
        vec![
            "two-search-stale_write.toml",
            "two-search-unsafe_release.toml"
        ],
        "{text}"
    );
}
