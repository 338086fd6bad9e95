//! The history: what the harness observed, one record per observation.
//!
//! This is the contract between everything that *produces* runs (the
//! simulator, later external drivers, madsim, real databases) and the
//! checker. Records are made by the harness from what crosses the network
//! and from node lifecycle events — never self-reported by an
//! implementation — so a buggy implementation cannot hide its own bug.
//!
//! Every record has a `seq` (strictly increasing, shared with the trace so
//! evidence points at trace lines) and the true time `t_true_ns`. The
//! JSON-lines form (schema version 1) is documented in `docs/history.md` and
//! lives in [`jsonl`]; the in-memory types here carry no serde. The rules
//! records must meet together (true-time order, grant identity) are in
//! [`validate`].

pub mod jsonl;
pub mod validate;

use std::fmt;

/// Schema version written in (and required of) every JSON-lines record.
pub const SCHEMA_VERSION: u32 = 1;

macro_rules! kinds {
    ($($variant:ident => $name:literal : $doc:literal,)*) => {
        /// What a record observed.
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
        pub enum Kind { $(#[doc = $doc] $variant,)* }

        impl Kind {
            pub const ALL: &'static [Kind] = &[$(Kind::$variant,)*];

            pub fn name(self) -> &'static str {
                match self { $(Kind::$variant => $name,)* }
            }

            pub fn doc(self) -> &'static str {
                match self { $(Kind::$variant => $doc,)* }
            }

            pub fn from_name(name: &str) -> Option<Kind> {
                match name { $($name => Some(Kind::$variant),)* _ => None }
            }
        }
    };
}

kinds! {
    AcquireSent => "acquire_sent": "a worker asked for a lease (each attempt; acquisition wait starts at an op's first)",
    GrantIssued => "grant_issued": "coordinator sent a grant (grant_id, token); re-sends of the same grant are not recorded again",
    GrantReceived => "grant_received": "a worker received a grant",
    ReadSent => "read_sent": "a worker sent a read (op_id, token if fenced)",
    ReadServed => "read_served": "the resource answered a read (value = op id it returned; outcome ok|rejected)",
    ReadOk => "read_ok": "a worker received a read result (value = the op id it saw)",
    ReadRejected => "read_rejected": "a worker received a fence rejection of its read",
    WriteSent => "write_sent": "a worker sent a write (op_id, token, value); retransmissions too",
    WriteAccepted => "write_accepted": "the resource applied a write",
    WriteRejected => "write_rejected": "the resource refused a write (value = fence at the time)",
    WriteAcked => "write_acked": "a worker received the write's answer (outcome ok|rejected)",
    ReleaseSent => "release_sent": "a worker asked to release the lease of grant_id",
    ReleaseApplied => "release_applied": "coordinator processed a release for grant_id; removed_grant_id = whose lease it deleted; order = the server's order position then",
    RenewOk => "renew_ok": "coordinator extended grant_id's lease (value = slack in ns: time that was left before expiry)",
    RenewFailed => "renew_failed": "coordinator refused a renewal: the lease was gone",
    LeaseLost => "lease_lost": "a worker learned it lost its lease (failed renewal) and stopped its operation",
    Failover => "failover": "the coordinator primary crashed and a backup was promoted (node = the new primary)",
    LeaseExpired => "lease_expired": "coordinator dropped grant_id's lease on its own clock; order = the server's order position then",
    Pause => "pause": "node stops handling inputs (GC pause, SIGSTOP)",
    Resume => "resume": "paused node runs again; queued inputs follow",
    Crash => "crash": "node crashed: volatile state and buffered writes lost",
    Restart => "restart": "node restarted from what it persisted as synced",
    Partition => "partition": "network partition starts (detail names the sides)",
    Heal => "heal": "network partition ends",
    WorkloadDone => "workload_done": "a worker finished all its operations",
    OpAbandoned => "op_abandoned": "a worker gave up an operation (rejected, or retries exhausted)",
    Unfinished => "unfinished": "run ended (max_time_ms) with this worker's workload not done",
    WatchNotified => "watch_notified": "a lock server sent a watch notification (a waiter woken by a ZooKeeper znode change or an etcd key delete)",
    EffectSent => "effect_sent": "a worker or dispatcher asked the effect sink to perform op_id's effect (value = idempotency key, if any); retransmissions too",
    EffectPerformed => "effect_performed": "the effect sink performed op_id's irreversible effect (an email went out, a card was charged)",
    EffectDeduplicated => "effect_deduplicated": "the effect sink recognised the idempotency key (value) and did not perform op_id's effect again",
    BecameActive => "became_active": "a node of an active/passive pair started acting as the owner of key (grant_id numbers promotions in true-time order; token = the epoch it believes it has)",
    SteppedDown => "stepped_down": "a pair node stopped acting as the owner of key (grant_id = its promotion; detail = why)",
    WriteDeduplicated => "write_deduplicated": "the resource answered write_ok for a write it says it did not apply (a recognised duplicate: applied false); not an accepted write",
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Outcome {
    Ok,
    Rejected,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Rejected => "rejected",
        }
    }
}

