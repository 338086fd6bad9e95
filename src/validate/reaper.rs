//! Ending every process an implementation started, whatever it did to its
//! process group.
//!
//! Killing a node's process group is not enough: a grandchild that calls
//! `setsid` (a daemon) leaves the group, and once its parent exits it is
//! re-parented out of reach. So on Linux the harness is a *child
//! subreaper* (`PR_SET_CHILD_SUBREAPER`): orphans of its descendants become
//! its own children instead of init's. Every process a node starts also
//! inherits a tag in its environment ([`TAG_VAR`]), unique per node process.
//! When a node ends (crash, end of run, abort), [`end_node`] kills, in rounds
//! until none is left, the node's process tree (by parent pid, taken before
//! anything is killed) and every process carrying its tag, and reaps those
//! that were re-parented to the harness.
//!
//! A process that both leaves its group and clears its environment is found
//! only by being an orphan re-parented to the harness. The subreaper setting
//! is process-wide and the harness may share its process with other code
//! (a test runner spawning its own children), so adopting *every* orphan is
//! opt-in ([`adopt_orphans`]): the `validate` command, whose only children
//! are implementation processes, turns it on; then any child of the harness
//! that is not a live node process is an escaped descendant and is ended.
//! Without it, only processes found by tree or tag are signalled or reaped.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// The environment variable that tags a node process and its descendants.
pub const TAG_VAR: &str = "FENCESIM_PROCESS_TAG";

static NEXT_TAG: AtomicU64 = AtomicU64::new(1);
static ADOPT_ORPHANS: AtomicBool = AtomicBool::new(false);

/// Live node processes (the `sh -c` children) with their tags. Held across
/// a spawn so that an orphan sweep never mistakes a child being started for
/// an orphan.
pub static LIVE_ROOTS: Mutex<Vec<(u32, String)>> = Mutex::new(Vec::new());

/// A fresh tag for one node process: `<harness pid>.<serial>`.
pub fn new_tag() -> String {
    format!(
        "{}.{}",
        std::process::id(),
        NEXT_TAG.fetch_add(1, Ordering::Relaxed)
    )
}

/// Makes this process the subreaper of everything it starts (once).
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) only sets a flag on this process.
        ONCE.call_once(|| unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
        });
    }
}

/// Every orphan re-parented to this process is an escaped implementation
/// process and is ended with the next node (for a process whose only
/// children are node processes: the `validate` command).
pub fn adopt_orphans() {
    become_subreaper();
    ADOPT_ORPHANS.store(true, Ordering::Relaxed);
}

/// Ends node process `root` (already signalled or not), its descendants and
/// everything carrying `tag`; reaps those re-parented to the harness. `root`
/// itself is left for its `Child` handle to reap.
pub fn end_node(root: u32, tag: &str) {
    imp::end_node(root, tag)
}

