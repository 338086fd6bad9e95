//! The lock as the servers account for it during one trial of a user's
//! program: one `MONITOR` feed per Redis master ([`super::feed`]),
//! folded into the lock's grants (a majority of the masters; with one
//! master, its key).
//!
//! The proxies register each worker connection here as it opens, and ask
//! after every reply to a command on the lock or token key whether the
//! worker has been granted the lock since it last asked — after a sync
//! point, so the answer covers the command whose reply is being held. A
//! fault anchored at the grant strikes on that answer, before the program
//! reads the reply. At the end, every feed must be whole and agree with
//! the server's keyspace notifications, or the trial cannot be judged.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::Result;

use super::feed::{Clock, Feed};
use super::ledger::{Fact, Ledger};
use super::majority::combine;
use crate::live::common::fact::grants_of_worker;
use crate::live::common::keys::KeyChoice;
use crate::live::common::server::{Finished, ServerAccount};
use crate::live::locked;

/// How long a proxy waits for a feed to show its sync point.
const SYNC_TIMEOUT: Duration = Duration::from_secs(2);

/// The feeds of one trial, one per Redis master.
pub(crate) struct LockAccount {
    /// None once finished.
    feeds: Vec<Mutex<Option<Feed>>>,
    lock: KeyChoice,
}

fn no_feed() -> anyhow::Error {
    anyhow::anyhow!("the lock's account was already closed")
}

/// A master's facts stamped with CLOCK_MONOTONIC ns, never earlier than
/// the fact before them: the feed's order is the truth, and an expiry is
/// stamped at the start of its millisecond, which a token drawn in that
/// millisecond (the key still alive for Redis) may already have passed —
/// sorted by stamp, the expiry would close the grant before its token.
fn stamped(clock: Clock, facts: &[Fact]) -> Vec<(u64, Fact)> {
    let mut last = 0;
    facts
        .iter()
        .map(|f| {
            last = clock.mono_ns(f.ts_us()).max(last);
            (last, f.clone())
        })
        .collect()
}

impl LockAccount {
    /// Opens a feed on each master (`host:port`), before any program runs.
    /// `own`: the harness owns the servers, so keyspace notifications may be
    /// switched on for the cross-check.
    /// `lock`: the lock's key as named, or to be found; `token_key` (empty:
    /// to be found) likewise.
    pub(crate) fn start(
        masters: &[String],
        lock: &KeyChoice,
        token_key: &str,
        own: bool,
    ) -> Result<LockAccount> {
        let feeds = masters
            .iter()
            .map(|m| Feed::start(m, lock.clone(), token_key, own).map(|f| Mutex::new(Some(f))))
            .collect::<Result<Vec<_>>>()?;
        Ok(LockAccount {
            feeds,
            lock: lock.clone(),
        })
    }

    /// How the lock's key is named.
    pub(crate) fn choice(&self) -> &KeyChoice {
        &self.lock
    }

    /// The lock's key as master `master`'s feed named or found it so far.
    pub(crate) fn lock_key(&self, master: usize) -> Option<Vec<u8>> {
        locked(&self.feeds[master])
            .as_ref()
            .and_then(|f| f.keys().0)
    }

    pub(crate) fn register(&self, master: usize, addr: String, worker: usize) {
        if let Some(f) = locked(&self.feeds[master]).as_ref() {
            f.register(addr, worker);
        }
    }

    /// Master `master` answered a `SET NX` of `key` (the lock key, or one
    /// that may be) from `addr`.
    pub(crate) fn replied(&self, master: usize, addr: &str, key: &[u8], took: Option<bool>) {
        if let Some(f) = locked(&self.feeds[master]).as_ref() {
            f.replied(addr, key, took);
        }
    }
}

