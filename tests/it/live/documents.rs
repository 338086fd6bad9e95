//! More than one document row: each worker's `document = N` is its own row,
//! Redis lock key and token counter, and the history judges each document
//! against its own lock. The stale write on the shared document is found;
//! a paused holder whose lock nobody took stays clean while another
//! document is written — and the same trial judged as one document is not,
//! so the clean verdict is the per-document judging's, not luck.

use std::path::Path;

use crate::common::{fencesim, fencesim_command, live_servers_present, live_shared, run_text};

fn events(file: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_stale_write_is_found_on_its_own_document_and_a_holder_nobody_superseded_is_clean() {
    let _g = live_shared();
    if !live_servers_present("two documents") {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let (code, text) = run_text(fencesim_command().args([
        "live",
        "live/two-documents-plain-update.toml",
        "live/two-documents-paused-holder-alone.toml",
        "--trials",
        "3",
        "--out",
        out.path().to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{text}");
    for trial in 1..=3 {
        let shared = out.path().join(format!(
            "live-two-documents-plain-update-trial-{trial}.jsonl"
        ));
        let h = events(&shared);
        // C's grant, write and lease are document 2's; A's and B's document 1's.
        let key_of = |node: &str, kind: &str| -> Vec<String> {
            h.iter()
                .filter(|e| e["node"] == node && e["kind"] == kind)
                .map(|e| e["key"].as_str().unwrap_or("").to_string())
                .collect()
        };
        assert_eq!(
            key_of("worker/C", "grant_received"),
            ["doc2"],
            "{}",
            shared.display()
        );
        assert_eq!(
            key_of("worker/A", "grant_received"),
            ["doc"],
            "{}",
            shared.display()
        );
        assert_eq!(
            key_of("worker/B", "grant_received"),
            ["doc"],
            "{}",
            shared.display()
        );
        let accepted_doc2 = h
            .iter()
            .filter(|e| e["kind"] == "write_accepted" && e["key"] == "doc2")
            .count();
        assert_eq!(accepted_doc2, 1, "{}", shared.display());

        let alone = out.path().join(format!(
            "live-two-documents-paused-holder-alone-trial-{trial}.jsonl"
        ));
        let o = fencesim(&["check-history", alone.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
        // The same trial with every event on one document: B's grant now
        // follows A's expired lease, and A's late write is stale.
        let merged = out.path().join(format!("merged-{trial}.jsonl"));
        let text: String = events(&alone)
            .into_iter()
            .map(|mut e| {
                if e.get("key").is_some_and(|k| k.is_string()) {
                    e["key"] = "doc".into();
                }
                format!("{e}\n")
            })
            .collect();
        std::fs::write(&merged, text).unwrap();
        let o = fencesim(&["check-history", merged.to_str().unwrap()]);
        let said = String::from_utf8_lossy(&o.stdout);
        assert!(!o.status.success(), "{said}");
        assert!(said.contains("VIOLATION stale_write on key doc"), "{said}");
    }
    assert!(text.contains("live-two-documents-plain-update"), "{text}");
}

#[test]
fn a_users_program_on_two_documents_under_one_exact_lock_key_is_refused_before_any_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two-docs-client.toml");
    let twin =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("live/twins/two-documents-plain-update.sim");
    std::fs::write(
        &file,
        format!(
            "schema_version = 1\nname = \"t\"\ntwin = \"{}\"\nlock = \"redis-set-nx-cad\"\nwrite = \"plain\"\nttl_ms = 300\n\
             [[worker]]\nname = \"A\"\n[[worker]]\nname = \"B\"\ndocument = 2\n[expect]\n",
            twin.display()
        ),
    )
    .unwrap();
    // Each document's key is found among its own workers' keys: one key
    // named exactly cannot be both documents' locks.
    let (code, text) = run_text(fencesim_command().args([
        "live",
        file.to_str().unwrap(),
        "--worker-cmd",
        "true",
        "--lock-key",
        "lock:invoice:1",
    ]));
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("worker B is on document 2"), "{text}");
    assert!(text.contains("lock:invoice:1 is named exactly"), "{text}");
    assert!(
        !text.contains("redis-server on"),
        "nothing may start: {text}"
    );
}
