//! The history checker: one pass over a [`History`], linear in its length
//! (each record does O(log n) map work), reading only what the harness
//! observed plus true time.
//!
//! Violations (each with evidence: the `seq` numbers of the records that
//! prove it): `stale_write`, `lost_update`, `token_order`, `unsafe_release`,
//! `liveness`, `duplicate_effect`, `two_actives`, `expired_renewal`,
//! `superseded_effect`, `unissued_token`.
//! Informational counters, never failures: `late_writes`, `stale_attempts`,
//! `fence_rejected_total` (superseded generations) and
//! `fence_rejected_same_generation` (retries, duplicates), ownership
//! overlaps, `wasted_work`. Definitions live with each check: [`generations`],
//! [`writes`], [`token_order`], [`release`], [`overlap`], [`liveness`],
//! [`effects`], [`work`], [`two_actives`], [`renewal`]. The definitions are
//! stated in `docs/history.md`; `crate::oracle` is a second, independent
//! reading of them that the differential test holds this one to.

pub(crate) mod effects;
pub(crate) mod generations;
pub(crate) mod liveness;
pub(crate) mod metrics;
pub(crate) mod node_map;
pub(crate) mod overlap;
pub(crate) mod release;
pub(crate) mod renewal;
pub mod store_claims;
pub(crate) mod token_order;
pub(crate) mod two_actives;
pub(crate) mod work;
pub(crate) mod writes;

use std::fmt;

use crate::history::History;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum ViolationKind {
    StaleWrite,
    LostUpdate,
    TokenOrder,
    UnsafeRelease,
    Liveness,
    DuplicateEffect,
    TwoActives,
    ExpiredRenewal,
    SupersededEffect,
    UnissuedToken,
}

/// How many violation kinds there are (array sizes of per-kind counters).
pub const VIOLATION_KINDS: usize = 10;

