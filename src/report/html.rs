//! The report page, `index.html`: one self-contained file — inline CSS,
//! inline SVG, no scripts, fonts or images fetched — that opens from disk
//! or a mail attachment and reads the same everywhere.
//!
//! Layout: what the run was; how to read a timeline; the suite table
//! (scenario, protocol, seeds, failing seeds per violation kind, stale
//! attempts, fence rejections, expectation); then one section per
//! scenario: its description, verdict, the timeline of its drawn seed with
//! the checker's violations and evidence records beneath, the replay
//! command, and histograms of the checker's per-seed metrics.

use std::fmt::Write;

use super::chart::{self, Series};
use super::doc::Doc;
use super::results::{ScenarioResults, TimelineResults};
use super::xml::esc;
use crate::check::ViolationKind;
use crate::history::fmt_time;

pub(crate) const CSS: &str = "
:root{--ink:#1d232b;--muted:#6b7480;--line:#dfe3e8;--bad:#c01818;--good:#137a3f}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--ink);background:#f4f6f8}
main{max-width:1560px;margin:0 auto;padding:24px 28px 60px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:20px;margin:0 0 6px}
h3{font-size:15px;margin:18px 0 6px}
p{margin:6px 0}
.muted{color:var(--muted)}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:#f0f2f5;border:1px solid var(--line);border-radius:6px;padding:8px 10px;overflow-x:auto;margin:6px 0}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:18px 20px;margin:18px 0}
table.suite{border-collapse:collapse;width:100%;font-size:13.5px;background:#fff}
table.suite th,table.suite td{border-bottom:1px solid var(--line);padding:6px 8px;text-align:right;white-space:nowrap}
table.suite th{font-size:12px;color:var(--muted);font-weight:600;white-space:normal;vertical-align:bottom}
table.suite td:first-child,table.suite th:first-child,table.suite td:nth-child(2),table.suite th:nth-child(2){text-align:left;white-space:normal}
td.found{background:#fdecec;color:var(--bad);font-weight:700}
td.met{color:var(--good);font-weight:700}
td.notmet{color:#fff;background:var(--bad);font-weight:700}
.badge{display:inline-block;font-size:12px;padding:1px 8px;border-radius:10px;background:#e9eef7;color:#2a4a80;margin-left:8px;vertical-align:middle}
.verdict-bad{color:var(--bad);font-weight:700}
.verdict-good{color:var(--good);font-weight:700}
.timeline-wrap{overflow-x:auto;border:1px solid var(--line);border-radius:8px;background:#fff;margin:8px 0}
.timeline-wrap svg{display:block}
.timeline-wrap svg.timeline:not(.wide){max-width:100%;height:auto}
.table-wrap{overflow-x:auto}
ol.violations li{margin:8px 0}
.charts{display:flex;flex-wrap:wrap;gap:10px}
.charts svg{border:1px solid var(--line);border-radius:6px}
.problems{color:var(--bad)}
";

pub fn render(doc: &Doc) -> String {
    let r = &doc.results;
    let seeds: u64 = r.scenarios.iter().map(|s| s.seeds).sum();
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>fencesim report</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
    );
    let _ = writeln!(
        s,
        "<header><h1>fencesim report</h1><p class=\"muted\">fencesim {} · <code>fencesim {}</code> · {} scenario(s), {seeds} seed(s) · machine-readable: <a href=\"results.json\">results.json</a> · text: <a href=\"summary.md\">summary.md</a></p></header>",
        esc(&r.fencesim_version),
        esc(&r.command),
        r.scenarios.len()
    );
    s.push_str(HOW_TO_READ);
    suite_table(&mut s, &r.scenarios);
    for (sc, svg) in r.scenarios.iter().zip(&doc.svgs) {
        section(&mut s, sc, svg.as_deref());
    }
    s.push_str("</main>\n</body>\n</html>\n");
    s
}

const HOW_TO_READ: &str = "<section class=\"card\" id=\"how-to-read\"><h2>How to read a timeline</h2>\
<p>One lane per node: the workers, the lease (coordinator) and the protected resource. Time runs to the right; quiet stretches are folded and labelled with their true length above the lanes. \
A <b>blue bar</b> is a lease a worker holds (with its grant id and fencing token). Where it turns into <b>red hatching</b>, the coordinator has already expired or deleted that lease while the worker still acts on it — the window only a fence can close. \
Grey hatching is a pause (GC, SIGSTOP) or a crash. Arrows are messages from send to delivery; a dashed arrow ending in ✗ was dropped. \
At the resource, a green ✓ is an accepted write and a red ✗ a rejected one. \
<b>Red rings</b> mark exactly the records the checker cites as evidence; the numbers in brackets refer to its explanations below the lanes. Hover any mark for the full record.</p></section>\n";

fn suite_table(s: &mut String, scenarios: &[ScenarioResults]) {
    s.push_str("<section class=\"card\" id=\"suite\"><h2>Suite</h2><div class=\"table-wrap\"><table class=\"suite\"><thead><tr><th>scenario</th><th>protocol</th><th>seeds</th>");
    // Headers wrap (at the underscores too) so the table fits its card at
    // a 1400 px window; a narrower one scrolls inside the card.
    for k in ViolationKind::ALL {
        let _ = write!(s, "<th>{}</th>", k.name().replace('_', "_<wbr>"));
    }
    s.push_str(
        "<th>stale attempts</th><th>fence rejected</th><th>expectation</th></tr></thead><tbody>\n",
    );
    for sc in scenarios {
        let _ = write!(
            s,
            "<tr><td><a href=\"#{id}\">{n}</a></td><td>{p}</td><td>{seeds}</td>",
            id = anchor(sc),
            n = esc(&sc.name),
            // A protocol with options (`consensus-generation+no_fence+lock_delay`)
            // may wrap at each `+`.
            p = esc(&sc.protocol).replace('+', "+<wbr>"),
            seeds = sc.seeds
        );
        for k in ViolationKind::ALL {
            let n = sc.failing_seeds.get(k.name()).copied().unwrap_or(0);
            let class = if n > 0 { " class=\"found\"" } else { "" };
            let _ = write!(s, "<td{class}>{n}</td>");
        }
        let _ = writeln!(
            s,
            "<td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
            sc.seeds_with_stale_attempts,
            sc.fence_rejected_total,
            if sc.expectation_met { "met" } else { "notmet" },
            if sc.expectation_met { "met" } else { "NOT MET" }
        );
    }
    s.push_str("</tbody></table></div><p class=\"muted\">Violation columns count failing seeds. “stale attempts”: seeds in which a write of a superseded generation reached the resource (a clean verdict only counts when this is not zero). “fence rejected”: stale writes the fence refused, summed over seeds.</p></section>\n");
}

pub fn anchor(sc: &ScenarioResults) -> String {
    let slug = sc
        .timeline
        .as_ref()
        .and_then(|t| t.svg.strip_prefix("timelines/"))
        .and_then(|f| f.strip_suffix(".svg"))
        .map(str::to_string)
        .unwrap_or_else(|| {
            sc.name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect()
        });
    format!("s-{slug}")
}

fn section(s: &mut String, sc: &ScenarioResults, svg: Option<&str>) {
    let _ = write!(
        s,
        "<section class=\"card scenario\" id=\"{}\"><h2>{}<span class=\"badge\">{}</span></h2><p class=\"muted\"><code>{}</code></p><p>{}</p>",
        anchor(sc),
        esc(&sc.name),
        esc(&sc.protocol),
        esc(&sc.path),
        esc(&sc.description.replace('\n', " "))
    );
    let found: Vec<String> = sc
        .failing_seeds
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, n)| format!("{k} in {n}"))
        .collect();
    let found = if found.is_empty() {
        "no violations".to_string()
    } else {
        found.join(", ")
    };
    // A live scenario's runs are trials (numbered from 1), not seeds.
    let unit = if sc.trials.is_empty() {
        "seed"
    } else {
        "trial"
    };
    let _ = write!(
        s,
        "<p>{} {unit}(s) from {}: {} · expectation <span class=\"{}\">{}</span></p>",
        sc.seeds,
        sc.seed_start,
        esc(&found),
        if sc.expectation_met {
            "verdict-good"
        } else {
            "verdict-bad"
        },
        if sc.expectation_met { "met" } else { "NOT MET" }
    );
    if !sc.problems.is_empty() {
        s.push_str("<ul class=\"problems\">");
        for p in &sc.problems {
            let _ = write!(s, "<li>{}</li>", esc(p));
        }
        s.push_str("</ul>");
    }
    if !sc.trials.is_empty() {
        let lines: Vec<String> = sc.trials.iter().map(|l| esc(l)).collect();
        let _ = write!(
            s,
            "<h3>Trials</h3><pre class=\"trials\">{}</pre>",
            lines.join("\n")
        );
    }
    if let (Some(t), Some(svg)) = (&sc.timeline, svg) {
        timeline(s, t, svg, unit);
    }
    if !sc.metrics.is_empty() {
        charts(s, sc);
    }
    s.push_str("</section>\n");
}

fn timeline(s: &mut String, t: &TimelineResults, svg: &str, unit: &str) {
    let _ = write!(
        s,
        "<h3>Timeline of {unit} {} <span class=\"muted\">({})</span></h3><div class=\"timeline-wrap\">{}</div>",
        t.seed,
        esc(&t.reason),
        svg.trim_end()
    );
    if !t.violations.is_empty() {
        s.push_str("<h3>What the checker proved</h3><ol class=\"violations\">");
        for v in &t.violations {
            let _ = write!(
                s,
                "<li><b class=\"verdict-bad\">{}</b> on key <code>{}</code>: {}<pre>",
                esc(&v.kind),
                esc(&v.key),
                esc(&v.explanation)
            );
            for e in &v.evidence {
                let _ = writeln!(s, "{}", esc(&e.text));
            }
            s.push_str("</pre></li>");
        }
        s.push_str("</ol>");
    }
    let _ = write!(
        s,
        "<p class=\"muted\">run ended at {} · {} records · trace hash <code>{}</code></p><h3>Replay</h3><pre><code>{}</code></pre>",
        fmt_time(t.end_ns).trim(),
        t.records,
        esc(&t.trace_hash),
        esc(&t.replay_command)
    );
}

fn charts(s: &mut String, sc: &ScenarioResults) {
    let series: Vec<Series> = sc
        .metrics
        .iter()
        .map(|m| Series {
            name: m.name.clone(),
            note: m.description.clone(),
            counts: m.seeds_per_value.clone(),
        })
        .collect();
    let (drawn, zero): (Vec<&Series>, Vec<&Series>) = series.iter().partition(|x| !x.all_zero());
    s.push_str("<h3>Per-seed metrics</h3>");
    if !drawn.is_empty() {
        s.push_str("<div class=\"charts\">");
        for x in &drawn {
            let _ = write!(
                s,
                "<figure style=\"margin:0\" title=\"{}\">{}</figure>",
                esc(&x.note),
                chart::histogram(x)
            );
        }
        s.push_str("</div>");
    }
    if !zero.is_empty() {
        let names: Vec<String> = zero
            .iter()
            .map(|x| format!("<code>{}</code>", esc(&x.name)))
            .collect();
        let _ = write!(
            s,
            "<p class=\"muted\">0 in every seed: {}</p>",
            names.join(", ")
        );
    }
}
