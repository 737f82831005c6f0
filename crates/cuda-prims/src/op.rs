//! The element types the primitives take and the operators they combine
//! elements with.
//!
//! An operator is a value of a type implementing [`ReduceOp`]: an identity
//! and an associative `combine`. [`Sum`], [`Min`] and [`Max`] are provided
//! for every [`Element`]; [`FnOp`] turns a closure and its identity into one.
//! Operators are kernel arguments, so they are `Copy` and hold no host
//! references.
//!
//! ```
//! use cuda_prims::op::{FnOp, Max, ReduceOp, Sum};
//!
//! assert_eq!(Sum.combine(2u32, 3), 5);
//! assert_eq!(<Max as ReduceOp<f32>>::identity(&Max), f32::NEG_INFINITY);
//! // The bitwise or of many words, as a user operator.
//! let or = FnOp::new(0u64, |a: u64, b: u64| a | b);
//! assert_eq!(or.combine(0b01, 0b10), 0b11);
//! ```
//!
//! Integer sums wrap (as CUB's do, in two's complement); float sums round
//! like the GPU's adds, in an order that depends on the launch shape, so
//! they differ from a sequential sum by the reordering bound. [`Min`] and
//! [`Max`] of floats replace a value only by one that compares smaller
//! (larger), and every reduction starts from the identity, so NaN elements
//! are ignored (an input of NaNs alone gives the identity). Neither of
//! `-0.0` and `+0.0` compares smaller than the other, so which of them a
//! [`Min`] or [`Max`] of both returns depends on the order of combining.

use cuda_core::DeviceRepr;
use cuda_device::warp::Shuffle;

mod sealed {
    pub trait Sealed {}
}

/// An element type of the device-wide primitives: 32- and 64-bit integers
/// and floats (`u32`, `i32`, `f32`, `u64`, `i64`, `f64`). The kernels load
/// and store them 16 bytes at a time. Sealed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type of cuda-prims' device-wide primitives",
    label = "not a cuda-prims element type",
    note = "the device-wide primitives take buffers of u32, i32, u64, i64, f32 or f64"
)]
pub trait Element: Shuffle + DeviceRepr + Default + Copy + Send + Sync + Unpin + 'static + sealed::Sealed {
    /// The smallest value (`-inf` for floats): the identity of [`Max`].
    const LOWEST: Self;
    /// The largest value (`+inf` for floats): the identity of [`Min`].
    const HIGHEST: Self;
    /// `a + b`, wrapping for integers.
    #[doc(hidden)]
    fn add(a: Self, b: Self) -> Self;
    /// `b < a`.
    #[doc(hidden)]
    fn less(a: Self, b: Self) -> bool;
}

macro_rules! int_element {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn less(a: Self, b: Self) -> bool {
                a < b
            }
        }
    )*};
}
macro_rules! float_element {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline(always)]
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline(always)]
            fn less(a: Self, b: Self) -> bool {
                a < b
            }
        }
    )*};
}
int_element!(u32, i32, u64, i64);
float_element!(f32, f64);

/// An associative operator with an identity: what reduce and scan combine
/// elements with. `combine(identity(), x) == x == combine(x, identity())`
/// must hold; the device-wide reduce also needs `combine` commutative (it
/// combines in the order the grid loads), the scans do not (they keep the
/// element order).
///
/// The value is a kernel argument: `Copy`, and holding no host reference.
pub trait ReduceOp<T>: Copy + Send + Sync + Unpin + 'static {
    /// The identity: the result of reducing nothing.
    fn identity(&self) -> T;
    /// Combines two partial results, `a` from earlier elements than `b`.
    fn combine(&self, a: T, b: T) -> T;
}

/// Addition (wrapping for integers); identity 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sum;

/// The minimum; identity the largest value (`+inf` for floats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Min;

/// The maximum; identity the smallest value (`-inf` for floats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Max;

impl<T: Element> ReduceOp<T> for Sum {
    #[inline(always)]
    fn identity(&self) -> T {
        T::default()
    }
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        T::add(a, b)
    }
}

impl<T: Element> ReduceOp<T> for Min {
    #[inline(always)]
    fn identity(&self) -> T {
        T::HIGHEST
    }
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        if T::less(b, a) { b } else { a }
    }
}

impl<T: Element> ReduceOp<T> for Max {
    #[inline(always)]
    fn identity(&self) -> T {
        T::LOWEST
    }
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        if T::less(a, b) { b } else { a }
    }
}

/// A user operator: `f` with its identity.
///
/// ```
/// use cuda_prims::op::{FnOp, ReduceOp};
/// // The largest absolute value.
/// let max_abs = FnOp::new(0.0f32, |a: f32, b: f32| a.abs().max(b.abs()));
/// assert_eq!(max_abs.combine(-3.0, 2.0), 3.0);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct FnOp<T, F> {
    identity: T,
    f: F,
}

impl<T, F> FnOp<T, F> {
    /// The operator `f` whose identity is `identity`.
    pub const fn new(identity: T, f: F) -> Self {
        FnOp { identity, f }
    }
}

impl<T, F> ReduceOp<T> for FnOp<T, F>
where
    T: Copy + Send + Sync + Unpin + 'static,
    F: Fn(T, T) -> T + Copy + Send + Sync + Unpin + 'static,
{
    #[inline(always)]
    fn identity(&self) -> T {
        self.identity
    }
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        (self.f)(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_neutral() {
        for x in [0u32, 1, u32::MAX, 12345] {
            assert_eq!(Sum.combine(Sum.identity(), x), x);
            assert_eq!(Min.combine(<Min as ReduceOp<u32>>::identity(&Min), x), x);
            assert_eq!(Max.combine(<Max as ReduceOp<u32>>::identity(&Max), x), x);
        }
        for x in [-1.5f32, 0.0, 3.0e30, f32::INFINITY] {
            assert_eq!(Min.combine(<Min as ReduceOp<f32>>::identity(&Min), x), x);
            assert_eq!(Max.combine(x, <Max as ReduceOp<f32>>::identity(&Max)), x);
        }
    }

    #[test]
    fn integer_sums_wrap() {
        assert_eq!(Sum.combine(u32::MAX, 2), 1);
        assert_eq!(Sum.combine(i64::MAX, 1), i64::MIN);
    }

    #[test]
    fn nan_never_replaces_a_value() {
        assert_eq!(Min.combine(1.0f32, f32::NAN), 1.0);
        assert_eq!(Max.combine(1.0f32, f32::NAN), 1.0);
    }
}
