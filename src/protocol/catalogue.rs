//! The named protocols a scenario can pick, as compositions of orthogonal
//! parts: lease release style × token source × resource check.
//!
//! | id             | real system                                   | release | tokens | resource check |
//! |----------------|-----------------------------------------------|---------|--------|----------------|
//! | ttl-lease-del  | a TTL lock released with plain `DEL`          | DEL     | none   | none           |
//! | redis-set-nx   | `SET key rand NX PX ttl` + compare-and-delete | CAD     | none   | none           |
//! | fenced-cas     | coordinator counter + the article's `UPDATE … WHERE fencing_token < $2` | CAD | counter | atomic CAS |
//!
//! The Redis pattern is documented at redis.io ("Distributed Locks with
//! Redis"); the fenced update is the article's PostgreSQL statement.

use super::coordinator::{CoordinatorConfig, ReleaseStyle};
use super::resource::FenceCheck;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum ProtocolKind {
    TtlLeaseDel,
    RedisSetNx,
    FencedCas,
}

impl ProtocolKind {
    pub const ALL: [ProtocolKind; 3] = [
        ProtocolKind::TtlLeaseDel,
        ProtocolKind::RedisSetNx,
        ProtocolKind::FencedCas,
    ];

    pub fn id(self) -> &'static str {
        match self {
            ProtocolKind::TtlLeaseDel => "ttl-lease-del",
            ProtocolKind::RedisSetNx => "redis-set-nx",
            ProtocolKind::FencedCas => "fenced-cas",
        }
    }

    pub fn from_id(id: &str) -> Option<ProtocolKind> {
        ProtocolKind::ALL.into_iter().find(|k| k.id() == id)
    }

    pub fn summary(self) -> &'static str {
        match self {
            ProtocolKind::TtlLeaseDel => {
                "TTL lease, released with plain DEL; resource trusts the lease"
            }
            ProtocolKind::RedisSetNx => {
                "Redis SET NX PX with a random value, compare-and-delete release; no fence"
            }
            ProtocolKind::FencedCas => {
                "coordinator issues increasing tokens; resource accepts token >= fence atomically"
            }
        }
    }

    pub fn is_fenced(self) -> bool {
        matches!(self, ProtocolKind::FencedCas)
    }
}

/// A protocol with its options resolved.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ProtocolConfig {
    pub kind: ProtocolKind,
    pub lease_ttl_ns: u64,
    /// fenced-cas: one write per token (`fence < $token`).
    pub strict: bool,
    /// fenced-cas: reads carry the token and raise the fence.
    pub fence_reads: bool,
}

impl ProtocolConfig {
    pub fn coordinator(&self) -> CoordinatorConfig {
        let release = match self.kind {
            ProtocolKind::TtlLeaseDel => ReleaseStyle::Del,
            ProtocolKind::RedisSetNx | ProtocolKind::FencedCas => ReleaseStyle::CompareAndDelete,
        };
        CoordinatorConfig {
            lease_ttl_ns: self.lease_ttl_ns,
            release,
            tokens: self.kind.is_fenced(),
        }
    }

    pub fn fence_check(&self) -> FenceCheck {
        if self.kind.is_fenced() {
            FenceCheck::Cas {
                strict: self.strict,
                fence_reads: self.fence_reads,
            }
        } else {
            FenceCheck::None
        }
    }

    pub fn worker_sends_token(&self) -> bool {
        self.kind.is_fenced()
    }

    pub fn worker_token_on_reads(&self) -> bool {
        self.kind.is_fenced() && self.fence_reads
    }
}
