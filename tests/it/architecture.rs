//! The rooms of `src/` import only rooms below them: the order written in
//! ARCHITECTURE.md ("Layers"), checked by reading every `src/**/*.rs` for
//! `crate::<room>` paths (in `use` lines and inline paths alike; comments
//! skipped). An import of a room above — which is how the old
//! `suite ⇄ report` cycle began — fails here with the file and line.

use std::path::{Path, PathBuf};

/// Bottom to top. A room may use any room before it in this list.
const ORDER: [&str; 16] = [
    "lookup",
    "protocol",
    "history",
    "sim",
    "check",
    "oracle",
    "scenario",
    "suite",
    "model",
    "codecheck",
    "shrink",
    "search",
    "validate",
    "report",
    "live",
    "cli",
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
const RENDERER_EXCEPTIONS: [(&str, &str); 5] = [
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
    (
        "codecheck/to_scenario.rs",
        "writes a code-level counterexample as a scenario file (TOML the simulator reads back), as model/to_scenario.rs does; ARCHITECTURE.md, codecheck/",
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

/// The module path of a file under `src/` (`live/client/mod.rs` and
/// `live/client.rs` are both `["live", "client"]`; `lib.rs` is `[]`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("file under src/");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    if last != "mod.rs" && !(parts.is_empty() && last == "lib.rs") {
        parts.push(last.trim_end_matches(".rs").to_string());
    }
    parts
}

/// The file of a module path, if it is one.
fn file_of(src: &Path, module: &[String]) -> Option<PathBuf> {
    let dir: PathBuf = module.iter().collect();
    let candidates = if module.is_empty() {
        vec![src.join("lib.rs")]
    } else {
        vec![
            src.join(&dir).with_extension("rs"),
            src.join(&dir).join("mod.rs"),
        ]
    };
    candidates.into_iter().find(|p| p.is_file())
}

/// Where a file's inline test module begins (`#[cfg(test)]` on a `mod x {`;
/// a `#[cfg(test)] mod x;` declaration is not one), or its end.
fn tests_start(text: &str) -> usize {
    let mut from = 0;
    while let Some(i) = text[from..].find("#[cfg(test)]") {
        let at = from + i;
        let mut rest = text[at + "#[cfg(test)]".len()..].trim_start();
        for vis in ["pub(crate) ", "pub(super) ", "pub "] {
            rest = rest.strip_prefix(vis).unwrap_or(rest);
        }
        let head = rest.split([';', '{']).next().unwrap_or("");
        let inline = rest.get(head.len()..).is_some_and(|r| r.starts_with('{'));
        if rest.starts_with("mod ") && inline {
            return at;
        }
        from = at + 1;
    }
    text.len()
}

/// Code with comments, string literals and test modules taken out.
fn code_of(text: &str) -> String {
    let body = &text[..tests_start(text)];
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
                    i = skip_alias(chars, end.max(i + 1));
                }
            }
            prefix.push_str("::");
            continue;
        }
        return (prefix, i);
    }
}

/// Past an ` as name` after a path in a `use` group, if there is one.
fn skip_alias(chars: &[char], mut i: usize) -> usize {
    let at = i;
    while chars.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    if chars.get(i) == Some(&'a')
        && chars.get(i + 1) == Some(&'s')
        && chars.get(i + 2).is_some_and(|c| c.is_whitespace())
    {
        i += 2;
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        while chars
            .get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            i += 1;
        }
        return i;
    }
    at
}

/// The crate's files and what each names, read once.
struct Crate {
    src: PathBuf,
    /// (file, its module path, its code), `main.rs` (another crate) left out.
    files: Vec<(PathBuf, Vec<String>, String)>,
}

impl Crate {
    fn read() -> Crate {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut paths = Vec::new();
        rust_files(&src, &mut paths);
        let files = paths
            .into_iter()
            .filter(|f| f != &src.join("main.rs"))
            .map(|f| {
                let code = code_of(&std::fs::read_to_string(&f).expect("source file reads"));
                (f.clone(), module_of(&src, &f), code)
            })
            .collect();
        Crate { src, files }
    }

    fn code(&self, module: &[String]) -> Option<&str> {
        self.files
            .iter()
            .find(|(_, m, _)| m == module)
            .map(|(_, _, c)| c.as_str())
    }

    /// The module a name re-exported by `module` (`pub use child::Name`)
    /// comes from, so a path through a façade (`crate::live::scenario::Fault`)
    /// is an edge to the file that defines it, not to the façade.
    fn reexported(&self, module: &[String], name: &str, depth: usize) -> Option<Vec<String>> {
        let code = self.code(module)?;
        let mut rest = code;
        while let Some(i) = rest.find("use ") {
            let stmt_start = &rest[..i];
            let after = &rest[i + 4..];
            let end = after.find(';').unwrap_or(after.len());
            let public = stmt_start.trim_end().ends_with("pub")
                || stmt_start.trim_end().ends_with(')') && stmt_start.trim_end().contains("pub(");
            if public {
                for p in paths_named(&after[..end]) {
                    if p.rsplit("::").next() == Some(name) {
                        let at = self.resolve(module, &p, depth + 1)?;
                        return Some(at);
                    }
                }
            }
            rest = &after[end..];
        }
        None
    }

