//! A PostgreSQL data directory made by `initdb` once and copied for each
//! harness run (and each `--jobs` job), instead of `initdb` every time.
//!
//! Why: `initdb` bootstraps the catalogs and three databases — about a
//! second of CPU and disk a run, far more under load — and a live test suite
//! starts a cluster per run, over a hundred times; a copy of the directory
//! `initdb` leaves (never started, so the same for the same binary and
//! arguments) takes a fraction of that (`../shared/LIVE-NOTES.md`, and
//! docs/live-running.md). The template is kept in the user's cache
//! directory (`$XDG_CACHE_HOME/fencesim`, else `~/.cache/fencesim`), not the
//! temp dir whose `fencesim-live-*` directories the harness sweeps, keyed by
//! the binary (its path, size and modification time) and its arguments: a
//! new PostgreSQL makes a new one. It is published by renaming a complete
//! copy into place, so a run never copies a half-written template, and two
//! runs that make one at once both succeed (one copy is kept). Anything that
//! goes wrong with the cache falls back to `initdb`: the cache only saves
//! time. `FENCESIM_PG_TEMPLATE=off` runs `initdb` every time.

use std::fs;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The template for this `initdb` binary and these arguments, if one was
/// published (None also when the cache is switched off or has no home).
pub fn find(initdb: &Path, args: &[&str]) -> Option<PathBuf> {
    found(template_path(initdb, args)?)
}

fn found(path: PathBuf) -> Option<PathBuf> {
    path.join("PG_VERSION").is_file().then_some(path)
}

/// Copies `template` to `data` (which must not exist), every entry owned by
/// `owner` (uid, gid) when given: PostgreSQL runs as that user and refuses
/// a data directory it does not own.
pub fn copy_into(template: &Path, data: &Path, owner: Option<(u32, u32)>) -> Result<()> {
    copy_tree(template, data, owner).with_context(|| {
        format!(
            "copying the PostgreSQL template {} to {}",
            template.display(),
            data.display()
        )
    })
}

/// Publishes the fresh (never started) data directory `data` as the
/// template for `initdb` and `args`, if none is there yet. Best effort: a
/// cache that cannot be written leaves the next run to `initdb` again.
pub fn publish(initdb: &Path, args: &[&str], data: &Path) {
    if let Some(path) = template_path(initdb, args) {
        publish_at(&path, data);
    }
}

