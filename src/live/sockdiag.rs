//! The inode of one loopback TCP socket, asked of the kernel by its ports.
//!
//! A cluster link must know which member called it (a partition refuses
//! the cut-off member's connections, [`super::cluster`]), and the socket's
//! inode is what ties a connection to a process (`/proc/<pid>/fd`).
//! Scanning `/proc/net/tcp` for it walks the kernel's whole connection hash
//! table on every read: measured, that scan was 40% of a 4-job live run's
//! busy CPU. `NETLINK_SOCK_DIAG` answers the same question for one
//! 4-tuple with a hash lookup. The caller falls back to the scan when this
//! answers nothing usable (no netlink, a socket in TIME_WAIT).

use std::mem::size_of;

/// `SOCK_DIAG_BY_FAMILY` (linux/sock_diag.h).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `NLMSG_ERROR` (linux/netlink.h).
const NLMSG_ERROR: u16 = 2;
const TCP_TIME_WAIT: u8 = 6;
const TCP_LISTEN: u8 = 10;

/// `struct inet_diag_sockid` (linux/inet_diag.h): ports and addresses in
/// network byte order.
#[repr(C)]
#[derive(Clone, Copy)]
struct SockId {
    sport: u16,
    dport: u16,
    src: [u32; 4],
    dst: [u32; 4],
    interface: u32,
    cookie: [u32; 2],
}

/// `struct nlmsghdr` followed by `struct inet_diag_req_v2`.
#[repr(C)]
struct Request {
    len: u32,
    kind: u16,
    flags: u16,
    seq: u32,
    pid: u32,
    family: u8,
    protocol: u8,
    ext: u8,
    pad: u8,
    states: u32,
    id: SockId,
}

/// The inode of the TCP socket whose local end is `127.0.0.1:local_port`
/// and whose peer is `127.0.0.1:remote_port` (an IPv4 socket, or an IPv6
/// one connected through an IPv4-mapped address, as a JVM's are). None:
/// no such live socket, or the kernel could not be asked.
pub fn loopback_inode(local_port: u16, remote_port: u16) -> Option<u32> {
    let lo = u32::from_ne_bytes([127, 0, 0, 1]);
    let mapped = [0, 0, u32::from_ne_bytes([0, 0, 0xff, 0xff]), lo];
    [
        (libc::AF_INET as u8, [lo, 0, 0, 0]),
        (libc::AF_INET6 as u8, mapped),
    ]
    .into_iter()
    .find_map(|(family, addr)| ask(family, local_port, remote_port, addr))
}

/// One exact lookup (no dump) of a socket of `family`.
fn ask(family: u8, local_port: u16, remote_port: u16, addr: [u32; 4]) -> Option<u32> {
    let req = Request {
        len: size_of::<Request>() as u32,
        kind: SOCK_DIAG_BY_FAMILY,
        flags: libc::NLM_F_REQUEST as u16,
        seq: 1,
        pid: 0,
        family,
        protocol: libc::IPPROTO_TCP as u8,
        ext: 0,
        pad: 0,
        states: !0,
        id: SockId {
            sport: local_port.to_be(),
            dport: remote_port.to_be(),
            src: addr,
            dst: addr,
            interface: 0,
            // INET_DIAG_NOCOOKIE: look the socket up by its addresses.
            cookie: [!0, !0],
        },
    };
    // SAFETY: a socket we own, closed below on every path; the request is
    // a plain repr(C) struct sent whole, and the reply is read into a
    // buffer of the length we pass.
    unsafe {
        let fd = libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        );
        if fd < 0 {
            return None;
        }
        let sent = libc::send(fd, (&req as *const Request).cast(), size_of::<Request>(), 0);
        let mut buf = [0u8; 1024];
        let got = if sent == size_of::<Request>() as isize {
            libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0)
        } else {
            -1
        };
        libc::close(fd);
        if got < 0 {
            return None;
        }
        parse(&buf[..got as usize])
    }
}

/// The reply's inode: `struct nlmsghdr` (16 bytes), then `struct
/// inet_diag_msg` — family, state, timer, retrans, the 48-byte sockid,
/// expires, rqueue, wqueue, uid, inode. A listener, a TIME_WAIT socket
/// (inode 0) or an error reply (ENOENT) is no answer.
fn parse(reply: &[u8]) -> Option<u32> {
    let u16_at = |i: usize| Some(u16::from_ne_bytes(reply.get(i..i + 2)?.try_into().ok()?));
    let u32_at = |i: usize| Some(u32::from_ne_bytes(reply.get(i..i + 4)?.try_into().ok()?));
    let kind = u16_at(4)?;
    if kind == NLMSG_ERROR || kind != SOCK_DIAG_BY_FAMILY {
        return None;
    }
    let state = *reply.get(17)?;
    let inode = u32_at(16 + 4 + size_of::<SockId>() + 16)?;
    (state != TCP_LISTEN && state != TCP_TIME_WAIT && inode != 0).then_some(inode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    /// The inode `/proc/self/fd` gives for a socket we hold.
    fn inode_of(fd: i32) -> u32 {
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
        let text = link.to_string_lossy();
        text.trim_start_matches("socket:[")
            .trim_end_matches(']')
            .parse()
            .unwrap()
    }

    #[test]
    fn the_kernel_names_the_inode_of_both_ends_of_a_loopback_connection() {
        use std::os::fd::AsRawFd;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let (c, s) = (client.local_addr().unwrap(), server.local_addr().unwrap());
        assert_eq!(
            loopback_inode(c.port(), s.port()),
            Some(inode_of(client.as_raw_fd()))
        );
        assert_eq!(
            loopback_inode(s.port(), c.port()),
            Some(inode_of(server.as_raw_fd()))
        );
        // No such connection: no answer (not the listener's inode).
        assert_eq!(loopback_inode(c.port(), s.port().wrapping_add(1)), None);
    }
}
