//! The live reference pages held to the code, with no server started: the
//! fault table of docs/live-faults.md names every fault kind, protocol
//! point and message the loader accepts and nothing else, and each of its
//! examples is accepted exactly under the locks and by the worker modes its
//! row says; docs/live-client.md's table of variables is every `FENCESIM_*`
//! variable a user's program is started with; every TOML block of the live
//! pages is TOML, and every full scenario among them loads; and every
//! relative link between the docs (file and `#anchor`), and every source
//! path the live pages name, resolves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use fencesim::live::scenario::{parse, LiveScenario};
use fencesim::live::{LockKind, PROGRAM_ENV};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A table cell: its text, and its code spans in order.
#[derive(Clone, Debug, Default)]
struct Cell {
    text: String,
    code: Vec<String>,
}

#[derive(Debug, Default)]
struct Table {
    header: Vec<Cell>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    fn column(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|c| c.text.trim() == name)
            .unwrap_or_else(|| panic!("no column {name:?} in {:?}", self.header))
    }
}

/// What a Markdown page holds that these tests read.
#[derive(Debug, Default)]
struct Page {
    /// Its headings' anchors, as GitHub makes them (a repeated one gets -1, -2, …).
    anchors: BTreeSet<String>,
    tables: Vec<Table>,
    /// Fenced code blocks: (language, text).
    blocks: Vec<(String, String)>,
    links: Vec<String>,
    code_spans: Vec<String>,
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_`
/// dropped, each space a `-`.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn read_page(path: &Path) -> Page {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut page = Page::default();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut heading: Option<String> = None;
    let mut block: Option<(String, String)> = None;
    let mut cell: Option<Cell> = None;
    let mut row: Vec<Cell> = Vec::new();
    let mut in_head = false;
    for event in Parser::new_ext(&text, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => {
                let s = slug(&heading.take().unwrap_or_default());
                let n = seen.entry(s.clone()).or_insert(0);
                page.anchors.insert(match *n {
                    0 => s,
                    k => format!("{s}-{k}"),
                });
                *n += 1;
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => l.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                block = Some((lang, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => page.blocks.extend(block.take()),
            Event::Start(Tag::Table(_)) => page.tables.push(Table::default()),
            Event::Start(Tag::TableHead) => in_head = true,
            Event::End(TagEnd::TableHead) => {
                let t = page.tables.last_mut().expect("a table");
                t.header = std::mem::take(&mut row);
                in_head = false;
            }
            Event::Start(Tag::TableCell) => cell = Some(Cell::default()),
            Event::End(TagEnd::TableCell) => row.extend(cell.take()),
            Event::End(TagEnd::TableRow) if !in_head => {
                let t = page.tables.last_mut().expect("a table");
                t.rows.push(std::mem::take(&mut row));
            }
            Event::Start(Tag::Link { dest_url, .. }) => page.links.push(dest_url.to_string()),
            Event::Text(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
                if let Some((_, b)) = block.as_mut() {
                    b.push_str(&t);
                }
                if let Some(c) = cell.as_mut() {
                    c.text.push_str(&t);
                }
            }
            Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
                if let Some(c) = cell.as_mut() {
                    c.text.push_str(&t);
                    c.code.push(t.to_string());
                }
                page.code_spans.push(t.to_string());
            }
            _ => {}
        }
    }
    page
}

fn live_page(name: &str) -> Page {
    read_page(&root().join("docs").join(name))
}

/// The live reference pages: docs/live.md and docs/live-*.md.
fn live_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name == "live.md" || (name.starts_with("live-") && name.ends_with(".md"))
        })
        .collect();
    pages.sort();
    pages
}

/// The one fault table: the table of docs/live-faults.md with an `example` column.
fn fault_table(page: &Page) -> &Table {
    let tables: Vec<&Table> = (page.tables.iter())
        .filter(|t| t.header.iter().any(|c| c.text.trim() == "example"))
        .collect();
    assert_eq!(tables.len(), 1, "docs/live-faults.md has one fault table");
    tables[0]
}

/// A scenario file around `faults` (inline tables) on `lock`, run by the
/// built-in worker or (`program`) by a user's program.
fn scenario_text(lock: &str, program: bool, faults: &[&str]) -> String {
    let write = if lock == "none" {
        "select-for-update"
    } else {
        "plain"
    };
    let cmd = if program {
        "worker_cmd = \"true\"\n"
    } else {
        ""
    };
    format!(
        "schema_version = 1\nname = \"docs\"\ntwin = \"../scenarios/article/gc-pause-stale-write.toml\"\n\
         lock = \"{lock}\"\nwrite = \"{write}\"\nttl_ms = 1000\n{cmd}fault = [{}]\n\
         [[worker]]\nname = \"A\"\n[[worker]]\nname = \"B\"\n[expect]\n",
        faults.join(", ")
    )
}

/// Where a scenario of these tests is said to be: in live/, so that its
/// twin resolves as a bundled file's does.
fn scenario_path() -> PathBuf {
    root().join("live").join("docs-example.toml")
}

/// Ok when the scenario loads and (a user's program) the run would give
/// the program its faults; Err: why not.
fn accepted(lock: &str, program: bool, fault: &str) -> Result<LiveScenario, String> {
    let s = parse(&scenario_text(lock, program, &[fault]), &scenario_path())
        .map_err(|e| e.to_string())?;
    if program {
        let refusal =
            fencesim::live::run::refusal(std::slice::from_ref(&s), (false, None), |_| Ok(()));
        if let Some(why) = refusal {
            return Err(why);
        }
    }
    Ok(s)
}

/// The words the loader lists for a field it refuses: "unsupported
/// {what} "…"; the live mode supports: a, b, c".
fn loader_words(fault: &str) -> BTreeSet<String> {
    let e = accepted("redis-set-nx-cad", true, fault).expect_err("a word the loader refuses");
    let list = e
        .split("the live mode supports: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no list of words in {e:?}"));
    let list = list.lines().next().unwrap_or_default();
    list.split(", ").map(|w| w.trim().to_string()).collect()
}

fn spans_in(table: &Table, column: usize) -> BTreeSet<String> {
    table
        .rows
        .iter()
        .flat_map(|r| r[column].code.iter().cloned())
        .collect()
}

#[test]
fn every_fault_kind_point_and_message_the_loader_accepts_is_in_the_fault_table_and_no_other() {
    let page = live_page("live-faults.md");
    let table = fault_table(&page);

    let kinds = loader_words("{ kind = \"no-such-kind\", node = \"worker/A\" }");
    assert_eq!(spans_in(table, table.column("kind")), kinds, "fault kinds");

    let messages = loader_words(
        "{ kind = \"delay\", node = \"worker/A\", message = \"no-such-message\", duration_ms = 5 }",
    );
    assert_eq!(
        spans_in(table, table.column("message")),
        messages,
        "messages"
    );

    // With a user's program every point is one a fault may follow.
    let points = loader_words(
        "{ kind = \"pause\", node = \"worker/A\", after = \"no-such-point\", duration_ms = 5 }",
    );
    let all: BTreeSet<String> = (fencesim::live::fault::Point::ALL.iter())
        .map(|p| p.name().to_string())
        .collect();
    assert_eq!(points, all, "the loader's points are Point::ALL");
    let named: BTreeSet<String> = spans_in(table, table.column("strikes"))
        .into_iter()
        .filter(|s| s.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .filter(|s| !["after", "at_ms"].contains(&s.as_str()))
        .collect();
    assert_eq!(named, points, "protocol points in the strikes column");
}

/// A row's `yes`/`no` for a mode.
fn yes(cell: &Cell) -> bool {
    match cell.text.split_whitespace().next() {
        Some("yes") => true,
        Some("no") => false,
        other => panic!("a mode cell says yes or no, not {other:?}"),
    }
}

#[test]
fn every_example_in_the_fault_table_is_accepted_exactly_under_the_locks_and_modes_its_row_names() {
    let page = live_page("live-faults.md");
    let table = fault_table(&page);
    let (built_in, program) = (table.column("built-in"), table.column("program"));
    let (locks, example) = (table.column("locks"), table.column("example"));
    let mut examples = 0;
    let mut wrong = Vec::new();
    for row in &table.rows {
        let listed: BTreeSet<&str> = row[locks].code.iter().map(String::as_str).collect();
        for l in &listed {
            assert!(
                LockKind::NAMES.iter().any(|(n, _)| n == l),
                "{l:?} is not a lock"
            );
        }
        assert!(
            !row[example].code.is_empty(),
            "a row without an example: {row:?}"
        );
        for ex in &row[example].code {
            examples += 1;
            example_matches_its_row(table, row, ex);
            for (lock, _) in LockKind::NAMES {
                for (mode, is_program) in [(built_in, false), (program, true)] {
                    // A program needs a lock server: `none` refuses one
                    // for every row (the page says so once, above the table).
                    let lock_server = !(is_program && (*lock).eq("none"));
                    let want = yes(&row[mode]) && listed.contains(lock) && lock_server;
                    let got = accepted(lock, is_program, ex);
                    if want != got.is_ok() {
                        let who = if is_program {
                            "a user's program"
                        } else {
                            "the built-in worker"
                        };
                        let why = got.err().unwrap_or_else(|| "accepted".into());
                        wrong.push(format!(
                            "{ex} on {lock} by {who}: the table says {}, the code: {why}",
                            if want { "accepted" } else { "refused" }
                        ));
                    }
                }
            }
        }
    }
    assert!(examples >= 20, "{examples} examples");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// An example's kind, message, node and keys are its row's: the kind its
/// `kind`, the message one of its `message`s, the node of its `node`'s
/// form, every other key named in its `strikes` or `keys`.
fn example_matches_its_row(table: &Table, row: &[Cell], ex: &str) {
    let t: toml::Table = toml::from_str(&format!("f = {ex}"))
        .unwrap_or_else(|e| panic!("{ex} is not an inline TOML table: {e}"));
    let f = t["f"].as_table().unwrap();
    let text = |key: &str| f.get(key).and_then(|v| v.as_str()).unwrap_or_default();
    let cell = |name: &str| &row[table.column(name)];
    assert_eq!(
        Some(text("kind")),
        cell("kind").code.first().map(String::as_str),
        "{ex}: its row's kind"
    );
    if f.contains_key("message") {
        let m = text("message").to_string();
        assert!(
            cell("message").code.contains(&m),
            "{ex}: {m} is not in its row's messages"
        );
    }
    let node = text("node");
    let form = |spelled: &str| match spelled.split_once('/') {
        Some(("worker", "W")) => node.starts_with("worker/"),
        Some(("member", "N")) => node
            .strip_prefix("member/")
            .is_some_and(|n| n.parse::<usize>().is_ok()),
        _ => node == spelled,
    };
    assert!(
        cell("node").code.iter().any(|c| form(c)),
        "{ex}: node {node:?} is not of its row's forms {:?}",
        cell("node").code
    );
    let named: Vec<&String> = cell("strikes")
        .code
        .iter()
        .chain(&cell("keys (units)").code)
        .collect();
    for key in f
        .keys()
        .filter(|k| !["kind", "node", "message"].contains(&k.as_str()))
    {
        assert!(
            named
                .iter()
                .any(|c| c.split([' ', '=']).next() == Some(key.as_str())),
            "{ex}: {key} is named neither in its row's strikes nor in its keys"
        );
    }
}

#[test]
fn every_key_a_fault_table_may_have_is_named_in_the_fault_table() {
    let page = live_page("live-faults.md");
    let table = fault_table(&page);
    let fault = "{ kind = \"pause\", node = \"worker/A\", no_such_key = 1 }";
    let fields = fields_expected(&scenario_text("redis-set-nx-cad", false, &[fault]));
    assert!(fields.len() >= 9, "{fields:?}");
    let spans: BTreeSet<String> = (table.rows.iter())
        .flat_map(|r| r.iter().flat_map(|c| c.code.iter()))
        .map(|c| c.split([' ', '=']).next().unwrap_or_default().to_string())
        .chain(table.header.iter().map(|h| h.text.trim().to_string()))
        .collect();
    for field in fields {
        assert!(
            spans.contains(&field),
            "the fault table does not name `{field}`"
        );
    }
}

/// `"FENCESIM_…"` string literals in a source file, but those it reads
/// rather than sets (`std::env::var`).
fn variables_set_in(file: &Path, out: &mut BTreeSet<String>) {
    let src = std::fs::read_to_string(file).unwrap();
    for line in src.lines().filter(|l| !l.contains("env::var")) {
        for piece in line.split("\"FENCESIM_").skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect();
            if piece[name.len()..].starts_with('"') && !name.is_empty() {
                out.insert(format!("FENCESIM_{name}"));
            }
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_variable_a_users_program_is_started_with_is_in_the_client_pages_one_table() {
    let list: BTreeSet<String> = PROGRAM_ENV.iter().map(|v| v.to_string()).collect();
    assert_eq!(list.len(), PROGRAM_ENV.len(), "PROGRAM_ENV names each once");

    // What the code sets: the live wing's literals (but the list itself)
    // and the reaper's tag every program inherits.
    let mut files = Vec::new();
    rust_files(&root().join("src/live"), &mut files);
    files.retain(|f| !f.ends_with("client/env.rs"));
    files.push(root().join("src/validate/reaper.rs"));
    let mut set = BTreeSet::new();
    for f in &files {
        variables_set_in(f, &mut set);
    }
    assert_eq!(set, list, "the variables the code sets are PROGRAM_ENV");

    let page = live_page("live-client.md");
    let tables: Vec<&Table> = (page.tables.iter())
        .filter(|t| {
            t.header
                .first()
                .is_some_and(|c| c.text.trim() == "variable")
        })
        .collect();
    assert_eq!(
        tables.len(),
        1,
        "docs/live-client.md has one table of variables"
    );
    let documented: BTreeSet<String> = (tables[0].rows.iter())
        .flat_map(|r| r[0].code.iter().cloned())
        .filter(|c| c.starts_with("FENCESIM_"))
        .collect();
    assert_eq!(documented, list, "docs/live-client.md's variables");
}

#[test]
fn every_toml_block_of_the_live_pages_is_toml_and_every_full_scenario_among_them_loads() {
    let mut scenarios = 0;
    for path in live_pages() {
        let page = read_page(&path);
        for (_, text) in page.blocks.iter().filter(|(l, _)| l == "toml") {
            let t: Result<toml::Table, _> = toml::from_str(text);
            assert!(
                t.is_ok(),
                "{}: a toml block that is not TOML: {t:?}\n{text}",
                path.display()
            );
            if text.contains("schema_version") {
                scenarios += 1;
                if let Err(e) = parse(text, &scenario_path()) {
                    panic!(
                        "{}: a scenario that does not load: {e}\n{text}",
                        path.display()
                    );
                }
            }
        }
    }
    assert!(scenarios >= 1, "the live pages show a whole scenario");
}

/// The Markdown files whose links are checked: README.md, ARCHITECTURE.md
/// and docs/*.md.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

#[test]
fn every_relative_link_between_the_docs_and_every_anchor_resolves() {
    let mut anchors: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    for file in markdown_files() {
        let page = read_page(&file);
        for link in &page.links {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = link.split_once('#').unwrap_or((link, ""));
            let target = match path {
                "" => file.clone(),
                p => file.parent().unwrap().join(p),
            };
            if !target.exists() {
                broken.push(format!("{}: {link}: no such file", file.display()));
                continue;
            }
            if anchor.is_empty() || target.extension().is_none_or(|x| x != "md") {
                continue;
            }
            let target = target.canonicalize().unwrap();
            let known = anchors
                .entry(target.clone())
                .or_insert_with(|| read_page(&target).anchors);
            if !known.contains(anchor) {
                broken.push(format!(
                    "{}: {link}: no heading with that anchor",
                    file.display()
                ));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn every_source_path_the_live_pages_name_exists() {
    let mut missing = Vec::new();
    for page_path in live_pages() {
        let page = read_page(&page_path);
        let spans = page.code_spans.iter().map(String::as_str);
        let paths = spans.chain(page.links.iter().filter_map(|l| l.strip_prefix("../")));
        for p in paths {
            let p = p.split('#').next().unwrap_or_default();
            let repo_path = ["src/", "tests/", "examples/", "live/", "scenarios/"]
                .iter()
                .any(|d| p.starts_with(d));
            let plain = p
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'));
            if repo_path && plain && !root().join(p).exists() {
                missing.push(format!("{}: {p}", page_path.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_search_pages_counts_of_single_faults_and_placements_are_the_catalogues() {
    use fencesim::live::search::catalogue::{catalogue, placements};
    let page = live_page("live-search.md");
    let table = (page.tables.iter())
        .find(|t| t.header.iter().any(|c| c.text.trim() == "single faults"))
        .expect("the search page's table of counts");
    let (by, lock) = (table.column("run by"), table.column("lock"));
    let singles = table.column("single faults");
    let pairs = table.column("placements with --faults 2");
    assert_eq!(table.rows.len(), 4, "two modes × Redis and a cluster");
    for row in &table.rows {
        let program = row[by].text.contains("program");
        let documented = &row[lock].code[0];
        // A Redis lock (or none) counts as the row's Redis lock, a cluster as its cluster.
        let cluster = documented.as_str() == "zk-lock";
        for (name, kind) in LockKind::NAMES {
            if kind.cluster().is_some() != cluster {
                continue;
            }
            let s = parse(&scenario_text(name, program, &[]), &scenario_path()).unwrap();
            let n = catalogue(&s, program).len();
            let number = |c: usize| row[c].text.trim().parse::<usize>().unwrap();
            assert_eq!(
                n,
                number(singles),
                "{name}, program {program}: single faults"
            );
            assert_eq!(
                placements(n, 2).len(),
                number(pairs),
                "{name}, program {program}: placements of up to 2"
            );
        }
    }
}

/// The fields serde lists for an unknown key in `src`.
fn fields_expected(src: &str) -> Vec<String> {
    let e = parse(src, &scenario_path())
        .map(|_| ())
        .expect_err("an unknown key")
        .to_string();
    e.split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("no list of fields in {e:?}"))
        .lines()
        .next()
        .unwrap_or_default()
        .split(", ")
        .map(|f| f.trim_matches(|c| c == '`' || c == ' ').to_string())
        .collect()
}

