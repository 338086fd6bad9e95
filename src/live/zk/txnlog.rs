//! ZooKeeper's own transaction log, read from a member's data directory
//! (`dataDir/version-2/log.<first zxid, hex>`, the `FileTxnLog` format of
//! ZooKeeper 3.x; captured from 3.8.0): what the ensemble committed, in its
//! own words, for the account of a user's ZooKeeper lock.
//!
//! A file is a header (magic `ZKLG`, version, dbid) and then records:
//! an Adler-32 checksum (int64), a length (int32), that many bytes — a
//! `TxnHeader` (session id int64, the client's xid int32, zxid int64, the
//! leader's wall-clock time in ms int64, type int32) and the transaction's
//! body (and, since 3.6, a digest we skip) — and a `B` (0x42). Files are
//! preallocated with zeros, so a zero length ends the file for now; a
//! record whose checksum does not match is one being written (read again
//! later). Only what the lock needs is decoded: creates (path, ephemeral),
//! deletes, session creates and closes, multi-operations; every other
//! type keeps its number (the account decides whether it matters).

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// `ZKLG`, the first int32 of every log file.
const MAGIC: i32 = 0x5a4b_4c47;
const FILE_HEADER_BYTES: u64 = 16;
/// A record's checksum and length.
const RECORD_HEAD_BYTES: u64 = 12;
/// Larger than any transaction of a lock (ZooKeeper's jute.maxbuffer is 1 MiB).
const MAX_RECORD_BYTES: i32 = 16 << 20;

/// What one transaction did, as far as a lock cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// create (1), create2 (15), createContainer (19), createTTL (21): the
    /// znode's full path (a sequential one with its suffix), whether it is
    /// ephemeral (owned by the transaction's session) and whether it is
    /// sequential (its suffix is the server's: [`sequential`]).
    Create {
        path: String,
        ephemeral: bool,
        sequential: bool,
    },
    /// delete (2), deleteContainer (20).
    Delete { path: String },
    /// createSession (-10).
    CreateSession,
    /// closeSession (-11): every ephemeral of the session goes with it.
    CloseSession,
    /// multi (14): its operations, applied in order in one transaction.
    Multi(Vec<Op>),
    /// error (-1): a failed request that changed nothing.
    Error,
    /// setData (5), setACL (7), check (13): a znode's data or ACL, never its existence.
    Touch { path: String },
    /// Any other type (its number).
    Other(i32),
}

/// One logged transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Txn {
    pub session: i64,
    /// The client's request xid; 0 for what the server does itself (a session's expiry).
    pub cxid: i32,
    pub zxid: i64,
    /// The leader's wall clock when it prepared the transaction (ms since the epoch).
    pub time_ms: i64,
    pub op: Op,
}

/// Adler-32 (RFC 1950), the checksum FileTxnLog writes.
pub fn adler32(bytes: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in bytes.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// A reader of jute's big-endian encoding.
pub struct Jute<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Jute<'a> {
    pub fn new(bytes: &'a [u8]) -> Jute<'a> {
        Jute { bytes, at: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).context("jute: length overflow")?;
        let s = self.bytes.get(self.at..end).with_context(|| {
            format!(
                "jute: {n} bytes wanted at {}, {} left",
                self.at,
                self.bytes.len().saturating_sub(self.at)
            )
        })?;
        self.at = end;
        Ok(s)
    }

    pub fn int(&mut self) -> Result<i32> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn long(&mut self) -> Result<i64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    pub fn boolean(&mut self) -> Result<bool> {
        Ok(self.take(1)?[0] != 0)
    }

    /// A buffer (int32 length, -1 for null).
    pub fn buffer(&mut self) -> Result<&'a [u8]> {
        let n = self.int()?;
        if n < 0 {
            return Ok(&[]);
        }
        self.take(n as usize)
    }

    pub fn string(&mut self) -> Result<String> {
        Ok(String::from_utf8_lossy(self.buffer()?).into_owned())
    }
}

/// Whether a created znode's name is sequential: the server appended the
/// parent's child version before the create as ten digits, and the
/// transaction carries that version after it (`parentCVersion`, one more).
/// A name that merely ends in ten digits (a lease named by a random hex
/// id) is not, unless the version says so; without the version (a record
/// that lacks it) the ten digits are taken at their word.
pub fn sequential(path: &str, parent_cversion: Option<i32>) -> bool {
    let Some(digits) = path.get(path.len().saturating_sub(10)..) else {
        return false;
    };
    if path.len() < 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    match parent_cversion {
        Some(v) => digits.parse::<i64>().ok() == Some(i64::from(v) - 1),
        None => true,
    }
}

