//! How a case's GPU results are compared with its CPU results.

/// What "the same result" means for one case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// All 128 bits equal.
    Exact,
    /// The low 32 bits are `f32`s at most this many units in the last place
    /// apart. Any NaN equals any NaN: Rust leaves the payload of a NaN that
    /// arithmetic produces unspecified, and the GPU's differs from the CPU's.
    /// `F32Ulp(0)` is "bit for bit, up to NaN payloads"; +0 and -0 are one ulp
    /// apart, so a wrong sign of zero is never hidden.
    F32Ulp(u64),
    /// The same for `f64`s in the low 64 bits.
    F64Ulp(u64),
}

/// The distance used when one side is NaN and the other is not.
const NAN_VERSUS_NUMBER: u64 = u64::MAX;

impl Compare {
    /// How far apart two results are: 0 or 1 for [`Compare::Exact`], units in
    /// the last place for the float modes.
    pub fn distance(self, gpu: u128, cpu: u128) -> u64 {
        match self {
            Compare::Exact => u64::from(gpu != cpu),
            Compare::F32Ulp(_) => f32_ulps(gpu as u32, cpu as u32),
            Compare::F64Ulp(_) => f64_ulps(gpu as u64, cpu as u64),
        }
    }

    /// The largest distance that still counts as equal.
    pub fn tolerance(self) -> u64 {
        match self {
            Compare::Exact => 0,
            Compare::F32Ulp(n) | Compare::F64Ulp(n) => n,
        }
    }

    /// Whether distances are ulps worth reporting.
    pub fn counts_ulps(self) -> bool {
        self != Compare::Exact
    }

    /// A result as a person wants to read it in a failure report.
    pub fn describe(self, value: u128) -> String {
        match self {
            Compare::Exact => format!("{value:#x}"),
            Compare::F32Ulp(_) => {
                let bits = value as u32;
                format!("{:e} ({bits:#010x})", f32::from_bits(bits))
            }
            Compare::F64Ulp(_) => {
                let bits = value as u64;
                format!("{:e} ({bits:#018x})", f64::from_bits(bits))
            }
        }
    }
}

/// Ulps between two `f32` bit patterns (NaN equals NaN).
fn f32_ulps(x: u32, y: u32) -> u64 {
    match (f32::from_bits(x).is_nan(), f32::from_bits(y).is_nan()) {
        (true, true) => 0,
        (false, false) => u64::from(ordered_f32(x).abs_diff(ordered_f32(y))),
        _ => NAN_VERSUS_NUMBER,
    }
}

/// Ulps between two `f64` bit patterns (NaN equals NaN).
fn f64_ulps(x: u64, y: u64) -> u64 {
    match (f64::from_bits(x).is_nan(), f64::from_bits(y).is_nan()) {
        (true, true) => 0,
        (false, false) => ordered_f64(x).abs_diff(ordered_f64(y)),
        _ => NAN_VERSUS_NUMBER,
    }
}

/// Maps the bits of a non-NaN `f32` to an integer whose order is the order of
/// the floats, with consecutive floats (and -0, +0) one apart.
fn ordered_f32(bits: u32) -> u32 {
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 1 << 31
    }
}

/// [`ordered_f32`] for `f64`.
fn ordered_f64(bits: u64) -> u64 {
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps32(x: f32, y: f32) -> u64 {
        Compare::F32Ulp(0).distance(x.to_bits().into(), y.to_bits().into())
    }

    #[test]
    fn float_distances() {
        assert_eq!(ulps32(1.0, 1.0), 0);
        assert_eq!(ulps32(1.0, f32::from_bits(1.0f32.to_bits() + 3)), 3);
        assert_eq!(ulps32(0.0, -0.0), 1);
        assert_eq!(ulps32(f32::from_bits(1), -f32::from_bits(1)), 3);
        assert_eq!(ulps32(f32::MAX, f32::INFINITY), 1);
        assert_eq!(ulps32(f32::NAN, -f32::NAN), 0);
        assert_eq!(ulps32(f32::NAN, 1.0), NAN_VERSUS_NUMBER);
        let d = Compare::F64Ulp(0).distance(0.5f64.to_bits().into(), (-0.5f64).to_bits().into());
        assert_eq!(d, 2 * 0.5f64.to_bits() + 1);
    }

    #[test]
    fn float_modes_ignore_the_high_bits() {
        let tagged = (1u128 << 100) | 1.5f32.to_bits() as u128;
        assert_eq!(
            Compare::F32Ulp(0).distance(tagged, 1.5f32.to_bits().into()),
            0
        );
        assert_eq!(Compare::Exact.distance(tagged, 1.5f32.to_bits().into()), 1);
    }
}
