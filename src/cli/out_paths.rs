//! Where a search writes its findings (`--out`): the simulated search's
//! scripted scenarios and the live search's scenario files alike.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::BadInput;

/// `x.toml` -> `x-search-<kind>.toml` beside it.
fn default_out(path: &Path, kind: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy());
    path.with_file_name(format!("{stem}-search-{kind}.toml"))
}

/// Where each finding (named by its kind) is written. Without `--out`,
/// beside the input (`default_out`). `--out` names a directory when it is
/// one, or when there are several findings (created if missing); it names
/// a file only for a single finding. Several findings and an `--out` that
/// is a file (or ends in `.toml`) are refused before anything is written.
pub(super) fn out_paths(path: &Path, out: Option<&Path>, kinds: &[&str]) -> Result<Vec<PathBuf>> {
    let Some(out) = out else {
        return Ok(kinds.iter().map(|k| default_out(path, k)).collect());
    };
    let in_dir = |dir: &Path| -> Vec<PathBuf> {
        kinds
            .iter()
            .map(|k| {
                let name = default_out(path, k);
                dir.join(name.file_name().unwrap_or(name.as_os_str()))
            })
            .collect()
    };
    if out.is_dir() {
        return Ok(in_dir(out));
    }
    if kinds.len() <= 1 {
        return Ok(kinds.iter().map(|_| out.to_path_buf()).collect());
    }
    if out.exists() || out.extension().is_some_and(|x| x == "toml") {
        return Err(BadInput(format!(
            "--out {}: the search found {} violations ({}), one scenario each: give --out a directory (created if missing), not a file",
            out.display(),
            kinds.len(),
            kinds.join(", ")
        ))
        .into());
    }
    std::fs::create_dir_all(out).map_err(|e| {
        BadInput(format!(
            "--out {}: creating the directory: {e}",
            out.display()
        ))
    })?;
    Ok(in_dir(out))
}
