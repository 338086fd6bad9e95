//! JSON-lines encoding of a [`History`]: the format `fencesim replay
//! --history` writes and `fencesim check-history` reads, so that any
//! producer (another language, a real database test) can feed the checker.
//!
//! One object per line, fields as in `docs/history.md`. Absent fields are
//! omitted. Reading is strict: unknown fields, unknown kinds, a missing
//! schema version, or `seq` not strictly increasing are errors that name
//! the line and column.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::{Event, History, Kind, Outcome, SCHEMA_VERSION};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    schema_version: u32,
    seq: u64,
    t_true_ns: u64,
    node: String,
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    op_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    grant_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    removed_grant_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    order: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

/// A history file that cannot be read: where, and what was expected.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct ReadError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

pub fn write(history: &History, out: &mut dyn Write) -> io::Result<()> {
    for e in &history.events {
        let record = Record {
            schema_version: SCHEMA_VERSION,
            seq: e.seq,
            t_true_ns: e.t_true_ns,
            node: history.node_name(e.node).to_string(),
            kind: e.kind.name().to_string(),
            op_id: e.op_id,
            grant_id: e.grant_id,
            key: e.key.map(|k| history.key_name(k).to_string()),
            token: e.token,
            value: e.value,
            outcome: e.outcome.map(|o| o.name().to_string()),
            removed_grant_id: e.removed_grant_id,
            order: e.order,
            detail: e.detail.clone(),
        };
        serde_json::to_writer(&mut *out, &record)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// serde_json's message in this format's words: without the position (the
/// caller prints it once, first), without Rust type names, and with an
/// out-of-range number shown as written rather than as the float that
/// serde_json fell back to.
fn json_message(e: &serde_json::Error, line: &str) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full);
    const WHOLE: &str = "a whole number from 0 to 18446744073709551615";
    if let Some(rest) = message.strip_prefix("invalid type: floating point ") {
        // The number as written: the token that ends where serde_json stopped.
        let end = e.column().min(line.len());
        let start = line[..end]
            .rfind(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
            .map_or(0, |i| i + 1);
        let written = line
            .get(start..end)
            .filter(|t| !t.is_empty())
            .unwrap_or(rest);
        return format!("number {written} is out of range; expected {WHOLE}");
    }
    if message.contains("struct Record") {
        // serde's view of a non-object line ("invalid length 1, expected struct Record with 13 elements").
        return "expected a JSON object: one history record per line (docs/history.md)".into();
    }
    message
        .replace("expected u64", &format!("expected {WHOLE}"))
        .replace(
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        )
        .replace("expected a string", "expected a JSON string")
}

pub fn read(text: &str, file: &str) -> Result<History, ReadError> {
    // A byte-order mark is accepted, as the TOML formats accept it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut history = History::default();
    let mut node_ids: BTreeMap<String, u16> = BTreeMap::new();
    let mut key_ids: BTreeMap<String, u16> = BTreeMap::new();
    let mut last_seq: Option<u64> = None;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let err = |column: usize, message: String| ReadError {
            file: file.to_string(),
            line: line_no,
            column,
            message,
        };
        let record: Record =
            serde_json::from_str(line).map_err(|e| err(e.column(), json_message(&e, line)))?;
        if record.schema_version != SCHEMA_VERSION {
            return Err(err(
                1,
                format!(
                    "schema_version {} is not supported (expected {SCHEMA_VERSION})",
                    record.schema_version
                ),
            ));
        }
        let kind = Kind::from_name(&record.kind).ok_or_else(|| {
            let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            err(
                1,
                format!(
                    "unknown kind {:?}; expected one of {}",
                    record.kind,
                    names.join(", ")
                ),
            )
        })?;
        if last_seq.is_some_and(|s| record.seq <= s) {
            return Err(err(
                1,
                format!(
                    "seq {} does not increase (previous {})",
                    record.seq,
                    last_seq.unwrap_or(0)
                ),
            ));
        }
        last_seq = Some(record.seq);
        let outcome = match record.outcome.as_deref() {
            None => None,
            Some("ok") => Some(Outcome::Ok),
            Some("rejected") => Some(Outcome::Rejected),
            Some(other) => {
                return Err(err(
                    1,
                    format!("unknown outcome {other:?}; expected \"ok\" or \"rejected\""),
                ))
            }
        };
        let node = intern(&mut node_ids, &mut history.nodes, record.node).map_err(|m| err(1, m))?;
        let key = match record.key {
            Some(k) => Some(intern(&mut key_ids, &mut history.keys, k).map_err(|m| err(1, m))?),
            None => None,
        };
        history.events.push(Event {
            seq: record.seq,
            t_true_ns: record.t_true_ns,
            node,
            kind,
            op_id: record.op_id,
            grant_id: record.grant_id,
            key,
            token: record.token,
            value: record.value,
            outcome,
            removed_grant_id: record.removed_grant_id,
            order: record.order,
            detail: record.detail,
        });
    }
    Ok(history)
}

