//! The rooms of `src/` import only rooms below them: the order written in
//! ARCHITECTURE.md ("Layers"), checked by reading every `src/**/*.rs` for
//! `crate::<room>` paths (in `use` lines and inline paths alike; comments
//! skipped). An import of a room above — which is how the old
//! `suite ⇄ report` cycle began — fails here with the file and line.

use std::path::{Path, PathBuf};

/// Bottom to top. A room may use any room before it in this list.
const ORDER: [&str; 15] = [
    "lookup", "protocol", "history", "sim", "check", "oracle", "scenario", "suite", "model",
    "shrink", "search", "validate", "report", "live", "cli",
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

/// Every (file under `src/`, its room, a room it names) in the crate.
fn imports() -> Vec<(String, String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in &files {
        let Some(room) = room_of(&src, file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("source file reads");
        // Joined so a `use crate::{…}` group spanning lines reads as one.
        let code: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ");
        let name = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .display()
            .to_string();
        for other in rooms_named(&code) {
            found.push((name.clone(), room.clone(), other));
        }
    }
    found
}

fn upward_imports() -> Vec<String> {
    let mut found = Vec::new();
    for (file, room, other) in imports() {
        let mine = rank(&room).unwrap_or_else(|| {
            panic!("{file}: room {room} is not in ORDER (add it where it belongs)")
        });
        let Some(theirs) = rank(&other) else {
            continue;
        };
        if theirs > mine {
            found.push(format!("{file} ({room}) imports {other}, a room above it"));
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn the_checkers_import_nothing_of_the_simulator() {
    // `check/` is the entry point for histories from anywhere and `oracle/`
    // its independent twin: both stand on `history/` (and `lookup`'s
    // tables), never on `sim/`, although the layer order would allow it.
    let mut found: Vec<String> = imports()
        .into_iter()
        .filter(|(_, room, other)| (room == "check" || room == "oracle") && other == "sim")
        .map(|(file, _, _)| file)
        .collect();
    found.dedup();
    assert!(found.is_empty(), "files importing sim: {found:?}");
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

/// Files outside `report/` that may still hold a renderer, each with why.
/// Every entry must still match (a file that no longer does is taken off,
/// so the list only shrinks).
const RENDERER_EXCEPTIONS: [(&str, &str); 4] = [
    (
        "sim/trace.rs",
        "`trace::render`, one trace line: `suite::determinism::first_difference` quotes the first diverging event with it, and suite/ sits below report/; it moves once that function returns the two events as data",
    ),
    (
        "history/mod.rs",
        "`History::describe`, a record's one-line form that every evidence listing and record-naming error quotes",
    ),
    (
        "sim/options.rs",
        "`Display for Options`: the resolved options as `key = value` lines, the run's identity (replay header, emitted scenarios)",
    ),
    (
        "model/to_scenario.rs",
        "writes a scenario file (TOML the simulator reads back), data like scenario/emit.rs; ARCHITECTURE.md, model/",
    ),
];

/// What marks a renderer in a file's code (comments stripped): a function
/// named `render`, `render_*`, `timeline`, `table` or `*_table` that returns
/// a `String`; a column-aligned format spec (`{:<34}`, `{name:>6}`: the
/// stuff of tables; zero-padded `{:016x}` identifiers are not aligned);
/// or `Display` implemented for a `*Report`.
fn renderer_marks(code: &str) -> Vec<String> {
    let mut marks = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("fn ") {
        let after = &rest[i + 3..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let signature = after.split(['{', ';']).next().unwrap_or("");
        let named = name == "render"
            || name.starts_with("render_")
            || name == "timeline"
            || name == "table"
            || name.ends_with("_table");
        let word_start =
            i == 0 || !rest[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if named && word_start && signature.contains("-> String") {
            marks.push(format!("fn {name} returning a String"));
        }
        rest = after;
    }
    let bytes = code.as_bytes();
    for (i, _) in code.match_indices('{') {
        let spec: String = code[i + 1..]
            .chars()
            .take_while(|c| *c != '}' && *c != '{' && *c != '\n')
            .take(24)
            .collect();
        let Some((arg, fmt)) = spec.split_once(':') else {
            continue;
        };
        if !arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            continue;
        }
        // An optional fill character, then the alignment, then a width.
        let mut chars: Vec<char> = fmt.chars().take(3).collect();
        if chars.len() >= 2 && !matches!(chars[0], '<' | '>' | '^') {
            chars.remove(0);
        }
        let aligned =
            chars.len() >= 2 && matches!(chars[0], '<' | '>' | '^') && chars[1].is_ascii_digit();
        if aligned && i > 0 && bytes[i - 1] != b'{' {
            marks.push(format!("aligned format spec {{{spec}}}"));
        }
    }
    let mut rest = code;
    while let Some(i) = rest.find("Display for ") {
        let after = &rest[i + "Display for ".len()..];
        let ty: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ty.ends_with("Report") {
            marks.push(format!("Display for {ty}"));
        }
        rest = after;
    }
    marks
}

#[test]
fn the_renderer_scanner_sees_tables_and_render_functions_but_not_data() {
    assert_eq!(
        renderer_marks("pub fn render(&self, h: &History) -> String { x }"),
        ["fn render returning a String"]
    );
    assert_eq!(
        renderer_marks("fn table(r: &[R]) -> String { writeln!(s, \"{:<34} {n:>6}\", a) }"),
        [
            "fn table returning a String",
            "aligned format spec {:<34}",
            "aligned format spec {n:>6}"
        ]
    );
    assert_eq!(
        renderer_marks("impl fmt::Display for ClaimsReport {"),
        ["Display for ClaimsReport"]
    );
    // Data: a TOML table builder, a hex id, a zero-padded fraction, a closure's braces.
    assert!(renderer_marks(
        "fn fault_table(o: &Options) -> Table { format!(\"{h:016x} {:06}\", a, b); |x| { x } }"
    )
    .is_empty());
}

#[test]
fn no_renderer_lives_outside_report() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    let mut excepted_seen = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .unwrap_or(file)
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("report/") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("source file reads");
        let code: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let marks = renderer_marks(&code);
        if marks.is_empty() {
            continue;
        }
        if RENDERER_EXCEPTIONS.iter().any(|(f, _)| *f == rel) {
            excepted_seen.push(rel);
            continue;
        }
        found.push(format!("{rel}: {}", marks.join(", ")));
    }
    assert!(
        found.is_empty(),
        "renderers outside src/report/ (move them to report/, or add the file to \
         RENDERER_EXCEPTIONS with the reason):\n{}",
        found.join("\n")
    );
    let stale: Vec<&str> = RENDERER_EXCEPTIONS
        .iter()
        .map(|(f, _)| *f)
        .filter(|f| !excepted_seen.iter().any(|s| s == f))
        .collect();
    assert!(
        stale.is_empty(),
        "these RENDERER_EXCEPTIONS hold no renderer any more; take them off: {stale:?}"
    );
}

/// ARCHITECTURE.md's serde invariant, the part a grep can hold: the core
/// rooms and the in-memory history types never name serde (comments aside).
#[test]
fn the_core_rooms_and_history_types_name_no_serde() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for room in ["protocol", "sim", "check", "oracle"] {
        rust_files(&src.join(room), &mut files);
    }
    files.push(src.join("history/mod.rs"));
    let naming: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .expect("source file reads")
                .lines()
                .any(|l| l.split("//").next().unwrap_or("").contains("serde"))
        })
        .map(|f| f.strip_prefix(&src).unwrap_or(f).display().to_string())
        .collect();
    assert!(naming.is_empty(), "serde in a core room: {naming:?}");
}

#[test]
fn shard_ownership_is_computed_in_suite_shard_only() {
    // The seed range -> shard mapping (an index modulo the shard count) has
    // one home; everything else asks it (`Shard::owns`, `shard::seeds`, …).
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap_or(file);
        if rel == Path::new("suite/shard.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("source file reads");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let compact: String = code.split_whitespace().collect();
            let arithmetic =
                compact.contains("%count") || compact.contains(".count==") && compact.contains('%');
            // cli/ parses `--shard` and prints; it never filters seeds itself.
            let cli_filters = rel.starts_with("cli") && compact.contains(".owns(");
            if arithmetic || cli_filters {
                found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "shard arithmetic outside suite/shard.rs:\n{}",
        found.join("\n")
    );
}