impl ViolationKind {
    pub const ALL: [ViolationKind; VIOLATION_KINDS] = [
        ViolationKind::StaleWrite,
        ViolationKind::LostUpdate,
        ViolationKind::TokenOrder,
        ViolationKind::UnsafeRelease,
        ViolationKind::Liveness,
        ViolationKind::DuplicateEffect,
        ViolationKind::TwoActives,
        ViolationKind::ExpiredRenewal,
        ViolationKind::SupersededEffect,
        ViolationKind::UnissuedToken,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ViolationKind::StaleWrite => "stale_write",
            ViolationKind::LostUpdate => "lost_update",
            ViolationKind::TokenOrder => "token_order",
            ViolationKind::UnsafeRelease => "unsafe_release",
            ViolationKind::Liveness => "liveness",
            ViolationKind::DuplicateEffect => "duplicate_effect",
            ViolationKind::TwoActives => "two_actives",
            ViolationKind::ExpiredRenewal => "expired_renewal",
            ViolationKind::SupersededEffect => "superseded_effect",
            ViolationKind::UnissuedToken => "unissued_token",
        }
    }

    pub fn from_name(name: &str) -> Option<ViolationKind> {
        ViolationKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What must have happened in a run for this kind's check to have been
    /// put to the test ([`Info::hazards`]; the vacuity guard judges it).
    pub fn hazard(self) -> &'static str {
        match self {
            ViolationKind::StaleWrite => "a stale or late write reached the resource",
            ViolationKind::LostUpdate => {
                "a write reached the resource after another op's write replaced the value its op read"
            }
            ViolationKind::TokenOrder => "a key was granted twice",
            ViolationKind::UnsafeRelease => "a release was applied for an expired lease",
            ViolationKind::Liveness => "a node crashed, paused or was partitioned",
            ViolationKind::DuplicateEffect => "an effect request was sent again",
            ViolationKind::TwoActives => "two nodes believed they were active at once",
            ViolationKind::ExpiredRenewal => "a lease was renewed after it expired",
            ViolationKind::SupersededEffect => {
                "an effect was performed for a request made under a superseded grant"
            }
            ViolationKind::UnissuedToken => "a write with a token reached the resource",
        }
    }

    pub fn doc(self) -> &'static str {
        match self {
            ViolationKind::StaleWrite => {
                "resource accepted a write of generation g after one of generation g' > g"
            }
            ViolationKind::LostUpdate => "a write overwrote a value its writer's read never saw",
            ViolationKind::TokenOrder => "a later grant carries a token <= an earlier grant's",
            ViolationKind::UnsafeRelease => {
                "a release on behalf of grant g removed another grant's lease"
            }
            ViolationKind::Liveness => {
                "a live worker never finished its workload by the end of the run (stuck, no takeover)"
            }
            ViolationKind::DuplicateEffect => {
                "an effect sink (email, payment) performed one operation's irreversible effect twice"
            }
            ViolationKind::TwoActives => {
                "active/passive pair: the resource accepted a write from a node while a node promoted after it believed it was active"
            }
            ViolationKind::ExpiredRenewal => {
                "the coordinator renewed a lease it had already expired and issued to another grant"
            }
            ViolationKind::SupersededEffect => {
                "an effect sink performed an irreversible effect requested by a holder already superseded"
            }
            ViolationKind::UnissuedToken => {
                "the resource accepted a write whose token no grant of its key carried"
            }
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Violation {
    pub kind: ViolationKind,
    pub key: u16,
    /// `seq` numbers of the records that prove it, ascending.
    pub evidence: Vec<u64>,
    pub explanation: String,
}

/// Where the checkers put the violations they find. A sweep judges
/// thousands of seeds by their counts alone, so a terse checker
/// ([`Checker::terse`]) leaves each violation's explanation empty instead of
/// formatting it: its reports equal an explaining checker's in everything
/// else (kinds, keys, evidence, counts, info, metrics).
pub(crate) struct Found {
    list: Vec<Violation>,
    explain: bool,
}

impl Found {
    /// Records a violation; `explanation` runs only if the checker explains.
    pub(crate) fn push(
        &mut self,
        kind: ViolationKind,
        key: u16,
        evidence: Vec<u64>,
        explanation: impl FnOnce() -> String,
    ) {
        // Evidence is listed in record order, whatever order a checker
        // gathered it in (a lost update's read may come after the writes
        // it missed).
        let mut evidence = evidence;
        evidence.sort_unstable();
        evidence.dedup();
        let explanation = if self.explain {
            explanation()
        } else {
            String::new()
        };
        self.list.push(Violation {
            kind,
            key,
            evidence,
            explanation,
        });
    }
}

impl Default for Found {
    fn default() -> Self {
        Found {
            list: Vec::new(),
            explain: true,
        }
    }
}

/// Evidence from the records that may prove a violation: the present
/// ones, ascending, each once.
pub(crate) fn evidence(seqs: impl IntoIterator<Item = Option<u64>>) -> Vec<u64> {
    let mut v: Vec<u64> = seqs.into_iter().flatten().collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Informational counters. Never failures by themselves; scenarios may
/// assert on them (`[[expect.metric]]`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Info {
    pub writes_accepted: u64,
    /// Writes of a superseded generation that reached the resource.
    pub stale_attempts: u64,
    /// Rejections of superseded generations: each one a corruption prevented.
    pub fence_rejected_total: u64,
    /// Rejections of a current generation (retries, duplicates, strict mode).
    pub fence_rejected_same_generation: u64,
    /// Accepted from an expired holder while no newer grant existed.
    pub late_writes: u64,
    pub overlaps: u64,
    pub overlap_ns: u64,
    pub watch_notifications: u64,
    /// Ops whose finished work was refused (see [`work`]).
    pub wasted_work: u64,
    /// Releases applied for a grant whose lease had expired (see [`release`]).
    pub release_hazards: u64,
    /// Effect requests sent again for an op (see [`effects`]).
    pub effect_retries: u64,
    /// Per violation kind (indexed by `ViolationKind as usize`): how often
    /// the kind's hazard ([`ViolationKind::hazard`]) happened. A seed with a
    /// violation of a kind reached its hazard too ([`Report::hazard_seen`]).
    pub hazards: [u64; VIOLATION_KINDS],
}

impl Info {
    /// A hazard some check exists for was exercised: a write of a
    /// superseded generation or from an expired holder reached the resource
    /// (stale_write, lost_update), a release was applied for an expired
    /// lease (unsafe_release), or an effect request was sent again
    /// (duplicate_effect). The vacuity guard counts seeds where this is
    /// true: a clean verdict means something only if the protection (a
    /// fence, a lock server's lock-delay, a compare-and-delete, an
    /// idempotency key) was actually put to the test.
    pub fn hazard_reached(&self) -> bool {
        self.stale_attempts > 0
            || self.late_writes > 0
            || self.release_hazards > 0
            || self.effect_retries > 0
    }
}

/// Names a scenario can assert on, with how to read them.
pub const METRIC_NAMES: &[&str] = &[
    "writes_accepted",
    "stale_attempts",
    "fence_rejected_total",
    "fence_rejected_same_generation",
    "late_writes",
    "overlaps",
    "overlap_ms",
    "renewal_failures",
    "lost_leases",
    "watch_notifications",
    "wasted_work",
    "stale_write",
    "lost_update",
    "token_order",
    "unsafe_release",
    "liveness",
    "duplicate_effect",
    "two_actives",
    "expired_renewal",
    "superseded_effect",
    "unissued_token",
];

/// Keep at most this many violations of a kind with full evidence; the
/// rest are only counted. Bounds memory on pathological histories.
const KEPT_PER_KIND: usize = 16;

#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Report {
    pub violations: Vec<Violation>,
    /// Count per kind, including ones not kept.
    pub counts: [u64; VIOLATION_KINDS],
    pub info: Info,
    pub metrics: metrics::RunMetrics,
}

