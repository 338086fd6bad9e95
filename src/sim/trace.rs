//! The trace: one line per simulator event, and the hash that identifies a
//! run.
//!
//! Every event gets the next `seq`; history records share that numbering,
//! so checker evidence (`#412`) points at a trace line. The hash is computed
//! over a word encoding of each event as it happens (see [`super::hash`]
//! for the function; the encoding below), never over the rendered text —
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
//! Encoding per event, as 64-bit words. `seq` is not hashed: events are
//! hashed in `seq` order, so it is their position. Word 1 is `t_ns`; word 2
//! packs `node | tag << 16 | peer << 24 | a << 40 | b << 48` with tag 1
//! record, 2 send, 3 recv, 4 drop, 5 timer, 6 save. Then — record (a = kind
//! index, b = outcome + 1 or 0): a presence bitmask of op_id, grant_id, key,
//! token, value, removed_grant_id, each present field as a word, then the
//! detail bytes; send (peer = to, a = message tag): nth, the message; recv
//! (peer = from, a = message tag): the message; drop (peer = from, a =
//! message tag, b = reason: 0 lost in the network — drawn or scripted alike,
//! 1 partition, 2 receiver down): to, the message; timer (peer = timer id);
//! save (a = durability): length. A message is its five field words
//! (`Msg::words`).

use super::hash::TraceHasher;
use crate::history::{self, Event, History};
use crate::protocol::msg::{Show, Shown};
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
}

impl Trace {
    pub fn new(keep: bool) -> Trace {
        Trace {
            hasher: TraceHasher::new(),
            keep,
            events: Vec::new(),
        }
    }

    pub fn hash(&self) -> u64 {
        self.hasher.finish()
    }

    /// Hashes event `seq` (and keeps it, when asked). Its parts come
    /// separately and `what` by reference: a sweep, which keeps nothing,
    /// never builds a [`TraceEvent`] or copies the message. Inlined into
    /// its callers (`Sim::trace`, itself inlined, and `Sim::record`).
    #[inline(always)]
    pub fn push(
        &mut self,
        seq: u64,
        t_ns: Nanos,
        node: NodeId,
        what: &What,
        record: Option<&Event>,
    ) {
        let h = &mut self.hasher;
        h.word(t_ns);
        // node | tag << 16 | peer << 24 | a << 40 | b << 48 (see the module doc)
        let head = |tag: u64, peer: u16, a: u8, b: u8| {
            node.0 as u64 | tag << 16 | (peer as u64) << 24 | (a as u64) << 40 | (b as u64) << 48
        };
        match *what {
            What::Record(_) => {
                let e = record.expect("record events carry their history event");
                let outcome = e.outcome.map_or(0, |o| o as u8 + 1);
                h.word(head(1, 0, e.kind as u8, outcome));
                let fields = [
                    e.op_id,
                    e.grant_id,
                    e.key.map(u64::from),
                    e.token,
                    e.value,
                    e.removed_grant_id,
                ];
                let present = (fields[0].is_some() as u64)
                    | (fields[1].is_some() as u64) << 1
                    | (fields[2].is_some() as u64) << 2
                    | (fields[3].is_some() as u64) << 3
                    | (fields[4].is_some() as u64) << 4
                    | (fields[5].is_some() as u64) << 5;
                h.word(present);
                // Written out rather than a loop over `flatten()`: the
                // same words in the same order, without the iterator
                // (8 M fewer instructions per 3000 gc-pause seeds).
                if let Some(f) = fields[0] {
                    h.word(f);
                }
                if let Some(f) = fields[1] {
                    h.word(f);
                }
                if let Some(f) = fields[2] {
                    h.word(f);
                }
                if let Some(f) = fields[3] {
                    h.word(f);
                }
                if let Some(f) = fields[4] {
                    h.word(f);
                }
                if let Some(f) = fields[5] {
                    h.word(f);
                }
                if let Some(d) = &e.detail {
                    h.bytes(d.as_bytes());
                }
            }
            What::Send { to, msg, nth } => {
                h.word(head(2, to.0, msg.tag(), 0));
                h.word(nth as u64);
                hash_msg(h, &msg);
            }
            What::Recv { from, msg } => {
                h.word(head(3, from.0, msg.tag(), 0));
                hash_msg(h, &msg);
            }
            What::Drop {
                from,
                to,
                msg,
                reason,
            } => {
                h.word(head(4, from.0, msg.tag(), reason.hash_code()));
                h.word(to.0 as u64);
                hash_msg(h, &msg);
            }
            What::Timer { timer } => {
                h.word(head(5, timer.0, 0, 0));
            }
            What::Save { durability, bytes } => {
                h.word(head(6, 0, durability as u8, 0));
                h.word(bytes as u64);
            }
        }
        if self.keep {
            self.events.push(TraceEvent {
                seq,
                t_ns,
                node,
                what: *what,
            });
        }
    }
}

#[inline]
fn hash_msg(h: &mut TraceHasher, msg: &Msg) {
    let [a, b, c, d, e] = msg.words();
    h.word(a);
    h.word(b);
    h.word(c);
    h.word(d);
    h.word(e);
}

/// `write op=1001 token=2 value=1001` — a message with its fields named,
/// as its declaration (`protocol::msg`) shows them.
pub fn fmt_msg(msg: &Msg) -> String {
    let fields: Vec<String> = msg
        .shown()
        .iter()
        .filter(|f| !f.name.is_empty())
        .map(|f| format!("{}={}", f.name, fmt_value(f)))
        .collect();
    format!("{} {}", msg.name(), fields.join(" "))
}

fn fmt_value(field: &Shown) -> String {
    let Some(v) = field.value else {
        return "-".to_string();
    };
    match field.show {
        Show::Dec => v.to_string(),
        Show::Hex => format!("{v:#x}"),
        Show::Ms => format!("{}ms", v / 1_000_000),
        Show::Flag => (v != 0).to_string(),
    }
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