/// A transaction's body of type `kind`.
fn op(kind: i32, body: &[u8]) -> Result<Op> {
    let mut j = Jute::new(body);
    Ok(match kind {
        1 | 15 | 19 | 21 => {
            let path = j.string()?;
            j.buffer()?;
            let acls = j.int()?;
            for _ in 0..acls.max(0) {
                j.int()?;
                j.string()?;
                j.string()?;
            }
            // CreateContainerTxn and CreateTTLTxn have no ephemeral flag.
            let ephemeral = matches!(kind, 1 | 15) && j.boolean()?;
            let parent_cversion = j.int().ok();
            let sequential = sequential(&path, parent_cversion);
            Op::Create {
                path,
                ephemeral,
                sequential,
            }
        }
        2 | 20 => Op::Delete { path: j.string()? },
        5 | 7 | 13 => Op::Touch { path: j.string()? },
        -10 => Op::CreateSession,
        -11 => Op::CloseSession,
        -1 => Op::Error,
        14 => {
            let n = j.int()?;
            let mut ops = Vec::new();
            for _ in 0..n.max(0) {
                let sub = j.int()?;
                let data = j.buffer()?;
                ops.push(
                    op(sub, data).with_context(|| format!("multi's operation of type {sub}"))?,
                );
            }
            Op::Multi(ops)
        }
        other => Op::Other(other),
    })
}

/// One record's bytes (header and body) as a transaction.
pub fn parse_txn(bytes: &[u8]) -> Result<Txn> {
    let mut j = Jute::new(bytes);
    let session = j.long()?;
    let cxid = j.int()?;
    let zxid = j.long()?;
    let time_ms = j.long()?;
    let kind = j.int()?;
    let op = op(kind, &bytes[j.at..]).with_context(|| format!("zxid {zxid:#x}, type {kind}"))?;
    Ok(Txn {
        session,
        cxid,
        zxid,
        time_ms,
        op,
    })
}

/// The complete records of `file` from byte `from` (past the header),
/// and the offset after the last one: stops at a zero length (the
/// preallocated end), at the end of the file, or at a record not yet
/// completely written (its checksum or terminator does not match).
pub fn read_from(file: &File, from: u64) -> Result<(Vec<Txn>, u64)> {
    let mut at = from;
    if at < FILE_HEADER_BYTES {
        let mut head = [0u8; FILE_HEADER_BYTES as usize];
        if file.read_exact_at(&mut head, 0).is_err() {
            return Ok((Vec::new(), 0));
        }
        let magic = Jute::new(&head).int()?;
        if magic != MAGIC {
            bail!("not a ZooKeeper transaction log (magic {magic:#x})");
        }
        at = FILE_HEADER_BYTES;
    }
    let mut txns = Vec::new();
    loop {
        let mut head = [0u8; RECORD_HEAD_BYTES as usize];
        if file.read_exact_at(&mut head, at).is_err() {
            break;
        }
        let mut j = Jute::new(&head);
        let sum = j.long()?;
        let len = j.int()?;
        if len <= 0 || len > MAX_RECORD_BYTES {
            break;
        }
        let mut body = vec![0u8; len as usize + 1];
        if file
            .read_exact_at(&mut body, at + RECORD_HEAD_BYTES)
            .is_err()
        {
            break;
        }
        let end = body.pop();
        if end != Some(b'B') || i64::from(adler32(&body)) != sum {
            break;
        }
        txns.push(parse_txn(&body)?);
        at += RECORD_HEAD_BYTES + len as u64 + 1;
    }
    Ok((txns, at))
}

/// One member's logs, read as they grow: every transaction it logged, by zxid.
pub struct MemberLog {
    dir: PathBuf,
    /// Per log file (its first zxid): how far it has been read.
    read_to: BTreeMap<i64, u64>,
    pub txns: BTreeMap<i64, Txn>,
}

impl MemberLog {
    /// `dir`: the member's `dataDir/version-2`.
    pub fn new(dir: &Path) -> MemberLog {
        MemberLog {
            dir: dir.to_path_buf(),
            read_to: BTreeMap::new(),
            txns: BTreeMap::new(),
        }
    }

    /// Reads what was logged since the last call.
    pub fn catch_up(&mut self) -> Result<()> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            // No transaction logged yet.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", self.dir.display())),
        };
        let mut files: Vec<(i64, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let first = i64::from_str_radix(name.strip_prefix("log.")?, 16).ok()?;
                Some((first, e.path()))
            })
            .collect();
        files.sort();
        for (first, path) in files {
            let file = File::open(&path).with_context(|| format!("opening {}", path.display()))?;
            let from = self.read_to.get(&first).copied().unwrap_or(0);
            // A truncated file (a member told to drop proposals it never committed): read again.
            let from = if file.metadata().map_or(0, |m| m.len()) < from {
                0
            } else {
                from
            };
            let (txns, to) =
                read_from(&file, from).with_context(|| format!("reading {}", path.display()))?;
            self.read_to.insert(first, to);
            for t in txns {
                self.txns.insert(t.zxid, t);
            }
        }
        Ok(())
    }
}