fn publish_at(path: &Path, data: &Path) {
    if path.exists() {
        return;
    }
    let Some(parent) = path.parent() else {
        return;
    };
    if fs::create_dir_all(parent).is_err() {
        return;
    }
    let staging = parent.join(format!(
        ".staging-{}-{}",
        std::process::id(),
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let _ = fs::remove_dir_all(&staging);
    let published = copy_tree(data, &staging, None).is_ok() && fs::rename(&staging, path).is_ok();
    if !published {
        // Another run published first (the rename found a directory), or
        // the copy failed: ours is not needed.
        let _ = fs::remove_dir_all(&staging);
    }
}

/// `<cache>/fencesim/pg-template-<hash>`, None when the cache is off or
/// there is no home for it.
fn template_path(initdb: &Path, args: &[&str]) -> Option<PathBuf> {
    if std::env::var("FENCESIM_PG_TEMPLATE").is_ok_and(|v| v == "off") {
        return None;
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    path_in(&cache.join("fencesim"), initdb, args)
}

/// The template's name in `dir`: the hash names the binary as it is on
/// disk and the arguments, so a changed binary or argument list never
/// meets an old template.
fn path_in(dir: &Path, initdb: &Path, args: &[&str]) -> Option<PathBuf> {
    let meta = fs::metadata(initdb).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    // SipHash with the fixed keys of `DefaultHasher::new`: the same name
    // for the same inputs in every run of this build.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (initdb, meta.len(), modified.as_nanos(), args).hash(&mut h);
    Some(dir.join(format!("pg-template-{:016x}", h.finish())))
}

/// A recursive copy keeping each entry's permission bits (PostgreSQL wants
/// its data directory 0700), files and directories only (a fresh data
/// directory has nothing else).
fn copy_tree(from: &Path, to: &Path, owner: Option<(u32, u32)>) -> std::io::Result<()> {
    fs::create_dir(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target, owner)?;
        } else if kind.is_file() {
            fs::copy(entry.path(), &target)?;
            chown(&target, owner)?;
        } else {
            return Err(std::io::Error::other(format!(
                "{}: neither a file nor a directory",
                entry.path().display()
            )));
        }
    }
    let mode = fs::metadata(from)?.permissions().mode();
    fs::set_permissions(to, fs::Permissions::from_mode(mode))?;
    chown(to, owner)
}

fn chown(path: &Path, owner: Option<(u32, u32)>) -> std::io::Result<()> {
    match owner {
        Some((uid, gid)) => std::os::unix::fs::chown(path, Some(uid), Some(gid)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "fencesim-pg-template-test-{}-{name}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A stand-in for a fresh data directory: PG_VERSION, a 0600 file in a
    /// 0700 subdirectory, the top 0700.
    fn fresh_data(at: &Path) {
        fs::create_dir_all(at.join("global")).unwrap();
        fs::write(at.join("PG_VERSION"), "15\n").unwrap();
        fs::write(at.join("global/pg_control"), [7u8; 64]).unwrap();
        fs::set_permissions(
            at.join("global/pg_control"),
            fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        fs::set_permissions(at.join("global"), fs::Permissions::from_mode(0o700)).unwrap();
        fs::set_permissions(at, fs::Permissions::from_mode(0o700)).unwrap();
    }

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_published_template_is_found_and_copied_with_its_contents_and_modes() {
        let dir = scratch("copy");
        let initdb = dir.join("initdb");
        fs::write(&initdb, "#!/bin/sh\n").unwrap();
        let path = path_in(&dir.join("cache"), &initdb, &["-E", "UTF8"]).unwrap();
        assert_eq!(found(path.clone()), None, "nothing published yet");
        fresh_data(&dir.join("data"));
        fs::create_dir_all(dir.join("cache")).unwrap();
        publish_at(&path, &dir.join("data"));
        let template = found(path.clone()).expect("published");
        copy_into(&template, &dir.join("copy"), None).unwrap();
        assert_eq!(
            fs::read(dir.join("copy/global/pg_control")).unwrap(),
            [7u8; 64]
        );
        assert_eq!(mode(&dir.join("copy")), 0o700);
        assert_eq!(mode(&dir.join("copy/global")), 0o700);
        assert_eq!(mode(&dir.join("copy/global/pg_control")), 0o600);
        // A second publish (another run that ran initdb meanwhile) keeps the
        // first and leaves no staging directory behind.
        fs::write(dir.join("data/PG_VERSION"), "16\n").unwrap();
        publish_at(&path, &dir.join("data"));
        assert_eq!(fs::read_to_string(path.join("PG_VERSION")).unwrap(), "15\n");
        let names: Vec<String> = fs::read_dir(dir.join("cache"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [path.file_name().unwrap().to_string_lossy().into_owned()]
        );
        // Copying onto an existing directory is an error, never a merge.
        assert!(copy_into(&template, &dir.join("copy"), None).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn another_binary_or_other_arguments_name_another_template() {
        let dir = scratch("key");
        let initdb = dir.join("initdb");
        fs::write(&initdb, "#!/bin/sh\n").unwrap();
        let cache = dir.join("cache");
        let first = path_in(&cache, &initdb, &["-E", "UTF8"]).unwrap();
        assert_eq!(path_in(&cache, &initdb, &["-E", "UTF8"]).unwrap(), first);
        assert_ne!(
            path_in(&cache, &initdb, &["-E", "SQL_ASCII"]).unwrap(),
            first
        );
        fs::write(&initdb, "#!/bin/sh\n# a newer PostgreSQL\n").unwrap();
        assert_ne!(path_in(&cache, &initdb, &["-E", "UTF8"]).unwrap(), first);
        assert_eq!(path_in(&cache, &dir.join("missing"), &["-E", "UTF8"]), None);
        fs::remove_dir_all(&dir).unwrap();
    }
}
