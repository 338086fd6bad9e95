//! Text for `fencesim shrink`: what was kept, the size before and after,
//! whether the result still depends on the seed, and where it was written.
//! `shrink/` minimises and hands over its `Shrunk`; this renders it.

use std::fmt::Write as _;
use std::path::Path;

use crate::shrink::Shrunk;
use crate::suite::shell_quote;

/// The summary `fencesim shrink` prints after writing the shrunk scenario to `out`.
pub fn summary(file: &str, seed: u64, shrunk: &Shrunk, out: &Path) -> String {
    let (b, a) = (shrunk.before, shrunk.after);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fencesim {} — shrank {file} seed {seed}, keeping {}, in {} runs{}",
        env!("CARGO_PKG_VERSION"),
        shrunk.kind,
        shrunk.runs,
        if shrunk.hit_budget {
            " (run budget hit: may not be minimal)"
        } else {
            ""
        }
    );
    let _ = writeln!(s, "            before  after");
    let _ = writeln!(s, "  faults    {:>6}  {:>5}", b.faults, a.faults);
    let _ = writeln!(s, "  events    {:>6}  {:>5}", b.events, a.events);
    let _ = writeln!(s, "  workers   {:>6}  {:>5}", b.workers, a.workers);
    let _ = writeln!(s, "  ops       {:>6}  {:>5}", b.ops, a.ops);
    let (failing, tried) = shrunk.other_seeds_failing;
    let _ = writeln!(
        s,
        "latency {}; {} under {failing}/{tried} other seeds",
        if shrunk.latency_pinned {
            "pinned (seed-independent)"
        } else {
            "jitter kept (seed-dependent)"
        },
        shrunk.kind
    );
    let _ = writeln!(s, "written to {}", out.display());
    let _ = writeln!(
        s,
        "check it: fencesim run {}",
        shell_quote(&out.display().to_string())
    );
    s
}
