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

/// The longest a function in the live wing may be, in lines.
const LIVE_FN_LIMIT: usize = 150;

/// The module path of a file under `src/live/` (`client/mod.rs` and
/// `client.rs` are both `["client"]`; `mod.rs` is `[]`).
fn live_module(live: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(live).expect("file under src/live");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    if last != "mod.rs" {
        parts.push(last.trim_end_matches(".rs").to_string());
    }
    parts
}

/// The file of a module path, if it is one.
fn live_file(live: &Path, module: &[String]) -> Option<PathBuf> {
    let dir: PathBuf = module.iter().collect();
    let candidates = if module.is_empty() {
        vec![live.join("mod.rs")]
    } else {
        vec![
            live.join(&dir).with_extension("rs"),
            live.join(&dir).join("mod.rs"),
        ]
    };
    candidates.into_iter().find(|p| p.is_file())
}

/// Code with comments, string literals and test modules taken out.
fn live_code(text: &str) -> String {
    let body = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut code = String::new();
    for line in body.lines() {
        let line = line.split("//").next().unwrap_or("");
        let mut in_str = false;
        let mut prev = ' ';
        for c in line.chars() {
            if c == '"' && prev != '\\' {
                in_str = !in_str;
            } else if !in_str {
                code.push(c);
            }
            prev = c;
        }
        code.push('\n');
    }
    code
}

/// Every path a piece of code names, `a::{b, c::{d, self}}` groups spelled
/// out (`a::b`, `a::c::d`, `a::c`; a group's prefix alone only with `self`).
fn paths_named(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_ident(chars[i]) || (i > 0 && (is_ident(chars[i - 1]) || chars[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let (path, end) = read_path(&chars, i);
        if path.contains("::") {
            out.extend(path.split('\n').map(str::to_string));
        }
        i = end.max(i + 1);
    }
    out
}

/// The path starting at `i` (a group is spelled out, one path a line) and
/// where it ends.
fn read_path(chars: &[char], mut i: usize) -> (String, usize) {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut prefix = String::new();
    loop {
        let start = i;
        while i < chars.len() && is_ident(chars[i]) {
            i += 1;
        }
        prefix.extend(&chars[start..i]);
        if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
            i += 2;
            while chars.get(i).is_some_and(|c| c.is_whitespace()) {
                i += 1;
            }
            if chars.get(i) == Some(&'{') {
                // A group: each top-level item, relative to the prefix.
                let mut paths = Vec::new();
                i += 1;
                loop {
                    while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                        i += 1;
                    }
                    match chars.get(i) {
                        None => return (paths.join("\n"), i),
                        Some('}') => return (paths.join("\n"), i + 1),
                        _ => {}
                    }
                    let (inner, end) = read_path(chars, i);
                    for p in inner.split('\n').filter(|p| !p.is_empty()) {
                        if p == "self" {
                            paths.push(prefix.clone());
                        } else {
                            paths.push(format!("{prefix}::{p}"));
                        }
                    }
                    i = end.max(i + 1);
                }
            }
            prefix.push_str("::");
            continue;
        }
        return (prefix, i);
    }
}

