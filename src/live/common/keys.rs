//! Which key is a user's program's lock: named (`lock_key` in the scenario,
//! `--lock-key`) as an exact key, a prefix (`lock:invoice:*`) or a glob, or
//! left to the server's account to find — the key the workers create
//! conditionally and that passes from one worker to another.
//!
//! A name with none of `*`, `?`, `[` is an exact key; anything else is a
//! glob (`glob::Pattern`: `*` any run of characters, `/` included, `?` one,
//! `[…]` a class), so a prefix is the glob `prefix*`. No name is the glob
//! `*`: any key a worker creates conditionally may be the lock.

use std::collections::{BTreeMap, BTreeSet};

/// How the lock's key is named.
#[derive(Clone, Debug)]
pub enum KeyChoice {
    /// This key and no other.
    Exact(String),
    /// The key a worker first creates conditionally among those matching.
    Glob(glob::Pattern),
}

impl KeyChoice {
    /// `name` as written in a scenario or on the command line. Err: a glob
    /// that does not parse, with why.
    pub fn parse(name: &str) -> Result<KeyChoice, String> {
        if name.is_empty() {
            return Err(
                "an empty lock key; expected a key, a prefix ending in `*` or a glob".into(),
            );
        }
        if !name.contains(['*', '?', '[']) {
            return Ok(KeyChoice::Exact(name.to_string()));
        }
        glob::Pattern::new(name).map(KeyChoice::Glob).map_err(|e| {
            format!(
                "`{name}` is not a glob ({e}); expected a key, a prefix ending in `*` or a glob"
            )
        })
    }

    /// Any key: what the server's account finds.
    pub fn any() -> KeyChoice {
        KeyChoice::Glob(glob::Pattern::new("*").expect("`*` is a glob"))
    }

    /// Whether `key` may be the lock.
    pub fn matches(&self, key: &[u8]) -> bool {
        match self {
            KeyChoice::Exact(k) => k.as_bytes() == key,
            KeyChoice::Glob(p) => std::str::from_utf8(key).is_ok_and(|k| p.matches(k)),
        }
    }

    /// The key itself when it is named exactly.
    pub fn exact(&self) -> Option<&str> {
        match self {
            KeyChoice::Exact(k) => Some(k),
            KeyChoice::Glob(_) => None,
        }
    }

    /// As a message says it: `lock:doc`, or `a key matching lock:*`.
    pub fn describe(&self) -> String {
        match self {
            KeyChoice::Exact(k) => k.clone(),
            KeyChoice::Glob(p) if p.as_str() == "*" => "any key".to_string(),
            KeyChoice::Glob(p) => format!("a key matching {}", p.as_str()),
        }
    }
}

/// The keys the workers created conditionally, with who created each: the
/// evidence a lock key is chosen on, and named when the choice is not
/// clear.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    created: BTreeMap<Vec<u8>, BTreeSet<usize>>,
}

impl Candidates {
    /// `worker` created `key` conditionally.
    pub fn created(&mut self, key: &[u8], worker: usize) {
        self.created.entry(key.to_vec()).or_default().insert(worker);
    }

    /// The keys more than one worker created: a lock passes between workers.
    fn passed(&self) -> Vec<&Vec<u8>> {
        self.created
            .iter()
            .filter(|(_, workers)| workers.len() > 1)
            .map(|(k, _)| k)
            .collect()
    }

    /// Why `chosen` cannot be taken for the lock, if it cannot: the lock is
    /// the key that passed from one worker to another, so when another key
    /// did and `chosen` did not, or several did, the choice is not clear.
    pub fn ambiguity(&self, chosen: &[u8]) -> Option<String> {
        let clear = match self.passed().as_slice() {
            [] => true,
            [one] => one.as_slice() == chosen,
            _ => false,
        };
        if clear {
            return None;
        }
        Some(self.listing())
    }