/// With [`adopt_orphans`]: ends and reaps every child of the harness that is
/// not a live node process. An orphan that carries a live node's tag still
/// belongs to a running seed (a daemon between its forks, say) and is spared;
/// one that carries no tag at all cannot be attributed, so it is ended only
/// when no node is live — never in the middle of another seed's run, which
/// would make that run depend on its neighbours under `--jobs`.
pub fn end_orphans() {
    imp::end_orphans()
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use std::collections::BTreeSet;

    /// (pid, parent pid, is a zombie) of every process, from /proc.
    fn processes() -> Vec<(u32, u32, bool)> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| {
            let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The command name may hold spaces and parentheses: fields start after the last ')'.
            let rest = stat.rsplit_once(')')?.1;
            let mut fields = rest.split_whitespace();
            let state = fields.next()?;
            let ppid = fields.next()?.parse().ok()?;
            // A zombie is dead already; it needs reaping, not killing.
            Some((pid, ppid, state == "Z" || state == "X"))
        })
        .collect()
    }

    fn carries(pid: u32, tag: &str) -> bool {
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            return false;
        };
        let want = format!("{TAG_VAR}={tag}");
        env.split(|&b| b == 0).any(|v| v == want.as_bytes())
    }

    /// The tag in a process's environment (none for a zombie, or a process
    /// that cleared its environment).
    fn tag_of(pid: u32) -> Option<String> {
        let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let prefix = format!("{TAG_VAR}=");
        env.split(|&b| b == 0)
            .find_map(|v| v.strip_prefix(prefix.as_bytes()))
            .map(|t| String::from_utf8_lossy(t).into_owned())
    }

    fn descendants(procs: &[(u32, u32, bool)], root: u32) -> BTreeSet<u32> {
        let mut found = BTreeSet::from([root]);
        loop {
            let before = found.len();
            for &(pid, ppid, _) in procs {
                if found.contains(&ppid) {
                    found.insert(pid);
                }
            }
            if found.len() == before {
                return found;
            }
        }
    }

    fn kill(pid: u32) {
        // SAFETY: kill(2) has no memory effects.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }

    /// Reaps `pids` that are (or become) zombie children of this process;
    /// gives each up to five seconds to die after SIGKILL (a loaded machine
    /// can take well over a second to tear down a large process). One whose parent was
    /// killed too is re-parented to us (the subreaper) only once that parent
    /// is gone, so "not our child yet" is waited out while it still exists.
    fn reap(pids: &BTreeSet<u32>) {
        for &pid in pids {
            for _ in 0..2500 {
                let mut status = 0;
                // SAFETY: waitpid on one pid; -1 (ECHILD) if it is not our child.
                let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
                let gone =
                    r > 0 || (r < 0 && !std::path::Path::new(&format!("/proc/{pid}")).exists());
                if gone {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }

    pub fn end_node(root: u32, tag: &str) {
        let me = std::process::id();
        // Who belongs to the node is decided before anything dies: a killed
        // process turns into a zombie whose environment (its tag) can no
        // longer be read, and its orphaned children leave the tree. Every pid
        // found once is kept until it is reaped.
        let mut found: BTreeSet<u32> = BTreeSet::new();
        let collect = |procs: &[(u32, u32, bool)], found: &mut BTreeSet<u32>| {
            let mut fresh = false;
            for pid in descendants(procs, root) {
                fresh |= found.insert(pid);
            }
            for &(pid, _, zombie) in procs {
                if pid != me && !zombie && carries(pid, tag) {
                    fresh |= found.insert(pid);
                }
            }
            found.remove(&me);
            fresh
        };
        collect(&processes(), &mut found);
        // SAFETY: kill(2) with a negative pid signals the group the node
        // leads (it was started as its own group leader); no memory effects.
        unsafe {
            libc::kill(-(root as libc::pid_t), libc::SIGKILL);
        }
        // Rounds: a process forked between the snapshot and the kill, or
        // re-parented to us (the subreaper) when its parent died, is found
        // by tree or tag in the next round.
        for _ in 0..20 {
            for &pid in &found {
                kill(pid);
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
            if !collect(&processes(), &mut found) {
                break;
            }
        }
        // Every one but the root (its `Child` reaps it): those whose parent
        // died with them end up as our zombies.
        found.remove(&root);
        reap(&found);
        if ADOPT_ORPHANS.load(Ordering::Relaxed) {
            end_orphans();
        }
    }

    pub fn end_orphans() {
        if !ADOPT_ORPHANS.load(Ordering::Relaxed) {
            return;
        }
        let me = std::process::id();
        for _ in 0..20 {
            // Spawns hold this lock, so no child is between spawn and registration.
            let Ok(live) = LIVE_ROOTS.lock() else { return };
            let orphans: BTreeSet<u32> = processes()
                .into_iter()
                .filter(|&(pid, ppid, zombie)| {
                    if ppid != me || live.iter().any(|(root, _)| *root == pid) {
                        return false;
                    }
                    if zombie {
                        return true;
                    }
                    match tag_of(pid) {
                        Some(tag) => !live.iter().any(|(_, t)| *t == tag),
                        None => live.is_empty(),
                    }
                })
                .map(|(pid, _, _)| pid)
                .collect();
            drop(live);
            if orphans.is_empty() {
                return;
            }
            // Zombies among them (orphans that exited) are only reaped. Never
            // waitpid(-1): a live root's exit status belongs to its `Child`.
            for &pid in &orphans {
                kill(pid);
            }
            reap(&orphans);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub fn end_node(_root: u32, _tag: &str) {
        // Without /proc and a subreaper, the node's process group is all
        // that can be ended.
        #[cfg(unix)]
        // SAFETY: kill(2) with a negative pid signals the node's group.
        unsafe {
            libc::kill(-(_root as libc::pid_t), libc::SIGKILL);
        }
    }
    pub fn end_orphans() {}
}
