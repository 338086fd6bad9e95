//! The harness's hold on its child processes: every child dies with the
//! harness, and signals — SIGSTOP confirmed in /proc, SIGCONT, SIGKILL —
//! reach one process or a whole process group.
//!
//! Why a file of its own: the servers, the clusters, the built-in workers
//! and a user's programs are all children the harness pauses and kills on
//! purpose, and each of their files needs these few calls. Kept below all
//! of them, it is what lets them not import one another.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

/// Children die with the harness: PR_SET_PDEATHSIG fires when the spawning
/// thread exits, so callers spawn from the main thread only.
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe; nothing else runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

pub fn kill(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a pid we spawned.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// A signal to every process of the group `pgid` (kill(2) with `-pgid`): a
/// user's program may be a shell and the children it started.
pub fn kill_group(pgid: u32, sig: i32) {
    kill(0u32.wrapping_sub(pgid), sig);
}

/// Process state letter from /proc/<pid>/stat (`T` = stopped).
pub fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the parenthesised command name, which may hold spaces.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Who a fault's signals go to: one process (a built-in worker) or a
/// process group (a user's program, `sh -c CMD` and its children).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Victim {
    Process(u32),
    Group(u32),
}

impl Victim {
    pub fn signal(self, sig: i32) {
        match self {
            Victim::Process(pid) => kill(pid, sig),
            Victim::Group(pgid) => kill_group(pgid, sig),
        }
    }

    /// The process whose /proc state tells whether the stop took (a group's
    /// leader for a group).
    fn pid(self) -> u32 {
        match self {
            Victim::Process(pid) | Victim::Group(pid) => pid,
        }
    }
}

/// SIGSTOP, then wait (at most 2 s) until the kernel reports the process
/// stopped: a pause is in force before anyone else can observe anything.
/// Ok(how long the stop took to confirm); Err(how long it was waited for)
/// when it never showed as stopped.
pub fn stop_confirmed(victim: Victim) -> Result<Duration, Duration> {
    let start = Instant::now();
    victim.signal(libc::SIGSTOP);
    while start.elapsed() < Duration::from_secs(2) {
        if matches!(proc_state(victim.pid()), Some('T') | Some('t')) {
            return Ok(start.elapsed());
        }
        std::thread::yield_now();
    }
    Err(start.elapsed())
}
