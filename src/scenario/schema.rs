//! The scenario file format (TOML, `schema_version = 1`), as serde types.
//!
//! These mirror the file one to one and keep source spans (`Spanned`) on
//! every value that is validated after parsing, so that a semantic error
//! ("no node named worker/C") still names line and column. Unknown keys are
//! errors everywhere. Resolution into simulator options is in `resolve.rs`;
//! the format is documented in `docs/scenarios.md`.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::limits::{Ms, Ppm, SignedMs};

fn default_seeds() -> Spanned<u64> {
    Spanned::new(0..0, 100)
}
fn no() -> Spanned<bool> {
    Spanned::new(0..0, false)
}
fn zero_p() -> Spanned<f64> {
    Spanned::new(0..0, 0.0)
}
fn zero_ppm() -> Spanned<Ppm> {
    Spanned::new(0..0, Ppm::default())
}
fn default_key() -> String {
    "doc".to_string()
}
fn default_retry_ms() -> Ms {
    Ms::new(500)
}
fn default_request_timeout_ms() -> Spanned<Ms> {
    Spanned::new(0..0, Ms::new(1_000))
}
fn default_max_retries() -> u32 {
    3
}
fn default_work_ms() -> Ms {
    Ms::new(100)
}
fn default_ops() -> Spanned<u32> {
    Spanned::new(0..0, 1)
}
fn default_latency_min_ms() -> Ms {
    Ms::new(1)
}
fn default_latency_max_ms() -> Spanned<Ms> {
    Spanned::new(0..0, Ms::new(5))
}
fn default_true() -> bool {
    true
}
fn default_min_failing_seeds() -> u64 {
    1
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub schema_version: Spanned<u32>,
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: String,
    /// How many seeds a suite run tries: `seed_start .. seed_start + seeds`.
    #[serde(default = "default_seeds")]
    pub seeds: Spanned<u64>,
    #[serde(default)]
    pub seed_start: u64,
    pub max_time_ms: Spanned<Ms>,
    pub protocol: ProtocolSection,
    pub lease: LeaseSection,
    #[serde(default)]
    pub workload: WorkloadSection,
    #[serde(rename = "worker")]
    pub workers: Spanned<Vec<WorkerSection>>,
    #[serde(default)]
    pub network: NetworkSection,
    #[serde(default)]
    pub clock: BTreeMap<String, Spanned<ClockSection>>,
    #[serde(default, rename = "fault")]
    pub faults: Vec<Spanned<FaultSection>>,
    #[serde(default)]
    pub random: Option<Spanned<RandomSection>>,
    pub expect: ExpectSection,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ProtocolSection {
    pub kind: Spanned<String>,
    #[serde(default = "no")]
    pub strict: Spanned<bool>,
    #[serde(default = "no")]
    pub fence_reads: Spanned<bool>,
    /// Coordinator replicas (default: 1; incr-beside-lease 2; consensus-generation 3).
    pub replicas: Option<Spanned<u8>>,
    /// Async replication lag (replicated leases, incr-beside-lease). Default 50.
    pub replication_lag_ms: Option<Ms>,
    /// Heartbeat period while holding a lease; absent: no renewal.
    pub renew_every_ms: Option<Spanned<Ms>>,
    /// fenced-check-then-write: time from the fence check to the write. Default 5.
    pub check_to_write_ms: Option<Spanned<Ms>>,
    /// The resource's fence is lost when it restarts (its data is not).
    #[serde(default = "no")]
    pub volatile_fence: Spanned<bool>,
    /// Protocols with a native token (zk-sequential), and consensus-generation
    /// (does the resource check the sequencer?): send and check it. Default true.
    pub fence: Option<Spanned<bool>>,
    /// zk-sequential: every waiter watches the lock node (the herd effect). Default false.
    pub herd: Option<Spanned<bool>>,
    /// Chubby's lock-delay: an expired lease's key stays refused this long. Default 0.
    pub lock_delay_ms: Option<Spanned<Ms>>,
    /// redlock: how many independent Redis masters (default 5).
    pub masters: Option<Spanned<u8>>,
    /// redlock: "always" (sync every write) or "never" (the default: lost on a crash).
    pub fsync: Option<Spanned<String>>,
    /// redlock: a restarted master answers nothing for this long. Default 0.
    pub restart_delay_ms: Option<Spanned<Ms>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct LeaseSection {
    pub ttl_ms: Spanned<Ms>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSection {
    #[serde(default = "default_key")]
    pub key: String,
    #[serde(default = "default_retry_ms")]
    pub retry_ms: Ms,
    #[serde(default = "default_request_timeout_ms")]
    pub request_timeout_ms: Spanned<Ms>,
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    #[serde(default = "default_work_ms")]
    pub work_ms: Ms,
    #[serde(default)]
    pub think_ms: Ms,
    /// Multi-lock workers: `"as-listed"` (default; each worker's own order)
    /// or `"sorted"` (one global order: lock names sorted).
    pub lock_order: Option<Spanned<String>>,
}

impl Default for WorkloadSection {
    fn default() -> Self {
        WorkloadSection {
            key: default_key(),
            retry_ms: default_retry_ms(),
            request_timeout_ms: default_request_timeout_ms(),
            max_retries: default_max_retries(),
            work_ms: default_work_ms(),
            think_ms: Ms::default(),
            lock_order: None,
        }
    }
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct WorkerSection {
    pub name: Spanned<String>,
    #[serde(default)]
    pub start_ms: Ms,
    #[serde(default = "default_ops")]
    pub ops: Spanned<u32>,
    /// Overrides `workload.work_ms` for this worker.
    pub work_ms: Option<Ms>,
    /// Overrides `workload.think_ms` for this worker.
    pub think_ms: Option<Ms>,
    /// The locks each of this worker's operations takes, in this order
    /// (multi-lock); absent: the one lock `workload.key`.
    pub locks: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    #[serde(default = "default_latency_min_ms")]
    pub latency_min_ms: Ms,
    #[serde(default = "default_latency_max_ms")]
    pub latency_max_ms: Spanned<Ms>,
    #[serde(default = "zero_p")]
    pub loss_probability: Spanned<f64>,
    #[serde(default = "zero_p")]
    pub delay_probability: Spanned<f64>,
    #[serde(default)]
    pub delay_max_ms: Ms,
    #[serde(default = "zero_p")]
    pub duplicate_probability: Spanned<f64>,
    #[serde(default = "default_true")]
    pub partition_hits_in_flight: bool,
}

impl Default for NetworkSection {
    fn default() -> Self {
        NetworkSection {
            latency_min_ms: default_latency_min_ms(),
            latency_max_ms: default_latency_max_ms(),
            loss_probability: Spanned::new(0..0, 0.0),
            delay_probability: Spanned::new(0..0, 0.0),
            delay_max_ms: Ms::default(),
            duplicate_probability: zero_p(),
            partition_hits_in_flight: true,
        }
    }
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ClockSection {
    #[serde(default)]
    pub offset_ms: SignedMs,
    #[serde(default = "zero_ppm")]
    pub drift_ppm: Spanned<Ppm>,
    #[serde(default)]
    pub jumps: Vec<JumpSection>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct JumpSection {
    pub at_ms: Ms,
    pub by_ms: SignedMs,
}

/// One scripted fault. Flat rather than a tagged enum so that every field
/// keeps its span; which fields a kind takes is checked in `resolve.rs`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct FaultSection {
    pub kind: Spanned<String>,
    pub node: Option<Spanned<String>>,
    pub at_ms: Option<Ms>,
    pub after: Option<Spanned<String>>,
    pub duration_ms: Option<Ms>,
    pub restart_after_ms: Option<Ms>,
    pub groups: Option<Spanned<Vec<Vec<String>>>>,
    pub one_way: Option<bool>,
    pub from: Option<Spanned<String>>,
    pub to: Option<Spanned<String>>,
    pub nth: Option<u32>,
    pub delay_ms: Option<Ms>,
    /// clock_jump: the step, negative = back.
    pub by_ms: Option<SignedMs>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct RandomSection {
    pub window_ms: Ms,
    #[serde(default = "zero_p")]
    pub pause_probability: Spanned<f64>,
    #[serde(default)]
    pub pause_min_ms: Ms,
    #[serde(default)]
    pub pause_max_ms: Ms,
    /// Default: every worker.
    pub pause_nodes: Option<Vec<Spanned<String>>>,
    #[serde(default = "zero_p")]
    pub crash_probability: Spanned<f64>,
    #[serde(default)]
    pub restart_min_ms: Ms,
    #[serde(default)]
    pub restart_max_ms: Ms,
    /// Default: every node.
    pub crash_nodes: Option<Vec<Spanned<String>>>,
    #[serde(default = "zero_p")]
    pub partition_probability: Spanned<f64>,
    #[serde(default)]
    pub partition_min_ms: Ms,
    #[serde(default)]
    pub partition_max_ms: Ms,
    /// One coordinator failover per seed with this probability (replicas >= 2).
    #[serde(default = "zero_p")]
    pub failover_probability: Spanned<f64>,
    /// Anchored faults: each of `anchored_max` slots (default 2) places one
    /// fault of the kinds above right after a protocol event, with this
    /// probability (docs/scenarios.md, "Anchored faults").
    #[serde(default = "zero_p")]
    pub anchored_probability: Spanned<f64>,
    pub anchored_max: Option<u32>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct ExpectSection {
    #[serde(default)]
    pub must_find: Vec<MustFindSection>,
    #[serde(default)]
    pub allow: Vec<Spanned<String>>,
    #[serde(default, rename = "metric")]
    pub metrics: Vec<MetricSection>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct MustFindSection {
    pub kind: Spanned<String>,
    #[serde(default = "default_min_failing_seeds")]
    pub min_failing_seeds: u64,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct MetricSection {
    pub name: Spanned<String>,
    pub op: Spanned<String>,
    pub value: u64,
}
