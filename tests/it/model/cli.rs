//! `fencesim check` and `fencesim explore` as a user runs them: the table, exit codes 0/1/2,
//! errors with file:line:column, and emitted scenarios that `run` and `replay` execute.

use crate::common;

use common::{fencesim, stderr, stdout};

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("temp file");
    path
}

#[test]
fn checking_every_bundled_model_meets_every_expectation_and_prints_the_table() {
    let out = fencesim(&["check", "models/", "--threads", "2"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("18 models, threads 2"), "{text}");
    for name in [
        "no-fence",
        "incr-beside-lease",
        "fenced-cas",
        "zk-sequential",
        "consensus-generation",
        "conditional-write",
        "store-lock",
        "queue-claim",
        "effect-naive",
        "effect-idempotency-key",
        "effect-outbox",
        "active-passive",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(name) && l.ends_with("met")),
            "{name}: {text}"
        );
    }
    assert!(
        text.contains("unsafe token_order(3) stale_write(7)"),
        "{text}"
    );
    assert!(
        text.contains("no-fence: stale_write in 7 steps (shortest)"),
        "{text}"
    );
    assert!(
        text.contains("effect-naive: duplicate_effect in 7 steps (shortest)"),
        "{text}"
    );
    assert!(!text.contains("NOT MET"), "{text}");
}

#[test]
fn an_unsafe_protocol_expected_safe_exits_1_with_the_counterexample() {
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = write(
        dir.path(),
        "wrong.toml",
        "schema_version = 1\nprotocol = \"no-fence\"\nclients = 2\ngrants_max = 2\n\n[expect]\nverdict = \"safe\"\n",
    );
    let out = fencesim(&["check", spec.to_str().expect("utf-8 path")]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("NOT MET") && text.contains("expected safe, found unsafe"),
        "{text}"
    );
    assert!(text.contains("stale_write in 7 steps"), "{text}");
}

#[test]
fn a_bad_spec_exits_2_naming_file_line_and_column() {
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = write(
        dir.path(),
        "bad.toml",
        "schema_version = 1\nprotocol = \"fenced-cas\"\nclients = 2\ngrants_max = 20\n\n[expect]\nverdict = \"safe\"\n",
    );
    let out = fencesim(&["check", spec.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("bad.toml:4:14: grants_max = 20 is out of range, expected 1 to 12"),
        "{err}"
    );
}

#[test]
fn emitted_scenarios_fail_in_run_and_replay_with_the_models_violation() {
    let dir = tempfile::tempdir().expect("temp dir");
    let emit = dir.path().join("scripted");
    let emit_arg = emit.to_str().expect("utf-8 path");
    let out = fencesim(&[
        "check",
        "models/incr-beside-lease.toml",
        "--emit-scenario",
        emit_arg,
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert_eq!(text.matches(": reproduced").count(), 2, "{text}");
    let stale = emit.join("incr-beside-lease-stale-write.toml");
    assert!(stale.is_file() && emit.join("incr-beside-lease-token-order.toml").is_file());

    let run = fencesim(&["run", emit_arg]);
    let table = stdout(&run);
    assert_eq!(run.status.code(), Some(0), "{table}");
    assert_eq!(
        table.lines().filter(|l| l.ends_with("  met")).count(),
        2,
        "{table}"
    );

    // A seed the file does not list: latency differs, the violation does not.
    let replay = fencesim(&[
        "replay",
        stale.to_str().expect("utf-8 path"),
        "--seed",
        "987654",
        "--no-trace",
    ]);
    let shown = stdout(&replay);
    assert!(shown.contains("VIOLATION stale_write"), "{shown}");
    assert!(shown.contains("VIOLATION token_order"), "{shown}");
}

#[test]
fn one_toml_file_cannot_hold_several_counterexamples() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("one.toml");
    let out = fencesim(&[
        "check",
        "models/incr-beside-lease.toml",
        "--emit-scenario",
        file.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("2 counterexamples need a directory"),
        "{}",
        stderr(&out)
    );
    assert!(!file.exists());
}

#[test]
fn explore_on_a_busy_port_exits_2_instead_of_panicking() {
    let busy = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("a free port");
    let port = busy.local_addr().expect("bound").port().to_string();
    let out = fencesim(&["explore", "models/no-fence.toml", "--port", &port]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn check_json_lists_every_model_with_its_verdict_and_shortest_counterexample() {
    let out = fencesim(&["check", "models/", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    assert_eq!(v["schema"], "fencesim-check");
    assert_eq!(v["schema_version"], 1);
    let models = v["models"].as_array().expect("models");
    assert_eq!(models.len(), 18);
    assert!(models.iter().all(|m| m["met"] == true));
    let incr = models
        .iter()
        .find(|m| m["name"] == "incr-beside-lease")
        .expect("incr model");
    let steps: Vec<(String, u64)> = incr["counterexamples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["violation"].as_str().unwrap().to_string(),
                c["steps"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            ("token_order".to_string(), 3),
            ("stale_write".to_string(), 7)
        ]
    );
    let cas = models
        .iter()
        .find(|m| m["name"] == "fenced-cas")
        .expect("fenced-cas model");
    assert_eq!(cas["verdict"], "safe");
    assert_eq!(cas["unique_states"], 11_193);
}