/// The transactions in the logs of a majority of `members`, in zxid order
/// (a leader that was cut off or killed may have logged proposals the
/// ensemble never committed: those are in its log alone).
pub fn committed(members: &[MemberLog]) -> Vec<&Txn> {
    let quorum = members.len() / 2 + 1;
    let mut count: BTreeMap<i64, (usize, &Txn)> = BTreeMap::new();
    for m in members {
        for (z, t) in &m.txns {
            count.entry(*z).or_insert((0, t)).0 += 1;
        }
    }
    count
        .into_values()
        .filter(|(n, _)| *n >= quorum)
        .map(|(_, t)| t)
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A real log of ZooKeeper 3.8.0 (standalone), its zero preallocation
    /// cut off: kazoo 2.11.0's `Lock` taken by A (session …0000), then by
    /// B (…0001) once A deleted its znode; C (…0002) takes it and its
    /// session expires; D (…0003) takes it and closes its session; then a
    /// multi creates one more lock child and a plain znode.
    pub(crate) fn capture() -> Vec<Txn> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/zk/kazoo-lock.log");
        let file = File::open(path).unwrap();
        let (txns, to) = read_from(&file, 0).unwrap();
        assert_eq!(to, file.metadata().unwrap().len());
        txns
    }

    #[test]
    fn adler32_is_rfc_1950s() {
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(adler32(b""), 1);
    }

    #[test]
    fn a_name_is_sequential_when_its_digits_are_the_parents_version_before_it() {
        assert!(sequential("/l/x__lock__0000000004", Some(5)));
        assert!(!sequential("/l/9f0c1e2d3b4a5c6d7e8f901234567890", Some(3)));
        assert!(!sequential("/l/lease", Some(1)));
        assert!(sequential("/l/x0000000004", None));
    }

    #[test]
    fn the_captured_log_reads_as_the_server_wrote_it() {
        let txns = capture();
        assert_eq!(txns.len(), 19);
        let zxids: Vec<i64> = txns.iter().map(|t| t.zxid).collect();
        assert_eq!(zxids, (1..=19).collect::<Vec<i64>>());
        let lock = "/fencesim/lock-doc/";
        let a = &txns[4];
        assert_eq!(
            a.op,
            Op::Create {
                path: format!("{lock}6f58b3de18e54f2eb0742ca4bc79292e__lock__0000000000"),
                ephemeral: true,
                sequential: true
            }
        );
        assert_eq!(a.session, 0x100000d87e10000);
        assert_eq!(a.time_ms, 1796323611126);
        // The parent the lock created is persistent.
        assert_eq!(
            txns[3].op,
            Op::Create {
                path: "/fencesim/lock-doc".into(),
                ephemeral: false,
                sequential: false
            }
        );
        assert!(matches!(&txns[6].op, Op::Delete { path } if path.ends_with("__lock__0000000000")));
        assert_eq!(txns[0].op, Op::CreateSession);
        // C's session expired: the server's closeSession, xid 0; D closed its own.
        assert_eq!(
            (txns[12].op.clone(), txns[12].session, txns[12].cxid),
            (Op::CloseSession, 0x100000d87e10002, 0)
        );
        assert_eq!(
            (txns[13].op.clone(), txns[13].session, txns[13].cxid),
            (Op::CloseSession, 0x100000d87e10003, 6)
        );
        assert_eq!(
            txns[17].op,
            Op::Multi(vec![
                Op::Create {
                    path: format!("{lock}e__lock__0000000004"),
                    ephemeral: true,
                    sequential: true
                },
                Op::Create {
                    path: "/fencesim/other".into(),
                    ephemeral: false,
                    sequential: false
                },
            ])
        );
    }

    #[test]
    fn a_record_not_yet_completely_written_is_read_later() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/zk/kazoo-lock.log");
        let bytes = std::fs::read(path).unwrap();
        let dir = std::env::temp_dir().join(format!("fencesim-zk-txnlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("log.1");
        // Cut in the middle of the last record, then zeros (preallocation).
        let mut cut = bytes[..bytes.len() - 20].to_vec();
        cut.extend(vec![0u8; 4096]);
        std::fs::write(&file, &cut).unwrap();
        let mut m = MemberLog::new(&dir);
        m.catch_up().unwrap();
        assert_eq!(m.txns.len(), 18);
        std::fs::write(&file, &bytes).unwrap();
        m.catch_up().unwrap();
        assert_eq!(m.txns.len(), 19);
        // A second and a third member, one lagging: the majority has 18.
        let mut lag = MemberLog::new(&dir);
        lag.catch_up().unwrap();
        lag.txns.remove(&19);
        let none = MemberLog::new(&dir.join("absent"));
        assert_eq!(committed(&[m, lag, none]).len(), 18);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