impl Report {
    pub fn count(&self, kind: ViolationKind) -> u64 {
        self.counts[kind.index()]
    }

    /// Whether this run put `kind`'s check to the test: its hazard
    /// happened, or the kind was found (an unprotected hazard).
    pub fn hazard_seen(&self, kind: ViolationKind) -> bool {
        self.info.hazards[kind.index()] > 0 || self.count(kind) > 0
    }

    pub fn is_clean(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }

    pub fn kinds(&self) -> impl Iterator<Item = ViolationKind> + '_ {
        ViolationKind::ALL
            .into_iter()
            .filter(|k| self.count(*k) > 0)
    }

    pub fn metric(&self, name: &str) -> Option<u64> {
        let i = &self.info;
        Some(match name {
            "writes_accepted" => i.writes_accepted,
            "stale_attempts" => i.stale_attempts,
            "fence_rejected_total" => i.fence_rejected_total,
            "fence_rejected_same_generation" => i.fence_rejected_same_generation,
            "late_writes" => i.late_writes,
            "overlaps" => i.overlaps,
            "overlap_ms" => i.overlap_ns / 1_000_000,
            "renewal_failures" => self.metrics.renewal_failures,
            "lost_leases" => self.metrics.lost_leases,
            "watch_notifications" => i.watch_notifications,
            "wasted_work" => i.wasted_work,
            other => self.count(ViolationKind::from_name(other)?),
        })
    }
}

/// Checks one history.
pub fn check(history: &History) -> Report {
    Checker::default().check(history)
}

/// The checker with its state tables, for checking many histories in turn:
/// each [`Checker::check`] starts from empty tables but keeps their
/// allocations, so a sweep's thread that reuses one checker allocates
/// almost nothing per seed (see [`crate::lookup`]). A reused checker and a fresh
/// one give the same report for every history.
#[derive(Default)]
pub struct Checker {
    gens: generations::Generations,
    writes: writes::Writes,
    tokens: token_order::TokenOrder,
    releases: release::Releases,
    renewals: renewal::Renewals,
    overlap: overlap::Overlap,
    measured: metrics::Metrics,
    live: liveness::Liveness,
    effects: effects::Effects,
    work: work::Work,
    pair: two_actives::TwoActives,
    found: Found,
}

/// A set of record kinds: the ones a checker reads. [`Checker::check`]
/// hands a record only to the checkers whose set holds its kind — most
/// records matter to two or three of the dozen, and a call per checker per
/// record was most of what checking cost. Each set is declared beside its
/// checker's `observe` (`writes::KINDS`, …); a set too small would silently
/// blind its checker, so the differential test holds the routed checker to
/// one that hands every record to every checker
/// ([`Checker::check_unrouted`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct KindSet(u64);

impl KindSet {
    pub const fn of(kinds: &[crate::history::Kind]) -> KindSet {
        let mut bits = 0u64;
        let mut i = 0;
        while i < kinds.len() {
            bits |= 1 << kinds[i] as u32;
            i += 1;
        }
        KindSet(bits)
    }

    #[inline]
    pub fn has(self, kind: crate::history::Kind) -> bool {
        // Every kind is below 64 (asserted below): no shift-overflow check.
        self.0.wrapping_shr(kind as u32) & 1 != 0
    }
}

