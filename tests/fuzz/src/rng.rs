//! A small deterministic generator (SplitMix64): the same seed gives the
//! same programs on every machine and toolchain, which is what makes a
//! seed a complete bug report.

/// SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`, mixed with `stream` so that function `k` of a
    /// program does not depend on how many values functions before it drew.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut r = Rng(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next();
        r
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_streams_differ() {
        let a: Vec<u64> = (0..4).map({ let mut r = Rng::new(7, 1); move |_| r.next() }).collect();
        let b: Vec<u64> = (0..4).map({ let mut r = Rng::new(7, 1); move |_| r.next() }).collect();
        let c: Vec<u64> = (0..4).map({ let mut r = Rng::new(7, 2); move |_| r.next() }).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
