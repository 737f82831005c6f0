//! The element types NCCL moves and reduces ([`NcclElement`]): i8, u8,
//! i32, u32, i64, u64, f16, f32, f64, bf16, and the two fp8 formats
//! ([`F8E4M3`], [`F8E5M2`]; NCCL 2.24 or newer on a GPU).
//!
//! The trait is sealed: the set is NCCL's `ncclDataType_t`, and the
//! emulated communicator implements exactly these.

use cuda_core::DeviceRepr;
use cuda_device::half::{bf16, f16};
use cuda_emulator::collective::{fp8, Element};

use crate::sys::{self, ncclDataType_t};

mod private {
    pub trait Sealed {}
}

/// An element type NCCL has (`ncclDataType_t`).
pub trait NcclElement: DeviceRepr + Send + Sync + std::fmt::Debug + private::Sealed {
    /// Its `ncclDataType_t`.
    const DATA_TYPE: ncclDataType_t;
    /// The emulator's name for it.
    const ELEMENT: Element;
    /// The Rust name, for messages.
    const NAME: &'static str;
}

macro_rules! element {
    ($($t:ty => $dt:ident, $el:ident;)*) => {$(
        impl private::Sealed for $t {}
        impl NcclElement for $t {
            const DATA_TYPE: ncclDataType_t = sys::$dt;
            const ELEMENT: Element = Element::$el;
            const NAME: &'static str = stringify!($t);
        }
    )*};
}

element! {
    i8 => ncclInt8, I8;
    u8 => ncclUint8, U8;
    i32 => ncclInt32, I32;
    u32 => ncclUint32, U32;
    i64 => ncclInt64, I64;
    u64 => ncclUint64, U64;
    f16 => ncclFloat16, F16;
    f32 => ncclFloat32, F32;
    f64 => ncclFloat64, F64;
    bf16 => ncclBfloat16, Bf16;
    F8E4M3 => ncclFloat8e4m3, F8E4M3;
    F8E5M2 => ncclFloat8e5m2, F8E5M2;
}

macro_rules! fp8_type {
    ($(#[$doc:meta])* $name:ident, $format:expr) => {
        $(#[$doc])*
        #[allow(non_camel_case_types)]
        #[repr(transparent)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name(pub u8);

        // SAFETY: `repr(transparent)` over u8; every bit pattern is a value.
        unsafe impl DeviceRepr for $name {}

        impl $name {
            /// `x` rounded to nearest even, saturating to the largest
            /// finite value (CUDA's default conversion); NaN stays NaN.
            pub fn from_f32(x: f32) -> Self {
                $name(fp8::encode($format, x))
            }
            /// The value (exact).
            pub fn to_f32(self) -> f32 {
                fp8::decode($format, self.0)
            }
        }
    };
}

fp8_type!(
    /// fp8 E4M3 (`__nv_fp8_e4m3`): 4 exponent bits, 3 mantissa bits,
    /// largest finite 448, no infinities.
    F8E4M3,
    fp8::E4M3
);
fp8_type!(
    /// fp8 E5M2 (`__nv_fp8_e5m2`): 5 exponent bits, 2 mantissa bits,
    /// largest finite 57344, with infinities.
    F8E5M2,
    fp8::E5M2
);

/// Whether `T` is an fp8 type (needs NCCL 2.24).
pub(crate) fn is_fp8<T: NcclElement>() -> bool {
    matches!(T::ELEMENT, Element::F8E4M3 | Element::F8E5M2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp8_round_trips_and_saturates() {
        for x in [0.0f32, 1.0, -1.5, 0.125, 448.0, 3.5] {
            assert_eq!(F8E4M3::from_f32(x).to_f32(), x);
        }
        assert_eq!(F8E4M3::from_f32(1000.0).to_f32(), 448.0);
        assert_eq!(F8E5M2::from_f32(1e6).to_f32(), 57344.0);
        assert!(F8E4M3::from_f32(f32::NAN).to_f32().is_nan());
        // 1.0625 is halfway between 1.0 and 1.125 in E4M3: ties go to even.
        assert_eq!(F8E4M3::from_f32(1.0625).to_f32(), 1.0);
        assert_eq!(F8E4M3::from_f32(1.1875).to_f32(), 1.25);
        // The smallest subnormal of E4M3 is 2^-9.
        assert_eq!(F8E4M3::from_f32(2f32.powi(-9)).to_f32(), 2f32.powi(-9));
    }
}
