//! The TTL trade-off chart — the hook for issue 3's sweep, which produces
//! the rows: for each lease TTL, with and without fencing, the takeover
//! time after a holder dies, how often a live holder lost its lease
//! (false lease loss), and how many writes were corrupted. The article's
//! point, drawn: longer TTLs trade takeover time for fewer false losses,
//! and only fencing takes corrupted writes to zero at every TTL.
//!
//! Nothing here runs a sweep; it renders whatever rows it is given (one
//! panel per measure, one line per fencing setting, TTLs in order on the x
//! axis), so the sweep can evolve without touching the page code.

use std::fmt::Write;

use super::xml::esc;

pub use crate::suite::tradeoff::TtlRow;

const PANEL_W_PX: u64 = 280;
const PANEL_H_PX: u64 = 170;

type Measure = (&'static str, fn(&TtlRow) -> u64);

const MEASURES: [Measure; 3] = [
    ("takeover time (ms)", |r| r.takeover_ms),
    ("false lease loss", |r| r.false_lease_loss),
    ("corrupted writes", |r| r.corrupted_writes),
];

/// Three small line charts side by side in one `<svg>`.
pub fn render(rows: &[TtlRow]) -> String {
    let mut ttls: Vec<u64> = rows.iter().map(|r| r.ttl_ms).collect();
    ttls.sort_unstable();
    ttls.dedup();
    let width = PANEL_W_PX * MEASURES.len() as u64;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="tradeoff" width="{width}" height="{PANEL_H_PX}" viewBox="0 0 {width} {PANEL_H_PX}" font-family="system-ui,sans-serif"><rect width="{width}" height="{PANEL_H_PX}" fill="#ffffff"/>"##
    );
    let (left, right, top, bottom) = (40u64, 12u64, 30u64, 130u64);
    for (p, (title, value)) in MEASURES.iter().enumerate() {
        let ox = p as u64 * PANEL_W_PX;
        let max = rows.iter().map(value).max().unwrap_or(0).max(1);
        let step = (PANEL_W_PX - left - right) / (ttls.len().max(2) as u64 - 1);
        let x =
            |ttl: u64| ox + left + ttls.iter().position(|&t| t == ttl).unwrap_or(0) as u64 * step;
        let y = |v: u64| bottom - (bottom - top) * v / max;
        let _ = write!(
            s,
            r##"<g class="panel"><text x="{}" y="16" font-size="12" font-weight="600">{}</text><line x1="{}" y1="{bottom}" x2="{}" y2="{bottom}" stroke="#9aa3ad"/><text x="{}" y="{}" font-size="9" text-anchor="end" fill="#6b7480">{max}</text>"##,
            ox + 8,
            esc(title),
            ox + left,
            ox + PANEL_W_PX - right,
            ox + left - 4,
            top + 4
        );
        for &t in &ttls {
            let _ = write!(
                s,
                r##"<text x="{}" y="{}" font-size="9" text-anchor="middle" fill="#3b434d">{t}</text>"##,
                x(t),
                bottom + 13
            );
        }
        for (fencing, color, name) in [
            (false, "#d23c3c", "no fencing"),
            (true, "#1f9d55", "fencing"),
        ] {
            let mut pts: Vec<&TtlRow> = rows.iter().filter(|r| r.fencing == fencing).collect();
            pts.sort_by_key(|r| r.ttl_ms);
            let path: Vec<String> = pts
                .iter()
                .map(|r| format!("{},{}", x(r.ttl_ms), y(value(r))))
                .collect();
            let _ = write!(
                s,
                r#"<polyline class="series" data-fencing="{fencing}" points="{}" fill="none" stroke="{color}" stroke-width="2"><title>{name}</title></polyline>"#,
                path.join(" ")
            );
        }
        let _ = write!(
            s,
            r##"<text x="{}" y="{}" font-size="9.5" fill="#6b7480">lease TTL (ms) — red: no fencing, green: fencing</text></g>"##,
            ox + left,
            bottom + 30
        );
    }
    s.push_str("</svg>");
    s
}

/// The table `fencesim tradeoff` prints.
pub fn table(rows: &[TtlRow], seeds: u64) -> String {
    use std::fmt::Write;
    let mut s = format!(
        "{:>8}  {:<10}  {:>12}  {:>17}  {:>16}   (over {seeds} seeds)\n",
        "ttl_ms", "fencing", "takeover_ms", "false_lease_loss", "corrupted_writes"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:>8}  {:<10}  {:>12}  {:>17}  {:>16}",
            r.ttl_ms,
            if r.fencing { "fenced-cas" } else { "none" },
            r.takeover_ms,
            r.false_lease_loss,
            r.corrupted_writes
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_measure_gets_a_panel_with_a_line_per_fencing_setting() {
        let rows: Vec<TtlRow> = [1_000, 10_000, 30_000]
            .into_iter()
            .flat_map(|ttl_ms| {
                [false, true].map(|fencing| TtlRow {
                    ttl_ms,
                    fencing,
                    takeover_ms: ttl_ms,
                    false_lease_loss: 30_000 / ttl_ms,
                    corrupted_writes: if fencing { 0 } else { 30_000 / ttl_ms },
                })
            })
            .collect();
        let svg = render(&rows);
        assert_eq!(svg.matches(r#"<g class="panel">"#).count(), 3);
        assert_eq!(svg.matches(r#"data-fencing="true""#).count(), 3);
        assert_eq!(svg.matches(r#"data-fencing="false""#).count(), 3);
        assert!(roxmltree::Document::parse(&svg).is_ok());
    }
}
