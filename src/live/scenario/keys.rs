//! A live scenario's `lock_key` and `token_key`: the Redis keys a user's
//! program locks and counts its tokens on, when they are not found in the
//! server's account ([`crate::live::common::keys`]) — an exact key, a
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
    for (field, named) in [("lock_key", lock_key), ("token_key", token_key)] {
        if let (Some(n), false) = (named, redis) {
            let msg = format!(
                "{field} names a Redis key: it goes with a Redis lock (redis-set-nx-del or redis-set-nx-cad)"
            );
            return Err(ScenarioError::at(file, src, n.span(), msg));
        }
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
