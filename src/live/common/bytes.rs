//! Byte helpers every room uses: whether a byte string names another (a
//! lock's key in a command, a pattern in a PostgreSQL message) and base64,
//! which etcd's JSON gateway uses for every key and value.

use anyhow::{Context, Result};
use base64::Engine;

/// Whether `needle` occurs in `hay` (never, for an empty needle).
pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// `bytes` as standard base64.
pub(crate) fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Standard base64 decoded; Err names `what` was not base64.
pub(crate) fn unbase64(text: &str, what: &str) -> Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .with_context(|| format!("{what} is not base64"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_needle_is_found_and_an_empty_one_never_is() {
        assert!(contains(b"SET lock:doc x", b"lock:doc"));
        assert!(!contains(b"SET lock:doc2", b"lock:docs"));
        assert!(!contains(b"anything", b""));
        assert_eq!(base64(b"lock"), "bG9jaw==");
        assert_eq!(unbase64("bG9jaw==", "a key").unwrap(), b"lock");
        assert!(unbase64("*", "a key").is_err());
    }
}
