//! Merging a campaign's slices (`fencesim merge` of `campaign --shard I/N`
//! files) into the campaign's result: each distinct failure once, with the
//! fastest seed any slice found for it and every slice's hits.
//!
//! The files must be the slices `0..N` of one campaign (same version,
//! campaign seed, budget and scenarios; each index once; the rules of
//! [`crate::suite::shard`]), each complete: a checkpoint is resumed, not
//! merged. Under a seed budget the merge equals the unsharded campaign's
//! file byte for byte; under a time budget its `spent_ms` is the longest
//! slice's (they ran side by side).

use super::json::CampaignJson;
use super::{Findings, Progress};
use crate::suite::shard::{self, View};

fn view(c: &CampaignJson) -> View<'_> {
    View {
        shard: c.slice().shard,
        version: &c.fencesim_version,
        flags: (
            format!("{} {:?}", c.campaign_seed, c.budget),
            "the campaign seed or budget",
        ),
        scenarios: c
            .scenarios
            .iter()
            .map(|s| (&*s.path, &*s.source_hash, 0, 1))
            .collect(),
    }
}

/// Merges `files` (names, for errors) into the whole campaign's file, with
/// `exit_code(unexpected failures)` as its exit code.
pub fn merge(
    names: &[String],
    files: &[CampaignJson],
    exit_code: impl Fn(u64) -> u8,
) -> Result<CampaignJson, String> {
    shard::check_set(names, &files.iter().map(view).collect::<Vec<_>>())?;
    let mut whole = Progress::default();
    for (name, file) in names.iter().zip(files) {
        if !file.complete {
            return Err(format!(
                "{name}: slice {} stopped before its budget was spent (a checkpoint); rerun it to finish, then merge",
                shard_text(file)
            ));
        }
        let part = file.progress().map_err(|e| format!("{name}: {e}"))?;
        if let Some(total) = file.slice().draws() {
            if part.done != total {
                return Err(format!(
                    "{name}: {} draws; slice {}'s share of the budget is {total}",
                    part.done,
                    shard_text(file)
                ));
            }
        }
        whole.done += part.done;
        whole.spent_ms = whole.spent_ms.max(part.spent_ms);
        whole.found = std::mem::take(&mut whole.found).merge(part.found);
    }
    let first = &files[0];
    let mut slice = first.slice();
    slice.shard = None;
    let code = exit_code(Findings::unexpected(&whole.found));
    let mut merged = CampaignJson::new(&slice, first.scenarios.clone(), &whole, code);
    // Every slice spent its budget: so did the campaign (a time budget's
    // slices each had the whole of it).
    merged.complete = true;
    Ok(merged)
}

fn shard_text(c: &CampaignJson) -> String {
    c.slice().shard.map_or("-".into(), |s| s.to_string())
}
