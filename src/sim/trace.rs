//! The trace: one line per simulator event, and the hash that identifies a
//! run.
//!
//! Every event gets the next `seq`; history records share that numbering,
//! so checker evidence (`#412`) points at a trace line. The hash is computed
//! over a binary encoding of each event as it happens (see [`super::hash`]
//! for the function; field order below), never over the rendered text —
//! text is for people and may change.
//!
//! Legend (as printed by `fencesim replay`):
//!
//! | column 4 | meaning |
//! |----------|---------|
//! | `SEND`   | `a -> b msg …`: a node handed a message to the network (`#n` = nth on that link) |
//! | `RECV`   | `b <- a msg …`: the message was delivered and handled |
//! | `DROP`   | `a -x b msg … (why)`: lost — `loss`, `partition`, `down` (receiver crashed), `scripted` |
//! | `TIMER`  | a timer the node set fired (`t0` = worker step / key expiry, `t1` = request timeout) |
//! | `SAVE`   | the node persisted a record, `synced` (survives a crash) or `buffered` |
//! | `OBS`    | a history record: what the checker reads (kind and fields) |
//!
//! Binary encoding per event: seq u64, t_ns u64, node u16, tag u8 (1 record,
//! 2 send, 3 recv, 4 drop, 5 timer, 6 save), then — record: kind index u8,
//! each of op_id, grant_id, key, token, value, removed_grant_id as a presence
//! byte plus u64, outcome u8, detail bytes; send: to u16, nth u64, message;
//! recv: from u16, message; drop: from u16, to u16, reason u8 (0 lost in
//! the network — drawn or scripted alike, 1 partition, 2 receiver down), message;
//! timer: id u16; save: durability u8, length u64. A message is its tag u8
//! followed by its five field words (`Msg::words`), all little-endian.

use super::hash::TraceHasher;
use crate::history::{self, Event, History};
use crate::protocol::{Durability, Msg, Nanos, NodeId, TimerId};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DropReason {
    Loss,
    Partition,
    Down,
    Scripted,
}

