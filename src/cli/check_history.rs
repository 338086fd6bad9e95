//! `fencesim check-history`: the checker on a history written by anyone —
//! the lock checkers and the store-claims check that `validate` applies.

use std::process::ExitCode;

use anyhow::Result;

use super::{BadInput, EXIT_FAILED, EXIT_OK};
use crate::{check, history, report};

pub fn cmd_check_history(path: &std::path::Path) -> Result<ExitCode> {
    let h = history::jsonl::load(path).map_err(BadInput)?;
    let report = check::check(&h);
    println!(
        "fencesim {} — checked {} records from {}",
        env!("CARGO_PKG_VERSION"),
        h.events.len(),
        path.display()
    );
    print!("{}", report::replay::violations(&h, &report));
    // The store's own claims (acknowledged writes stay visible, ...), as `validate` checks them.
    let claims = check::store_claims::check(&h);
    if !claims.is_clean() {
        print!("{}", claims.render(&h));
    }
    Ok(ExitCode::from(if report.is_clean() && claims.is_clean() {
        EXIT_OK
    } else {
        EXIT_FAILED
    }))
}