    /// The module of the file a path names from `me`, if it names one.
    fn resolve(&self, me: &[String], path: &str, depth: usize) -> Option<Vec<String>> {
        if depth > 8 {
            return None;
        }
        let mut segs = path.split("::").map(str::trim).filter(|s| !s.is_empty());
        let mut at: Vec<String> = match segs.next()? {
            "crate" => Vec::new(),
            "self" => me.to_vec(),
            "super" => me[..me.len().saturating_sub(1)].to_vec(),
            child => {
                let mut m = me.to_vec();
                m.push(child.to_string());
                file_of(&self.src, &m)?;
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
            if file_of(&self.src, &deeper).is_some() {
                at = deeper;
                continue;
            }
            match self.reexported(&at, seg, depth) {
                Some(from) if from != at => at = from,
                _ => break,
            }
        }
        file_of(&self.src, &at).map(|_| at)
    }

    /// Every file's imports of other files of the crate: any path its code
    /// names that resolves to another file — `crate::…`, `super::…`,
    /// `self::…`, a child module, `use` groups included, re-exports
    /// followed to the file that defines the name. Test modules are left
    /// out: a test may reach anywhere.
    fn graph(&self) -> Vec<(PathBuf, Vec<PathBuf>)> {
        self.files
            .iter()
            .map(|(file, me, code)| {
                let mut to: Vec<PathBuf> = paths_named(code)
                    .iter()
                    .filter_map(|p| self.resolve(me, p, 0))
                    .filter(|m| m != me && !owns(file, me, m))
                    .filter_map(|m| file_of(&self.src, &m))
                    .collect();
                to.sort();
                to.dedup();
                (file.clone(), to)
            })
            .collect()
    }

    fn rel(&self, f: &Path) -> String {
        f.strip_prefix(&self.src)
            .unwrap_or(f)
            .to_string_lossy()
            .replace('\\', "/")
    }
}

/// Whether `file` (module `me`) is a module root (`mod.rs`, `lib.rs`)
/// naming a module of its own subtree: the Rust idiom of a parent that
/// declares and drives its children, which use the parent's words
/// (`check/mod.rs` runs each checker, each checker names
/// `super::Violation`) — structure, not a circle. `live/` keeps its
/// stricter rule of the last round: there a `mod.rs` that uses a child is
/// above it like any other file, so its words live in a file below both.
fn owns(file: &Path, me: &[String], to: &[String]) -> bool {
    let root = file.ends_with("mod.rs") || file.ends_with("lib.rs");
    root && to.starts_with(me) && me.first().is_none_or(|r| r != "live")
}

/// The circles of a graph: its strongly connected components of more
/// than one file (Tarjan), each sorted, in a fixed order.
fn circles(graph: &[(PathBuf, Vec<PathBuf>)]) -> Vec<Vec<PathBuf>> {
    struct Tarjan<'g> {
        graph: &'g [(PathBuf, Vec<PathBuf>)],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.next);
            self.low[v] = self.next;
            self.next += 1;
            self.stack.push(v);
            self.on[v] = true;
            let edges: Vec<usize> = self.graph[v]
                .1
                .iter()
                .filter_map(|to| self.graph.iter().position(|(n, _)| n == to))
                .collect();
            for w in edges {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(i) if self.on[w] => self.low[v] = self.low[v].min(i),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on[w] = false;
                    scc.push(self.graph[w].0.clone());
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    self.out.push(scc);
                }
            }
        }
    }
    let n = graph.len();
    let mut t = Tarjan {
        graph,
        index: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    t.out.sort();
    t.out
}