#[test]
fn every_key_of_a_live_scenario_file_is_in_the_running_pages_table_of_keys() {
    let page = live_page("live-running.md");
    let table = (page.tables.iter())
        .find(|t| t.header.first().is_some_and(|c| c.text.trim() == "key"))
        .expect("the running page's table of keys");
    let documented: BTreeSet<String> = (table.rows.iter())
        .flat_map(|r| r[0].code.iter())
        .map(|c| c.trim_matches(|ch| ch == '[' || ch == ']').to_string())
        .collect();
    let file = scenario_text("redis-set-nx-cad", false, &[]);
    let top = file.replacen("schema_version", "no_such_key = 1\nschema_version", 1);
    let worker = file.replacen("name = \"A\"", "name = \"A\"\nno_such_key = 1", 1);
    let expect = format!("{file}no_such_key = 1\n");
    for src in [top, worker, expect] {
        let fields = fields_expected(&src);
        assert!(fields.len() >= 3, "{fields:?}");
        for field in fields {
            assert!(
                documented.contains(&field),
                "the table of keys does not name `{field}`"
            );
        }
    }
}

/// The long flags `fencesim <command> --help` lists (but `--help`).
fn flags_of(command: &str) -> BTreeSet<String> {
    let help = crate::common::stdout(&crate::common::fencesim(&[command, "--help"]));
    help.split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']')
        .map(|w| w.trim_start_matches(['`', '(']))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.split('=').next().unwrap_or_default())
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
                .to_string()
        })
        .filter(|w| w != "--help")
        .collect()
}

/// The flags a page names: each code span's first word that is a flag.
fn flags_named(page: &Page) -> BTreeSet<String> {
    (page.code_spans.iter())
        .filter_map(|c| c.split_whitespace().next())
        .filter(|w| w.starts_with("--"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_flag_of_live_and_search_is_on_its_page() {
    for (command, page) in [("live", "live-running.md"), ("search", "live-search.md")] {
        let flags = flags_of(command);
        assert!(flags.len() >= 8, "{command}: {flags:?}");
        let named = flags_named(&live_page(page));
        let missing: Vec<&String> = flags.difference(&named).collect();
        assert!(missing.is_empty(), "docs/{page} does not name {missing:?}");
    }
}
