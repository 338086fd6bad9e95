//! `search` reads a simulated scenario or a live one, and each mode has
//! flags the other does not use: given to the wrong mode, a flag is
//! refused (exit 2, naming it and the scenario's mode) before anything
//! runs, never silently ignored.

use crate::common;

/// `fencesim search FILE ARGS…`: its exit code and stderr.
fn search(file: &str, args: &[&str]) -> (Option<i32>, String) {
    let path = common::root().join(file);
    let mut all = vec!["search", path.to_str().expect("utf-8 path")];
    all.extend_from_slice(args);
    let out = common::fencesim(&all);
    (out.status.code(), common::stderr(&out))
}

#[test]
fn a_live_scenarios_search_refuses_each_flag_only_a_simulated_search_uses() {
    let flags: [&[&str]; 6] = [
        &["--shard", "0/2"],
        &["--merge", "shard-0.json"],
        &["--node", "worker=true"],
        &["--no-shrink"],
        &["--step-timeout-ms", "10"],
        &["--seed", "3"],
    ];
    for args in flags {
        let (code, err) = search("live/gc-pause-plain-update.toml", args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains(args[0]) && err.contains("live scenario"),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("started"),
            "refused before a server starts: {err}"
        );
    }
    // Several at once are named together.
    let (code, err) = search(
        "live/gc-pause-plain-update.toml",
        &["--no-shrink", "--shard", "1/2"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--no-shrink, --shard are"), "{err}");
}

#[test]
fn a_simulated_scenarios_search_refuses_each_flag_only_a_live_search_uses() {
    let flags: [&[&str]; 7] = [
        &["--worker-cmd", "true"],
        &["--timeout-ms", "5"],
        &["--confirm", "2"],
        &["--chaos", "1"],
        &["--chaos-trials", "3"],
        &["--junit", "search.xml"],
        &["--report", "search-report"],
    ];
    for args in flags {
        let (code, err) = search("scenarios/article/gc-pause-stale-write.toml", args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains(args[0]) && err.contains("simulated scenario"),
            "{args:?}: {err}"
        );
    }
}