fn intern(
    ids: &mut BTreeMap<String, u16>,
    names: &mut Vec<String>,
    name: String,
) -> Result<u16, String> {
    if let Some(&id) = ids.get(&name) {
        return Ok(id);
    }
    let id =
        u16::try_from(names.len()).map_err(|_| "more than 65535 distinct names".to_string())?;
    names.push(name.clone());
    ids.insert(name, id);
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_round_trips_through_json_lines() {
        let mut h = History {
            nodes: vec!["worker/A".into(), "resource/0".into()],
            keys: vec!["doc".into()],
            events: vec![],
        };
        let mut e = Event::new(3, 10, 1, Kind::WriteAccepted);
        e.op_id = Some(1001);
        e.key = Some(0);
        e.token = Some(2);
        h.events.push(e);
        let mut out = Vec::new();
        write(&h, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let back = read(&text, "h.jsonl").unwrap();
        // Node indexes are interned in order of appearance; names and fields survive.
        let shown = |h: &History| h.events.iter().map(|e| h.describe(e)).collect::<Vec<_>>();
        assert_eq!(shown(&back), shown(&h));
        assert_eq!(back.node_name(0), "resource/0");
    }

    #[test]
    fn malformed_line_names_file_line_and_column() {
        let text = "{\"schema_version\":1,\"seq\":1,\"t_true_ns\":0,\"node\":\"a\",\"kind\":\"pause\"}\n{\"seq\": x}\n";
        let e = read(text, "h.jsonl").unwrap_err();
        assert_eq!((e.line, e.column), (2, 9));
        assert!(e.to_string().starts_with("h.jsonl:2:9: "), "{e}");
    }

    #[test]
    fn json_errors_print_the_position_once_and_no_rust_types() {
        let e = read("[1]\n", "h.jsonl").unwrap_err().to_string();
        assert!(
            e.starts_with("h.jsonl:1:") && e.contains("expected a JSON object"),
            "{e}"
        );
        assert!(!e.contains(" at line ") && !e.contains("column"), "{e}");
        assert!(!e.contains("struct") && !e.contains("Record"), "{e}");
    }

    #[test]
    fn two_to_the_64_is_shown_as_written_not_as_a_float() {
        let text = "{\"schema_version\":1,\"seq\":18446744073709551616,\"t_true_ns\":0}";
        let e = read(text, "h.jsonl").unwrap_err().to_string();
        assert!(
            e.contains("number 18446744073709551616 is out of range"),
            "{e}"
        );
        assert!(
            !e.contains("18446744073709552000") && !e.contains("e19"),
            "{e}"
        );
    }

    #[test]
    fn a_byte_order_mark_is_accepted() {
        let line =
            "{\"schema_version\":1,\"seq\":1,\"t_true_ns\":0,\"node\":\"a\",\"kind\":\"pause\"}\n";
        let with_bom = format!("\u{feff}{line}");
        assert_eq!(read(&with_bom, "h").unwrap().events.len(), 1);
        assert_eq!(read(line, "h").unwrap().events.len(), 1);
    }

    #[test]
    fn unknown_kind_lists_the_expected_ones() {
        let text =
            "{\"schema_version\":1,\"seq\":1,\"t_true_ns\":0,\"node\":\"a\",\"kind\":\"nope\"}";
        let e = read(text, "h.jsonl").unwrap_err();
        assert!(
            e.message.contains("unknown kind \"nope\"") && e.message.contains("write_accepted"),
            "{e}"
        );
    }
}
