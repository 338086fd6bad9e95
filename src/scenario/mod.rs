//! Scenarios are data: TOML files that say which protocol to run, with what
//! workload, network, clocks and faults, over how many seeds, and what the
//! checker is expected to find.
//!
//! This is the only layer (with `history::jsonl` and the CLI) that knows
//! serde. A malformed file is an error naming file, line, column and the
//! expected shape — never a panic: see [`ScenarioError`].

pub mod emit;
pub mod expect;
pub mod limits;
pub(crate) mod resolve;
pub(crate) mod schema;
pub mod source;

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

pub use expect::{CmpOp, Expectation, MetricAssertion};

use crate::sim::Options;

/// A loaded, validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub path: PathBuf,
    pub name: String,
    pub description: String,
    pub seeds: Range<u64>,
    pub options: Options,
    pub expect: Expectation,
    /// FNV-1a of the file's bytes: printed in repro lines so a replay can
    /// tell that the file changed since.
    pub source_hash: u64,
}

/// Where a scenario file is wrong and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}{snippet}")]
pub struct ScenarioError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
    /// The offending source line with a caret under the column.
    pub snippet: String,
}

impl ScenarioError {
    pub fn at(
        file: &str,
        source: &str,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> ScenarioError {
        let (line, column) = source::line_column(source, span.start);
        let text = source.lines().nth(line - 1).unwrap_or("");
        let snippet = if source.is_empty() {
            String::new()
        } else {
            format!("\n  |\n  | {text}\n  | {}^", " ".repeat(column - 1))
        };
        ScenarioError {
            file: file.to_string(),
            line,
            column,
            message: message.into(),
            snippet,
        }
    }
}

/// Errors from loading scenarios: unreadable files, or bad content.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(#[from] ScenarioError),
    #[error("{path}: no scenario files (*.toml) found")]
    Empty { path: String },
    #[error("{0}")]
    Source(#[from] source::SourceError),
}

/// What each schema struct is called in the file, for parser messages.
const TABLES: &[(&str, &str)] = &[
    ("ScenarioFile", "a scenario file"),
    ("ProtocolSection", "a [protocol] table"),
    ("LeaseSection", "a [lease] table"),
    ("WorkloadSection", "a [workload] table"),
    ("WorkerSection", "a [[worker]] table"),
    ("NetworkSection", "a [network] table"),
    ("ClockSection", "a [clock.\"<node>\"] table"),
    ("JumpSection", "a clock jump { at_ms = ..., by_ms = ... }"),
    ("FaultSection", "a [[fault]] table"),
    ("RandomSection", "a [random] table"),
    ("ExpectSection", "an [expect] table"),
    ("MustFindSection", "an [[expect.must_find]] table"),
    ("MetricSection", "an [[expect.metric]] table"),
];

/// Parses and validates scenario text. `file` is only used in messages.
pub fn parse(source: &str, file: &str) -> Result<Scenario, ScenarioError> {
    let raw: schema::ScenarioFile = toml::from_str(source).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        ScenarioError::at(file, source, span, source::plain_words(e.message(), TABLES))
    })?;
    let mut scenario = resolve::resolve(raw, source, file)?;
    scenario.path = PathBuf::from(file);
    scenario.source_hash = crate::sim::hash::fnv1a64(source.as_bytes());
    Ok(scenario)
}

pub fn load(path: &Path) -> Result<Scenario, LoadError> {
    let text = source::read_text(path, Some(limits::FILE_MAX_BYTES))?;
    Ok(parse(&text, &path.display().to_string())?)
}

/// Expands files and directories (recursively, `*.toml`, sorted by path)
/// into scenario paths. Symbolic links are followed, but every real
/// directory is walked once and every real file listed once: a link loop
/// (`self -> .`) neither hangs the walk nor runs a file twice.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, LoadError> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for p in paths {
        if p.is_dir() {
            let before = out.len();
            walk(p, &mut out, &mut seen)?;
            if out.len() == before {
                return Err(LoadError::Empty {
                    path: p.display().to_string(),
                });
            }
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, seen: &mut BTreeSet<PathBuf>) -> Result<(), LoadError> {
    let io = |source| LoadError::Io {
        path: dir.display().to_string(),
        source,
    };
    if !seen.insert(std::fs::canonicalize(dir).map_err(io)?) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out, seen)?;
        } else if path.extension().is_some_and(|e| e == "toml") {
            // A dangling link has no real file: keep it, so loading names it.
            let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if seen.insert(real) {
                out.push(path);
            }
        }
    }
    Ok(())
}
