//! The HTML report in a real browser: headless Debian chromium loads the
//! page from disk, and the rendered DOM must contain the timeline SVG, its
//! lanes and the highlighted evidence records the checker cited; then a
//! screenshot is taken for people to look at
//! (`target/tmp/report-screenshot.png`).
//!
//! Without chromium the test is skipped with a message — unless `CI=true`,
//! where a missing browser is a failure (`.ci/install-browser.sh` installs
//! it). The browser runs with a fresh profile, no network services, and a
//! hard timeout, so it can neither hang nor reach out.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(90);

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// Runs chromium headless on `page` with `extra` flags; returns stdout.
fn headless(browser: &Path, page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > TIMEOUT {
            child.kill().ok();
            child.wait().ok();
            panic!("chromium did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

#[test]
fn the_report_page_renders_its_timeline_and_evidence_in_a_real_browser() {
    let Some(browser) = chromium() else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("chromium is missing on CI: run .ci/install-browser.sh");
        }
        // Written past the test harness's capture so it shows in `cargo test` output.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED report_browser: chromium not found on PATH (install with .ci/install-browser.sh)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = crate::common::fencesim_command()
        .args([
            "run",
            "scenarios/article/gc-pause-stale-write.toml",
            "scenarios/article/gc-pause-fenced-cas.toml",
            "--report",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let page = dir.path().join("index.html");

    let dom = headless(&browser, &page, &["--dump-dom".to_string()]);
    assert!(
        dom.contains("<svg"),
        "the rendered DOM holds the inline SVG"
    );
    assert_eq!(
        dom.matches(r#"class="timeline""#).count(),
        2,
        "one timeline per scenario: the stale write and its fenced twin"
    );
    assert_eq!(dom.matches(r#"<g class="lane""#).count(), 8, "4 lanes each");
    // Seed 0 of the unsafe scenario: every record the checker cites is ringed,
    // and the stale write itself (the last evidence record) is drawn as accepted.
    let evidence = checker_evidence_of_seed_0();
    assert!(evidence.len() >= 4, "{evidence:?}");
    for seq in &evidence {
        assert!(
            dom.contains(&format!(r#"data-seq="{seq}""#)),
            "evidence #{seq} is in the DOM"
        );
    }
    let last = evidence.iter().max().unwrap();
    assert!(dom.contains(&format!(
        r#"<g class="evidence accepted" data-seq="{last}">"#
    )));
    assert!(dom.contains("stale_write"));
    assert!(
        dom.contains("rejected (fence 2)"),
        "the fenced twin's refusal"
    );
    for external in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(
            !dom.contains(external),
            "the page fetches nothing: {external}"
        );
    }

    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1500,1400".to_string(),
        ],
    );
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    assert!(png.len() > 50_000, "a real picture, not a blank page");
    eprintln!("screenshot: {}", shot.display());
}

/// The committed full-suite report (every column, the longest scenario
/// names) at a 1400 px window: the suite table ends inside its card. A
/// script appended to a copy of the page measures it after layout and
/// writes the answer into the DOM, which `--dump-dom` returns.
#[test]
fn the_suite_table_fits_its_card_at_a_1400_px_window() {
    let Some(browser) = chromium() else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED report_browser suite width: chromium not found on PATH"
        );
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "chromium is missing on CI"
        );
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let html = std::fs::read_to_string(root.join("reports/index.html")).expect("committed report");
    let probe = "<script>(function(){var c=document.querySelector('#suite');\
        var t=c.querySelector('table');var r=t.getBoundingClientRect().right;\
        var e=c.getBoundingClientRect().right;\
        document.body.setAttribute('data-suite-fit',(r<=e?'yes':'no')+' '+Math.round(r)+' '+Math.round(e));})();</script>";
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("index.html");
    std::fs::write(&page, html.replace("</body>", &format!("{probe}</body>"))).unwrap();
    let dom = headless(
        &browser,
        &page,
        &[
            "--window-size=1400,900".to_string(),
            "--dump-dom".to_string(),
        ],
    );
    let fit = dom
        .split_once("data-suite-fit=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(v, _)| v.to_string())
        .expect("the probe ran");
    assert!(
        fit.starts_with("yes"),
        "the table's right edge, the card's: {fit}"
    );
}

fn checker_evidence_of_seed_0() -> std::collections::BTreeSet<u64> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/article/gc-pause-stale-write.toml");
    let s = fencesim::scenario::load(&path).unwrap();
    let out = fencesim::sim::run(&s.options, 0, false);
    fencesim::report::replay::evidence_set(&fencesim::check::check(&out.history))
}
