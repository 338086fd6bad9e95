//! Timeline geometry → SVG, in the style of the article's diagram: one
//! horizontal lane per node (workers, then the lease/coordinator, then the
//! resource), time flowing right on the folded axis of [`super::axis`].
//!
//! Drawn, back to front: partition and pause/crash shades; lease bars
//! (solid blue while the coordinator holds the lease; red hatching where a
//! worker still acts on a lease the coordinator already dropped); message
//! arrows from send to delivery, coloured by family, dropped ones ending in
//! a ✗; record marks (accepted writes green ✓, rejected red ✗); and, on top,
//! red rings and numbered badges on the records the checker cited, with the
//! checker's explanations listed under the lanes. Every mark is a
//! `<g class="rec|evidence" data-seq="…">` with a `<title>` holding the full
//! record, so the picture can be checked structurally and hovered for
//! detail. Self-contained: inline styles, no fonts or scripts fetched.

use std::fmt::Write;

use super::axis::{fmt_duration, Axis};
use super::scene::{BarKind, MarkKind, MsgClass, Role, Scene, ShadeKind};
use super::xml::esc;

const LEFT_PX: u64 = 150;
const RIGHT_PAD_PX: u64 = 190;
const TOP_PX: u64 = 74;
const LANE_PX: u64 = 84;
/// Baseline of the lane's life line below the lane's top.
const LINE_DY_PX: u64 = 56;
const CHAR_PX: u64 = 6;
const LABEL_ROWS: usize = 3;
const CITE_LINE_PX: u64 = 17;
/// Wider than this, a page scrolls the drawing instead of shrinking it.
const WIDE_PX: u64 = 1900;

pub fn class_color(c: MsgClass) -> &'static str {
    match c {
        MsgClass::Acquire => "#9aa3ad",
        MsgClass::Grant => "#2f6fdb",
        MsgClass::Release => "#d9822b",
        MsgClass::Read => "#1a9c8c",
        MsgClass::Write => "#7a4cc2",
        MsgClass::Rejected => "#d23c3c",
        MsgClass::Replica => "#c9ced4",
    }
}

fn style(p: &str) -> String {
    format!(
        "<style>
#{p} text{{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:11px;fill:#1d232b}}
#{p} .title{{font-size:14px;font-weight:600}}
#{p} .lane-label{{font-size:12px;font-weight:600}}
#{p} .lane-role{{font-size:10px;fill:#6b7480}}
#{p} .life{{stroke:#c5ccd6;stroke-width:1}}
#{p} .gap{{font-size:10px;fill:#6b7480}}
#{p} .bar-text{{font-size:10px;font-weight:600;fill:#123a7a}}
#{p} .bar-expired-text{{font-size:10px;font-weight:600;fill:#a12020}}
#{p} .shade-text{{font-size:10px;fill:#59606a;font-style:italic}}
#{p} .mark-text{{font-size:10.5px;fill:#2b323b}}
#{p} .ok-text{{font-size:11.5px;font-weight:700;fill:#137a3f}}
#{p} .bad-text{{font-size:11.5px;font-weight:700;fill:#b32020}}
#{p} .ev-text{{font-size:10px;font-weight:700;fill:#c01818}}
#{p} .cite{{font-size:12px}}
#{p} .cite-kind{{font-size:12px;font-weight:700;fill:#c01818}}
#{p} .legend{{font-size:10.5px;fill:#3b434d}}
#{p} .arrow{{stroke-width:1.3;fill:none;opacity:.75}}
</style>"
    )
}

fn defs(p: &str) -> String {
    let mut s = String::from("<defs>");
    for c in MsgClass::ALL {
        let _ = write!(
            s,
            r#"<marker id="{p}-ah-{n}" viewBox="0 0 8 8" refX="7.5" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="{col}"/></marker>"#,
            n = c.name(),
            col = class_color(c)
        );
    }
    let _ = write!(
        s,
        r##"<pattern id="{p}-pause" width="7" height="7" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="7" height="7" fill="#eef0f3"/><line x1="0" y1="0" x2="0" y2="7" stroke="#cdd2da" stroke-width="3"/></pattern><pattern id="{p}-down" width="7" height="7" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="7" height="7" fill="#e2e4e8"/><line x1="0" y1="0" x2="0" y2="7" stroke="#9aa1ab" stroke-width="3"/></pattern><pattern id="{p}-expired" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fde3e3"/><line x1="0" y1="0" x2="0" y2="6" stroke="#ef9a9a" stroke-width="3"/></pattern></defs>"##
    );
    s
}

