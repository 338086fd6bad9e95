//! Small inline SVG histograms: for each named series, how many seeds had
//! each value of a metric. The chart code knows nothing about which
//! metrics exist — it takes a list of [`Series`] — so new measurements
//! (issue 3: acquisition wait, held time, renewal slack) only add entries.
//!
//! Values with at most [`MAX_BARS`] distinct values get one bar each;
//! wider ranges are cut into equal integer bins, labelled `lo–hi`.

use std::fmt::Write;

use super::xml::esc;

pub const MAX_BARS: usize = 12;
const W_PX: u64 = 260;
const H_PX: u64 = 150;
const PLOT_TOP_PX: u64 = 34;
const PLOT_BOTTOM_PX: u64 = 118;
const PLOT_LEFT_PX: u64 = 34;

/// A distribution: value → how many seeds had it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Series {
    pub name: String,
    pub note: String,
    pub counts: Vec<(u64, u64)>,
}

impl Series {
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|&(_, n)| n).sum()
    }

    /// True when every seed had 0: nothing to chart.
    pub fn all_zero(&self) -> bool {
        self.counts.iter().all(|&(v, n)| v == 0 || n == 0)
    }
}

/// (label, seeds) per bar.
pub fn bins(counts: &[(u64, u64)]) -> Vec<(String, u64)> {
    let mut sorted = counts.to_vec();
    sorted.sort_unstable();
    if sorted.len() <= MAX_BARS {
        return sorted.iter().map(|&(v, n)| (v.to_string(), n)).collect();
    }
    let lo = sorted[0].0;
    let hi = sorted[sorted.len() - 1].0;
    let width = (hi - lo) / MAX_BARS as u64 + 1;
    let mut out: Vec<(String, u64)> = (0..MAX_BARS as u64)
        .map(|i| {
            let a = lo + i * width;
            (format!("{a}–{}", a + width - 1), 0)
        })
        .collect();
    for (v, n) in sorted {
        out[((v - lo) / width) as usize].1 += n;
    }
    while out.last().is_some_and(|b| b.1 == 0) {
        out.pop();
    }
    out
}

/// One histogram as a standalone `<svg>`.
pub fn histogram(series: &Series) -> String {
    let bars = bins(&series.counts);
    let max = bars.iter().map(|b| b.1).max().unwrap_or(0).max(1);
    let plot_w = W_PX - PLOT_LEFT_PX - 8;
    let slot = plot_w / bars.len().max(1) as u64;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-series="{n}" width="{W_PX}" height="{H_PX}" viewBox="0 0 {W_PX} {H_PX}" font-family="system-ui,sans-serif"><rect width="{W_PX}" height="{H_PX}" fill="#ffffff"/><text x="4" y="14" font-size="12" font-weight="600" fill="#1d232b">{n}</text><text x="4" y="27" font-size="9.5" fill="#6b7480">seeds per value, {t} seeds</text>"##,
        n = esc(&series.name),
        t = series.total()
    );
    let _ = write!(
        s,
        r##"<line x1="{PLOT_LEFT_PX}" y1="{PLOT_BOTTOM_PX}" x2="{}" y2="{PLOT_BOTTOM_PX}" stroke="#9aa3ad"/><text x="{}" y="{}" font-size="9" fill="#6b7480" text-anchor="end">{max}</text>"##,
        W_PX - 8,
        PLOT_LEFT_PX - 3,
        PLOT_TOP_PX + 8
    );
    for (i, (label, n)) in bars.iter().enumerate() {
        let h = (PLOT_BOTTOM_PX - PLOT_TOP_PX) * n / max;
        let x = PLOT_LEFT_PX + i as u64 * slot + 2;
        let _ = write!(
            s,
            r##"<g class="bin"><rect x="{x}" y="{}" width="{}" height="{h}" fill="#5b8def"/><text x="{}" y="{}" font-size="9" fill="#3b434d" text-anchor="middle">{}</text><title>{} = {}: {n} seeds</title></g>"##,
            PLOT_BOTTOM_PX - h,
            slot.saturating_sub(4).max(2),
            x + slot / 2 - 2,
            PLOT_BOTTOM_PX + 12 + (i as u64 % 2) * 10 * (bars.len() > 6) as u64,
            esc(label),
            esc(&series.name),
            esc(label)
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_values_get_a_bar_each_and_many_are_binned_without_losing_seeds() {
        assert_eq!(
            bins(&[(1, 5), (0, 3)]),
            vec![("0".to_string(), 3), ("1".to_string(), 5)]
        );
        let wide: Vec<(u64, u64)> = (0..100).map(|v| (v * 7, 1)).collect();
        let b = bins(&wide);
        assert!(b.len() <= MAX_BARS);
        assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), 100);
    }

    #[test]
    fn a_histogram_names_its_series_and_draws_one_rect_per_bin() {
        let s = Series {
            name: "fence_rejected_total".into(),
            note: String::new(),
            counts: vec![(0, 2), (1, 8)],
        };
        let svg = histogram(&s);
        assert!(svg.contains(r#"data-series="fence_rejected_total""#));
        assert_eq!(svg.matches(r#"<g class="bin">"#).count(), 2);
        assert!(!s.all_zero());
    }
}
