//! Launch conditions: when a kernel's unchecked entry may run.
//!
//! The device linker gives a kernel a second entry without the bounds checks
//! that a condition on its arguments and launch shape implies — for
//! `if let Some(out) = c.get_mut(i) { *out = a[i] + b[i] }` the condition is
//! `c.len() <= a.len() && c.len() <= b.len()`. It writes the condition into
//! the kernel table as a postfix program over the parameter bytes and the
//! grid and block sizes (docs/ABI.md §3); the launch evaluates it and
//! launches the unchecked entry only where it holds.
//!
//! A wrong "holds" would drop a check that can fail, so evaluation is exact
//! and gives up (the checked entry runs) wherever the device's arithmetic
//! could wrap or be undefined: arithmetic of width `w` needs its operands
//! and result below 2^(w-1), shifts need amounts below `w`.
//!
//! ```
//! use cuda_host::LaunchCondition;
//! use cuda_core::LaunchConfig;
//! // c.len <= a.len, the lengths at bytes 8..16 of parameters 2 and 0.
//! let condition: LaunchCondition = "p2@8:8 p0@8:8 ule".parse().unwrap();
//! let slice = |len: u64| [0u64.to_le_bytes(), len.to_le_bytes()].concat();
//! let (a, c) = (slice(1000), slice(1000));
//! let config = LaunchConfig::for_num_elems(1000);
//! assert_eq!(condition.evaluate(&[&a, &[], &c], &config), Some(true));
//! let short = slice(999);
//! assert_eq!(condition.evaluate(&[&short, &[], &c], &config), Some(false));
//! ```

use cuda_core::LaunchConfig;
use std::fmt;
use std::str::FromStr;

/// The deepest stack a program may need (the device linker's conditions
/// need a handful of entries).
const MAX_STACK: usize = 32;

/// One step of a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Const(u64),
    /// `n` little-endian bytes of parameter `param` at byte `offset`.
    Param { param: usize, offset: usize, bytes: usize },
    BlockDim(usize),
    GridDim(usize),
    /// Exact arithmetic of this width (operands and result below 2^(w-1)).
    Add(u32),
    Sub(u32),
    Mul(u32),
    Shl(u32),
    /// Logical shift right; `exact`: no set bit may be shifted out.
    Lshr { width: u32, exact: bool },
    And,
    Or,
    /// `or` whose operands have no bit in common (else undefined: give up).
    OrDisjoint,
    Xor,
    Umin,
    Umax,
    /// The low `w` bits.
    Trunc(u32),
    /// Gives up unless the value is below 2^b.
    Fits(u32),
    /// The exact product, however wide.
    MulExact,
    /// 1 if the first operand is at most the second, else 0.
    Ule,
}

/// A kernel's launch condition (docs/ABI.md §3), parsed once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchCondition {
    steps: Vec<Step>,
}

/// A launch-condition program that does not parse: a device linker and a
/// cuda-host that disagree on the format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionParseError {
    /// The token that is not understood.
    pub token: String,
}

impl fmt::Display for ConditionParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "launch condition: unknown token `{}` (device linker newer than cuda-host?)", self.token)
    }
}

impl std::error::Error for ConditionParseError {}

/// `prefix<width>` with 1 <= width <= 64.
fn width_of(token: &str, prefix: &str) -> Option<u32> {
    let w: u32 = token.strip_prefix(prefix)?.parse().ok()?;
    (1..=64).contains(&w).then_some(w)
}

fn parse_step(token: &str) -> Option<Step> {
    let fixed = match token {
        "ntid.x" => Some(Step::BlockDim(0)),
        "ntid.y" => Some(Step::BlockDim(1)),
        "ntid.z" => Some(Step::BlockDim(2)),
        "nctaid.x" => Some(Step::GridDim(0)),
        "nctaid.y" => Some(Step::GridDim(1)),
        "nctaid.z" => Some(Step::GridDim(2)),
        "and" => Some(Step::And),
        "or" => Some(Step::Or),
        "or.disjoint" => Some(Step::OrDisjoint),
        "xor" => Some(Step::Xor),
        "umin" => Some(Step::Umin),
        "umax" => Some(Step::Umax),
        "mulx" => Some(Step::MulExact),
        "ule" => Some(Step::Ule),
        _ => None,
    };
    if fixed.is_some() {
        return fixed;
    }
    if token.bytes().all(|b| b.is_ascii_digit()) {
        return token.parse().ok().map(Step::Const);
    }
    if let Some(rest) = token.strip_prefix('p') {
        let (param, rest) = rest.split_once('@')?;
        let (offset, bytes) = rest.split_once(':')?;
        let bytes: usize = bytes.parse().ok()?;
        return matches!(bytes, 1 | 2 | 4 | 8).then_some(Step::Param {
            param: param.parse().ok()?,
            offset: offset.parse().ok()?,
            bytes,
        });
    }
    // `lshr.exact` before `lshr`: the longer prefix first.
    if let Some(w) = width_of(token, "lshr.exact") {
        return Some(Step::Lshr { width: w, exact: true });
    }
    type MakeStep = fn(u32) -> Step;
    let with_width: [(&str, MakeStep); 7] = [
        ("add", Step::Add),
        ("sub", Step::Sub),
        ("mul", Step::Mul),
        ("shl", Step::Shl),
        ("lshr", |width| Step::Lshr { width, exact: false }),
        ("trunc", Step::Trunc),
        ("fits", Step::Fits),
    ];
    with_width.iter().find_map(|(prefix, make)| width_of(token, prefix).map(make))
}

