//! An external process as a simulated node: a [`Node`] whose `handle`
//! writes the input as one JSON line to the child's stdin and reads its
//! outputs until the end-of-step marker.
//!
//! The simulator cannot tell this node from a built-in one: the child sees
//! only what the harness hands it (messages, timers, its clock readings), so
//! a deterministic implementation replays exactly from a seed. Crash = the
//! simulator drops the node, which kills the child's whole process group;
//! restart = the factory spawns a fresh child and `init` hands it back the
//! state it last persisted as synced. Pause needs nothing here: the
//! simulator holds a paused node's inputs.
//!
//! Attribution is by protocol, never by timing: every output line carries
//! `step`, the `msg_id` of the input it belongs to, and a line read while
//! another input is being answered is refused, whenever it arrives. There is
//! deliberately no "drain before the next input" check: whether a late line
//! is already in the pipe at that instant is a race. A line written after
//! the last input a process ever gets is never read, and cannot change the run.
//!
//! Crash and end of run end the child's whole process tree, including
//! descendants that left its process group ([`super::reaper`]).
//!
//! Wall-clock time is used for one thing only — the per-step timeout — and
//! it can never change a run's result silently: a step past the timeout
//! aborts the run with an [`ImplError`] (through [`abort`]), it never turns
//! into a "no answer". Reader threads exist only to make that timeout
//! possible; they forward lines and never touch simulation state.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::error::{ImplError, ImplErrorKind};
use super::reaper;
use super::wire::{self, Directory, Output, WireError, Written};
use crate::protocol::{Clocks, Effect, Input, Msg, Node, NodeId, TimerId};

/// Bounds on what one process may do in one step.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub step_timeout: Duration,
    /// Output lines (including the marker) per input.
    pub lines_per_step_max: usize,
    pub line_bytes_max: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            step_timeout: Duration::from_secs(5),
            lines_per_step_max: 1_000,
            line_bytes_max: 64 * 1024,
        }
    }
}

/// Kept of a child's stderr: its last bytes, for diagnostics.
const STDERR_TAIL_BYTES: usize = 4 * 1024;
/// Every `write_ok` a process node sent, in send order: (node, op id,
/// `applied`). Shared by the processes of one run (restarts included), so
/// the run can tell the history which acknowledgements applied nothing.
pub type WriteAcks = Arc<Mutex<Vec<(NodeId, u64, bool)>>>;

/// Output lines of one step kept for a flooding diagnostic.
const FLOOD_SAMPLE_LINES: usize = 3;
/// Lines buffered between the stdout reader thread and the step loop; a
/// flooding child blocks on its pipe beyond this.
const LINES_IN_FLIGHT_MAX: usize = 256;

/// The payload `handle` unwinds with when the implementation misbehaves;
/// [`super::run_seed`] catches exactly this type. `Node::handle` has no
/// error channel, and the run must stop at the faulty step, not limp on.
pub struct Abort(pub Box<ImplError>);

/// Stops the current run with `err`. Uses `resume_unwind`, so no panic
/// message is printed: the error is reported by the caller.
pub fn abort(err: Box<ImplError>) -> ! {
    std::panic::resume_unwind(Box::new(Abort(err)))
}

enum Line {
    Text(String),
    TooLong(usize),
    Eof,
}

pub struct ProcessNode {
    id: NodeId,
    dir: Arc<Directory>,
    command: String,
    role: Value,
    limits: Limits,
    child: Child,
    /// The environment tag its descendants inherit ([`reaper::TAG_VAR`]).
    tag: String,
    stdin: ChildStdin,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// Numbers this node's input lines (`msg_id`), from 1.
    next_msg_id: u64,
    stdout_lines: u64,
    /// Requests delivered to the process, by the `msg_id` it saw: (sender, request).
    requests: BTreeMap<u64, (NodeId, Msg)>,
    /// The requests already answered (one request, one reply).
    answered: BTreeSet<u64>,
    /// The input being answered: (stdin line number = its msg_id, text).
    current: Option<(u64, String)>,
    acks: WriteAcks,
}