    /// The lock among the candidates, for a server whose account is read
    /// whole (etcd's watch, ZooKeeper's logs): the one that passed between
    /// workers; of several, the one fencesim told the programs (`told`: the
    /// names it stands for) if it is one of them; none passed (one worker
    /// so far), the told one if created, else the first created (`first`).
    /// Err: the choice is not clear, with the candidates named.
    pub fn choose(&self, first: Option<&[u8]>, told: &[&[u8]]) -> Result<Option<Vec<u8>>, String> {
        let is_told = |k: &[u8]| told.contains(&k);
        let created_told = self.created.keys().find(|k| is_told(k));
        match self.passed().as_slice() {
            [] => Ok(created_told.cloned().or(first.map(<[u8]>::to_vec))),
            [one] => Ok(Some(one.to_vec())),
            several => match several.iter().find(|k| is_told(k)) {
                Some(k) => Ok(Some(k.to_vec())),
                None => Err(self.listing()),
            },
        }
    }

    /// Every candidate with who created it, and how to name the lock.
    fn listing(&self) -> String {
        let names: Vec<String> = self
            .created
            .iter()
            .map(|(k, w)| {
                let who: Vec<String> = w.iter().map(|w| format!("worker {w}")).collect();
                format!("{} (by {})", String::from_utf8_lossy(k), who.join(", "))
            })
            .collect();
        format!(
            "which key is the lock is not clear: the workers created several keys conditionally — {} — name the lock with `lock_key` in the scenario or --lock-key (an exact key, a prefix ending in `*`, or a glob)",
            names.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_without_wildcards_is_exact_and_a_prefix_is_a_glob() {
        let exact = KeyChoice::parse("lock:invoice:42").unwrap();
        assert!(exact.matches(b"lock:invoice:42"));
        assert!(!exact.matches(b"lock:invoice:420"));
        let prefix = KeyChoice::parse("lock:invoice:*").unwrap();
        assert!(prefix.matches(b"lock:invoice:42"));
        assert!(prefix.matches(b"lock:invoice:a/b"));
        assert!(!prefix.matches(b"lock:order:42"));
        assert!(KeyChoice::parse("lock:[").is_err());
        assert!(KeyChoice::parse("").is_err());
        assert!(KeyChoice::any().matches(b"anything"));
    }

    #[test]
    fn the_lock_is_the_key_that_passed_between_workers_else_the_choice_is_named() {
        let mut c = Candidates::default();
        c.created(b"lock:a", 0);
        c.created(b"lock:a", 1);
        c.created(b"other", 0);
        assert_eq!(c.ambiguity(b"lock:a"), None);
        let why = c.ambiguity(b"other").unwrap();
        assert!(why.contains("lock:a (by worker 0, worker 1)"), "{why}");
        c.created(b"other", 1);
        assert!(c.ambiguity(b"lock:a").is_some());
        // One worker only (B never got it): the first taken stands.
        let mut one = Candidates::default();
        one.created(b"lock:a", 0);
        assert_eq!(one.ambiguity(b"lock:a"), None);
    }

    #[test]
    fn of_several_locks_passed_between_workers_the_told_one_is_chosen_else_none() {
        let told: &[&[u8]] = &[b"told"];
        let mut c = Candidates::default();
        assert_eq!(c.choose(None, told), Ok(None));
        c.created(b"mine", 0);
        assert_eq!(c.choose(Some(b"mine"), told), Ok(Some(b"mine".to_vec())));
        c.created(b"other", 0);
        c.created(b"other", 1);
        assert_eq!(c.choose(Some(b"mine"), told), Ok(Some(b"other".to_vec())));
        c.created(b"mine", 1);
        let why = c.choose(Some(b"mine"), told).unwrap_err();
        assert!(why.contains("mine (by worker 0, worker 1)"), "{why}");
        c.created(b"told", 0);
        c.created(b"told", 1);
        assert_eq!(c.choose(Some(b"mine"), told), Ok(Some(b"told".to_vec())));
        // One worker so far: the told one, though created after another.
        let mut one = Candidates::default();
        one.created(b"helper", 0);
        one.created(b"told", 0);
        assert_eq!(
            one.choose(Some(b"helper"), told),
            Ok(Some(b"told".to_vec()))
        );
    }
}
