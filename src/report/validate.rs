//! Text for `fencesim validate`: the run's header (which roles run which
//! command), the per-scenario table, and for each scenario the lowest
//! failing seed — the store's own claims, then the checker's violations
//! with their evidence records and its counters, who they are attributed
//! to and the command that reruns it — then implementation errors and the
//! verdict line. `validate/` and `check/store_claims` judge; this renders
//! (`Judged::render` is an inherent method defined here, so the judging
//! room imports no renderer). `cli/validate.rs` only prints these strings.

use std::fmt::Write as _;

use crate::check::store_claims::ClaimsReport;
use crate::check::Report;
use crate::history::History;
use crate::suite::{shell_quote, Shard};
use crate::validate::shard::ValidateJson;
use crate::validate::{self, Implementations, Judged, ScenarioValidation};

impl Judged {
    /// Violations with their evidence records, then the checker's counters.
    pub fn render(&self) -> String {
        violations(&self.history, &self.report, &self.claims)
    }
}

/// One history's verdict as `validate` and `check-history` print it: the
/// store-claim violations, then the checker's, each with its evidence
/// records, then the checker's counters. "no violations" heads it only when
/// neither found any, so it never precedes a VIOLATION line.
pub fn violations(h: &History, report: &Report, store: &ClaimsReport) -> String {
    let mut s = claims(h, store);
    let checker = super::replay::violations(h, report);
    if report.is_clean() && !store.is_clean() {
        s.push_str(checker.trim_start_matches("no violations\n"));
    } else {
        s.push_str(&checker);
    }
    s
}

/// The store-claims violations, like `replay::violations`: each with its
/// evidence records, then how many of a kind were counted but not kept.
/// Empty for a clean report.
fn claims(h: &History, claims: &ClaimsReport) -> String {
    let mut s = String::new();
    for v in &claims.violations {
        let _ = writeln!(
            s,
            "VIOLATION {} on key {}: {}",
            v.kind,
            h.key_name(v.key),
            v.explanation
        );
        for seq in &v.evidence {
            if let Some(e) = h.by_seq(*seq) {
                let _ = writeln!(s, "    {}", h.describe(e));
            }
        }
    }
    for k in claims.kinds() {
        let kept = claims.violations.iter().filter(|v| v.kind == k).count() as u64;
        if claims.count(k) > kept {
            let _ = writeln!(s, "({} more {k} not shown)", claims.count(k) - kept);
        }
    }
    s
}

/// One `role = command` (or `built-in`) line per role; `validate` and
/// `search --node` print it under their first line.
pub fn implementations(impls: &Implementations) -> String {
    let show = |c: &Option<String>| c.clone().unwrap_or_else(|| "built-in".into());
    format!(
        "  coordinator = {}\n  resource    = {}\n  worker      = {}\n",
        show(&impls.coordinator),
        show(&impls.resource),
        show(&impls.worker)
    )
}

/// The first lines of a text run: version, scenario count, jobs, step
/// timeout, shard, then [`implementations`].
pub fn header(
    scenarios: usize,
    jobs: usize,
    step_timeout_ms: u64,
    shard: Option<Shard>,
    impls: &Implementations,
) -> String {
    let of_shard = shard.map(|s| format!(", shard {s}")).unwrap_or_default();
    format!(
        "fencesim {} — validate: {scenarios} scenarios, jobs {jobs}, step timeout {step_timeout_ms} ms{of_shard}\n{}",
        env!("CARGO_PKG_VERSION"),
        implementations(impls)
    )
}

/// The command that reruns `seed` exactly: every flag that can change a
/// run's outcome (the step timeout decides whether a slow step is an
/// implementation error) is carried; `--jobs` cannot change it.
pub fn repro(specs: &[String], path: &str, seed: u64, step_timeout_ms: u64) -> String {
    let nodes: Vec<String> = specs
        .iter()
        .map(|s| format!("--node {}", shell_quote(s)))
        .collect();
    format!(
        "fencesim validate {} --step-timeout-ms {step_timeout_ms} --seed-start {seed} --seeds 1 {}",
        nodes.join(" "),
        shell_quote(path)
    )
}

fn counts(kinds: &[(&'static str, usize)]) -> String {
    if kinds.is_empty() {
        return "-".into();
    }
    let cells: Vec<String> = kinds.iter().map(|(k, n)| format!("{k}×{n}")).collect();
    cells.join(" ")
}

/// One row per scenario: seeds, clean, failing, implementation errors and
/// the violation kinds by whose they are, with a legend.
pub fn table(results: &[ScenarioValidation]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<34} {:>6} {:>6} {:>8} {:>12}  {:<28} {:<28} built-in, same seeds",
        "scenario", "seeds", "ok", "failing", "impl-errors", "implementation's", "scenario's"
    );
    for r in results {
        let _ = writeln!(
            s,
            "{:<34} {:>6} {:>6} {:>8} {:>12}  {:<28} {:<28} {}",
            r.name,
            r.seeds.len(),
            r.clean(),
            r.failing(),
            r.impl_errors().count(),
            counts(&r.kind_counts()),
            counts(&r.scenario_kind_counts()),
            counts(&r.baseline_kind_counts()),
        );
    }
    s.push_str(
        "(violations × seeds. implementation's: fail the seed. scenario's: allowed by the scenario's \
         [expect] or shown by the built-in nodes on the same seed; reported, not failed.)\n",
    );
    s
}