impl FromStr for LaunchCondition {
    type Err = ConditionParseError;

    fn from_str(program: &str) -> Result<Self, Self::Err> {
        let steps = program
            .split_ascii_whitespace()
            .map(|t| parse_step(t).ok_or_else(|| ConditionParseError { token: t.to_string() }))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LaunchCondition { steps })
    }
}

/// Whether `v` is below 2^bits.
fn below(v: u128, bits: u32) -> bool {
    bits >= 128 || v < (1u128 << bits)
}

impl LaunchCondition {
    /// Whether the condition holds for a launch with these parameter bytes
    /// (`params[i]`: the bytes of parameter `i`) and shape. `None`: it cannot
    /// be decided exactly (a value out of range, a read past a parameter, a
    /// malformed program), so the checked entry must run.
    pub fn evaluate(&self, params: &[&[u8]], config: &LaunchConfig) -> Option<bool> {
        self.evaluate_with(config, |param, range| {
            let mut le = [0u8; 8];
            le[..range.len()].copy_from_slice(params.get(param)?.get(range)?);
            Some(u64::from_le_bytes(le))
        })
    }

    /// [`evaluate`](Self::evaluate) with the parameters read by `read(param,
    /// byte range)`, which returns the little-endian value of those bytes
    /// (at most 8), or None past the parameter's end.
    pub(crate) fn evaluate_with(
        &self,
        config: &LaunchConfig,
        mut read: impl FnMut(usize, std::ops::Range<usize>) -> Option<u64>,
    ) -> Option<bool> {
        let mut stack = [0u128; MAX_STACK];
        let mut depth = 0usize;
        for step in &self.steps {
            let value = match *step {
                Step::Const(c) => c as u128,
                Step::Param { param, offset, bytes } => read(param, offset..offset.checked_add(bytes)?)? as u128,
                Step::BlockDim(axis) => [config.block_dim.0, config.block_dim.1, config.block_dim.2][axis] as u128,
                Step::GridDim(axis) => [config.grid_dim.0, config.grid_dim.1, config.grid_dim.2][axis] as u128,
                Step::Trunc(w) => {
                    let v = stack[depth.checked_sub(1)?];
                    depth -= 1;
                    v & ((1u128 << w) - 1)
                }
                Step::Fits(b) => {
                    let v = stack[depth.checked_sub(1)?];
                    depth -= 1;
                    if !below(v, b) {
                        return None;
                    }
                    v
                }
                _ => {
                    let b = stack[depth.checked_sub(1)?];
                    let a = stack[depth.checked_sub(2)?];
                    depth -= 2;
                    binary(*step, a, b)?
                }
            };
            if depth == MAX_STACK {
                return None;
            }
            stack[depth] = value;
            depth += 1;
        }
        (depth == 1).then(|| stack[0] != 0)
    }
}

