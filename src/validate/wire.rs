//! The JSON-lines wire format between the harness and an implementation
//! under test: pure translation between [`Msg`]/[`Effect`] values and
//! Maelstrom-style envelopes `{"src","dest","body":{"type",…}}`. No I/O here,
//! so every rule of the protocol (docs/validate.md) is testable on its own.
//!
//! The harness numbers every line it writes to a node (`body.msg_id`, from
//! 1, per process). Replies that a node sends quote the `msg_id` of the
//! request they answer in `in_reply_to`; the driver maps that back to the
//! request as delivered, so a reply only has to carry its result fields.
//!
//! Protocol version 2 ([`PROTOCOL_VERSION`], sent in `init`): every line a
//! node writes carries `step`, the `msg_id` of the input it belongs to. That
//! makes attribution a matter of the protocol, not of timing: a line whose
//! `step` is not the input being answered is refused whenever it is read,
//! so a line written after `step_done` can never be taken for part of the
//! next step, however late it arrives.

use serde_json::{json, Map, Value};

use crate::protocol::{Clocks, Durability, Key, Msg, NodeId, Observation, OpId, Token};

/// Maelstrom's error codes that the lock domain uses.
pub mod code {
    /// "temporarily-unavailable": the lock is held by another owner; retry later.
    pub const TEMPORARILY_UNAVAILABLE: u64 = 11;
    /// "precondition-failed": a fenced read or write was refused (`fence` says why).
    pub const PRECONDITION_FAILED: u64 = 22;
}

/// The wire protocol's version, in every `init` (`"protocol": 2`). Version 2
/// added `step` to every output line.
pub const PROTOCOL_VERSION: u64 = 2;

/// The name the harness uses as `src` of its own lines and that nodes use as
/// `dest` of directives (timers, persistence, step markers).
pub const HARNESS: &str = "harness";

/// The coordinator group address: the network routes it to the primary.
pub const COORD_GROUP: &str = "coord";

/// Node and key names, so the wire speaks names and the simulator ids.
#[derive(Clone, Debug)]
pub struct Directory {
    pub nodes: Vec<String>,
    pub keys: Vec<String>,
}

impl Directory {
    pub fn node_name(&self, id: NodeId) -> &str {
        if id == NodeId::COORD_GROUP {
            return COORD_GROUP;
        }
        self.nodes.get(id.0 as usize).map_or("?", String::as_str)
    }

    fn node_id(&self, name: &str) -> Option<NodeId> {
        if name == COORD_GROUP {
            return Some(NodeId::COORD_GROUP);
        }
        let i = self.nodes.iter().position(|n| n == name)?;
        Some(NodeId(i as u16))
    }

    fn key_name(&self, key: Key) -> &str {
        self.keys.get(key.0 as usize).map_or("?", String::as_str)
    }

    fn key_id(&self, name: &str) -> Option<Key> {
        let i = self.keys.iter().position(|k| k == name)?;
        Some(Key(i as u16))
    }
}

fn envelope(src: &str, dest: &str, body: Value) -> Value {
    json!({ "src": src, "dest": dest, "body": body })
}

fn clock_json(clocks: Clocks) -> Value {
    json!({ "wall_ns": clocks.wall_ns, "mono_ns": clocks.mono_ns })
}

fn token_json(token: Option<Token>) -> Value {
    token.map_or(Value::Null, |t| json!(t.0))
}

/// The `init` line: who the node is, everyone's names, its scenario
/// configuration, and (after a restart) the state it last persisted as synced.
pub fn init(
    dir: &Directory,
    me: NodeId,
    msg_id: u64,
    role: &Value,
    recovered: Option<Value>,
    clocks: Clocks,
) -> Value {
    let me = dir.node_name(me);
    envelope(
        HARNESS,
        me,
        json!({
            "type": "init",
            "protocol": PROTOCOL_VERSION,
            "msg_id": msg_id,
            "node_id": me,
            "node_ids": dir.nodes,
            "keys": dir.keys,
            "role": role,
            "recovered": recovered.unwrap_or(Value::Null),
            "clock": clock_json(clocks),
        }),
    )
}

