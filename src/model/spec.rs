//! Model specs: the data in `models/*.toml` that says which protocol to explore, within which
//! bounds, and what verdict the author expects.
//!
//! A spec is data so that adding a model is a file, not code, and so that the expected verdict
//! sits next to the bounds it was established at. Parsing is two-layered (raw, then resolved)
//! the way ripgrep splits low-level and high-level arguments: the raw layer keeps toml's spans,
//! so every error — a typo, a bound out of range, a knob the protocol does not have — names the
//! file, line and column instead of panicking deep inside the checker.

use super::state::{CLIENTS_CAP, GRANTS_CAP, REPLICAS_CAP};
use crate::protocol::ProtocolKind;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The only schema this code reads; bumped when a field changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// Failovers are explored exhaustively, so each one multiplies the state space.
pub const FAILOVERS_CAP: u8 = 3;

/// The protocol variants that have an atomic-step model (DESIGN.md's catalogue ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// TTL lease, the resource accepts every write.
    NoFence,
    /// Lease plus an `INCR` counter on an asynchronously replicated primary that can fail over.
    IncrBesideLease,
    /// Correct tokens, but the resource compares and writes in two separate steps.
    FencedCheckThenWrite,
    /// Correct tokens, the resource compares and writes in one atomic step.
    FencedCas,
    /// Chubby-style sequencer: the generation is committed on a majority before the grant.
    ConsensusGeneration,
    /// ZooKeeper recipe: sequential nodes, the lowest owns, its sequence number is the token.
    ZkSequential,
    /// TTL lease, no token; each write carries the version its read returned and the store
    /// applies it only if that version is still current (If-Match, `gets`/`cas`).
    ConditionalWrite,
    /// No coordinator: the store owns the lock and the data (a row lock). It applies a write
    /// only if the write's grant still holds the lease, and that commit frees the lock.
    StoreLock,
    /// A durable job queue (SQS): a grant is a claim, a delivery of the head job; a result is
    /// kept iff it is the first for the head job (live claim or not), and the head job is
    /// deleted, the next one handed out, only by a live claim once the job has a result.
    QueueClaim,
    /// `fenced-cas`, then an irreversible effect on a sink that cannot compare tokens: each
    /// accepted write owes its effect, and the effect may be requested again (a retry after a
    /// timeout, a copy); the sink performs every request.
    EffectNaive,
    /// As `effect-naive`, but every request carries the effect's idempotency key and the sink
    /// performs each key at most once.
    EffectIdempotencyKey,
    /// As `effect-idempotency-key` at this abstraction: the effect is owed once the write that
    /// enqueues its outbox entry is accepted, and the dispatcher's deliveries (each retried
    /// until answered) carry the entry id as the key.
    EffectOutbox,
    /// No coordinator: two nodes promote themselves (dead time, STONITH) with no guarantee the
    /// other has stopped, so a promotion may come at any moment; each active writes any number
    /// of times until it steps down, and the storage accepts every write (GitHub's 2012 pair).
    ActivePassive,
    /// etcd's `concurrency.Mutex` with the re-check of etcd PR #11408: each acquisition puts a
    /// key whose create revision is the store's global revision (every put and every deletion
    /// takes the next one), answered "you are first" while its key lives and no key below it
    /// does, and acting on that answer whenever it arrives — after its key was deleted and a
    /// newer key's client decided, too. The create revision is the token.
    EtcdMutex,
    /// As `etcd-mutex`, the etcd 3.4.3 Mutex without the re-check: the answer only says that
    /// no key below its own is left, its own key gone or not (Jepsen's etcd 3.4.3 analysis).
    EtcdMutexNoRecheck,
}

