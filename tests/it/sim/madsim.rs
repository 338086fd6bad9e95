//! The async implementation under madsim (examples/madsim-lock), run from
//! the one test command. madsim needs `--cfg madsim`, so the crate builds in
//! its own target directory (examples/madsim-lock/target) and the main
//! crate is never rebuilt with that cfg; the first run compiles madsim
//! (minutes), later runs are incremental. Its script checks the fenced
//! variant's history clean and the unfenced one's `stale_write` with this
//! build's `fencesim check-history`.
//!
//! `FENCESIM_SKIP_MADSIM=1` skips it in a local edit loop; under `CI=true`
//! it always runs.

use std::process::Command;

#[test]
fn madsim_implementation_histories_check_clean_when_fenced_and_stale_when_not() {
    let _heavy = crate::common::heavy();
    let ci = std::env::var("CI").as_deref() == Ok("true");
    if !ci && std::env::var_os("FENCESIM_SKIP_MADSIM").is_some() {
        eprintln!("SKIPPED madsim: FENCESIM_SKIP_MADSIM is set");
        return;
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("sh")
        .arg(format!("{root}/examples/madsim-lock/run.sh"))
        .env("FENCESIM_BIN", crate::common::bin())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("sh runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "examples/madsim-lock/run.sh failed:\n{text}"
    );
    assert!(
        text.contains("fenced history clean, unfenced history has stale_write"),
        "{text}"
    );
    assert!(
        text.contains("test result: ok"),
        "the madsim crate's own tests ran: {text}"
    );
}
