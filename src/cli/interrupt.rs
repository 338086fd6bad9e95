//! Ctrl-C (and, for a campaign, SIGTERM) as a flag a long command polls:
//! `fencesim check` stops its searches, `fencesim campaign` writes its
//! checkpoint and stops. A signal arriving once sets the flag and restores
//! the default action, so a second one kills at once should the command
//! not stop. Outside [`catch`]..[`restore_default`] the signals keep their
//! default action (the process dies).

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_signal(signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
    // Async-signal-safe.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
    }
}

/// SIGINT alone (Ctrl-C).
#[cfg(unix)]
pub const CTRL_C: &[libc::c_int] = &[libc::SIGINT];
/// SIGINT and SIGTERM: Ctrl-C, and what a batch system or `kill` sends
/// first when it ends a task.
#[cfg(unix)]
pub const CTRL_C_AND_TERM: &[libc::c_int] = &[libc::SIGINT, libc::SIGTERM];
#[cfg(not(unix))]
pub const CTRL_C: &[i32] = &[];
#[cfg(not(unix))]
pub const CTRL_C_AND_TERM: &[i32] = &[];

/// Installs the handler for `signals`; returns the flag it sets (`None`
/// when it could not be installed).
#[cfg(unix)]
pub fn catch(signals: &[libc::c_int]) -> Option<&'static AtomicBool> {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    let mut ok = true;
    for &s in signals {
        // Safety: the handler only stores to an atomic and calls signal(2).
        ok &= unsafe { libc::signal(s, handler) } != libc::SIG_ERR;
    }
    ok.then_some(&INTERRUPTED)
}

#[cfg(not(unix))]
pub fn catch(_: &[i32]) -> Option<&'static AtomicBool> {
    None
}

/// Gives `signals` their default action back.
#[cfg(unix)]
pub fn restore_default(signals: &[libc::c_int]) {
    for &s in signals {
        // Safety: restoring the default disposition.
        unsafe {
            libc::signal(s, libc::SIG_DFL);
        }
    }
}

#[cfg(not(unix))]
pub fn restore_default(_: &[i32]) {}