impl Protocol {
    pub fn id(self) -> &'static str {
        match self {
            Protocol::NoFence => "no-fence",
            Protocol::IncrBesideLease => "incr-beside-lease",
            Protocol::FencedCheckThenWrite => "fenced-check-then-write",
            Protocol::FencedCas => "fenced-cas",
            Protocol::ConsensusGeneration => "consensus-generation",
            Protocol::ZkSequential => "zk-sequential",
            Protocol::ConditionalWrite => "conditional-write",
            Protocol::StoreLock => "store-lock",
            Protocol::QueueClaim => "queue-claim",
            Protocol::EffectNaive => "effect-naive",
            Protocol::EffectIdempotencyKey => "effect-idempotency-key",
            Protocol::EffectOutbox => "effect-outbox",
            Protocol::ActivePassive => "active-passive",
            Protocol::EtcdMutex => "etcd-mutex",
            Protocol::EtcdMutexNoRecheck => "etcd-mutex-no-recheck",
        }
    }

    /// Whether grants carry an ordered token at all (a bare lease has only an opaque id): the
    /// catalogue's `fenced` trait of the simulator protocol that implements this model.
    pub fn issues_tokens(self) -> bool {
        self.catalogue_fenced()
    }

    /// Whether the resource compares tokens before accepting a write (the catalogue's `fenced`).
    pub fn resource_fences(self) -> bool {
        self.catalogue_fenced()
    }

    fn catalogue_fenced(self) -> bool {
        simulator_protocol(self).is_some_and(|k| k.is_fenced())
    }

    /// Whether the model has a coordinator failover action.
    pub fn has_failover(self) -> bool {
        matches!(
            self,
            Protocol::IncrBesideLease | Protocol::ConsensusGeneration
        )
    }

    /// Whether each write carries the version its read returned and the store applies it only
    /// if that version is current: the model then needs reads (`reads = true`).
    pub fn writes_are_conditional(self) -> bool {
        self == Protocol::ConditionalWrite
    }

    /// Whether the store is the lock: it sees the live grant, refuses a read or write whose
    /// grant no longer holds the lease, and a write's commit ends the lease.
    pub fn store_is_lock(self) -> bool {
        self == Protocol::StoreLock
    }

    /// Whether grants are clients' decisions on etcd's answers: keys with create revisions
    /// from a global revision counter, decisions on answers that may be stale.
    pub fn has_revisions(self) -> bool {
        matches!(self, Protocol::EtcdMutex | Protocol::EtcdMutexNoRecheck)
    }

    /// Whether grants are deliveries of jobs and the store keeps the first result per job.
    pub fn has_jobs(self) -> bool {
        self == Protocol::QueueClaim
    }

    /// Whether grants are self-promotions of a pair's nodes: a promotion needs no free lease,
    /// an active keeps its promotion after each write, and a write may vanish (`DropWrite`).
    pub fn is_pair(self) -> bool {
        self == Protocol::ActivePassive
    }

    /// Whether an effect sink stands beside the resource: an accepted write owes its effect.
    pub fn has_effect_sink(self) -> bool {
        matches!(
            self,
            Protocol::EffectNaive | Protocol::EffectIdempotencyKey | Protocol::EffectOutbox
        )
    }

    /// Whether the sink's requests carry the effect's idempotency key (it performs each once).
    pub fn effect_keyed(self) -> bool {
        matches!(
            self,
            Protocol::EffectIdempotencyKey | Protocol::EffectOutbox
        )
    }

    /// Whether the token source is designed to be strictly increasing in issue order; the model
    /// asserts it in the coordinator step, so a modelling mistake panics instead of passing.
    pub fn token_source_is_monotonic(self) -> bool {
        matches!(
            self,
            Protocol::FencedCheckThenWrite
                | Protocol::FencedCas
                | Protocol::ConsensusGeneration
                | Protocol::ZkSequential
                | Protocol::EffectNaive
                | Protocol::EffectIdempotencyKey
                | Protocol::EffectOutbox
        )
    }
}

/// The safety properties, named as in the history checker (DESIGN.md, "Checkers").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Violation {
    TokenOrder,
    StaleWrite,
    LostUpdate,
    /// The sink performed one effect twice (`check::effects`' definition).
    DuplicateEffect,
}

impl Violation {
    pub const ALL: [Violation; 4] = [
        Violation::TokenOrder,
        Violation::StaleWrite,
        Violation::LostUpdate,
        Violation::DuplicateEffect,
    ];

