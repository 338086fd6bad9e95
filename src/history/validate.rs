//! The input rules a history must meet before its verdicts mean anything.
//!
//! The JSON-lines reader ([`super::jsonl`]) checks each record's form; these
//! rules are about records together, where a history that breaks them would
//! be judged on an order or an identity that is not there. Each refusal
//! names the record (its position: the line of a JSON-lines file with no
//! blank lines) and the rule broken. The rules (docs/history.md, "Inputs
//! that are refused"):
//!
//! - `nonempty`: a history has at least one record (an empty file proves
//!   nothing, so it must not pass clean);
//! - `time-order`: `t_true_ns` never decreases as `seq` grows — seq order
//!   is the order the checker judges in, and it must be true time's;
//! - `grant-identity`: a `grant_id` names one grant: every `grant_issued`
//!   (and `became_active`) of that id comes from the same node, for the
//!   same key, with the same token. An id reused by another issuer (a new
//!   primary numbering from 1 again) is not a re-send, and neither is one
//!   issued again after its issuer's `crash` or `restart`: a coordinator
//!   that lost its state and numbers its grants from 1 again issues a new
//!   grant under an old name, and judging it as the old one would hide
//!   its token regression (a history must give it a fresh id);
//! - `grant-holder`: a grant is received by one node only;
//! - `op-id`: a write's op id is not 0, the value a read of the initial
//!   document returns (a write of op 0 would be read as no write at all).

use std::collections::BTreeMap;
use std::fmt;

use super::{Event, History, Kind};

/// A broken rule: the record (1-based position and seq) and what is wrong.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Refusal {
    /// 1-based position of the record in the history (its line).
    pub record: usize,
    pub seq: u64,
    pub rule: &'static str,
    pub message: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "record {} (seq {}): rule {} broken: {}",
            self.record, self.seq, self.rule, self.message
        )
    }
}

/// Checks every rule; the first record that breaks one is refused.
pub fn validate(h: &History) -> Result<(), Refusal> {
    if h.events.is_empty() {
        return Err(Refusal {
            record: 0,
            seq: 0,
            rule: "nonempty",
            message: "the history has no records; there is nothing to check".into(),
        });
    }
    let mut issued: BTreeMap<u64, (usize, &Event)> = BTreeMap::new();
    let mut holder: BTreeMap<u64, (usize, u16)> = BTreeMap::new();
    // node -> record of its latest crash or restart.
    let mut lives: BTreeMap<u16, (usize, Kind)> = BTreeMap::new();
    let mut prev: Option<&Event> = None;
    for (i, e) in h.events.iter().enumerate() {
        let record = i + 1;
        let refuse = |rule, message| Refusal {
            record,
            seq: e.seq,
            rule,
            message,
        };
        if let Some(p) = prev.filter(|p| e.t_true_ns < p.t_true_ns) {
            return Err(refuse(
                "time-order",
                format!(
                    "t_true_ns {} is earlier than the previous record's {} (seq {}): seq order must be true-time order",
                    e.t_true_ns, p.t_true_ns, p.seq
                ),
            ));
        }
        prev = Some(e);
        if e.op_id == Some(0)
            && matches!(
                e.kind,
                Kind::WriteSent | Kind::WriteAccepted | Kind::WriteRejected
            )
        {
            return Err(refuse(
                "op-id",
                "a write with op id 0: 0 names the initial value (a read of 0 saw no write), so this write's value could not be told from it".into(),
            ));
        }
        if matches!(e.kind, Kind::Crash | Kind::Restart) {
            lives.insert(e.node, (record, e.kind));
        }
        let grant = e.grant_id;
        match (e.kind, grant) {
            (Kind::GrantIssued | Kind::BecameActive, Some(g)) => {
                let Some(&(first_record, first)) = issued.get(&g) else {
                    issued.insert(g, (record, e));
                    if e.kind == Kind::BecameActive {
                        holder.insert(g, (record, e.node));
                    }
                    continue;
                };
                if let Some(what) = reissue_differs(h, e, first, first_record, &lives) {
                    return Err(refuse(
                        "grant-identity",
                        format!("grant {g} is {what}; a grant id names one grant (a re-send repeats it exactly)"),
                    ));
                }
            }
            (Kind::GrantReceived, Some(g)) => match holder.get(&g) {
                Some(&(first_record, node)) if node != e.node => {
                    return Err(refuse(
                        "grant-holder",
                        format!(
                            "grant {g} is received by {} but was received by {} at record {first_record}; a grant has one holder",
                            h.node_name(e.node),
                            h.node_name(node)
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    holder.insert(g, (record, e.node));
                }
            },
            _ => {}
        }
    }
    Ok(())
}

/// How a grant id seen again (`e`) differs from its first issue (`first`,
/// at record `first_record`), if it does: another issuer, key or token, or
/// an issuer that crashed or restarted in between (`lives`: each node's
/// latest crash or restart) and numbers its grants again.
fn reissue_differs(
    h: &History,
    e: &Event,
    first: &Event,
    first_record: usize,
    lives: &BTreeMap<u16, (usize, Kind)>,
) -> Option<String> {
    if first.node != e.node {
        Some(format!(
            "issued by {} here but by {} at record {first_record}",
            h.node_name(e.node),
            h.node_name(first.node)
        ))
    } else if first.key != e.key {
        Some(format!("for another key than at record {first_record}"))
    } else if first.token != e.token {
        Some(format!(
            "with token {:?} here but {:?} at record {first_record}",
            e.token, first.token
        ))
    } else if let Some(&(at, kind)) = lives.get(&e.node).filter(|&&(at, _)| at > first_record) {
        Some(format!(
            "issued again by {} after its {} at record {at} but was first issued at record {first_record}, before it: an issuer that lost its state and numbers grants again gives a new grant an old id",
            h.node_name(e.node),
            kind.name()
        ))
    } else {
        None
    }
}
