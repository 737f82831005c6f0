//! Deterministic inputs and float tolerances shared by the check groups.

/// `len` pseudo-random 64-bit words (xorshift64 from `seed`).
pub fn words(len: usize, seed: u64) -> Vec<u64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        })
        .collect()
}

/// An element type the groups check, made from random words.
pub trait Sample: Copy + PartialEq + std::fmt::Debug {
    /// A value from random bits.
    fn sample(bits: u64) -> Self;
}
impl Sample for u32 {
    fn sample(bits: u64) -> Self {
        (bits >> 32) as u32
    }
}
impl Sample for i32 {
    fn sample(bits: u64) -> Self {
        (bits >> 32) as i32
    }
}
impl Sample for u64 {
    fn sample(bits: u64) -> Self {
        bits
    }
}
impl Sample for i64 {
    fn sample(bits: u64) -> Self {
        bits as i64
    }
}
impl Sample for f32 {
    /// In [-1, 1).
    fn sample(bits: u64) -> Self {
        (bits >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}
impl Sample for f64 {
    /// In [-1, 1).
    fn sample(bits: u64) -> Self {
        (bits >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// `len` samples of `T`.
pub fn samples<T: Sample>(len: usize, seed: u64) -> Vec<T> {
    words(len, seed).into_iter().map(T::sample).collect()
}

/// Whether a float result `got` is within the reordering bound of `want`
/// (computed in f64): `terms · ε · Σ|x|`, with a floor of a few ε.
pub fn close(got: f64, want: f64, abs_sum: f64, terms: usize, eps: f64) -> bool {
    // Equal covers the infinities (the identities of Min and Max).
    got == want || (got - want).abs() <= (terms.max(4) as f64) * eps * abs_sum.max(1.0)
}

/// How a group compares a result with the CPU's: exactly for integers,
/// within the reordering bound ([`close`]) for floats.
pub trait Check: cuda_prims::op::Element + Sample {
    /// Whether `got` agrees with `want`, the result of `terms` elements
    /// whose magnitudes add up to `abs_sum`.
    fn agrees(got: Self, want: Self, abs_sum: f64, terms: usize) -> bool;
    /// |self| for the bound (0 for integers, which compare exactly).
    fn magnitude(self) -> f64;
}
macro_rules! exact {
    ($($t:ty),*) => {$(
        impl Check for $t {
            fn agrees(got: Self, want: Self, _: f64, _: usize) -> bool {
                got == want
            }
            fn magnitude(self) -> f64 {
                0.0
            }
        }
    )*};
}
exact!(u32, i32, u64, i64);
impl Check for f32 {
    fn agrees(got: Self, want: Self, abs_sum: f64, terms: usize) -> bool {
        close(got as f64, want as f64, abs_sum, terms, f32::EPSILON as f64)
    }
    fn magnitude(self) -> f64 {
        self.abs() as f64
    }
}
impl Check for f64 {
    fn agrees(got: Self, want: Self, abs_sum: f64, terms: usize) -> bool {
        close(got, want, abs_sum, terms, f64::EPSILON)
    }
    fn magnitude(self) -> f64 {
        self.abs()
    }
}