/// A binary step on exact values, or `None` where the device's result would
/// wrap or be undefined.
fn binary(step: Step, a: u128, b: u128) -> Option<u128> {
    // Arithmetic of width w: operands and result below 2^(w-1), so that
    // neither unsigned nor signed arithmetic wraps on the device.
    let exact = |w: u32, r: Option<u128>| {
        r.filter(|&r| below(a, w - 1) && below(b, w - 1) && below(r, w - 1))
    };
    match step {
        Step::Add(w) => exact(w, a.checked_add(b)),
        Step::Sub(w) => exact(w, a.checked_sub(b)),
        Step::Mul(w) => exact(w, a.checked_mul(b)),
        Step::Shl(w) => exact(w, (b < w as u128).then(|| a << b)),
        Step::Lshr { width, exact } => {
            if b >= width as u128 {
                return None;
            }
            let r = a >> b;
            (!exact || r << b == a).then_some(r)
        }
        Step::And => Some(a & b),
        Step::Or => Some(a | b),
        Step::OrDisjoint => (a & b == 0).then_some(a | b),
        Step::Xor => Some(a ^ b),
        Step::Umin => Some(a.min(b)),
        Step::Umax => Some(a.max(b)),
        Step::MulExact => a.checked_mul(b),
        Step::Ule => Some((a <= b) as u128),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(grid: (u32, u32, u32), block: (u32, u32, u32)) -> LaunchConfig {
        LaunchConfig { grid_dim: grid, block_dim: block, shared_mem_bytes: 0 }
    }

    fn eval(program: &str, params: &[&[u8]]) -> Option<bool> {
        program.parse::<LaunchCondition>().unwrap().evaluate(params, &config((4, 2, 1), (256, 1, 1)))
    }

    /// Bytes of a slice parameter: data pointer, then length.
    fn slice(len: u64) -> Vec<u8> {
        [0xdead_beefu64.to_le_bytes(), len.to_le_bytes()].concat()
    }

    #[test]
    fn one_bound_compares_lengths() {
        let p = "p1@8:8 p0@8:8 ule";
        assert_eq!(eval(p, &[&slice(10), &slice(10)]), Some(true));
        assert_eq!(eval(p, &[&slice(11), &slice(10)]), Some(true));
        assert_eq!(eval(p, &[&slice(9), &slice(10)]), Some(false));
    }

    #[test]
    fn tile_product_is_exact() {
        let p = "p0@0:8 p1@0:8 mulx p2@8:8 ule";
        let rows = 8192u64.to_le_bytes();
        let cols = 4096u64.to_le_bytes();
        assert_eq!(eval(p, &[&rows, &cols, &slice(8192 * 4096)]), Some(true));
        assert_eq!(eval(p, &[&rows, &cols, &slice(8192 * 4096 - 1)]), Some(false));
        // A product that wraps in 64 bits is still compared exactly.
        let huge = (1u64 << 40).to_le_bytes();
        assert_eq!(eval(p, &[&huge, &huge, &slice(u64::MAX)]), Some(false));
    }

    #[test]
    fn conjunction_and_launch_shape() {
        let p = "p0@0:4 ntid.x ule nctaid.y 2 ule and";
        assert_eq!(eval(p, &[&256u32.to_le_bytes()]), Some(true));
        assert_eq!(eval(p, &[&257u32.to_le_bytes()]), Some(false));
        let q = "nctaid.x ntid.z mul32 4 ule";
        assert_eq!(eval(q, &[]), Some(true));
    }

    #[test]
    fn gives_up_where_the_device_would_wrap() {
        // add64 of two values whose sum passes 2^63: signed wrap on the device.
        let big = (1u64 << 62).to_le_bytes();
        assert_eq!(eval("p0@0:8 p0@0:8 add64 0 ule", &[&big]), None);
        assert_eq!(eval("p0@0:8 1 add64 p0@0:8 ule", &[&big]), Some(false));
        // 3 - 5 would wrap.
        assert_eq!(eval("3 5 sub64 0 ule", &[]), None);
        // A shift by the width is undefined.
        assert_eq!(eval("1 32 lshr32 0 ule", &[]), None);
        assert_eq!(eval("12 2 lshr.exact32 3 ule", &[]), Some(true));
        assert_eq!(eval("13 2 lshr.exact32 3 ule", &[]), None);
        assert_eq!(eval("1 2 or.disjoint 3 ule", &[]), Some(true));
        assert_eq!(eval("3 2 or.disjoint 3 ule", &[]), None);
        // trunc masks, fits gives up.
        let wide = (0x1_0000_0005u64).to_le_bytes();
        assert_eq!(eval("p0@0:8 trunc32 5 ule", &[&wide]), Some(true));
        assert_eq!(eval("p0@0:8 fits32 5 ule", &[&wide]), None);
    }

    #[test]
    fn gives_up_on_reads_past_a_parameter_and_bad_stacks() {
        assert_eq!(eval("p0@8:8 1 ule", &[&[0u8; 12]]), None);
        assert_eq!(eval("p3@0:8 1 ule", &[&slice(1)]), None);
        assert_eq!(eval("ule", &[]), None);
        assert_eq!(eval("1 2", &[]), None);
        let deep = "1 ".repeat(MAX_STACK + 1);
        assert_eq!(eval(&deep, &[]), None);
    }

    #[test]
    fn unknown_tokens_do_not_parse() {
        for bad in ["udiv64", "p0@0:3", "add0", "add65", "ntid.w", "p@0:8"] {
            let err = bad.parse::<LaunchCondition>().unwrap_err();
            assert_eq!(err.token, bad);
            assert!(err.to_string().contains(bad));
        }
    }
}