impl ProcessNode {
    /// Starts `command` (through `sh -c`) in its own process group.
    pub fn spawn(
        id: NodeId,
        dir: Arc<Directory>,
        command: &str,
        role: Value,
        limits: Limits,
        seed: u64,
        acks: WriteAcks,
    ) -> Result<ProcessNode, Box<ImplError>> {
        let name = dir.node_name(id).to_string();
        reaper::become_subreaper();
        let tag = reaper::new_tag();
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(command)
            .env(reaper::TAG_VAR, &tag)
            .env("FENCESIM_NODE", &name)
            .env("FENCESIM_SEED", seed.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        own_process_group(&mut cmd);
        // Registered under the lock it is spawned under: an orphan sweep on
        // another thread must never take a starting child for an orphan.
        let mut live = reaper::LIVE_ROOTS.lock().unwrap_or_else(|p| p.into_inner());
        let spawned = cmd.spawn();
        if let Ok(child) = &spawned {
            live.push((child.id(), tag.clone()));
        }
        drop(live);
        let mut child = spawned.map_err(|e| {
            Box::new(ImplError {
                kind: ImplErrorKind::Spawn,
                node: name.clone(),
                command: command.to_string(),
                detail: format!("cannot start `sh -c {command:?}`: {e}"),
                input: None,
                output: None,
                stderr_tail: String::new(),
            })
        })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, rx) = mpsc::sync_channel(LINES_IN_FLIGHT_MAX);
        let max = limits.line_bytes_max;
        thread::spawn(move || read_lines(stdout, tx, max));
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let sink = Arc::clone(&tail);
        thread::spawn(move || read_tail(stderr, sink));
        Ok(ProcessNode {
            id,
            dir,
            command: command.to_string(),
            role,
            limits,
            child,
            tag,
            stdin,
            lines: rx,
            stderr: tail,
            next_msg_id: 1,
            stdout_lines: 0,
            requests: BTreeMap::new(),
            answered: BTreeSet::new(),
            current: None,
            acks,
        })
    }

    fn error(
        &self,
        kind: ImplErrorKind,
        detail: String,
        output: Option<(u64, String)>,
    ) -> ImplError {
        // Give the child a moment to finish writing why it failed.
        thread::sleep(Duration::from_millis(20));
        let tail = self
            .stderr
            .lock()
            .map(|t| t.iter().copied().collect::<Vec<u8>>());
        let tail = String::from_utf8_lossy(&tail.unwrap_or_default()).into_owned();
        ImplError {
            kind,
            node: self.dir.node_name(self.id).to_string(),
            command: self.command.clone(),
            detail,
            input: self.current.clone(),
            output,
            stderr_tail: tail,
        }
    }

    fn fail(&self, kind: ImplErrorKind, detail: String, output: Option<(u64, String)>) -> ! {
        abort(Box::new(self.error(kind, detail, output)))
    }

    fn send_input(&mut self, line: Value, msg_id: u64) {
        let text = line.to_string();
        self.current = Some((msg_id, text.clone()));
        let written = writeln!(self.stdin, "{text}").and_then(|_| self.stdin.flush());
        if let Err(e) = written {
            let status = self.exit_status();
            self.fail(
                ImplErrorKind::Exited,
                format!("cannot write its input ({e}): {status}"),
                None,
            );
        }
    }

