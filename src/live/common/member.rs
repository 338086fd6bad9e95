//! How a lock server's room runs the members of its three-member cluster:
//! which of each member's ports are peer ports (member to member, cut by a
//! partition) and the command that starts each member on its real ports,
//! told the ports of the links in front of every member. The cluster
//! ([`crate::live::cluster`]) allocates the ports, starts the links and the
//! members, and does the faults.

use std::path::PathBuf;

/// One member's start: its binary, arguments and log file.
pub(crate) struct MemberCommand {
    pub bin: PathBuf,
    pub args: Vec<String>,
    pub log: PathBuf,
}

/// A member's ports: `real[k]` where it listens, `linked[k]` the link in
/// front of it (the port everyone else dials). Slot 0 is the client port.
pub(crate) struct Ports<'a> {
    pub real: &'a [Vec<u16>],
    pub linked: &'a [Vec<u16>],
}
