//! Implementation errors: the process under test broke the wire protocol
//! (or died, or hung). These are never safety verdicts — the run is aborted
//! and reported as the implementation's fault, with the node, the input it
//! was answering, the offending output line, and the tail of its stderr.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImplErrorKind {
    /// The command could not be started.
    Spawn,
    /// A stdout line is not JSON.
    MalformedJson,
    /// A `type` the protocol does not have.
    UnknownType,
    /// Well-formed JSON that breaks a protocol rule (missing field, bad dest…).
    InvalidMessage,
    /// A reply or step marker quoting a `msg_id` it cannot answer.
    WrongInReplyTo,
    /// A line whose `step` is not the input being answered (for example one
    /// written after `step_done`, read during the next step).
    OutsideStep,
    /// The process exited (or closed stdout) without being crashed by the harness.
    Exited,
    /// No `step_done` within the step timeout.
    StepTimeout,
    /// Too many lines in one step, or a line too long.
    Flooding,
}

impl ImplErrorKind {
    pub fn name(&self) -> &'static str {
        match self {
            ImplErrorKind::Spawn => "spawn failed",
            ImplErrorKind::MalformedJson => "malformed JSON",
            ImplErrorKind::UnknownType => "unknown message type",
            ImplErrorKind::InvalidMessage => "invalid message",
            ImplErrorKind::WrongInReplyTo => "wrong in_reply_to",
            ImplErrorKind::OutsideStep => "line outside its step",
            ImplErrorKind::Exited => "process exited",
            ImplErrorKind::StepTimeout => "step timeout",
            ImplErrorKind::Flooding => "flooding output",
        }
    }
}

/// One implementation error, with everything needed to find it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImplError {
    pub kind: ImplErrorKind,
    /// Node name, e.g. `coord/0`.
    pub node: String,
    pub command: String,
    pub detail: String,
    /// The harness's line the node was answering: (stdin line number, text).
    pub input: Option<(u64, String)>,
    /// The offending output: (stdout line number, text).
    pub output: Option<(u64, String)>,
    /// The last lines the process wrote to stderr.
    pub stderr_tail: String,
}

/// Cut long protocol lines in diagnostics to `max` bytes, on a char boundary.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

/// Diagnostic lines are cut to this many bytes.
const LINE_SHOWN_MAX: usize = 300;

impl fmt::Display for ImplError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "implementation error in {} ({}): {}",
            self.node,
            self.kind.name(),
            self.detail
        )?;
        if let Some((n, text)) = &self.output {
            write!(f, "\n    stdout line {n}: {}", clip(text, LINE_SHOWN_MAX))?;
        }
        if let Some((n, text)) = &self.input {
            write!(
                f,
                "\n    answering stdin line {n}: {}",
                clip(text, LINE_SHOWN_MAX)
            )?;
        }
        write!(f, "\n    command: {}", self.command)?;
        if !self.stderr_tail.trim().is_empty() {
            write!(f, "\n    stderr (tail):")?;
            for line in self.stderr_tail.lines() {
                write!(f, "\n      | {line}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ImplError {}