/// One observation. Fields that do not apply to a kind are `None`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Event {
    pub seq: u64,
    pub t_true_ns: u64,
    /// Index into [`History::nodes`].
    pub node: u16,
    pub kind: Kind,
    pub op_id: Option<u64>,
    pub grant_id: Option<u64>,
    /// Index into [`History::keys`].
    pub key: Option<u16>,
    pub token: Option<u64>,
    pub value: Option<u64>,
    pub outcome: Option<Outcome>,
    pub removed_grant_id: Option<u64>,
    /// On `lease_expired` / `release_applied`: the lock server's own order
    /// (an etcd revision, a ZooKeeper zxid, the token counter's value) at
    /// which the grant's ownership ended; `unissued_token` reads it.
    pub order: Option<u64>,
    /// Free text for display only (partition sides); never read by the checker.
    pub detail: Option<String>,
}

impl Event {
    pub fn new(seq: u64, t_true_ns: u64, node: u16, kind: Kind) -> Event {
        Event {
            seq,
            t_true_ns,
            node,
            kind,
            op_id: None,
            grant_id: None,
            key: None,
            token: None,
            value: None,
            outcome: None,
            removed_grant_id: None,
            order: None,
            detail: None,
        }
    }
}

/// A whole run's observations plus the names its indexes refer to.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct History {
    pub nodes: Vec<String>,
    pub keys: Vec<String>,
    pub events: Vec<Event>,
}

impl History {
    pub fn node_name(&self, node: u16) -> &str {
        self.nodes.get(node as usize).map_or("?", String::as_str)
    }

    pub fn key_name(&self, key: u16) -> &str {
        self.keys.get(key as usize).map_or("?", String::as_str)
    }

    pub fn by_seq(&self, seq: u64) -> Option<&Event> {
        self.events
            .binary_search_by_key(&seq, |e| e.seq)
            .ok()
            .map(|i| &self.events[i])
    }

    /// Human rendering of one record: `#412 12.004s worker/A write_accepted op=1001 token=1`.
    pub fn describe(&self, e: &Event) -> String {
        format!(
            "#{:<6}{} {:<12} {}{}",
            e.seq,
            fmt_time(e.t_true_ns),
            self.node_name(e.node),
            e.kind,
            self.describe_fields(e)
        )
    }

    /// The record's fields, each as ` name=value`.
    pub fn describe_fields(&self, e: &Event) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let mut field = |name: &str, v: Option<u64>| {
            if let Some(v) = v {
                let _ = write!(s, " {name}={v}");
            }
        };
        field("op", e.op_id);
        field("grant", e.grant_id);
        field("token", e.token);
        field("value", e.value);
        field("removed_grant", e.removed_grant_id);
        field("order", e.order);
        if let Some(k) = e.key {
            let _ = write!(s, " key={}", self.key_name(k));
        }
        if let Some(o) = e.outcome {
            let _ = write!(s, " outcome={}", o.name());
        }
        if let Some(d) = &e.detail {
            let _ = write!(s, " ({d})");
        }
        s
    }
}

/// `12.004000s` style: seconds with microsecond precision, fixed width.
pub fn fmt_time(t_ns: u64) -> String {
    format!(
        "{:>4}.{:06}s",
        t_ns / 1_000_000_000,
        (t_ns % 1_000_000_000) / 1_000
    )
}
