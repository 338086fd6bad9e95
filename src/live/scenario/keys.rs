//! A live scenario's `lock_key` and `token_key`: the key (Redis), key
//! prefix (etcd) or znode (ZooKeeper) a user's program locks, and the
//! Redis key it counts its tokens on, when they are not found in the
//! server's account ([`crate::live::common::keys`]) — an exact name, a
//! prefix ending in `*` or a glob for the lock, an exact key for the token.

use toml::Spanned;

use super::super::common::keys::KeyChoice;
use super::super::LockKind;
use crate::scenario::ScenarioError;

/// The lock key's name (None: found in the account) and the token key
/// (None: likewise), checked against the lock they go with.
pub(super) fn read(
    file: &str,
    src: &str,
    (lock_key, token_key): (&Option<Spanned<String>>, &Option<Spanned<String>>),
    lock: LockKind,
) -> Result<(Option<KeyChoice>, Option<String>), ScenarioError> {
    let redis = matches!(lock, LockKind::RedisSetNxDel | LockKind::RedisSetNxCad);
    if let (Some(n), false) = (lock_key, redis || lock.cluster().is_some()) {
        let msg =
            "lock_key names the lock's key or znode: it goes with a Redis, etcd or ZooKeeper lock"
                .to_string();
        return Err(ScenarioError::at(file, src, n.span(), msg));
    }
    if let (Some(n), false) = (token_key, redis) {
        let msg = "token_key names a Redis key: it goes with a Redis lock (redis-set-nx-del or redis-set-nx-cad)".to_string();
        return Err(ScenarioError::at(file, src, n.span(), msg));
    }
    let choice =
        match lock_key {
            Some(n) => Some(KeyChoice::parse(n.get_ref()).map_err(|why| {
                ScenarioError::at(file, src, n.span(), format!("lock_key: {why}"))
            })?),
            None => None,
        };
    let token = match token_key {
        Some(t) if t.get_ref().is_empty() || t.get_ref().contains(['*', '?', '[']) => {
            let msg = "token_key must be one exact key (no `*`, `?`, `[`)".to_string();
            return Err(ScenarioError::at(file, src, t.span(), msg));
        }
        Some(t) => Some(t.get_ref().clone()),
        None => None,
    };
    Ok((choice, token))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn parse(lock: &str, keys: &str) -> Result<super::super::LiveScenario, String> {
        let src = format!(
            "schema_version = 1\nname = \"t\"\ntwin = \"../scenarios/article/gc-pause-stale-write.toml\"\n\
             lock = \"{lock}\"\nwrite = \"plain\"\nttl_ms = 300\nworker_cmd = \"true\"\n{keys}\n\
             [[worker]]\nname = \"A\"\n[[worker]]\nname = \"B\"\n[expect]\n"
        );
        super::super::parse(&src, Path::new("live/t.toml")).map_err(|e| format!("{e:#}"))
    }

    #[test]
    fn a_lock_key_is_exact_a_prefix_or_a_glob_and_a_token_key_only_on_redis() {
        let s = parse("redis-set-nx-cad", "lock_key = \"lock:invoice:*\"").unwrap();
        let choice = s.lock_key.unwrap();
        assert!(choice.matches(b"lock:invoice:42") && choice.exact().is_none());
        let s = parse(
            "redis-set-nx-cad",
            "lock_key = \"lock:invoice:42\"\ntoken_key = \"f:42\"",
        )
        .unwrap();
        assert_eq!(s.lock_key.unwrap().exact(), Some("lock:invoice:42"));
        assert_eq!(s.token_key.as_deref(), Some("f:42"));
        let bad = parse("redis-set-nx-cad", "lock_key = \"lock:[\"").unwrap_err();
        assert!(
            bad.contains("live/t.toml:8:") && bad.contains("is not a glob"),
            "{bad}"
        );
        let etcd = parse("etcd-lock", "lock_key = \"app/locks/*\"").unwrap();
        assert!(etcd.lock_key.unwrap().matches(b"app/locks/invoice"));
        let token = parse("etcd-lock", "token_key = \"x\"").unwrap_err();
        assert!(token.contains("goes with a Redis lock"), "{token}");
        let token = parse("redis-set-nx-cad", "token_key = \"f:*\"").unwrap_err();
        assert!(token.contains("one exact key"), "{token}");
    }
}
