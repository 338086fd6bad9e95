//! The rooms of `src/` import only rooms below them: the order written in
//! ARCHITECTURE.md ("Layers"), checked by reading every `src/**/*.rs` for
//! `crate::<room>` paths (in `use` lines and inline paths alike; comments
//! skipped). An import of a room above — which is how the old
//! `suite ⇄ report` cycle began — fails here with the file and line.

use std::path::{Path, PathBuf};

/// Bottom to top. A room may use any room before it in this list.
const ORDER: [&str; 14] = [
    "protocol", "history", "sim", "check", "oracle", "scenario", "suite", "model", "shrink",
    "search", "validate", "report", "live", "cli",
];

fn rank(room: &str) -> Option<usize> {
    ORDER.iter().position(|r| *r == room)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The room a file under `src/` belongs to (`src/suite/seed.rs` and
/// `src/suite.rs` are both `suite`); `None` for `lib.rs` and `main.rs`.
fn room_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    let room = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (room != "lib" && room != "main").then_some(room)
}

/// The rooms a line of code names: `crate::room` and each top-level name
/// of a `crate::{a, b::c, …}` group.
fn rooms_named(code: &str) -> Vec<String> {
    let mut rooms = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        rooms.push(std::mem::take(&mut item));
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
            rooms.push(item);
        } else {
            rooms.push(after.to_string());
        }
        rest = after;
    }
    rooms
        .iter()
        .map(|r| {
            r.trim()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|r| !r.is_empty() && r != "self")
        .collect()
}

fn upward_imports() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in &files {
        let Some(room) = room_of(&src, file) else {
            continue;
        };
        let mine = rank(&room).unwrap_or_else(|| {
            panic!(
                "{}: room {room} is not in ORDER (add it where it belongs)",
                file.display()
            )
        });
        let text = std::fs::read_to_string(file).expect("source file reads");
        // Joined so a `use crate::{…}` group spanning lines reads as one.
        let code: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ");
        for other in rooms_named(&code) {
            let Some(theirs) = rank(&other) else {
                continue;
            };
            if theirs > mine {
                found.push(format!(
                    "{} ({room}) imports {other}, a room above it",
                    file.strip_prefix(&src).unwrap_or(file).display()
                ));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn the_scanner_sees_plain_paths_and_use_groups() {
    assert_eq!(
        rooms_named("use crate::{check::{self, Report}, sim, suite::seed}; crate::report::x()"),
        ["check", "sim", "suite", "report"]
    );
    assert_eq!(
        rooms_named("let s = \"no paths here\";"),
        Vec::<String>::new()
    );
}

#[test]
fn no_room_imports_a_room_above_it() {
    let upward = upward_imports();
    assert!(
        upward.is_empty(),
        "upward imports (order, bottom to top: {}):\n{}",
        ORDER.join(" < "),
        upward.join("\n")
    );
}