    fn exit_status(&mut self) -> String {
        // It closed a pipe; give it a moment to be reaped.
        for _ in 0..50 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return format!("the process exited ({status})");
            }
            thread::sleep(Duration::from_millis(10));
        }
        "the process closed its output but is still running".into()
    }

    /// Writes one input and collects the step's effects until `step_done`.
    fn step(&mut self, line: Value, msg_id: u64, is_init: bool, fx: &mut Vec<Effect>) {
        self.send_input(line, msg_id);
        let deadline = Instant::now() + self.limits.step_timeout;
        let mut init_ok = !is_init;
        // The step's first lines, shown if it floods.
        let mut sample: Vec<String> = Vec::new();
        for _ in 0..self.limits.lines_per_step_max {
            let text = self.next_line(deadline, init_ok);
            self.stdout_lines += 1;
            let n = self.stdout_lines;
            if sample.len() < FLOOD_SAMPLE_LINES {
                sample.push(text.clone());
            }
            let Written { step, out } = match wire::parse_output(&self.dir, self.id, &text) {
                Ok(w) => w,
                Err(e) => {
                    let (kind, detail) = match e {
                        WireError::Json(m) => (ImplErrorKind::MalformedJson, m),
                        WireError::UnknownType(m) => (ImplErrorKind::UnknownType, m),
                        WireError::Invalid(m) => (ImplErrorKind::InvalidMessage, m),
                    };
                    self.fail(kind, detail, Some((n, text)))
                }
            };
            if step != msg_id {
                let detail = if step < msg_id {
                    format!(
                        "the line belongs to input msg_id {step}, whose step already ended with step_done; \
                         it was read while msg_id {msg_id} was being answered (a line written after step_done \
                         belongs to no step)"
                    )
                } else {
                    format!("\"step\" is {step}, but the input being answered is msg_id {msg_id}")
                };
                self.fail(ImplErrorKind::OutsideStep, detail, Some((n, text)));
            }
            match out {
                Output::StepDone { in_reply_to } => {
                    self.expect_current(in_reply_to, msg_id, "step_done", n, &text);
                    if !init_ok {
                        self.fail(
                            ImplErrorKind::InvalidMessage,
                            "step_done before init_ok".into(),
                            Some((n, text)),
                        );
                    }
                    return;
                }
                Output::InitOk { in_reply_to } => {
                    self.expect_current(in_reply_to, msg_id, "init_ok", n, &text);
                    init_ok = true;
                }
                other => {
                    if let Err((kind, detail)) = self.effect(other, fx) {
                        self.fail(kind, detail, Some((n, text)));
                    }
                }
            }
        }
        let shown: Vec<String> = sample
            .iter()
            .map(|l| format!("\n      | {}", super::error::clip(l, 160)))
            .collect();
        let last = self.stdout_lines;
        self.fail(
            ImplErrorKind::Flooding,
            format!(
                "more than {} output lines for one input without step_done; its first lines:{}",
                self.limits.lines_per_step_max,
                shown.concat()
            ),
            Some((last, String::new())),
        )
    }

    /// The implementation's next output line of this step; it failing to
    /// write one — a line too long, an exit, no line by `deadline` — fails
    /// the run (`init_ok`: whether the handshake completed).
    fn next_line(&mut self, deadline: Instant, init_ok: bool) -> String {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(wait) {
            Ok(Line::Text(t)) => t,
            Ok(Line::TooLong(n)) => {
                let n_line = self.stdout_lines + 1;
                self.fail(
                    ImplErrorKind::Flooding,
                    format!(
                        "a line longer than {} bytes (read {n} without a newline)",
                        self.limits.line_bytes_max
                    ),
                    Some((n_line, String::new())),
                )
            }
            Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => {
                let status = self.exit_status();
                let before = if init_ok {
                    "step_done"
                } else {
                    "init_ok: it never completed the handshake"
                };
                self.fail(
                    ImplErrorKind::Exited,
                    format!("{status} before {before}"),
                    None,
                )
            }
            Err(RecvTimeoutError::Timeout) => self.fail(
                ImplErrorKind::StepTimeout,
                format!(
                    "no step_done within {} ms; the run is aborted, not judged",
                    self.limits.step_timeout.as_millis()
                ),
                None,
            ),
        }
    }

    fn expect_current(&self, got: u64, expected: u64, what: &str, n: u64, text: &str) {
        if got != expected {
            self.fail(
                ImplErrorKind::WrongInReplyTo,
                format!("{what} has in_reply_to {got}, but the input being answered is msg_id {expected}"),
                Some((n, text.to_string())),
            );
        }
    }

    /// One output line as an effect, or why it is refused.
    fn effect(&mut self, out: Output, fx: &mut Vec<Effect>) -> Result<(), (ImplErrorKind, String)> {
        let effect = match out {
            Output::SetTimer { timer, after_ns } => Effect::SetTimer {
                timer: TimerId(timer),
                after_ns,
            },
            Output::CancelTimer { timer } => Effect::CancelTimer {
                timer: TimerId(timer),
            },
            Output::Persist { durability, record } => Effect::Persist {
                durability,
                record: record.into(),
            },
            Output::Observe(obs) => Effect::Observe(obs),
            Output::Request { to, msg } => Effect::Send { to, msg },
            Output::Reply {
                to,
                in_reply_to,
                body,
            } => {
                let wrong = ImplErrorKind::WrongInReplyTo;
                let Some(&(from, request)) = self.requests.get(&in_reply_to) else {
                    return Err((wrong, format!(
                        "in_reply_to {in_reply_to} is not the msg_id of any request delivered to {}",
                        self.dir.node_name(self.id)
                    )));
                };
                if from != to {
                    return Err((
                        wrong,
                        format!(
                        "in_reply_to {in_reply_to} is a request from {}, but the reply goes to {}",
                        self.dir.node_name(from),
                        self.dir.node_name(to)
                    ),
                    ));
                }
                // A second answer (write_ok after an error, two tokens for one
                // acquire) would be recorded as a second outcome of one request.
                if !self.answered.insert(in_reply_to) {
                    return Err((
                        wrong,
                        format!("in_reply_to {in_reply_to} answers a request already answered: one request, one reply"),
                    ));
                }
                match wire::reply(&request, &body) {
                    Ok(msg) => {
                        if let Msg::WriteOk { op, .. } = msg {
                            let applied = match body.get("applied") {
                                None => true,
                                Some(Value::Bool(b)) => *b,
                                Some(other) => {
                                    return Err((
                                        ImplErrorKind::InvalidMessage,
                                        format!("\"applied\" is {other}, expected true or false (false: a duplicate not applied again)"),
                                    ))
                                }
                            };
                            if let Ok(mut acks) = self.acks.lock() {
                                acks.push((self.id, op.0, applied));
                            }
                        }
                        Effect::Send { to, msg }
                    }
                    Err(WireError::Invalid(m) | WireError::Json(m) | WireError::UnknownType(m)) => {
                        return Err((ImplErrorKind::InvalidMessage, m))
                    }
                }
            }
            Output::StepDone { .. } | Output::InitOk { .. } => unreachable!("handled by step"),
        };
        fx.push(effect);
        Ok(())
    }

    fn take_msg_id(&mut self) -> u64 {
        let id = self.next_msg_id;
        self.next_msg_id += 1;
        id
    }
}