impl ServerAccount for LockAccount {
    /// The grants of the lock `worker` holds or held so far, after master
    /// `master`'s feed caught up with everything it ran until now. Err: the
    /// feed did not catch up (the trial cannot be judged).
    fn grants_of(&self, master: usize, worker: usize) -> Result<Vec<u64>> {
        locked(&self.feeds[master])
            .as_ref()
            .ok_or_else(no_feed)?
            .sync(SYNC_TIMEOUT)?;
        if self.feeds.len() == 1 {
            let feed = locked(&self.feeds[0]);
            return Ok(feed
                .as_ref()
                .ok_or_else(no_feed)?
                .with(|l| l.grants_of(worker).to_vec()));
        }
        let mut masters: Vec<Vec<(u64, Fact)>> = Vec::new();
        for f in &self.feeds {
            let f = locked(f);
            let f = f.as_ref().ok_or_else(no_feed)?;
            masters.push(f.with(|l: &Ledger| stamped(f.clock(), l.facts())));
        }
        Ok(grants_of_worker(&combine(&masters), worker))
    }

    /// Closes every feed: the lock's facts, and every reason not to trust them.
    fn finish(&self) -> Finished {
        let (mut problems, mut notes) = (Vec::new(), Vec::new());
        let mut masters = Vec::new();
        let n = self.feeds.len();
        for (m, slot) in self.feeds.iter().enumerate() {
            let Some(feed) = locked(slot).take() else {
                problems.push(format!("Redis master {m}: the account was closed twice"));
                continue;
            };
            let clock = feed.clock();
            let (ledger, _, broken) = feed.finish();
            let name = if n == 1 {
                "Redis".to_string()
            } else {
                format!("Redis master {m}")
            };
            // A command in the very millisecond a key expired is where the
            // replay's timing can be wrong; say so beside a disagreement.
            let close = match ledger.borderline() {
                0 => String::new(),
                n => format!(" ({n} commands ran in the millisecond the key expired)"),
            };
            problems.extend(broken.map(|b| format!("{name}: {b}{close}")));
            problems.extend(ledger.problems().iter().map(|p| format!("{name}: {p}")));
            problems.extend(ledger.key_ambiguity().map(|p| format!("{name}: {p}")));
            if m == 0 {
                notes.push(found(&ledger));
            }
            masters.push(stamped(clock, ledger.facts()));
        }
        Finished {
            facts: combine(&masters),
            problems,
            notes,
            this_trial: Vec::new(),
        }
    }
}

/// The lock key the ledger was told or found, and the token key, as one line.
fn found(ledger: &Ledger) -> String {
    let key = |k: Option<&[u8]>| k.map(|k| String::from_utf8_lossy(k).into_owned());
    let lock = match (ledger.choice(), key(ledger.lock_key())) {
        (KeyChoice::Exact(k), _) => format!("lock key {k} (named)"),
        (_, None) => format!(
            "no key matching the lock's name ({}) was created conditionally by a worker",
            ledger.choice().describe()
        ),
        (_, Some(k)) => format!(
            "lock key {k} (the first key a worker created conditionally, of {})",
            ledger.choice().describe()
        ),
    };
    match key(ledger.token_key()) {
        Some(t) => format!("{lock}; token key {t}"),
        None => format!("{lock}; no token key counted"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::common::fact::tokens_of_grants;

    #[test]
    fn a_token_drawn_in_the_expiry_millisecond_before_the_expiry_belongs_to_its_grant() {
        // Redis's order: B's grant, B's token at 536.844 ms (the key still
        // alive for Redis until 536 ms is over), then the expiry of 536 ms.
        let facts = [
            Fact::Granted {
                grant: 1,
                worker: 1,
                ts_us: 236_154,
                expire_at_ms: Some(536),
            },
            Fact::Token {
                worker: 1,
                value: 2,
                ts_us: 536_844,
            },
            Fact::Expired {
                grant: 1,
                at_ms: 536,
            },
        ];
        let s = stamped(Clock::default(), &facts);
        assert!(s.windows(2).all(|w| w[0].0 <= w[1].0), "{s:?}");
        let lock = combine(&[s]);
        assert_eq!(tokens_of_grants(&lock).get(&1), Some(&2));
    }
}