pub fn timer(dir: &Directory, me: NodeId, msg_id: u64, timer: u16, clocks: Clocks) -> Value {
    envelope(
        HARNESS,
        dir.node_name(me),
        json!({ "type": "timer", "msg_id": msg_id, "timer": timer, "clock": clock_json(clocks) }),
    )
}

/// A lock-domain message delivered to an external node. Requests keep the
/// harness's `msg_id`; replies quote the node's own request id in `in_reply_to`.
pub fn delivery(
    dir: &Directory,
    from: NodeId,
    to: NodeId,
    msg: &Msg,
    msg_id: u64,
    clocks: Clocks,
) -> Value {
    let key = dir.key_name(msg.key());
    let mut body = match *msg {
        Msg::Acquire { owner, .. } => json!({ "type": "acquire", "key": key, "owner": owner }),
        Msg::Release { owner, .. } => json!({ "type": "release", "key": key, "owner": owner }),
        Msg::Renew { owner, .. } => json!({ "type": "renew", "key": key, "owner": owner }),
        Msg::Renewed { req, ttl_ns, .. } => {
            json!({ "type": "renew_ok", "in_reply_to": req, "key": key, "ttl_ns": ttl_ns })
        }
        Msg::RenewFailed { req, .. } => json!({
            "type": "error", "in_reply_to": req, "code": code::PRECONDITION_FAILED,
            "text": "lease lost", "key": key
        }),
        Msg::Read { op, token, .. } => {
            json!({ "type": "read", "key": key, "op": op.0, "token": token_json(token) })
        }
        Msg::Write {
            op, token, value, ..
        } => json!({
            "type": "write", "key": key, "op": op.0, "token": token_json(token), "value": value.0
        }),
        Msg::Granted {
            req,
            owner,
            token,
            ttl_ns,
            ..
        } => json!({
            "type": "acquire_ok", "in_reply_to": req, "key": key, "owner": owner,
            "token": token_json(token), "ttl_ns": ttl_ns
        }),
        Msg::Busy { req, .. } => json!({
            "type": "error", "in_reply_to": req, "code": code::TEMPORARILY_UNAVAILABLE,
            "text": "lock held by another owner", "key": key
        }),
        Msg::Released { req, removed, .. } => {
            json!({ "type": "release_ok", "in_reply_to": req, "key": key, "removed": removed })
        }
        Msg::ReadOk { req, op, value, .. } => json!({
            "type": "read_ok", "in_reply_to": req, "key": key, "op": op.0, "value": value.0
        }),
        Msg::WriteOk { req, op, .. } => {
            json!({ "type": "write_ok", "in_reply_to": req, "key": key, "op": op.0 })
        }
        Msg::ReadRejected { req, op, fence, .. } | Msg::WriteRejected { req, op, fence, .. } => {
            json!({
                "type": "error", "in_reply_to": req, "code": code::PRECONDITION_FAILED,
                "text": "fenced: token below the fence", "key": key, "op": op.0, "fence": fence.0
            })
        }
        // Replica-internal: an external coordinator replicates by its own
        // means, so these only reach a process from built-in replicas.
        Msg::Promote => json!({ "type": "promote" }),
        Msg::Replicate {
            counter,
            owner,
            token,
            expires_wall_ns,
            ..
        } => json!({
            "type": "replicate", "key": key, "counter": counter, "owner": owner,
            "token": token_json(token), "expires_wall_ns": expires_wall_ns
        }),
        Msg::Propose { gen } => json!({ "type": "propose", "gen": gen }),
        Msg::Accepted { gen, ok } => json!({ "type": "accepted", "gen": gen, "ok": ok }),
        Msg::QueryMax => json!({ "type": "query_max" }),
        Msg::MaxIs { gen } => json!({ "type": "max_is", "gen": gen }),
        // Client-decided protocols (ZooKeeper, DynamoDB lock table) are not on
        // the wire: `validate` refuses their scenarios before anything runs.
        // Named generically so a stray one is still a well-formed line.
        other => json!({ "type": other.name(), "fields": other.words() }),
    };
    let obj = body.as_object_mut().expect("bodies are objects");
    obj.insert("msg_id".into(), json!(msg_id));
    obj.insert("clock".into(), clock_json(clocks));
    // The failover orchestrator's word comes from the harness, not a peer.
    let src = if matches!(msg, Msg::Promote) {
        HARNESS
    } else {
        dir.node_name(from)
    };
    envelope(src, dir.node_name(to), body)
}