impl Node for ProcessNode {
    fn handle(&mut self, clocks: Clocks, input: Input<'_>, fx: &mut Vec<Effect>) {
        let msg_id = self.take_msg_id();
        match input {
            Input::Start { recovered } => {
                // Persisted records are the JSON text the node itself sent.
                let state = recovered.map(|bytes| {
                    serde_json::from_slice(bytes).expect("a persisted record is the JSON we stored")
                });
                let line = wire::init(&self.dir, self.id, msg_id, &self.role, state, clocks);
                self.step(line, msg_id, true, fx);
            }
            Input::Message { from, msg } => {
                if wire::is_request(&msg) {
                    self.requests.insert(msg_id, (from, msg));
                }
                let line = wire::delivery(&self.dir, from, self.id, &msg, msg_id, clocks);
                self.step(line, msg_id, false, fx);
            }
            Input::Timer { timer } => {
                let line = wire::timer(&self.dir, self.id, msg_id, timer.0, clocks);
                self.step(line, msg_id, false, fx);
            }
        }
    }
}

impl Drop for ProcessNode {
    /// Crash, end of run, or abort: the child and anything it started die
    /// now, also what left its process group.
    fn drop(&mut self) {
        let pid = self.child.id();
        // Kills the node's group too, after noting who is in it.
        reaper::end_node(pid, &self.tag);
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Ok(mut live) = reaper::LIVE_ROOTS.lock() {
            live.retain(|(p, _)| *p != pid);
        }
    }
}

fn read_lines(stdout: impl Read, tx: SyncSender<Line>, max: usize) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut buf = Vec::new();
        let read = (&mut reader)
            .take(max as u64 + 1)
            .read_until(b'\n', &mut buf);
        let line = match read {
            Ok(0) | Err(_) => Line::Eof,
            Ok(n) if buf.last() != Some(&b'\n') && n > max => Line::TooLong(n),
            Ok(_) => {
                while matches!(buf.last(), Some(b'\n' | b'\r')) {
                    buf.pop();
                }
                Line::Text(String::from_utf8_lossy(&buf).into_owned())
            }
        };
        let last = !matches!(line, Line::Text(_));
        if tx.send(line).is_err() || last {
            return;
        }
    }
}

fn read_tail(mut stderr: impl Read, tail: Arc<Mutex<VecDeque<u8>>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf) {
        if n == 0 {
            return;
        }
        let Ok(mut t) = tail.lock() else { return };
        t.extend(&buf[..n]);
        let excess = t.len().saturating_sub(STDERR_TAIL_BYTES);
        t.drain(..excess);
    }
}

#[cfg(unix)]
fn own_process_group(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe; between fork and exec we only ask
    // the kernel to SIGKILL the child if the harness dies first (Ctrl-C),
    // so no implementation outlives it even when Drop cannot run.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn own_process_group(_cmd: &mut Command) {}