/// Places labels on up to [`LABEL_ROWS`] rows per lane so they do not
/// overlap; returns the row for a label spanning `x..x+width`.
struct Rows {
    ends: Vec<[u64; LABEL_ROWS]>,
}

impl Rows {
    fn place(&mut self, lane: usize, x: u64, width: u64) -> usize {
        let ends = &mut self.ends[lane];
        let row = (0..LABEL_ROWS)
            .find(|&r| ends[r] + 6 <= x)
            .unwrap_or_else(|| (0..LABEL_ROWS).min_by_key(|&r| ends[r]).unwrap_or(0));
        ends[row] = x + width;
        row
    }
}

/// The top of lane `lane`.
fn lane_y(lane: usize) -> u64 {
    TOP_PX + lane as u64 * LANE_PX
}

/// The life line of lane `lane`.
fn line_y(lane: usize) -> u64 {
    lane_y(lane) + LINE_DY_PX
}

fn text_px(s: &str) -> u64 {
    s.chars().count() as u64 * CHAR_PX + 4
}

/// Splits text into lines of at most `max_chars` at spaces.
fn wrap(text: &str, max_chars: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let last = lines.last_mut().expect("at least one line");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > max_chars {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

/// Renders the scene. `id` must be unique on the page (it scopes the
/// styles, patterns and markers of this drawing); `title` heads it.
pub fn render(scene: &Scene, id: &str, title: &str) -> String {
    let times = scene
        .marks
        .iter()
        .map(|m| m.t_ns)
        .chain(scene.shades.iter().flat_map(|s| [s.from_ns, s.to_ns]))
        .chain([0, scene.end_ns]);
    let axis = Axis::new(times, LEFT_PX);
    let width = axis.x_end_px() + RIGHT_PAD_PX;
    let lanes_bottom = lane_y(scene.lanes.len());
    let cite_chars = ((width.max(700) - 60) / CHAR_PX) as usize;
    let cite_lines: Vec<(usize, Vec<String>)> = scene
        .citations
        .iter()
        .map(|c| {
            let ev: Vec<String> = c.evidence.iter().map(|s| format!("#{s}")).collect();
            let text = format!("{} — {} (evidence {})", c.kind, c.explanation, ev.join(" "));
            (c.number, wrap(&text, cite_chars))
        })
        .collect();
    let cite_h: u64 = cite_lines
        .iter()
        .map(|(_, l)| l.len() as u64 * CITE_LINE_PX + 6)
        .sum::<u64>()
        + if cite_lines.is_empty() { 10 } else { 30 };
    let height = lanes_bottom + cite_h;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" class="{class}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{t}">"#,
        t = esc(title),
        // Pages shrink ordinary timelines to fit and scroll wide ones.
        class = if width > WIDE_PX {
            "timeline wide"
        } else {
            "timeline"
        }
    );
    s.push_str(&style(id));
    s.push_str(&defs(id));
    let _ = write!(
        s,
        r##"<rect width="{width}" height="{height}" fill="#ffffff"/><text class="title" x="12" y="20">{}</text>"##,
        esc(title)
    );
    legend(&mut s, id);
    axis_row(&mut s, &axis);
    partitions(&mut s, scene, &axis, lanes_bottom);
    lanes(&mut s, scene, &axis, id, width);
    bars(&mut s, scene, &axis, id, &line_y);
    arrows(&mut s, scene, &axis, id, &line_y);
    marks(&mut s, scene, &axis, &line_y);
    citations(&mut s, &cite_lines, lanes_bottom);
    s.push_str("</svg>\n");
    s
}

/// The axis: the folded gaps carry their true durations.
fn axis_row(s: &mut String, axis: &Axis) {
    let _ = write!(
        s,
        r##"<g class="axis"><line x1="{LEFT_PX}" y1="{y}" x2="{x2}" y2="{y}" stroke="#9aa3ad"/>"##,
        y = TOP_PX - 6,
        x2 = axis.x_end_px()
    );
    for (x0, x1, dt) in axis.labelled_gaps(80) {
        let _ = write!(
            s,
            r#"<text class="gap" x="{}" y="{}" text-anchor="middle">+{}</text>"#,
            (x0 + x1) / 2,
            TOP_PX - 10,
            fmt_duration(dt)
        );
    }
    s.push_str("</g>");
}

/// Partitions, across every lane.
fn partitions(s: &mut String, scene: &Scene, axis: &Axis, lanes_bottom: u64) {
    for sh in scene.shades.iter().filter(|s| s.lane.is_none()) {
        let (x0, x1) = (axis.x(sh.from_ns), axis.x(sh.to_ns));
        let _ = write!(
            s,
            r##"<g class="shade partition"><rect x="{x0}" y="{TOP_PX}" width="{w}" height="{h}" fill="#fff4cc" opacity=".8"/><text class="shade-text" x="{tx}" y="{ty}">partition {l}</text><title>partition {l}</title></g>"##,
            w = (x1 - x0).max(2),
            h = lanes_bottom - TOP_PX,
            tx = x0 + 3,
            ty = TOP_PX + 11,
            l = esc(&sh.label)
        );
    }
}

/// Each node's lane with its label and role, then its pauses and downtimes.
fn lanes(s: &mut String, scene: &Scene, axis: &Axis, id: &str, width: u64) {
    for (i, lane) in scene.lanes.iter().enumerate() {
        let role = match lane.role {
            Role::Worker => "worker",
            Role::Coordinator => "lease (coordinator)",
            Role::Resource => "resource",
        };
        let band = if i % 2 == 0 { "#fafbfc" } else { "#ffffff" };
        let _ = write!(
            s,
            r#"<g class="lane" data-node="{n}"><rect x="0" y="{y}" width="{width}" height="{LANE_PX}" fill="{band}"/><line class="life" x1="{LEFT_PX}" y1="{ly}" x2="{x2}" y2="{ly}"/><text class="lane-label" x="12" y="{ty}">{n}</text><text class="lane-role" x="12" y="{ry}">{role}</text></g>"#,
            n = esc(&lane.label),
            y = lane_y(i),
            ly = line_y(i),
            x2 = axis.x_end_px(),
            ty = line_y(i) - 2,
            ry = line_y(i) + 12,
        );
    }
    for sh in scene.shades.iter() {
        let Some(lane) = sh.lane else { continue };
        let (x0, x1) = (axis.x(sh.from_ns), axis.x(sh.to_ns));
        let (class, fill) = match sh.kind {
            ShadeKind::Paused => ("paused", "pause"),
            _ => ("down", "down"),
        };
        let _ = write!(
            s,
            r#"<g class="shade {class}"><rect x="{x0}" y="{y}" width="{w}" height="{h}" fill="url(#{id}-{fill})"/><text class="shade-text" x="{tx}" y="{ty}">{l}</text><title>{l}</title></g>"#,
            y = lane_y(lane) + 4,
            w = (x1 - x0).max(2),
            h = LANE_PX - 8,
            tx = x0 + 4,
            ty = lane_y(lane) + 15,
            l = esc(&sh.label)
        );
    }
}

fn legend(s: &mut String, id: &str) {
    let mut x = 12;
    let y = 42;
    s.push_str(r#"<g class="legend-box">"#);
    let mut item = |s: &mut String, swatch: String, label: &str| {
        let _ = write!(
            s,
            r#"<g transform="translate({x},{})">{swatch}<text class="legend" x="22" y="4">{label}</text></g>"#,
            y - 4
        );
        x += 30 + text_px(label);
    };
    item(
        s,
        r##"<rect x="0" y="-5" width="18" height="10" rx="3" fill="#cfe0fb" stroke="#2f6fdb"/>"##
            .into(),
        "lease held",
    );
    item(
        s,
        format!(
            r##"<rect x="0" y="-5" width="18" height="10" rx="3" fill="url(#{id}-expired)" stroke="#d23c3c"/>"##
        ),
        "acting on an expired lease",
    );
    item(
        s,
        format!(r##"<rect x="0" y="-6" width="18" height="12" fill="url(#{id}-pause)"/>"##),
        "paused / down",
    );
    for c in MsgClass::ALL {
        item(
            s,
            format!(
                r#"<line x1="0" y1="0" x2="17" y2="0" stroke="{}" stroke-width="1.6" marker-end="url(#{id}-ah-{})"/>"#,
                class_color(c),
                c.name()
            ),
            c.name(),
        );
    }
    item(
        s,
        r##"<circle cx="9" cy="0" r="6" fill="none" stroke="#d42020" stroke-width="2.5"/>"##.into(),
        "evidence the checker cites",
    );
    s.push_str("</g>");
}

fn bars(s: &mut String, scene: &Scene, axis: &Axis, id: &str, line_y: &dyn Fn(usize) -> u64) {
    for b in &scene.bars {
        let (x0, x1) = (axis.x(b.from_ns), axis.x(b.to_ns));
        let w = (x1 - x0).max(3);
        let y = line_y(b.lane) - 8;
        let (class, fill, stroke, text_class) = match b.kind {
            BarKind::Held => ("bar held", "#cfe0fb".to_string(), "#2f6fdb", "bar-text"),
            BarKind::Lease => ("bar lease", "#e4ecfa".to_string(), "#7fa2dd", "bar-text"),
            BarKind::Expired => (
                "bar expired",
                format!("url(#{id}-expired)"),
                "#d23c3c",
                "bar-expired-text",
            ),
        };
        let dash = if b.kind == BarKind::Expired {
            r#" stroke-dasharray="4 2""#
        } else {
            ""
        };
        let _ = write!(
            s,
            r#"<g class="{class}"><rect x="{x0}" y="{y}" width="{w}" height="16" rx="4" fill="{fill}" stroke="{stroke}"{dash}/>"#
        );
        if text_px(&b.label) + 8 <= w {
            let _ = write!(
                s,
                r#"<text class="{text_class}" x="{}" y="{}">{}</text>"#,
                x0 + 5,
                y + 12,
                esc(&b.label)
            );
        }
        let _ = write!(s, "<title>{}</title></g>", esc(&b.label));
    }
}

fn arrows(s: &mut String, scene: &Scene, axis: &Axis, id: &str, line_y: &dyn Fn(usize) -> u64) {
    for a in &scene.arrows {
        let (x0, y0) = (axis.x(a.sent_ns) as i64, line_y(a.from_lane) as i64);
        let (mut x1, mut y1) = (axis.x(a.end_ns) as i64, line_y(a.to_lane) as i64);
        let col = class_color(a.class);
        let class = a.class.name();
        let mut extra = String::new();
        if a.dropped.is_some() || a.in_flight {
            // Stop short of the receiver: the message never got there.
            y1 = y0 + (y1 - y0) * 6 / 10;
            x1 = x0 + (x1 - x0).max(14);
            if a.dropped.is_some() {
                let _ = write!(
                    extra,
                    r#"<text x="{x1}" y="{}" text-anchor="middle" font-size="13" font-weight="700" fill="{col}">✗</text>"#,
                    y1 + 4
                );
            }
        }
        let head = if a.dropped.is_some() {
            String::new()
        } else {
            format!(r#" marker-end="url(#{id}-ah-{class})""#)
        };
        let dash = if a.dropped.is_some() || a.in_flight {
            r#" stroke-dasharray="3 3""#
        } else {
            ""
        };
        let state = if a.dropped.is_some() {
            " dropped"
        } else if a.in_flight {
            " in-flight"
        } else {
            ""
        };
        let _ = write!(
            s,
            r#"<g class="msg {class}{state}"><line class="arrow" x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" stroke="{col}"{dash}{head}/>{extra}<title>{}</title></g>"#,
            esc(&a.title)
        );
    }
}

fn marks(s: &mut String, scene: &Scene, axis: &Axis, line_y: &dyn Fn(usize) -> u64) {
    let mut above = Rows {
        ends: vec![[0; LABEL_ROWS]; scene.lanes.len()],
    };
    let mut below = Rows {
        ends: vec![[0; LABEL_ROWS]; scene.lanes.len()],
    };
    // Evidence last, so its rings sit on top of everything.
    let mut order: Vec<&super::scene::Mark> = scene.marks.iter().collect();
    order.sort_by_key(|m| !m.cited_by.is_empty());
    for m in order {
        let x = axis.x(m.t_ns);
        let y = line_y(m.lane);
        let evidence = !m.cited_by.is_empty();
        let class = if evidence { "evidence" } else { "rec" };
        let _ = write!(
            s,
            r#"<g class="{class} {}" data-seq="{}">"#,
            kind_class(m.kind),
            m.seq
        );
        let (r, fill, text_class) = match m.kind {
            MarkKind::Minor => (2, "#8a939e", ""),
            MarkKind::Labelled => (3, "#3b434d", "mark-text"),
            MarkKind::Accepted => (6, "#1f9d55", "ok-text"),
            MarkKind::Rejected => (6, "#d23c3c", "bad-text"),
        };
        // An accepted write that completes a violation is the bad news: red, not green.
        let completes = scene
            .citations
            .iter()
            .any(|c| c.evidence.last() == Some(&m.seq));
        let (fill, text_class) = if m.kind == MarkKind::Accepted && completes {
            ("#d23c3c", "bad-text")
        } else {
            (fill, text_class)
        };
        let _ = write!(
            s,
            r##"<circle cx="{x}" cy="{y}" r="{r}" fill="{fill}" stroke="#ffffff" stroke-width="1"/>"##
        );
        if m.kind != MarkKind::Minor || evidence {
            let text_class = if text_class.is_empty() {
                "mark-text"
            } else {
                text_class
            };
            let w = text_px(&m.label);
            let row = above.place(m.lane, x.saturating_sub(4), w) as u64;
            let _ = write!(
                s,
                r#"<text class="{text_class}" x="{}" y="{}">{}</text>"#,
                x.saturating_sub(4),
                y - 13 - row * 13,
                esc(&m.label)
            );
        }
        if evidence {
            // The record that completes a violation (its last evidence) also names it.
            let badges: Vec<String> = m
                .cited_by
                .iter()
                .map(|&n| match scene.citations.get(n - 1) {
                    Some(c) if c.evidence.last() == Some(&m.seq) => format!("[{n}] {}", c.kind),
                    _ => format!("[{n}]"),
                })
                .collect();
            let label = format!("#{} {}", m.seq, badges.join(" "));
            let row = below.place(m.lane, x.saturating_sub(10), text_px(&label)) as u64;
            let _ = write!(
                s,
                r##"<circle cx="{x}" cy="{y}" r="10" fill="none" stroke="#d42020" stroke-width="2.5"/><text class="ev-text" x="{}" y="{}">{label}</text>"##,
                x.saturating_sub(10),
                y + 22 + row * 11
            );
        }
        let _ = write!(s, "<title>{}</title></g>", esc(&m.title));
    }
}

fn kind_class(k: MarkKind) -> &'static str {
    match k {
        MarkKind::Minor => "minor",
        MarkKind::Labelled => "labelled",
        MarkKind::Accepted => "accepted",
        MarkKind::Rejected => "rejected",
    }
}

fn citations(s: &mut String, lines: &[(usize, Vec<String>)], top: u64) {
    if lines.is_empty() {
        return;
    }
    let mut y = top + 24;
    s.push_str(r#"<g class="citations">"#);
    for (n, text) in lines {
        let _ = write!(
            s,
            r##"<g class="citation" data-violation="{n}"><text class="cite-kind" x="12" y="{y}">[{n}]</text>"##
        );
        for (i, line) in text.iter().enumerate() {
            let _ = write!(
                s,
                r#"<text class="cite" x="40" y="{}">{}</text>"#,
                y + i as u64 * CITE_LINE_PX,
                esc(line)
            );
        }
        s.push_str("</g>");
        y += text.len() as u64 * CITE_LINE_PX + 6;
    }
    s.push_str("</g>");
}