/// What one line a node wrote means.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    StepDone {
        in_reply_to: u64,
    },
    InitOk {
        in_reply_to: u64,
    },
    SetTimer {
        timer: u16,
        after_ns: u64,
    },
    CancelTimer {
        timer: u16,
    },
    Persist {
        durability: Durability,
        record: Vec<u8>,
    },
    Observe(Observation),
    /// A request the node sends to another node (its `msg_id` becomes the request id).
    Request {
        to: NodeId,
        msg: Msg,
    },
    /// A reply to a request the harness delivered as `in_reply_to`.
    Reply {
        to: NodeId,
        in_reply_to: u64,
        body: Map<String, Value>,
    },
}

/// Why a line is not a valid output. The driver adds node, line and text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    Json(String),
    UnknownType(String),
    Invalid(String),
}

type Fields<'a> = &'a Map<String, Value>;

fn field<'a>(body: Fields<'a>, name: &str, expected: &str) -> Result<&'a Value, WireError> {
    body.get(name)
        .ok_or_else(|| WireError::Invalid(format!("missing field {name:?} (expected {expected})")))
}

pub fn u64_field(body: Fields<'_>, name: &str) -> Result<u64, WireError> {
    field(body, name, "a non-negative integer")?
        .as_u64()
        .ok_or_else(|| {
            WireError::Invalid(format!(
                "field {name:?} is {}, expected a non-negative integer",
                body[name]
            ))
        })
}

/// A duration in nanoseconds, at most the one year a scenario may ask for
/// (`scenario::limits::DURATION_MAX_MS`): a process that answers with a
/// longer lease or timer is misbehaving, and adding its value to the clock
/// must not overflow the simulator.
pub fn duration_ns_field(body: Fields<'_>, name: &str) -> Result<u64, WireError> {
    let max_ns = crate::scenario::limits::DURATION_MAX_MS * 1_000_000;
    let v = u64_field(body, name)?;
    if v > max_ns {
        return Err(WireError::Invalid(format!(
            "field {name:?} is {v} ns, expected at most {max_ns} ns (one year)"
        )));
    }
    Ok(v)
}

/// A number, `null` or absent.
pub fn opt_u64_field(body: Fields<'_>, name: &str) -> Result<Option<u64>, WireError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            WireError::Invalid(format!(
                "field {name:?} is {v}, expected a non-negative integer or null"
            ))
        }),
    }
}

fn small_field<T: TryFrom<u64>>(body: Fields<'_>, name: &str, max: u64) -> Result<T, WireError> {
    let v = u64_field(body, name)?;
    T::try_from(v)
        .map_err(|_| WireError::Invalid(format!("field {name:?} is {v}, at most {max} allowed")))
}

fn str_field<'a>(body: Fields<'a>, name: &str) -> Result<&'a str, WireError> {
    field(body, name, "a string")?.as_str().ok_or_else(|| {
        WireError::Invalid(format!(
            "field {name:?} is {}, expected a string",
            body[name]
        ))
    })
}

fn key_field(dir: &Directory, body: Fields<'_>) -> Result<Key, WireError> {
    let name = str_field(body, "key")?;
    dir.key_id(name).ok_or_else(|| {
        WireError::Invalid(format!(
            "unknown key {name:?}; the scenario's keys are {:?}",
            dir.keys
        ))
    })
}

/// Message types a node may send, for the "unknown type" diagnostic.
pub const OUTPUT_TYPES: &[&str] = &[
    "init_ok",
    "step_done",
    "set_timer",
    "cancel_timer",
    "persist",
    "lease_expired",
    "workload_done",
    "op_abandoned",
    "lease_lost",
    "acquire",
    "release",
    "renew",
    "read",
    "write",
    "acquire_ok",
    "release_ok",
    "renew_ok",
    "read_ok",
    "write_ok",
    "error",
];

