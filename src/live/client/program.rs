//! A user's program as a process: `sh -c CMD` in its own process group,
//! with its environment, its output kept (the last 64 KiB) for a failure's
//! report, and its group ended by the validate mode's reaper on drop.

use std::io::Read;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

use crate::live::locked;
use crate::live::process::{self, kill_group};
use crate::validate::reaper;

/// A running user program: its group is ended (reaper) on drop.
pub(super) struct UserProc {
    pub(super) name: String,
    pub(super) child: Child,
    pub(super) tag: String,
    pub(super) output: Arc<Mutex<Vec<u8>>>,
    pub(super) done: Option<std::process::ExitStatus>,
}

impl Drop for UserProc {
    fn drop(&mut self) {
        if self.done.is_none() {
            kill_group(self.child.id(), libc::SIGCONT);
            kill_group(self.child.id(), libc::SIGKILL);
        }
        reaper::end_node(self.child.id(), &self.tag);
        let _ = self.child.wait();
    }
}

impl UserProc {
    pub(super) fn tail(&self) -> String {
        let out = locked(&self.output);
        let text = String::from_utf8_lossy(&out);
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(12);
        if lines.is_empty() {
            "(no output)".into()
        } else {
            lines[from..].join("\n    ")
        }
    }
}

/// Starts worker `i`'s program (`sh -c CMD`, its own process group) with
/// its environment; its output is kept for a failure's report.
pub(super) fn spawn(cmd: &str, name: &str, env: &[(&'static str, String)]) -> Result<UserProc> {
    let tag = reaper::new_tag();
    let mut c = process::command("sh");
    c.arg("-c")
        .arg(cmd)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env(reaper::TAG_VAR, &tag)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    let mut child = c
        .spawn()
        .with_context(|| format!("starting worker {name} as `sh -c {cmd}`"))?;
    let output: Arc<Mutex<Vec<u8>>> = Arc::default();
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let out = output.clone();
        std::thread::spawn(move || {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            while let Ok(k) = stream.read(&mut buf) {
                if k == 0 {
                    break;
                }
                let mut o = locked(&out);
                o.extend_from_slice(&buf[..k]);
                let excess = o.len().saturating_sub(64 * 1024);
                o.drain(..excess);
            }
        });
    }
    Ok(UserProc {
        name: name.to_string(),
        child,
        tag,
        output,
        done: None,
    })
}

pub(super) fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with code {c}"),
        (_, Some(sig)) => format!("was killed by signal {sig}"),
        _ => format!("ended: {status}"),
    }
}