    /// The property name used by stateright and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Violation::TokenOrder => "token_order",
            Violation::StaleWrite => "stale_write",
            Violation::LostUpdate => "lost_update",
            Violation::DuplicateEffect => "duplicate_effect",
        }
    }

    /// The bit of this violation in `State::violations`.
    pub fn bit(self) -> u8 {
        match self {
            Violation::TokenOrder => 1 << 0,
            Violation::StaleWrite => 1 << 1,
            Violation::LostUpdate => 1 << 2,
            Violation::DuplicateEffect => 1 << 3,
        }
    }

    pub fn from_name(name: &str) -> Option<Violation> {
        Violation::ALL.into_iter().find(|v| v.name() == name)
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Safe,
    Unsafe,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Safe => "safe",
            Verdict::Unsafe => "unsafe",
        })
    }
}

/// What the spec's author expects: `unsafe` lists exactly the violations that must be found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    pub verdict: Verdict,
    pub violations: Vec<Violation>,
}

/// The bounds and knobs of one model, validated. `Copy` because the model consults it on every
/// transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bounds {
    pub protocol: Protocol,
    pub clients: u8,
    pub grants_max: u8,
    pub failovers_max: u8,
    /// incr-beside-lease: primary + backup (2); consensus-generation: voters; otherwise 1.
    pub replicas: u8,
    /// Whether each grant reads the value before writing (needed for lost_update).
    pub reads: bool,
    /// Whether reads carry the token and raise the resource's fence.
    pub fence_reads: bool,
    /// Whether next_state canonicalises interchangeable client slots.
    pub symmetry: bool,
    /// Whether the resource compares tokens, where the protocol's does (false: the etcd
    /// models' unfenced twin, `fence = false`; true elsewhere).
    pub fence: bool,
}

impl Bounds {
    /// Whether the resource compares tokens before accepting a write.
    pub fn fences(&self) -> bool {
        self.protocol.resource_fences() && self.fence
    }
}

/// A resolved model spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSpec {
    /// The file stem, e.g. `fenced-cas-reads`.
    pub name: String,
    pub description: Option<String>,
    pub bounds: Bounds,
    pub expected: Expected,
}

/// A spec that could not be read: where, and what was expected instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub file: PathBuf,
    /// 1-based; `None` when the error is not about a place in the text (e.g. I/O).
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => {
                write!(
                    f,
                    "{}:{}:{}: {}",
                    self.file.display(),
                    line,
                    column,
                    self.message
                )
            }
            _ => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for SpecError {}

/// `violation = "stale_write"` or `violation = ["token_order", "stale_write"]`.
struct ViolationList(Vec<Violation>);

impl<'de> Deserialize<'de> for ViolationList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = ViolationList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a violation name (token_order, stale_write, lost_update, duplicate_effect) or a list of them",
                )
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<ViolationList, E> {
                parse_violation(name).map(|v| ViolationList(vec![v]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ViolationList, A::Error> {
                let mut list = Vec::new();
                while let Some(name) = seq.next_element::<String>()? {
                    list.push(parse_violation(&name)?);
                }
                Ok(ViolationList(list))
            }
        }
        deserializer.deserialize_any(ListVisitor)
    }
}

