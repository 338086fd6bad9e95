//! The harness's hold on its child processes: every child dies with the
//! harness, and signals — SIGSTOP confirmed in /proc, SIGCONT, SIGKILL —
//! reach one process or a whole process group.
//!
//! Why a file of its own: the servers, the clusters, the built-in workers
//! and a user's programs are all children the harness pauses and kills on
//! purpose, and each of their files needs these few calls. Kept below all
//! of them, it is what lets them not import one another.

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// util-linux's `setpriv`, which sets the parent-death signal and execs the
/// program (same pid, same process group; the setting survives `execve`).
const SETPRIV: &str = "/usr/bin/setpriv";

/// A command for `program` whose process dies with the harness (what each
/// trial spawns: the built-in workers and a user's programs):
/// PR_SET_PDEATHSIG (SIGKILL) fires when the spawning thread exits, so
/// callers spawn from the main thread only.
///
/// Why through `setpriv` and not a `pre_exec` closure: a closure makes std
/// fork the harness, and a fork of a many-threaded process with a large
/// heap copies its page tables and leaves every page copy-on-write, so the
/// harness then faults on each page it writes — a live search spawning
/// several programs a trial spent most of its CPU in the kernel that way
/// (docs/live-search.md, "Speed"). Without a closure std spawns with
/// `posix_spawn` (a vfork), which copies nothing. Where `setpriv` is
/// missing, the closure is the fallback.
pub fn command(program: impl AsRef<OsStr>) -> Command {
    if Path::new(SETPRIV).exists() {
        let mut cmd = Command::new(SETPRIV);
        cmd.args(["--pdeathsig", "KILL", "--"]).arg(program);
        cmd
    } else {
        let mut cmd = Command::new(program);
        die_with_parent(&mut cmd);
        cmd
    }
}

/// The same for a command already built (a server, spawned once a job or
/// a restart, where a fork costs little): by a `pre_exec` closure, so a
/// program that does not exist is refused by `spawn` itself.
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

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    /// The parent-death signal is the spawning thread's: a program started
    /// by `command` from a thread that then ends is killed with it.
    #[test]
    fn a_program_dies_with_the_thread_that_spawned_it() {
        // The thread outlives the signal's setting: `setpriv` sets it and
        // then execs the program, and a parent gone before that sends none.
        let spawned = std::thread::spawn(|| {
            let child = command("sleep").arg("30").spawn()?;
            let comm = format!("/proc/{}/comm", child.id());
            while std::fs::read_to_string(&comm).is_ok_and(|c| c.trim() != "sleep") {
                std::thread::yield_now();
            }
            std::io::Result::Ok(child)
        });
        let mut child = (spawned.join())
            .expect("the spawning thread ends")
            .expect("sleep starts");
        let status = child.wait().expect("sleep is waited for");
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    }

    /// The same through a process group (a user's program), as the
    /// program's spawn sets it: the group is the program's own pid.
    #[test]
    fn a_program_in_its_own_group_keeps_its_pid_as_the_group() {
        let mut cmd = command("sleep");
        cmd.arg("30").process_group(0);
        let mut child = cmd.spawn().expect("sleep starts");
        let pid = child.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let pgrp = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|g| g.parse::<u32>().ok());
        kill_group(pid, libc::SIGKILL);
        let status = child.wait().expect("sleep is waited for");
        assert_eq!(pgrp, Some(pid));
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    }
}
