//! Which key is a user's program's etcd lock, found in etcd's own account
//! (the watch on every key) when the scenario does not name it exactly: a
//! key a worker created with its lease (or, without one, by its own
//! write) stands for the lock it is — itself for a key created if absent
//! (the `etcd3` package's lock, python-etcd3's), its prefix for etcd's
//! Mutex recipe and the server-side lock (`<prefix>/<lease hex>`, the
//! lowest holds) — and the lock is the one that passed from one worker to
//! another ([`Candidates::choose`]). A named prefix or glob chooses among
//! those it matches (as the lock or as the key itself).

use crate::live::common::keys::{Candidates, KeyChoice};

/// A key a worker's (or no worker's) write created, as the account saw it.
pub struct Created<'a> {
    pub key: &'a [u8],
    /// Its lease (0: none).
    pub lease: u64,
    /// The worker whose lease or write created it.
    pub owner: Option<usize>,
}

/// The lock a created key stands for: its prefix when its last part is
/// its lease's id in hex (etcd's Mutex: `<prefix>/<lease hex>`), else the
/// key itself.
pub fn lock_of_key(key: &[u8], lease: u64) -> &[u8] {
    let hex = format!("{lease:x}");
    match key.iter().rposition(|b| *b == b'/') {
        Some(slash) if lease != 0 && key[slash + 1..] == *hex.as_bytes() => &key[..slash],
        _ => key,
    }
}

/// Whether `key` is the lock `lock` or one of its contenders (`lock/…`).
pub fn under(lock: &[u8], key: &[u8]) -> bool {
    key == lock || (key.starts_with(lock) && key.get(lock.len()) == Some(&b'/'))
}

/// The lock among the keys created (in revision order): Ok(None) none
/// matching `choice` was, Err the candidates when the choice is not clear.
/// `told` is the key fencesim gave the programs.
pub fn lock_key<'a>(
    created: impl IntoIterator<Item = Created<'a>>,
    choice: &KeyChoice,
    told: &[u8],
) -> Result<Option<Vec<u8>>, String> {
    if let Some(exact) = choice.exact() {
        return Ok(Some(exact.as_bytes().to_vec()));
    }
    let mut candidates = Candidates::default();
    let (mut first, mut stranger): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    for e in created {
        let lock = lock_of_key(e.key, e.lease);
        if !(choice.matches(lock) || choice.matches(e.key)) {
            continue;
        }
        match e.owner {
            Some(worker) => {
                candidates.created(lock, worker);
                first.get_or_insert(lock);
            }
            // No worker's: the lock only when no worker created one (its
            // fold then says whose it cannot be).
            None => {
                stranger.get_or_insert(lock);
            }
        }
    }
    candidates.choose(first.or(stranger), &[told])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys created with leases 1 and 3 (worker 0), 2 (worker 1), others no worker's.
    fn created<'a>(keys: &[(&'a str, u64)]) -> Vec<Created<'a>> {
        keys.iter()
            .map(|&(key, lease)| Created {
                key: key.as_bytes(),
                lease,
                owner: match lease {
                    1 | 3 => Some(0),
                    2 => Some(1),
                    _ => None,
                },
            })
            .collect()
    }

    #[test]
    fn a_mutex_key_stands_for_its_prefix_and_a_key_created_if_absent_for_itself() {
        assert_eq!(lock_of_key(b"app/locks/inv/694d", 0x694d), b"app/locks/inv");
        assert_eq!(lock_of_key(b"app/locks/inv", 0x694d), b"app/locks/inv");
        assert_eq!(lock_of_key(b"app/x/694e", 0x694d), b"app/x/694e");
        assert!(under(b"a/b", b"a/b") && under(b"a/b", b"a/b/1") && !under(b"a/b", b"a/bc"));
    }

    #[test]
    fn the_lock_is_the_key_that_passed_between_workers_and_a_glob_chooses() {
        let keys = [
            ("app/counter", 1),
            ("app/locks/inv/1", 1),
            ("app/locks/inv/2", 2),
            ("stranger", 9),
        ];
        let any = KeyChoice::any();
        let found = lock_key(created(&keys), &any, b"fencesim/lock/doc");
        assert_eq!(found, Ok(Some(b"app/locks/inv".to_vec())));
        // One worker only: the first created stands.
        let found = lock_key(created(&keys[..2]), &any, b"f");
        assert_eq!(found, Ok(Some(b"app/counter".to_vec())));
        let mut two = keys.to_vec();
        two.push(("app/counter", 2));
        let why = lock_key(created(&two), &any, b"f").unwrap_err();
        assert!(why.contains("app/counter (by worker 0, worker 1)"), "{why}");
        let glob = KeyChoice::parse("app/locks/*").unwrap();
        let found = lock_key(created(&two), &glob, b"f");
        assert_eq!(found, Ok(Some(b"app/locks/inv".to_vec())));
        // A key no worker created is the lock only when no worker created one.
        let stranger = KeyChoice::parse("stranger*").unwrap();
        let found = lock_key(created(&keys), &stranger, b"f");
        assert_eq!(found, Ok(Some(b"stranger".to_vec())));
        let nothing = KeyChoice::parse("nothing*").unwrap();
        assert_eq!(lock_key(created(&keys), &nothing, b"f"), Ok(None));
    }
}