// Every kind fits the mask.
const _: () = assert!(crate::history::Kind::ALL.len() <= 64);

impl Checker {
    /// A checker whose reports carry no explanation text (see [`Found`]):
    /// for sweeps that count violations and never show them.
    pub fn terse() -> Checker {
        let mut c = Checker::default();
        c.found.explain = false;
        c
    }

    /// Whether this checker's violations carry their explanation text.
    pub fn set_explain(&mut self, explain: bool) {
        self.found.explain = explain;
    }

    /// Checks one history.
    pub fn check(&mut self, history: &History) -> Report {
        self.run::<true>(history)
    }

    /// Checks one history handing every record to every checker — what
    /// [`Checker::check`] must equal (tests hold them together; see
    /// [`KindSet`]).
    #[doc(hidden)]
    pub fn check_unrouted(&mut self, history: &History) -> Report {
        self.run::<false>(history)
    }

    fn run<const ROUTED: bool>(&mut self, history: &History) -> Report {
        // Every table named: a new one cannot be left holding the last
        // history's state.
        let Checker {
            gens,
            writes,
            tokens,
            releases,
            renewals,
            overlap,
            measured,
            live,
            effects,
            work,
            pair,
            found,
        } = self;
        gens.start(history);
        writes.clear();
        tokens.clear();
        releases.clear();
        renewals.clear();
        overlap.clear();
        // `Metrics::finish` empties it; a check cut short by a panic may not have.
        measured.clear();
        live.clear();
        effects.clear();
        work.clear();
        pair.clear();
        found.list.clear();
        let mut report = Report::default();
        let mut last_seq = None;
        for e in &history.events {
            debug_assert!(
                last_seq.is_none_or(|s| e.seq > s),
                "history seq must increase"
            );
            last_seq = Some(e.seq);
            let reads = |kinds: KindSet| !ROUTED || kinds.has(e.kind);
            if reads(generations::KINDS) {
                gens.observe(e);
            }
            if reads(token_order::KINDS) {
                tokens.observe(history, e, gens, found);
            }
            if reads(writes::KINDS) {
                writes.observe(history, e, gens, &mut report.info, found);
            }
            if reads(release::KINDS) {
                releases.observe(history, e, gens, &mut report.info, found);
            }
            if reads(renewal::KINDS) {
                renewals.observe(history, e, gens, found);
            }
            if reads(overlap::KINDS) {
                overlap.observe(e, &mut report.info);
            }
            if matches!(
                e.kind,
                crate::history::Kind::Crash
                    | crate::history::Kind::Pause
                    | crate::history::Kind::Partition
            ) {
                report.info.hazards[ViolationKind::Liveness.index()] += 1;
            }
            if reads(metrics::KINDS) {
                measured.observe(e);
            }
            // Liveness reads every record (each node's last one).
            live.observe(history, e, found);
            report.info.watch_notifications +=
                (e.kind == crate::history::Kind::WatchNotified) as u64;
            if reads(effects::KINDS) {
                effects.observe(history, e, gens, &mut report.info, found);
            }
            if reads(work::KINDS) {
                work.observe(e, &mut report.info);
            }
            if reads(two_actives::KINDS) {
                pair.observe(history, e, gens, found);
            }
            if !found.list.is_empty() {
                keep_found(found, &mut report);
            }
        }
        let hz = &mut report.info.hazards;
        hz[ViolationKind::UnsafeRelease.index()] = report.info.release_hazards;
        hz[ViolationKind::DuplicateEffect.index()] = report.info.effect_retries;
        hz[ViolationKind::TokenOrder.index()] = gens.later_grants;
        hz[ViolationKind::TwoActives.index()] = pair.hazards;
        hz[ViolationKind::ExpiredRenewal.index()] = renewals.hazards;
        let end_ns = history.events.last().map_or(0, |e| e.t_true_ns);
        overlap.finish(end_ns, &mut report.info);
        report.metrics = measured.finish(end_ns);
        report
    }
}

/// Counts the violations one record found and keeps the first
/// [`KEPT_PER_KIND`] of each kind in the report.
#[inline]
fn keep_found(found: &mut Found, report: &mut Report) {
    for v in found.list.drain(..) {
        let n = &mut report.counts[v.kind.index()];
        *n += 1;
        if *n as usize <= KEPT_PER_KIND {
            report.violations.push(v);
        }
    }
}

#[cfg(test)]
mod tests;