/// One line a node wrote: the input it belongs to (`step`) and what it says.
#[derive(Clone, Debug, PartialEq)]
pub struct Written {
    pub step: u64,
    pub out: Output,
}

/// Parses one line written by node `me`.
pub fn parse_output(dir: &Directory, me: NodeId, line: &str) -> Result<Written, WireError> {
    let v: Value = serde_json::from_str(line).map_err(|e| WireError::Json(e.to_string()))?;
    let Some(env) = v.as_object() else {
        return Err(WireError::Invalid(
            "expected an object {\"src\",\"dest\",\"body\"}".into(),
        ));
    };
    let src = str_field(env, "src")?;
    if src != dir.node_name(me) {
        return Err(WireError::Invalid(format!(
            "\"src\" is {src:?}, expected this node's id {:?}",
            dir.node_name(me)
        )));
    }
    let dest = str_field(env, "dest")?;
    let Some(body) = env.get("body").and_then(Value::as_object) else {
        return Err(WireError::Invalid("missing or non-object \"body\"".into()));
    };
    let kind = str_field(body, "type")?;
    let peer = || {
        dir.node_id(dest).ok_or_else(|| {
            WireError::Invalid(format!(
                "\"dest\" {dest:?} is not a node; nodes are {:?} (or \"coord\")",
                dir.nodes
            ))
        })
    };
    let out = match kind {
        "step_done" => Output::StepDone {
            in_reply_to: u64_field(body, "in_reply_to")?,
        },
        "init_ok" => Output::InitOk {
            in_reply_to: u64_field(body, "in_reply_to")?,
        },
        "set_timer" => Output::SetTimer {
            timer: small_field(body, "timer", u16::MAX as u64)?,
            after_ns: duration_ns_field(body, "after_ns")?,
        },
        "cancel_timer" => Output::CancelTimer {
            timer: small_field(body, "timer", u16::MAX as u64)?,
        },
        "persist" => {
            let durability = match body.get("durability").and_then(Value::as_str) {
                None | Some("synced") => Durability::Synced,
                Some("buffered") => Durability::Buffered,
                Some(other) => {
                    return Err(WireError::Invalid(format!(
                        "\"durability\" is {other:?}, expected \"synced\" or \"buffered\""
                    )))
                }
            };
            let state = field(body, "state", "any JSON value")?;
            Output::Persist {
                durability,
                record: state.to_string().into_bytes(),
            }
        }
        "lease_expired" => Output::Observe(Observation::LeaseExpired {
            key: key_field(dir, body)?,
            owner: u64_field(body, "owner")?,
        }),
        "workload_done" => Output::Observe(Observation::WorkloadDone),
        "op_abandoned" => Output::Observe(Observation::OpAbandoned {
            op: OpId(u64_field(body, "op")?),
        }),
        "lease_lost" => Output::Observe(Observation::LeaseLost {
            key: key_field(dir, body)?,
            owner: u64_field(body, "owner")?,
        }),
        "acquire" | "release" | "renew" | "read" | "write" => Output::Request {
            to: peer()?,
            msg: request(dir, kind, body)?,
        },
        "acquire_ok" | "release_ok" | "renew_ok" | "read_ok" | "write_ok" | "error" => {
            Output::Reply {
                to: peer()?,
                in_reply_to: u64_field(body, "in_reply_to")?,
                body: body.clone(),
            }
        }
        other => {
            return Err(WireError::UnknownType(format!(
                "unknown message type {other:?}; expected one of {}",
                OUTPUT_TYPES.join(", ")
            )))
        }
    };
    // After the type: an unknown type is named as such, whatever else is missing.
    let step = u64_field(body, "step").map_err(|e| match e {
        WireError::Invalid(m) => WireError::Invalid(format!(
            "{m}: every output line carries \"step\", the msg_id of the input it belongs to (protocol version {PROTOCOL_VERSION})"
        )),
        other => other,
    })?;
    Ok(Written { step, out })
}

