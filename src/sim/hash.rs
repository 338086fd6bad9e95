//! The two hashes fencesim pins, both platform-independent by construction
//! (unlike `std::hash`, whose `write_u64` uses native endianness and whose
//! `DefaultHasher` algorithm may change between Rust releases):
//!
//! - [`fnv1a64`]: FNV-1a, 64-bit (offset basis 0xcbf29ce484222325, prime
//!   0x100000001b3), over bytes: scenario files, RNG stream names.
//! - [`TraceHasher`]: the trace hash, over a sequence of 64-bit words. Each
//!   word is folded in with `h = (h ^ w) * K; h ^= h >> 29` (K the 64-bit
//!   golden-ratio constant), and [`TraceHasher::finish`] applies
//!   SplitMix64's finalizer. Every step is a bijection of the state for a
//!   given word, so two traces that differ in exactly one word always hash
//!   differently. It replaced byte-wise FNV-1a because a simulator event is
//!   a handful of words: one multiply per word instead of one per byte is
//!   most of what trace hashing cost (see benches/sweep.rs).

pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// `const`, so a fixed name's hash is computed at compile time (the
/// network's four stream ids, set up for every seed).
pub const fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    h
}

/// The golden-ratio constant, odd: multiplying by it is a bijection.
const K: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Clone, Copy, Debug)]
pub struct TraceHasher {
    state: u64,
}

impl Default for TraceHasher {
    fn default() -> Self {
        TraceHasher::new()
    }
}

impl TraceHasher {
    pub fn new() -> Self {
        TraceHasher { state: FNV_OFFSET }
    }

    #[inline]
    pub fn word(&mut self, w: u64) {
        let h = (self.state ^ w).wrapping_mul(K);
        self.state = h ^ (h >> 29);
    }

    /// Bytes as little-endian words, zero-padded, then the length: `"a"`
    /// and `"a\0"` hash differently.
    pub fn bytes(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(w));
        }
        self.word(bytes.len() as u64);
    }

    pub fn finish(&self) -> u64 {
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn the_trace_hash_is_pinned() {
        // Any change here changes every trace hash and digest fencesim prints.
        let mut h = TraceHasher::new();
        for w in [0, 1, u64::MAX, 42] {
            h.word(w);
        }
        h.bytes(b"fencesim");
        assert_eq!(h.finish(), PINNED);
    }
    const PINNED: u64 = 6_672_658_456_747_464_423;

    #[test]
    fn traces_differing_in_one_word_hash_differently() {
        let base: Vec<u64> = (0..64).map(|i| i * 0x1234_5678_9abc).collect();
        let hash = |words: &[u64]| {
            let mut h = TraceHasher::new();
            words.iter().for_each(|&w| h.word(w));
            h.finish()
        };
        let mut seen = std::collections::BTreeSet::new();
        seen.insert(hash(&base));
        for i in 0..base.len() {
            for bit in [0, 1, 7, 31, 63] {
                let mut changed = base.clone();
                changed[i] ^= 1 << bit;
                assert!(seen.insert(hash(&changed)), "word {i} bit {bit} collided");
            }
        }
    }

    #[test]
    fn byte_strings_are_length_delimited() {
        let hash = |b: &[u8]| {
            let mut h = TraceHasher::new();
            h.bytes(b);
            h.finish()
        };
        assert_ne!(hash(b"a"), hash(b"a\0"));
        assert_ne!(hash(b""), hash(b"\0"));
    }
}