/// The lowest failing seed's block: violations with evidence, who they are
/// attributed to, and the command that reruns it (also the `details` of
/// the JSON output).
pub fn failure_details(
    r: &ScenarioValidation,
    seed: u64,
    judged: &Judged,
    specs: &[String],
    step_timeout_ms: u64,
) -> String {
    let mut out = judged.render();
    if let Some(s) = r.seeds.iter().find(|s| s.seed == seed) {
        if let Ok(j) = &s.verdict {
            let _ = writeln!(
                out,
                "the implementation's: {}; the scenario's: {}; built-in on this seed: {}",
                j.own.join(" "),
                if j.scenario.is_empty() {
                    "-".into()
                } else {
                    j.scenario.join(" ")
                },
                if s.baseline.is_empty() {
                    "clean".into()
                } else {
                    s.baseline.join(" ")
                },
            );
        }
    }
    let _ = writeln!(
        out,
        "repro: {}",
        repro(specs, &r.path, seed, step_timeout_ms)
    );
    out
}

/// Everything a text run prints after its header: the table, early stops,
/// each scenario's lowest failing seed, every implementation error with
/// its repro line, and the verdict line.
pub fn results(results: &[ScenarioValidation], specs: &[String], step_timeout_ms: u64) -> String {
    let mut s = String::from("\n");
    s.push_str(&table(results));
    for r in results {
        // A stop at the last seed skipped nothing: nothing to say.
        if let Some(stop) = r.stopped.as_ref().filter(|s| s.skipped > 0) {
            let _ = writeln!(
                s,
                "\n{}: stopped after {} identical implementation errors in a row (last seed run: {}); \
                 {} seeds not run",
                r.name,
                validate::IDENTICAL_ERRORS_MAX,
                stop.last_seed,
                stop.skipped
            );
        }
    }
    for r in results {
        if let Some((seed, judged)) = &r.first_failure {
            let _ = writeln!(s, "\n== {} seed {seed} (lowest failing seed) ==", r.name);
            s.push_str(&failure_details(r, *seed, judged, specs, step_timeout_ms));
        }
    }
    let mut impl_errors = 0;
    for r in results {
        for (seed, err) in r.impl_errors() {
            impl_errors += 1;
            let _ = writeln!(s, "\n== {} seed {seed}: implementation error ==", r.name);
            let _ = writeln!(s, "{err}");
            let _ = writeln!(s, "repro: {}", repro(specs, &r.path, seed, step_timeout_ms));
        }
    }
    let failing: usize = results.iter().map(|r| r.failing()).sum();
    let unjudged = unjudged(results);
    let verdict = if impl_errors > 0 {
        format!("IMPLEMENTATION ERROR in {impl_errors} runs (those runs were not judged)")
    } else if failing > 0 {
        format!("VIOLATIONS in {failing} runs (the implementation's)")
    } else if unjudged.is_empty() {
        "CLEAN: no violations in any run".to_string()
    } else {
        format!(
            "INCONCLUSIVE for {unjudged}: no violations of the implementation's, but these \
             scenarios cannot tell a safe implementation from an unsafe one for those kinds \
             (the scenario's own are listed above); judge them on a scenario whose built-in \
             reference is clean (`fencesim list`, docs/validate.md)"
        )
    };
    let _ = writeln!(s, "\nverdict: {verdict}");
    s
}

/// The kinds no scenario of the run could judge, each with why: `stale_write
/// (the built-in reference shows it on the same seeds), lost_update
/// (the scenario allows it)`. Empty when every violation was judged.
fn unjudged(results: &[ScenarioValidation]) -> String {
    validate::unjudged_kinds(results)
        .iter()
        .map(|(k, why)| match why {
            validate::Unjudged::BuiltInToo => {
                format!("{k} (the built-in reference shows it on the same seeds)")
            }
            validate::Unjudged::Allowed => format!("{k} (the scenario allows it)"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `merge`'s text for validate shard files: one row per scenario, each
/// scenario's lowest failing seed as the shards recorded it, the verdict.
pub fn merged(merged: &ValidateJson) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<34} {:>6} {:>8} {:>12}",
        "scenario", "seeds", "failing", "impl-errors"
    );
    for s in &merged.scenarios {
        let errors = s.seeds.iter().filter(|x| x.impl_error.is_some()).count();
        let failing = s
            .seeds
            .iter()
            .filter(|x| x.impl_error.is_none() && !x.own.is_empty())
            .count();
        let _ = writeln!(
            out,
            "{:<34} {:>6} {failing:>8} {errors:>12}",
            s.name,
            s.seeds.len()
        );
    }
    for s in &merged.scenarios {
        if let Some(f) = &s.first_failure {
            let _ = writeln!(
                out,
                "\n== {} seed {} (lowest failing seed) ==",
                s.name, f.seed
            );
            out.push_str(&f.details);
        }
    }
    let _ = writeln!(
        out,
        "\nverdict: {} runs with the implementation's violations, {} implementation errors (exit {})",
        merged.failing_runs, merged.impl_errors, merged.exit_code
    );
    out
}