fn request(dir: &Directory, kind: &str, body: Fields<'_>) -> Result<Msg, WireError> {
    let req = small_field(body, "msg_id", u32::MAX as u64)?;
    let key = key_field(dir, body)?;
    Ok(match kind {
        "acquire" => Msg::Acquire {
            req,
            key,
            owner: u64_field(body, "owner")?,
        },
        "release" => Msg::Release {
            req,
            key,
            owner: u64_field(body, "owner")?,
        },
        "renew" => Msg::Renew {
            req,
            key,
            owner: u64_field(body, "owner")?,
        },
        "read" => Msg::Read {
            req,
            key,
            op: OpId(u64_field(body, "op")?),
            token: opt_u64_field(body, "token")?.map(Token),
        },
        _ => Msg::Write {
            req,
            key,
            op: OpId(u64_field(body, "op")?),
            token: opt_u64_field(body, "token")?.map(Token),
            value: OpId(u64_field(body, "value")?),
        },
    })
}

/// Turns a node's reply into the [`Msg`] answering `request` (as it was
/// delivered). Key, owner and op come from the request, so a reply cannot
/// re-label what it answers; only result fields are read from it.
pub fn reply(request: &Msg, body: Fields<'_>) -> Result<Msg, WireError> {
    let kind = str_field(body, "type")?;
    let mismatch = || {
        WireError::Invalid(format!(
            "a {kind:?} does not answer a {:?} (expected {})",
            request.name(),
            match request {
                Msg::Acquire { .. } => "acquire_ok, or error code 11",
                Msg::Release { .. } => "release_ok",
                Msg::Renew { .. } => "renew_ok, or error code 22",
                Msg::Read { .. } => "read_ok, or error code 22 with \"fence\"",
                _ => "write_ok, or error code 22 with \"fence\"",
            }
        ))
    };
    let error_code = || u64_field(body, "code");
    Ok(match (*request, kind) {
        (Msg::Acquire { req, key, owner }, "acquire_ok") => Msg::Granted {
            req,
            key,
            owner,
            token: opt_u64_field(body, "token")?.map(Token),
            ttl_ns: duration_ns_field(body, "ttl_ns")?,
        },
        (Msg::Acquire { req, key, .. }, "error")
            if error_code()? == code::TEMPORARILY_UNAVAILABLE =>
        {
            Msg::Busy { req, key }
        }
        (Msg::Release { req, key, .. }, "release_ok") => Msg::Released {
            req,
            key,
            removed: opt_u64_field(body, "removed")?,
        },
        (Msg::Renew { req, key, owner }, "renew_ok") => Msg::Renewed {
            req,
            key,
            owner,
            ttl_ns: duration_ns_field(body, "ttl_ns")?,
        },
        (Msg::Renew { req, key, owner }, "error") if error_code()? == code::PRECONDITION_FAILED => {
            Msg::RenewFailed { req, key, owner }
        }
        (Msg::Read { req, key, op, .. }, "read_ok") => Msg::ReadOk {
            req,
            key,
            op,
            value: OpId(u64_field(body, "value")?),
        },
        (Msg::Read { req, key, op, .. }, "error") if error_code()? == code::PRECONDITION_FAILED => {
            Msg::ReadRejected {
                req,
                key,
                op,
                fence: Token(u64_field(body, "fence")?),
            }
        }
        (Msg::Write { req, key, op, .. }, "write_ok") => Msg::WriteOk { req, key, op },
        (Msg::Write { req, key, op, .. }, "error")
            if error_code()? == code::PRECONDITION_FAILED =>
        {
            Msg::WriteRejected {
                req,
                key,
                op,
                fence: Token(u64_field(body, "fence")?),
            }
        }
        (_, "error") => {
            return Err(WireError::Invalid(format!(
                "error code {} does not answer a {:?} (acquire: 11; renew, read, write: 22)",
                error_code()?,
                request.name()
            )))
        }
        _ => return Err(mismatch()),
    })
}