/// The files of `src/live/` a file imports.
fn live_imports(live: &Path, file: &Path) -> Vec<PathBuf> {
    let me = live_module(live, file);
    let code = live_code(&std::fs::read_to_string(file).expect("source file reads"));
    let mut found = Vec::new();
    for path in paths_named(&code) {
        let mut segs = path.split("::").map(str::trim).filter(|s| !s.is_empty());
        let Some(first) = segs.next() else { continue };
        let mut at: Vec<String> = match first {
            "crate" => {
                if segs.next() != Some("live") {
                    continue;
                }
                Vec::new()
            }
            "self" => me.clone(),
            "super" => {
                let mut m = me.clone();
                m.pop();
                m
            }
            child => {
                // A child module named from a mod.rs (`fault::Faults`).
                let mut m = me.clone();
                m.push(child.to_string());
                if !file.ends_with("mod.rs") || live_file(live, &m).is_none() {
                    continue;
                }
                m
            }
        };
        for seg in segs {
            if seg == "super" {
                at.pop();
                continue;
            }
            let mut deeper = at.clone();
            deeper.push(seg.to_string());
            if live_file(live, &deeper).is_none() {
                break;
            }
            at = deeper;
        }
        if at != me {
            if let Some(f) = live_file(live, &at) {
                found.push(f);
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// A circle in an import graph, as the files round it, if there is one.
fn find_circle(graph: &[(PathBuf, Vec<PathBuf>)]) -> Option<Vec<PathBuf>> {
    fn visit(
        graph: &[(PathBuf, Vec<PathBuf>)],
        node: &PathBuf,
        stack: &mut Vec<PathBuf>,
        done: &mut Vec<PathBuf>,
    ) -> Option<Vec<PathBuf>> {
        if let Some(pos) = stack.iter().position(|n| n == node) {
            let mut circle = stack[pos..].to_vec();
            circle.push(node.clone());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.clone());
        let next = graph
            .iter()
            .find(|(n, _)| n == node)
            .map(|(_, e)| e.clone());
        for to in next.unwrap_or_default() {
            if let Some(c) = visit(graph, &to, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.push(node.clone());
        None
    }
    let mut done = Vec::new();
    graph
        .iter()
        .find_map(|(n, _)| visit(graph, n, &mut Vec::new(), &mut done))
}

#[test]
fn the_live_import_scanner_sees_groups_children_and_supers() {
    assert_eq!(
        paths_named("use super::{faults::{crash_line, X}, process::{self, Victim}}; fault::read()"),
        [
            "super::faults::crash_line",
            "super::faults::X",
            "super::process",
            "super::process::Victim",
            "fault::read"
        ]
    );
    let live = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/live");
    let imports = live_imports(&live, &live.join("trial.rs"));
    assert!(imports.contains(&live.join("faults.rs")), "{imports:?}");
    assert!(imports.contains(&live.join("mod.rs")), "{imports:?}");
    let a = PathBuf::from("a.rs");
    let b = PathBuf::from("b.rs");
    let circle = find_circle(&[(a.clone(), vec![b.clone()]), (b.clone(), vec![a.clone()])]);
    assert_eq!(circle, Some(vec![a.clone(), b, a]));
}

/// The live wing's files form no circle: a file that imports another must
/// not be imported back, however long the way round (`cluster.rs ⇄
/// servers.rs` and `worker.rs ⇄ etcd.rs` through `worker::emit` were two).
/// An edge is any path a file's code names that resolves to another file
/// of `src/live/`: `super::…`, `crate::live::…`, `self::…`, or a child
/// module named from its `mod.rs`, `use` groups included. Test modules
/// (from `#[cfg(test)]` on) are left out: a test may reach anywhere.
#[test]
fn no_live_file_imports_a_file_that_imports_it_back() {
    let live = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/live");
    let mut files = Vec::new();
    rust_files(&live, &mut files);
    let graph: Vec<(PathBuf, Vec<PathBuf>)> = files
        .iter()
        .map(|f| (f.clone(), live_imports(&live, f)))
        .collect();
    if let Some(circle) = find_circle(&graph) {
        let names: Vec<String> = circle
            .iter()
            .map(|f| f.strip_prefix(&live).unwrap_or(f).display().to_string())
            .collect();
        panic!(
            "a circle of imports in src/live/: {} (move what both need to a file below both)",
            names.join(" → ")
        );
    }
}

/// Every `fn` in a file with its first line and length in lines (its
/// signature line to its closing brace, at the `fn`'s own indentation:
/// rustfmt's layout).
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let mut rest = trimmed;
        for q in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
            "extern \"C\" ",
        ] {
            rest = rest.strip_prefix(q).unwrap_or(rest);
        }
        let Some(after) = rest.strip_prefix("fn ") else {
            continue;
        };
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let closing = format!("{indent}}}");
        let end = (i..lines.len())
            .find(|&j| lines[j] == closing || (j == i && line.trim_end().ends_with('}')))
            .unwrap_or(i);
        out.push((name, i + 1, end - i + 1));
    }
    out
}

#[test]
fn the_function_length_scanner_measures_to_the_closing_brace() {
    let text = "fn a() {\n    x();\n}\n\nimpl T {\n    pub(crate) fn b(\n        y: u8,\n    ) {\n        y;\n    }\n}\n";
    assert_eq!(
        function_lengths(text),
        [("a".to_string(), 1, 3), ("b".to_string(), 6, 5)]
    );
}

/// No function in the live wing (and its command, `cli/live.rs`) runs over
/// 150 lines: one that does holds several phases, to be named and split.
#[test]
fn no_live_function_is_longer_than_the_limit() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("live"), &mut files);
    files.push(src.join("cli/live.rs"));
    let mut long = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("source file reads");
        for (name, line, len) in function_lengths(&text) {
            if len > LIVE_FN_LIMIT {
                long.push(format!(
                    "{}:{line}: fn {name} is {len} lines",
                    file.strip_prefix(&src).unwrap_or(file).display()
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {LIVE_FN_LIMIT} lines (split them into named phases):\n{}",
        long.join("\n")
    );
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