#[test]
fn the_import_scanner_sees_groups_children_supers_and_reexports() {
    assert_eq!(
        paths_named("use super::etcd::{gateway as g, members};"),
        ["super::etcd::gateway", "super::etcd::members"]
    );
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
    let krate = Crate::read();
    let graph = krate.graph();
    let edges = |file: &str| -> Vec<String> {
        let f = krate.src.join(file);
        graph
            .iter()
            .find(|(n, _)| *n == f)
            .map(|(_, e)| e.iter().map(|p| krate.rel(p)).collect())
            .unwrap_or_default()
    };
    let trial = edges("live/trial.rs");
    assert!(trial.contains(&"live/mod.rs".to_string()), "{trial:?}");
    assert!(
        trial.iter().any(|f| f.starts_with("live/fault/")),
        "{trial:?}"
    );
    // `crate::protocol::worker` is re-exported by protocol/mod.rs from its lease wing.
    let worker = edges("live/worker/mod.rs");
    assert!(
        worker.contains(&"protocol/lease/worker.rs".to_string()),
        "{worker:?}"
    );
    let (a, b) = (PathBuf::from("a.rs"), PathBuf::from("b.rs"));
    let c = PathBuf::from("c.rs");
    let graph = [
        (a.clone(), vec![b.clone()]),
        (b.clone(), vec![a.clone()]),
        (c.clone(), vec![a.clone()]),
    ];
    assert_eq!(circles(&graph), vec![vec![a, b]]);
}

/// Circles of files tolerated for now, each with why. An entry covers a
/// circle whose files are all among its files; every entry must still
/// cover one (an entry that covers none is taken off: the list only
/// shrinks).
const ALLOWED_CIRCLES: [(&[&str], &str); 0] = [];

/// No file of `src/` imports a file that imports it back, however long
/// the way round — within a room (`cluster.rs ⇄ servers.rs` in `live/`,
/// `write.rs ⇄ html.rs` in `report/`) and across rooms alike. What both
/// ends of a circle need moves to a file below both.
#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let krate = Crate::read();
    let found = circles(&krate.graph());
    let names = |c: &[PathBuf]| -> Vec<String> { c.iter().map(|f| krate.rel(f)).collect() };
    let mut covered = vec![false; ALLOWED_CIRCLES.len()];
    let mut bad = Vec::new();
    for c in &found {
        let files = names(c);
        match ALLOWED_CIRCLES
            .iter()
            .position(|(allowed, _)| files.iter().all(|f| allowed.contains(&f.as_str())))
        {
            Some(k) => covered[k] = true,
            None => bad.push(files.join(" ⇄ ")),
        }
    }
    assert!(
        bad.is_empty(),
        "circles of imports in src/ (move what both need to a file below both):\n{}",
        bad.join("\n")
    );
    let stale: Vec<&str> = ALLOWED_CIRCLES
        .iter()
        .zip(&covered)
        .filter(|(_, c)| !**c)
        .map(|((files, _), _)| files[0])
        .collect();
    assert!(
        stale.is_empty(),
        "these ALLOWED_CIRCLES are no circle any more; take them off: {stale:?}"
    );
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

/// The longest a function in `src/` may be, in lines.
const FN_LIMIT: usize = 100;

/// Functions over [`FN_LIMIT`] lines that are owned by other changes
/// (file, fn, its length now). The list may only shrink: a listed function
/// may not grow, one split below the limit is taken off, and no function
/// of `live/`, `cli/` or `report/` may be listed.
const LONG_FUNCTIONS: [(&str, &str, usize); 0] = [];

/// No function in `src/` runs over [`FN_LIMIT`] lines, but for the listed
/// ones: a longer one holds several phases, to be named and split.
#[test]
fn no_function_is_longer_than_the_limit() {
    let krate = Crate::read();
    let mut long = Vec::new();
    let mut seen = Vec::new();
    for (file, _, _) in &krate.files {
        let rel = krate.rel(file);
        let text = std::fs::read_to_string(file).expect("source file reads");
        for (name, line, len) in function_lengths(&text) {
            if len <= FN_LIMIT {
                continue;
            }
            match LONG_FUNCTIONS
                .iter()
                .find(|(f, n, _)| *f == rel && *n == name)
            {
                Some((_, _, max)) if len <= *max => seen.push((rel.clone(), name)),
                Some((_, _, max)) => long.push(format!(
                    "{rel}:{line}: fn {name} is {len} lines (listed at {max}: it may not grow)"
                )),
                None => long.push(format!("{rel}:{line}: fn {name} is {len} lines")),
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {FN_LIMIT} lines (split them into named phases):\n{}",
        long.join("\n")
    );
    let stale: Vec<String> = LONG_FUNCTIONS
        .iter()
        .filter(|(f, n, _)| !seen.iter().any(|(sf, sn)| sf == f && sn == n))
        .map(|(f, n, _)| format!("{f}: {n}"))
        .collect();
    assert!(
        stale.is_empty(),
        "these LONG_FUNCTIONS are within {FN_LIMIT} lines now (or gone); take them off: {stale:?}"
    );
    let mine: Vec<&str> = LONG_FUNCTIONS
        .iter()
        .map(|(f, _, _)| *f)
        .filter(|f| {
            ["live/", "cli/", "report/"]
                .iter()
                .any(|r| f.starts_with(r))
        })
        .collect();
    assert!(
        mine.is_empty(),
        "live/, cli/ and report/ keep every function within {FN_LIMIT} lines: {mine:?}"
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