/// A request from an external node is answered by a built-in node; a
/// reply from a built-in node to an external one is delivered as-is. This
/// tells the driver which messages are requests it must remember.
pub fn is_request(msg: &Msg) -> bool {
    matches!(
        msg,
        Msg::Acquire { .. }
            | Msg::Release { .. }
            | Msg::Renew { .. }
            | Msg::Read { .. }
            | Msg::Write { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> Directory {
        Directory {
            nodes: vec!["worker/A".into(), "coord/0".into(), "resource/0".into()],
            keys: vec!["doc".into()],
        }
    }

    const NOW: Clocks = Clocks {
        wall_ns: 5,
        mono_ns: 7,
    };

    #[test]
    fn a_fenced_write_is_delivered_with_token_value_clock_and_msg_id() {
        let msg = Msg::Write {
            req: 3,
            key: Key(0),
            op: OpId(1001),
            token: Some(Token(2)),
            value: OpId(1001),
        };
        let line = delivery(&dir(), NodeId(0), NodeId(2), &msg, 9, NOW).to_string();
        assert_eq!(
            line,
            r#"{"body":{"clock":{"mono_ns":7,"wall_ns":5},"key":"doc","msg_id":9,"op":1001,"token":2,"type":"write","value":1001},"dest":"resource/0","src":"worker/A"}"#
        );
    }

    #[test]
    fn a_fence_rejection_maps_back_onto_the_request_it_answers() {
        let request = Msg::Write {
            req: 3,
            key: Key(0),
            op: OpId(1001),
            token: Some(Token(1)),
            value: OpId(1001),
        };
        let line = r#"{"src":"resource/0","dest":"worker/A","body":{"type":"error","step":9,"in_reply_to":9,"code":22,"fence":2}}"#;
        let Written {
            step: 9,
            out:
                Output::Reply {
                    to,
                    in_reply_to,
                    body,
                },
        } = parse_output(&dir(), NodeId(2), line).unwrap()
        else {
            panic!("not a reply")
        };
        assert_eq!((to, in_reply_to), (NodeId(0), 9));
        assert_eq!(
            reply(&request, &body).unwrap(),
            Msg::WriteRejected {
                req: 3,
                key: Key(0),
                op: OpId(1001),
                fence: Token(2)
            }
        );
    }

    #[test]
    fn a_reply_of_the_wrong_type_is_refused_with_what_was_expected() {
        let request = Msg::Acquire {
            req: 1,
            key: Key(0),
            owner: 4,
        };
        let body = json!({"type": "write_ok", "in_reply_to": 1});
        let err = reply(&request, body.as_object().unwrap()).unwrap_err();
        assert!(
            matches!(&err, WireError::Invalid(m) if m.contains("acquire_ok")),
            "{err:?}"
        );
    }

    #[test]
    fn unknown_types_and_bad_json_and_foreign_src_are_told_apart() {
        let d = dir();
        let unknown = r#"{"src":"coord/0","dest":"harness","body":{"type":"heartbeat","step":1}}"#;
        assert!(matches!(
            parse_output(&d, NodeId(1), unknown),
            Err(WireError::UnknownType(_))
        ));
        assert!(matches!(
            parse_output(&d, NodeId(1), "{oops"),
            Err(WireError::Json(_))
        ));
        let foreign = r#"{"src":"coord/1","dest":"harness","body":{"type":"step_done","step":1,"in_reply_to":1}}"#;
        assert!(matches!(
            parse_output(&d, NodeId(1), foreign),
            Err(WireError::Invalid(m)) if m.contains("coord/0")
        ));
    }

    #[test]
    fn a_line_without_step_is_refused_and_says_what_step_is() {
        let d = dir();
        let old =
            r#"{"src":"coord/0","dest":"harness","body":{"type":"step_done","in_reply_to":1}}"#;
        assert!(matches!(
            parse_output(&d, NodeId(1), old),
            Err(WireError::Invalid(m)) if m.contains("missing field \"step\"") && m.contains("the msg_id of the input it belongs to")
        ));
        let new = r#"{"src":"coord/0","dest":"harness","body":{"type":"step_done","step":4,"in_reply_to":4}}"#;
        assert_eq!(
            parse_output(&d, NodeId(1), new).unwrap(),
            Written {
                step: 4,
                out: Output::StepDone { in_reply_to: 4 }
            }
        );
    }
}