fn parse_violation<E: de::Error>(name: &str) -> Result<Violation, E> {
    Violation::from_name(name).ok_or_else(|| {
        E::custom(format!(
            "unknown violation `{name}`, expected one of token_order, stale_write, lost_update, duplicate_effect"
        ))
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    schema_version: Spanned<u32>,
    protocol: Spanned<Protocol>,
    description: Option<String>,
    clients: Spanned<u8>,
    grants_max: Spanned<u8>,
    failovers_max: Option<Spanned<u8>>,
    replicas: Option<Spanned<u8>>,
    reads: Option<Spanned<bool>>,
    fence_reads: Option<Spanned<bool>>,
    symmetry: Option<Spanned<bool>>,
    fence: Option<Spanned<bool>>,
    expect: RawExpect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    verdict: Spanned<Verdict>,
    violation: Option<Spanned<ViolationList>>,
}

/// Above this many estimated unique states, `fencesim check` warns before
/// it starts: the bundled models stay below 200 thousand (under a second);
/// ten times the largest of them means minutes and hundreds of MB.
pub const STATES_WARN: f64 = 2_000_000.0;

impl ModelSpec {
    /// A rough, order-of-magnitude estimate of the unique states a proof
    /// explores, fitted to the bundled models (within about 3x of each):
    /// fenced-cas at 3 clients / 6 grants explores 11 thousand; each grant
    /// multiplies by about 3, each client by 6, each failover by 4, each
    /// replica by 3, reads by 4; symmetry divides by the client orderings.
    pub fn estimated_states(&self) -> f64 {
        let b = &self.bounds;
        let mut states = 11_000.0
            * 3f64.powi(b.grants_max as i32 - 6)
            * 6f64.powi(b.clients as i32 - 3)
            * 4f64.powi(b.failovers_max as i32)
            * 3f64.powi(b.replicas as i32 - 1);
        if b.reads {
            states *= 4.0;
        }
        if b.symmetry {
            states /= (1..=b.clients as u32).product::<u32>() as f64;
        }
        states
    }

    /// A warning to print before checking a spec whose search will be large.
    pub fn size_warning(&self) -> Option<String> {
        let states = self.estimated_states();
        (states > STATES_WARN).then(|| {
            format!(
                "{}: these bounds may explore about {:.0e} states (the bundled models: under 2e5); \
                 expect minutes and hundreds of MB, or lower clients / grants_max",
                self.name, states
            )
        })
    }
}

/// Reads and validates one spec file.
pub fn load(path: &Path) -> Result<ModelSpec, SpecError> {
    use crate::scenario::source::{read_text, SourceError};
    let text = read_text(path, Some(crate::scenario::limits::FILE_MAX_BYTES)).map_err(|err| {
        let (line, column) = match &err {
            SourceError::Utf8 { line, column, .. } => (Some(*line), Some(*column)),
            _ => (None, None),
        };
        let message = match err {
            SourceError::Utf8 { byte, .. } => {
                format!("invalid UTF-8 (byte 0x{byte:02x}); expected UTF-8 text")
            }
            SourceError::Io { source, .. } => format!("cannot read model spec: {source}"),
            other => {
                let text = other.to_string();
                let prefix = format!("{}: ", path.display());
                text.strip_prefix(&prefix).unwrap_or(&text).to_string()
            }
        };
        SpecError {
            file: path.to_path_buf(),
            line,
            column,
            message,
        }
    })?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    parse(path, &name, &text)
}

/// Parses spec text; `file` and `name` are only used in errors and reports.
pub fn parse(file: &Path, name: &str, text: &str) -> Result<ModelSpec, SpecError> {
    let error_at = |span: Option<Range<usize>>, message: String| {
        let (line, column) = match span {
            Some(span) => {
                let (line, column) = crate::scenario::source::line_column(text, span.start);
                (Some(line), Some(column))
            }
            None => (None, None),
        };
        SpecError {
            file: file.to_path_buf(),
            line,
            column,
            message,
        }
    };
    let raw: RawSpec = toml::from_str(text).map_err(|err| {
        let message = crate::scenario::source::plain_words(
            err.message(),
            &[
                ("RawSpec", "a model spec"),
                ("RawExpect", "an [expect] table"),
            ],
        );
        error_at(err.span(), message)
    })?;
    resolve(raw, name).map_err(|(span, message)| error_at(Some(span), message))
}

type Invalid = (Range<usize>, String);

fn resolve(raw: RawSpec, name: &str) -> Result<ModelSpec, Invalid> {
    let invalid = |span: Range<usize>, message: String| Err((span, message));
    if *raw.schema_version.get_ref() != SCHEMA_VERSION {
        return invalid(
            raw.schema_version.span(),
            format!(
                "schema_version {} is not supported, expected {SCHEMA_VERSION}",
                raw.schema_version.get_ref()
            ),
        );
    }
    let protocol = *raw.protocol.get_ref();
    let clients = in_range(&raw.clients, "clients", 1, CLIENTS_CAP as u8)?;
    let grants_max = in_range(&raw.grants_max, "grants_max", 1, GRANTS_CAP as u8)?;

    let failovers_max = match &raw.failovers_max {
        None => 0,
        Some(value) if !protocol.has_failover() && *value.get_ref() != 0 => {
            return invalid(
                value.span(),
                format!("protocol {} has no coordinator failover in its model; set failovers_max = 0 or remove it", protocol.id()),
            );
        }
        Some(value) => in_range(value, "failovers_max", 0, FAILOVERS_CAP)?,
    };

    let replicas = resolve_replicas(&raw)?;

    let reads = raw.reads.as_ref().map(|r| *r.get_ref()).unwrap_or(false);
    if protocol.writes_are_conditional() && !reads {
        let span = raw.reads.as_ref().map_or(raw.protocol.span(), |r| r.span());
        return invalid(
            span,
            format!(
                "{}: a conditional write names the version its read returned; set reads = true",
                protocol.id()
            ),
        );
    }
    let fence_reads = match &raw.fence_reads {
        None => false,
        Some(value) if *value.get_ref() && !reads => {
            return invalid(value.span(), "fence_reads = true needs reads = true".into());
        }
        Some(value) if *value.get_ref() && !protocol.resource_fences() => {
            return invalid(
                value.span(),
                format!(
                    "fence_reads needs a resource that checks tokens; {} does not",
                    protocol.id()
                ),
            );
        }
        Some(value) => *value.get_ref(),
    };
    let symmetry = raw.symmetry.as_ref().map(|s| *s.get_ref()).unwrap_or(false);
    let fence = resolve_fence(&raw)?;
    let verdict = *raw.expect.verdict.get_ref();
    let violations = expected_violations(&raw, reads)?;

    Ok(ModelSpec {
        name: name.to_string(),
        description: raw.description,
        bounds: Bounds {
            protocol,
            clients,
            grants_max,
            failovers_max,
            replicas,
            reads,
            fence_reads,
            symmetry,
            fence,
        },
        expected: Expected {
            verdict,
            violations,
        },
    })
}

/// The etcd models' `fence` knob (default true), and their refusal of reads (a client slot's
/// `read` byte holds an etcd acquisition's answer).
fn resolve_fence(raw: &RawSpec) -> Result<bool, Invalid> {
    let invalid = |span: Range<usize>, message: String| Err((span, message));
    let protocol = *raw.protocol.get_ref();
    if let Some(value) = raw.reads.as_ref().filter(|r| *r.get_ref()) {
        if protocol.has_revisions() {
            return invalid(
                value.span(),
                format!("{}: reads are not modelled for etcd's Mutex", protocol.id()),
            );
        }
    }
    let fence = match &raw.fence {
        None => true,
        Some(value) if !protocol.has_revisions() => {
            return invalid(
                value.span(),
                format!(
                    "fence is a knob of the etcd models only; {} is fenced or not by its protocol",
                    protocol.id()
                ),
            );
        }
        Some(value) => *value.get_ref(),
    };
    Ok(fence)
}

/// The model's replicas: the voters of consensus-generation (required),
/// primary and backup of incr-beside-lease, else the one coordinator.
fn resolve_replicas(raw: &RawSpec) -> Result<u8, Invalid> {
    let invalid = |span: Range<usize>, message: String| Err((span, message));
    Ok(match (*raw.protocol.get_ref(), &raw.replicas) {
        (Protocol::ConsensusGeneration, None) => {
            return invalid(
                raw.protocol.span(),
                "consensus-generation needs `replicas` (the number of voters, 1 to 5)".into(),
            );
        }
        (Protocol::ConsensusGeneration, Some(value)) => {
            in_range(value, "replicas", 1, REPLICAS_CAP as u8)?
        }
        (Protocol::IncrBesideLease, None) => 2,
        (Protocol::IncrBesideLease, Some(value)) => {
            in_range(value, "replicas (primary + backup)", 2, 2)?
        }
        (_, None) => 1,
        (_, Some(value)) => in_range(
            value,
            "replicas (this protocol has a single coordinator)",
            1,
            1,
        )?,
    })
}

/// The violations an unsafe model expects (none for a safe one), each one
/// the model can show.
fn expected_violations(raw: &RawSpec, reads: bool) -> Result<Vec<Violation>, Invalid> {
    let invalid = |span: Range<usize>, message: String| Err((span, message));
    let protocol = *raw.protocol.get_ref();
    let verdict = *raw.expect.verdict.get_ref();
    Ok(match (&raw.expect.violation, verdict) {
        (None, Verdict::Safe) => Vec::new(),
        (None, Verdict::Unsafe) => {
            return invalid(
                raw.expect.verdict.span(),
                "verdict = \"unsafe\" needs `violation` (a name or a list of names)".into(),
            );
        }
        (Some(list), Verdict::Safe) => {
            return invalid(
                list.span(),
                "a safe model lists no violation; remove `violation` or expect \"unsafe\"".into(),
            );
        }
        (Some(list), Verdict::Unsafe) => {
            let mut violations = list.get_ref().0.clone();
            violations.sort();
            violations.dedup();
            if violations.is_empty() {
                return invalid(
                    list.span(),
                    "verdict = \"unsafe\" needs at least one violation".into(),
                );
            }
            if violations.contains(&Violation::LostUpdate) && !reads {
                return invalid(
                    list.span(),
                    "lost_update can only be found in a model with reads = true".into(),
                );
            }
            if violations.contains(&Violation::DuplicateEffect) && !protocol.has_effect_sink() {
                return invalid(
                    list.span(),
                    format!(
                        "{} has no effect sink, so duplicate_effect cannot be violated",
                        protocol.id()
                    ),
                );
            }
            if violations.contains(&Violation::TokenOrder) && !protocol.issues_tokens() {
                return invalid(
                    list.span(),
                    format!(
                        "{} issues no tokens, so token_order cannot be violated",
                        protocol.id()
                    ),
                );
            }
            violations
        }
    })
}

fn in_range(value: &Spanned<u8>, what: &str, min: u8, max: u8) -> Result<u8, Invalid> {
    let v = *value.get_ref();
    if v < min || v > max {
        let allowed = if min == max {
            format!("{min}")
        } else {
            format!("{min} to {max}")
        };
        return Err((
            value.span(),
            format!("{what} = {v} is out of range, expected {allowed}"),
        ));
    }
    Ok(v)
}

/// The simulator protocol that implements a model's protocol, if there is one. `no-fence` is
/// the TTL-lease family; `redis-set-nx` is used because its compare-and-delete release cannot
/// add an `unsafe_release` the model does not have.
pub fn simulator_protocol(protocol: Protocol) -> Option<ProtocolKind> {
    match protocol {
        Protocol::NoFence => Some(ProtocolKind::RedisSetNx),
        Protocol::IncrBesideLease => Some(ProtocolKind::IncrBesideLease),
        Protocol::FencedCheckThenWrite => Some(ProtocolKind::FencedCheckThenWrite),
        Protocol::FencedCas => Some(ProtocolKind::FencedCas),
        Protocol::ConsensusGeneration => Some(ProtocolKind::ConsensusGeneration),
        Protocol::ZkSequential => Some(ProtocolKind::ZkSequential),
        Protocol::ConditionalWrite => Some(ProtocolKind::ObjectStoreCas),
        Protocol::StoreLock => Some(ProtocolKind::SingleDb),
        Protocol::QueueClaim => Some(ProtocolKind::QueueClaim),
        Protocol::EffectNaive => Some(ProtocolKind::EffectNaive),
        Protocol::EffectIdempotencyKey => Some(ProtocolKind::EffectIdempotencyKey),
        Protocol::EffectOutbox => Some(ProtocolKind::EffectOutbox),
        Protocol::ActivePassive => Some(ProtocolKind::Github2012Pair),
        Protocol::EtcdMutex => Some(ProtocolKind::EtcdMutex),
        Protocol::EtcdMutexNoRecheck => Some(ProtocolKind::EtcdMutexNoRecheck),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
schema_version = 1
protocol = "incr-beside-lease"
clients = 2
grants_max = 3
failovers_max = 1

[expect]
verdict = "unsafe"
violation = ["token_order", "stale_write"]
"#;

    #[test]
    fn large_bounds_are_warned_about_and_the_bundled_models_are_not() {
        let spec = parse(Path::new("m.toml"), "m", GOOD).expect("valid");
        assert_eq!(spec.size_warning(), None);
        let big = GOOD
            .replace("clients = 2", "clients = 5")
            .replace("grants_max = 3", "grants_max = 12");
        let spec = parse(Path::new("m.toml"), "big", &big).expect("valid: within the caps");
        let warning = spec.size_warning().expect("warned");
        assert!(
            warning.starts_with("big: these bounds may explore about"),
            "{warning}"
        );
        for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/models")).unwrap() {
            let spec = load(&entry.unwrap().path()).expect("bundled model");
            assert_eq!(spec.size_warning(), None, "{}", spec.name);
        }
    }

    #[test]
    fn a_valid_spec_resolves_with_defaults() {
        let spec = parse(Path::new("m.toml"), "m", GOOD).expect("valid");
        assert_eq!(spec.bounds.replicas, 2);
        assert!(!spec.bounds.reads);
        assert_eq!(
            spec.expected.violations,
            vec![Violation::TokenOrder, Violation::StaleWrite]
        );
    }

    #[test]
    fn a_bound_out_of_range_names_its_line_and_column() {
        let text = GOOD.replace("clients = 2", "clients = 9");
        let err = parse(Path::new("m.toml"), "m", &text).unwrap_err();
        assert_eq!((err.line, err.column), (Some(4), Some(11)));
        assert!(
            err.to_string()
                .starts_with("m.toml:4:11: clients = 9 is out of range"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_protocol_is_a_parse_error_with_a_position() {
        let text = GOOD.replace("incr-beside-lease", "incr-besides-lease");
        let err = parse(Path::new("m.toml"), "m", &text).unwrap_err();
        assert_eq!(err.line, Some(3));
        assert!(err.message.contains("unknown variant"), "{err}");
    }

    #[test]
    fn failovers_on_a_protocol_without_failover_are_rejected() {
        let text = GOOD.replace("incr-beside-lease", "fenced-cas");
        let err = parse(Path::new("m.toml"), "m", &text).unwrap_err();
        assert_eq!(err.line, Some(6));
        assert!(err.message.contains("no coordinator failover"), "{err}");
    }

    #[test]
    fn an_unknown_violation_name_is_rejected() {
        let text = GOOD.replace("\"token_order\"", "\"token_ordr\"");
        let err = parse(Path::new("m.toml"), "m", &text).unwrap_err();
        assert_eq!(err.line, Some(10));
        assert!(
            err.message.contains("unknown violation `token_ordr`"),
            "{err}"
        );
    }

    #[test]
    fn a_conditional_write_model_without_reads_is_rejected() {
        let text = "schema_version = 1\nprotocol = \"conditional-write\"\nclients = 2\ngrants_max = 2\nreads = false\n\n[expect]\nverdict = \"safe\"\n";
        let err = parse(Path::new("m.toml"), "m", text).unwrap_err();
        assert_eq!(err.line, Some(5));
        assert!(err.message.contains("set reads = true"), "{err}");
        let ok = text.replace("reads = false", "reads = true");
        let spec = parse(Path::new("m.toml"), "m", &ok).expect("valid");
        assert!(!spec.bounds.protocol.issues_tokens());
    }

    #[test]
    fn an_unknown_field_is_rejected() {
        let text = format!("{GOOD}\n");
        let text = text.replace("clients = 2", "clients = 2\nclient_count = 2");
        let err = parse(Path::new("m.toml"), "m", &text).unwrap_err();
        assert!(
            err.message.contains("unknown field `client_count`"),
            "{err}"
        );
    }
}
