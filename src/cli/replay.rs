//! `fencesim replay`: one seed, shown in full — options, timeline, trace,
//! violations with evidence, trace hash — and optionally written out as a
//! history file or a fully scripted scenario.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::{load, BadInput, EXIT_FAILED, EXIT_OK};
use crate::{check, history, report, scenario, sim};

pub fn cmd_replay(
    path: &std::path::Path,
    seed: u64,
    history_out: Option<PathBuf>,
    with_trace: bool,
    emit: Option<PathBuf>,
    report_dir: Option<PathBuf>,
) -> Result<ExitCode> {
    let s = load(path)?;
    let out = sim::run(&s.options, seed, true);
    let report = check::check(&out.history);
    print!("{}", report::replay::render(&s, &out, &report, with_trace));
    if let Some(file) = history_out {
        let mut w = std::io::BufWriter::new(
            std::fs::File::create(&file).with_context(|| format!("creating {}", file.display()))?,
        );
        history::jsonl::write(&out.history, &mut w)?;
        w.flush()?;
        println!("history written to {}", file.display());
    }
    if let Some(file) = emit {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let scripted = scenario::emit::scripted(&text, &s.options, &out.script, seed)
            .map_err(|e| BadInput(format!("{}: {e}", path.display())))?;
        std::fs::write(&file, scripted).with_context(|| format!("writing {}", file.display()))?;
        println!("scripted scenario written to {}", file.display());
    }
    if let Some(dir) = report_dir {
        report::write::write(&dir, &report::write::replay_doc(&s, &out, &report))?;
        println!("report written to {}", dir.join("index.html").display());
    }
    let failing = !report.is_clean() && report.kinds().any(|k| !s.expect.tolerates(k));
    if !report.is_clean() {
        println!(
            "replay: {}",
            report::table::repro_command(&path.display().to_string(), seed)
        );
    }
    Ok(ExitCode::from(
        if failing || !s.expect.failed_metrics(&report).is_empty() {
            EXIT_FAILED
        } else {
            EXIT_OK
        },
    ))
}
