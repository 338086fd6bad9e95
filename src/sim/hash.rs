//! The trace hash: FNV-1a, 64-bit (offset basis 0xcbf29ce484222325, prime
//! 0x100000001b3), over a byte encoding in which every integer is written
//! little-endian with a fixed width. Platform-independent by construction —
//! unlike `std::hash`, whose `write_u64` uses native endianness and whose
//! `DefaultHasher` algorithm may change between Rust releases.

pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// `FNV_PRIME^k` (wrapping) for k = 0..=8: hashing k zero bytes.
const PRIME_POWERS: [u64; 9] = {
    let mut p = [1u64; 9];
    let mut k = 1;
    while k < 9 {
        p[k] = p[k - 1].wrapping_mul(FNV_PRIME);
        k += 1;
    }
    p
};

pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = TraceHasher::new();
    h.bytes(bytes);
    h.finish()
}

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

    pub fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state ^= b as u64;
            self.state = self.state.wrapping_mul(FNV_PRIME);
        }
    }

    pub fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }

    pub fn u16(&mut self, v: u16) {
        self.u64_bytes(v as u64, 2);
    }

    pub fn u64(&mut self, v: u64) {
        self.u64_bytes(v, 8);
    }

    /// The `width` little-endian bytes of `v`, exactly as [`Self::bytes`]
    /// would hash them, but faster: FNV-1a of a zero byte is `h * PRIME`
    /// (xor with 0 is the identity), so the run of zero high bytes that
    /// most fields have (small times, ids, counters) costs one multiply by
    /// `PRIME^k` instead of `k` dependent multiplies. Same result, bit for
    /// bit; `hashing_integers_matches_hashing_their_bytes` pins that.
    #[inline]
    fn u64_bytes(&mut self, v: u64, width: usize) {
        debug_assert!(width <= 8 && (width == 8 || v >> (8 * width) == 0));
        let significant = 8 - (v.leading_zeros() / 8) as usize;
        let mut h = self.state;
        let mut x = v;
        for _ in 0..significant {
            h ^= x & 0xff;
            h = h.wrapping_mul(FNV_PRIME);
            x >>= 8;
        }
        self.state = h.wrapping_mul(PRIME_POWERS[width - significant]);
    }

    pub fn finish(&self) -> u64 {
        self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_fnv1a_test_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn hashing_integers_matches_hashing_their_bytes() {
        let mut x = 0x0123_4567_89ab_cdefu64;
        let mut values = vec![
            0,
            1,
            0xff,
            0x100,
            0xff00,
            u64::MAX,
            1 << 63,
            0x00ff_0000_0000_0000,
        ];
        for _ in 0..1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for v in values {
            let (mut fast, mut slow) = (TraceHasher::new(), TraceHasher::new());
            fast.u8(7);
            slow.u8(7);
            fast.u64(v);
            slow.bytes(&v.to_le_bytes());
            assert_eq!(fast.finish(), slow.finish(), "u64 {v:#x}");
            fast.u16(v as u16);
            slow.bytes(&(v as u16).to_le_bytes());
            assert_eq!(fast.finish(), slow.finish(), "u16 {:#x}", v as u16);
        }
    }
}
