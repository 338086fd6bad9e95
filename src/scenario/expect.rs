//! What a scenario expects of its runs.
//!
//! - `must_find`: violation kinds that must show up, each in at least
//!   `min_failing_seeds` seeds (the unsafe protocol really is unsafe).
//! - `allow`: kinds tolerated but not required.
//! - any other safety violation in any seed fails the scenario.
//! - `metric`: assertions checked on every seed (`fence_rejected_total == 1`).
//! - a scenario that must find nothing is *vacuous* unless stale attempts
//!   (writes of a superseded generation reaching the resource) — or late
//!   writes (from a holder whose lease had expired, before anyone else got
//!   it: what Chubby's lock-delay is for) — happen in at least
//!   [`VACUITY_MIN_FRACTION`] of its seeds: a fence that was never tested
//!   proves nothing.

use std::fmt;

use crate::check::{Report, ViolationKind};

pub const VACUITY_MIN_FRACTION: f64 = 0.10;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub const ALL: [(&'static str, CmpOp); 6] = [
        ("==", CmpOp::Eq),
        ("!=", CmpOp::Ne),
        ("<", CmpOp::Lt),
        ("<=", CmpOp::Le),
        (">", CmpOp::Gt),
        (">=", CmpOp::Ge),
    ];

    pub fn parse(s: &str) -> Option<CmpOp> {
        CmpOp::ALL.iter().find(|(n, _)| *n == s).map(|(_, op)| *op)
    }

    pub fn holds(self, a: u64, b: u64) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

impl fmt::Display for CmpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = CmpOp::ALL
            .iter()
            .find(|(_, op)| op == self)
            .map_or("?", |(n, _)| n);
        f.write_str(name)
    }
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MetricAssertion {
    pub name: String,
    pub op: CmpOp,
    pub value: u64,
}

impl fmt::Display for MetricAssertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.name, self.op, self.value)
    }
}

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Expectation {
    pub must_find: Vec<(ViolationKind, u64)>,
    pub allow: Vec<ViolationKind>,
    pub metrics: Vec<MetricAssertion>,
}

impl Expectation {
    /// Expected clean: nothing to find (the vacuity guard then judges the
    /// hazards of the protection kinds: `suite::vacuity`).
    pub fn expects_clean(&self) -> bool {
        self.must_find.is_empty()
    }

    /// Every kind the scenario tolerates (`must_find`'s, then `allow`'s):
    /// the kinds its built-in reference may show, which `validate` cannot
    /// judge an implementation on there. Empty: a clean built-in reference.
    pub fn tolerated(&self) -> Vec<ViolationKind> {
        let mut kinds: Vec<ViolationKind> = self.must_find.iter().map(|(k, _)| *k).collect();
        for k in &self.allow {
            if !kinds.contains(k) {
                kinds.push(*k);
            }
        }
        kinds
    }

    pub fn tolerates(&self, kind: ViolationKind) -> bool {
        self.allow.contains(&kind) || self.must_find.iter().any(|(k, _)| *k == kind)
    }

    /// Metric assertions that fail on one seed's report, rendered.
    pub fn failed_metrics(&self, report: &Report) -> Vec<String> {
        self.metrics
            .iter()
            .filter_map(|m| {
                let actual = report.metric(&m.name).unwrap_or(0);
                (!m.op.holds(actual, m.value)).then(|| format!("{m} (was {actual})"))
            })
            .collect()
    }
}