impl DropReason {
    /// In the hash, a message lost to a drawn loss and one lost to a
    /// scripted drop are the same event: a random run and its scripted
    /// rewrite (`--emit-scenario`) must hash alike.
    fn hash_code(self) -> u8 {
        match self {
            DropReason::Loss | DropReason::Scripted => 0,
            DropReason::Partition => 1,
            DropReason::Down => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DropReason::Loss => "loss",
            DropReason::Partition => "partition",
            DropReason::Down => "down",
            DropReason::Scripted => "scripted",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum What {
    /// Index into the run's history events.
    Record(usize),
    Send {
        to: NodeId,
        msg: Msg,
        nth: u32,
    },
    Recv {
        from: NodeId,
        msg: Msg,
    },
    Drop {
        from: NodeId,
        to: NodeId,
        msg: Msg,
        reason: DropReason,
    },
    Timer {
        timer: TimerId,
    },
    Save {
        durability: Durability,
        bytes: u32,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TraceEvent {
    pub seq: u64,
    pub t_ns: Nanos,
    pub node: NodeId,
    pub what: What,
}

/// Hashes every event; keeps them only when asked (replay), so sweeps pay
/// for the hash but not for storing traces.
pub struct Trace {
    hasher: TraceHasher,
    keep: bool,
    pub events: Vec<TraceEvent>,
    pub count: u64,
}

impl Trace {
    pub fn new(keep: bool) -> Trace {
        Trace {
            hasher: TraceHasher::new(),
            keep,
            events: Vec::new(),
            count: 0,
        }
    }

    pub fn hash(&self) -> u64 {
        self.hasher.finish()
    }

    pub fn push(&mut self, ev: TraceEvent, record: Option<&Event>) {
        self.count += 1;
        let h = &mut self.hasher;
        h.u64(ev.seq);
        h.u64(ev.t_ns);
        h.u16(ev.node.0);
        match ev.what {
            What::Record(_) => {
                h.u8(1);
                let e = record.expect("record events carry their history event");
                h.u8(e.kind as u8);
                for field in [
                    e.op_id,
                    e.grant_id,
                    e.key.map(u64::from),
                    e.token,
                    e.value,
                    e.removed_grant_id,
                ] {
                    h.u8(field.is_some() as u8);
                    h.u64(field.unwrap_or(0));
                }
                h.u8(e.outcome.map_or(0, |o| o as u8 + 1));
                if let Some(d) = &e.detail {
                    h.bytes(d.as_bytes());
                }
            }
            What::Send { to, msg, nth } => {
                h.u8(2);
                h.u16(to.0);
                h.u64(nth as u64);
                hash_msg(h, &msg);
            }
            What::Recv { from, msg } => {
                h.u8(3);
                h.u16(from.0);
                hash_msg(h, &msg);
            }
            What::Drop {
                from,
                to,
                msg,
                reason,
            } => {
                h.u8(4);
                h.u16(from.0);
                h.u16(to.0);
                h.u8(reason.hash_code());
                hash_msg(h, &msg);
            }
            What::Timer { timer } => {
                h.u8(5);
                h.u16(timer.0);
            }
            What::Save { durability, bytes } => {
                h.u8(6);
                h.u8(durability as u8);
                h.u64(bytes as u64);
            }
        }
        if self.keep {
            self.events.push(ev);
        }
    }
}

fn hash_msg(h: &mut TraceHasher, msg: &Msg) {
    h.u8(msg.tag());
    for w in msg.words() {
        h.u64(w);
    }
}

/// `write op=1001 token=2 value=1001` — a message with its fields named.
pub fn fmt_msg(msg: &Msg) -> String {
    let tok = |t: Option<crate::protocol::Token>| t.map_or("-".to_string(), |t| t.0.to_string());
    let body = match *msg {
        Msg::Acquire { req, owner, .. } | Msg::Release { req, owner, .. } => {
            format!("req={req} owner={owner:#x}")
        }
        Msg::Granted {
            req,
            owner,
            token,
            ttl_ns,
            ..
        } => {
            format!(
                "req={req} owner={owner:#x} token={} ttl={}ms",
                tok(token),
                ttl_ns / 1_000_000
            )
        }
        Msg::Busy { req, .. } => format!("req={req}"),
        Msg::Released { req, removed, .. } => {
            format!(
                "req={req} removed={}",
                removed.map_or("-".to_string(), |o| format!("{o:#x}"))
            )
        }
        Msg::Read { req, op, token, .. } => format!("req={req} op={} token={}", op.0, tok(token)),
        Msg::Write {
            req,
            op,
            token,
            value,
            ..
        } => {
            format!(
                "req={req} op={} token={} value={}",
                op.0,
                tok(token),
                value.0
            )
        }
        Msg::ReadOk { req, op, value, .. } => format!("req={req} op={} value={}", op.0, value.0),
        Msg::ReadRejected { req, op, fence, .. } | Msg::WriteRejected { req, op, fence, .. } => {
            format!("req={req} op={} fence={}", op.0, fence.0)
        }
        Msg::WriteOk { req, op, .. } => format!("req={req} op={}", op.0),
        Msg::Renew { req, owner, .. } | Msg::RenewFailed { req, owner, .. } => {
            format!("req={req} owner={owner:#x}")
        }
        Msg::Renewed {
            req, owner, ttl_ns, ..
        } => format!("req={req} owner={owner:#x} ttl={}ms", ttl_ns / 1_000_000),
        Msg::Replicate {
            counter,
            owner,
            token,
            ..
        } => {
            format!(
                "counter={counter} lease_owner={owner:#x} token={}",
                tok(token)
            )
        }
        Msg::Propose { gen } | Msg::MaxIs { gen } => format!("gen={gen}"),
        Msg::Accepted { gen, ok } => format!("gen={gen} ok={ok}"),
        Msg::QueryMax | Msg::Promote => String::new(),
        Msg::ZkCreate { .. }
        | Msg::ZkCreated { .. }
        | Msg::ZkGetChildren { .. }
        | Msg::ZkChildren { .. }
        | Msg::ZkExists { .. }
        | Msg::ZkStat { .. }
        | Msg::ZkWatch { .. }
        | Msg::ZkPing { .. }
        | Msg::ZkDelete { .. }
        | Msg::ZkDeleted { .. }
        | Msg::ZkSessionExpired { .. }
        | Msg::DdbGet { .. }
        | Msg::DdbItem { .. }
        | Msg::DdbPut { .. }
        | Msg::DdbPutResult { .. }
        | Msg::DdbDelete { .. }
        | Msg::DdbDeleted { .. } => fmt_words(msg),
        Msg::Effect {
            req, op, idem_key, ..
        } => format!(
            "req={req} op={} idempotency_key={}",
            op.0,
            idem_key.map_or("-".to_string(), |k| k.to_string())
        ),
        Msg::EffectOk {
            req, op, performed, ..
        } => format!("req={req} op={} performed={performed}", op.0),
        Msg::OutboxPoll { req, delivered } => format!("req={req} delivered={}", delivered.0),
        Msg::OutboxEntry { req, op, .. } => format!("req={req} op={}", op.0),
        Msg::PairHeartbeat { .. }
        | Msg::Stonith { .. }
        | Msg::Reserve { .. }
        | Msg::Reserved { .. } => fmt_words(msg),
    };
    format!("{} {body}", msg.name())
}

/// `req=3 session=0x100000001 seq=2`: a message rendered from its word names.
fn fmt_words(msg: &Msg) -> String {
    let fields: Vec<String> = msg
        .field_names()
        .iter()
        .zip(msg.words())
        .filter(|(name, _)| !name.is_empty())
        .map(|(name, w)| match *name {
            "session" => format!("{name}={w:#x}"),
            _ => format!("{name}={w}"),
        })
        .collect();
    fields.join(" ")
}

/// One trace line. `names` maps node ids to names.
pub fn render(ev: &TraceEvent, history: &History, name: &dyn Fn(NodeId) -> String) -> String {
    let head = format!(
        "{:>6} {} {:<12}",
        ev.seq,
        history::fmt_time(ev.t_ns),
        name(ev.node)
    );
    match ev.what {
        What::Record(i) => {
            let e = &history.events[i];
            format!("{head} OBS   {}{}", e.kind, history.describe_fields(e))
        }
        What::Send { to, msg, nth } => {
            format!("{head} SEND  -> {:<12} {} #{nth}", name(to), fmt_msg(&msg))
        }
        What::Recv { from, msg } => format!("{head} RECV  <- {:<12} {}", name(from), fmt_msg(&msg)),
        What::Drop {
            from,
            to,
            msg,
            reason,
        } => {
            format!(
                "{head} DROP  {} -x {} {} ({})",
                name(from),
                name(to),
                fmt_msg(&msg),
                reason.name()
            )
        }
        What::Timer { timer } => format!("{head} TIMER t{}", timer.0),
        What::Save { durability, bytes } => {
            let d = match durability {
                Durability::Synced => "synced",
                Durability::Buffered => "buffered",
            };
            format!("{head} SAVE  {d} {bytes} bytes")
        }
    }
}

pub const LEGEND: &str = "\
legend: seq  true-time  node  what
  SEND  a -> b msg #n   message handed to the network (#n: nth message on that link)
  RECV  b <- a msg      message delivered to b and handled
  DROP  a -x b msg (r)  message lost: loss | partition | down | scripted
  TIMER tN              a timer fired (t0: worker step / lease-expiry check, t1: request timeout)
  SAVE  synced|buffered the node persisted its record (synced survives a crash)
  OBS   kind fields     a history record: exactly what the checker reads";
