//! Tensor maps (`CUtensorMap`) for the Tensor Memory Accelerator (sm_90):
//! what `cuda_device::tma` copies need to find a tile of a 1–5-D tensor in
//! global memory.
//!
//! [`TensorMapBuilder`] checks every rule of `cuTensorMapEncodeTiled` (rank,
//! sizes, byte strides, base alignment, box sizes, element strides,
//! swizzle spans, interleave) and reports a broken one as a typed
//! [`TensorMapError`] before the driver sees it; [`TensorMapBuilder::encode`]
//! then encodes the 128-byte map. Kernels take it by device address: upload
//! it with [`TensorMap::upload`] and pass the buffer's `device_ptr()`.
//!
//! ```no_run
//! use cuda_core::{CudaContext, DeviceBuffer};
//! use cuda_core::tensor_map::{TensorDataType, TensorMap, TensorSwizzle};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = CudaContext::new(0)?;
//! let stream = ctx.default_stream();
//! // A row-major 4096×8192 bf16 matrix, copied in 64×128 boxes (64 columns).
//! let a = DeviceBuffer::<u16>::zeroed(&stream, 4096 * 8192)?;
//! let map = TensorMap::tiled(TensorDataType::BF16, a.device_ptr(), &[8192, 4096], &[8192 * 2], &[64, 128])
//!     .swizzle(TensorSwizzle::B128)
//!     .encode()?;
//! let on_device = map.upload(&stream)?; // pass on_device.device_ptr() to the kernel
//! # Ok(()) }
//! ```

use std::fmt;

use crate::driver::{self, cu};
use crate::{CudaStream, DeviceBuffer, DriverError};

/// The element type of a tensor (`CUtensorMapDataType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
#[allow(missing_docs)]
pub enum TensorDataType {
    U8 = 0,
    U16 = 1,
    U32 = 2,
    I32 = 3,
    U64 = 4,
    I64 = 5,
    F16 = 6,
    F32 = 7,
    F64 = 8,
    BF16 = 9,
    F32Ftz = 10,
    TF32 = 11,
    TF32Ftz = 12,
}

impl TensorDataType {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        use TensorDataType::*;
        match self {
            U8 => 1,
            U16 | F16 | BF16 => 2,
            U32 | I32 | F32 | F32Ftz | TF32 | TF32Ftz => 4,
            U64 | I64 | F64 => 8,
        }
    }

    fn is_float(self) -> bool {
        use TensorDataType::*;
        matches!(self, F16 | F32 | F64 | BF16 | F32Ftz | TF32 | TF32Ftz)
    }
}

/// How a box is laid out in shared memory (`CUtensorMapSwizzle`): 16-byte
/// chunks permuted within spans of 32, 64 or 128 bytes, so that reading a
/// column of the tile hits different banks. wgmma's descriptors name the
/// same layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum TensorSwizzle {
    /// Row after row, unpermuted.
    None = 0,
    /// 32-byte spans.
    B32 = 1,
    /// 64-byte spans.
    B64 = 2,
    /// 128-byte spans (the layout of wgmma's 128-byte swizzle).
    B128 = 3,
}

impl TensorSwizzle {
    /// The span in bytes (0 for none): the inner box may not be wider.
    pub fn span(self) -> u64 {
        match self {
            TensorSwizzle::None => 0,
            TensorSwizzle::B32 => 32,
            TensorSwizzle::B64 => 64,
            TensorSwizzle::B128 => 128,
        }
    }
}

/// Interleaved layouts such as NC/8HWC8 (`CUtensorMapInterleave`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum TensorInterleave {
    /// Plain strided layout.
    None = 0,
    /// 16-byte interleave.
    B16 = 1,
    /// 32-byte interleave (needs the 32-byte swizzle).
    B32 = 2,
}

/// The granularity at which L2 fetches lines from memory
/// (`CUtensorMapL2promotion`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
#[allow(missing_docs)]
pub enum L2Promotion {
    None = 0,
    B64 = 1,
    B128 = 2,
    B256 = 3,
}

/// A rule of `cuTensorMapEncodeTiled` that the description breaks, or the
/// driver's own refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // each variant's doc names its fields
pub enum TensorMapError {
    /// The rank (number of dimensions) is not 1–5, or not 3–5 with interleave.
    Rank { rank: usize, interleaved: bool },
    /// An array has the wrong length for the rank (`what`: which array).
    Length { what: &'static str, expected: usize, got: usize },
    /// The base address is not aligned to `required` bytes.
    BaseAlignment { address: u64, required: u64 },
    /// A dimension is 0 or above 2³².
    Dimension { index: usize, size: u64 },
    /// A byte stride is not a multiple of `multiple`, or ≥ 2⁴⁰.
    Stride { index: usize, stride: u64, multiple: u64 },
    /// A byte stride is smaller than the extent of the dimensions it steps over.
    StrideOverlap { index: usize, stride: u64, minimum: u64 },
    /// A box size is 0 or above 256.
    BoxSize { index: usize, size: u32 },
    /// The inner box (`box[0]` × element size) is not a multiple of 16 bytes.
    InnerBoxBytes { bytes: u64 },
    /// The inner box is wider than the swizzle span.
    SwizzleSpan { bytes: u64, swizzle: TensorSwizzle },
    /// An element stride is 0 or above 8.
    ElementStride { index: usize, stride: u32 },
    /// The 32-byte interleave needs the 32-byte swizzle.
    InterleaveSwizzle { swizzle: TensorSwizzle },
    /// NaN fill of out-of-bounds elements needs a floating-point type.
    NanFillType { data_type: TensorDataType },
    /// The driver refused the map (or is missing).
    Driver(DriverError),
}

impl fmt::Display for TensorMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use TensorMapError::*;
        write!(f, "invalid tensor map: ")?;
        match self {
            Rank { rank, interleaved: false } => write!(f, "rank {rank}; TMA handles 1 to 5 dimensions"),
            Rank { rank, .. } => write!(f, "rank {rank}; interleaved layouts need 3 to 5 dimensions"),
            Length { what, expected, got } => write!(f, "{got} {what} given, the rank needs {expected}"),
            BaseAlignment { address, required } => {
                write!(f, "base address {address:#x} is not aligned to {required} bytes")
            }
            Dimension { index, size } => write!(f, "dimension {index} has size {size}; it must be 1 to 2^32"),
            Stride { index, stride, multiple } => write!(
                f,
                "byte stride {stride} of dimension {} is not a multiple of {multiple} below 2^40",
                index + 1
            ),
            StrideOverlap { index, stride, minimum } => write!(
                f,
                "byte stride {stride} of dimension {} is smaller than the {minimum} bytes of the dimensions inside it",
                index + 1
            ),
            BoxSize { index, size } => write!(f, "box size {size} in dimension {index}; it must be 1 to 256"),
            InnerBoxBytes { bytes } => write!(f, "the inner box is {bytes} bytes, not a multiple of 16"),
            SwizzleSpan { bytes, swizzle } => write!(
                f,
                "the inner box is {bytes} bytes, wider than the {} bytes of swizzle {swizzle:?}",
                swizzle.span()
            ),
            ElementStride { index, stride } => {
                write!(f, "element stride {stride} in dimension {index}; it must be 1 to 8")
            }
            InterleaveSwizzle { swizzle } => {
                write!(f, "the 32-byte interleave needs TensorSwizzle::B32, not {swizzle:?}")
            }
            NanFillType { data_type } => write!(f, "NaN fill needs a floating-point type, not {data_type:?}"),
            Driver(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TensorMapError {}

impl From<DriverError> for TensorMapError {
    fn from(e: DriverError) -> Self {
        TensorMapError::Driver(e)
    }
}

/// An encoded `CUtensorMap`: 128 opaque bytes, 64-byte aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct TensorMap {
    words: [u64; 16],
}

// SAFETY: 16 plain u64 words; any bit pattern is a valid value of the type
// (the driver decides whether it is a meaningful map).
unsafe impl crate::DeviceRepr for TensorMap {}

impl TensorMap {
    /// Starts describing a tiled map: a tensor of `data_type` at device
    /// address `address` with `dims` elements per dimension (innermost
    /// first), `strides` bytes between consecutive indices of dimensions
    /// 1… (one fewer than `dims`), copied in boxes of `box_dims` elements.
    pub fn tiled(
        data_type: TensorDataType,
        address: u64,
        dims: &[u64],
        strides: &[u64],
        box_dims: &[u32],
    ) -> TensorMapBuilder {
        TensorMapBuilder {
            data_type,
            address,
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            box_dims: box_dims.to_vec(),
            element_strides: vec![1; dims.len()],
            interleave: TensorInterleave::None,
            swizzle: TensorSwizzle::None,
            l2_promotion: L2Promotion::B128,
            nan_fill: false,
        }
    }

    /// Starts describing the map the Hopper matrix kernels read: a row-major
    /// `rows` × `cols` matrix of `data_type` at `address` (rows contiguous,
    /// `cols` elements apart), copied in boxes of one 128-byte row's worth
    /// of columns (64 bf16, 128 bytes) × `box_rows` rows, with the 128-byte
    /// swizzle. A box lands in shared memory as the layout whose wgmma
    /// descriptors `cuda_device::wgmma::kmajor_b128` and `mnmajor_b128`
    /// make; consecutive boxes along the columns are `box_rows` × 128 bytes
    /// apart when loaded one after another.
    pub fn matrix_b128(data_type: TensorDataType, address: u64, rows: u64, cols: u64, box_rows: u32) -> TensorMapBuilder {
        let size = data_type.size();
        let box_cols = (128 / size) as u32;
        Self::tiled(data_type, address, &[cols, rows], &[size * cols], &[box_cols, box_rows]).swizzle(TensorSwizzle::B128)
    }

    /// The 128 bytes as 16 words.
    pub fn words(&self) -> &[u64; 16] {
        &self.words
    }

    /// Copies the map into a device buffer of its own (256-byte aligned, so
    /// 64-byte aligned as TMA needs); pass its `device_ptr()` to kernels.
    pub fn upload(&self, stream: &CudaStream) -> Result<DeviceBuffer<TensorMap>, DriverError> {
        DeviceBuffer::from_host(stream, std::slice::from_ref(self))
    }
}

/// A tensor map being described; [`encode`](Self::encode) validates it and
/// asks the driver for the map.
#[derive(Clone, Debug)]
pub struct TensorMapBuilder {
    data_type: TensorDataType,
    address: u64,
    dims: Vec<u64>,
    strides: Vec<u64>,
    box_dims: Vec<u32>,
    element_strides: Vec<u32>,
    interleave: TensorInterleave,
    swizzle: TensorSwizzle,
    l2_promotion: L2Promotion,
    nan_fill: bool,
}

impl TensorMapBuilder {
    /// The shared-memory layout of a box (default: none).
    pub fn swizzle(mut self, swizzle: TensorSwizzle) -> Self {
        self.swizzle = swizzle;
        self
    }

    /// An interleaved layout (default: none).
    pub fn interleave(mut self, interleave: TensorInterleave) -> Self {
        self.interleave = interleave;
        self
    }

    /// The L2 fetch granularity (default: 128 bytes).
    pub fn l2_promotion(mut self, l2_promotion: L2Promotion) -> Self {
        self.l2_promotion = l2_promotion;
        self
    }

    /// Steps between the elements a box takes, per dimension (default: all 1).
    pub fn element_strides(mut self, element_strides: &[u32]) -> Self {
        self.element_strides = element_strides.to_vec();
        self
    }

    /// Fill out-of-bounds elements with a NaN that FMA treats as zero,
    /// instead of zero (floating-point types only).
    pub fn nan_fill(mut self, nan_fill: bool) -> Self {
        self.nan_fill = nan_fill;
        self
    }

    /// Checks every rule `cuTensorMapEncodeTiled` imposes, first broken one
    /// reported.
    pub fn validate(&self) -> Result<(), TensorMapError> {
        use TensorMapError::*;
        let rank = self.dims.len();
        let interleaved = self.interleave != TensorInterleave::None;
        if !(1..=5).contains(&rank) || (interleaved && rank < 3) {
            return Err(Rank { rank, interleaved });
        }
        for (what, expected, got) in [
            ("strides", rank - 1, self.strides.len()),
            ("box sizes", rank, self.box_dims.len()),
            ("element strides", rank, self.element_strides.len()),
        ] {
            if expected != got {
                return Err(Length { what, expected, got });
            }
        }
        let wide = self.interleave == TensorInterleave::B32;
        let required = if wide { 32 } else { 16 };
        if !self.address.is_multiple_of(required) {
            return Err(BaseAlignment { address: self.address, required });
        }
        for (index, &size) in self.dims.iter().enumerate() {
            if size == 0 || size > 1 << 32 {
                return Err(Dimension { index, size });
            }
        }
        let esize = self.data_type.size();
        let mut extent = self.dims[0] * esize;
        for (index, &stride) in self.strides.iter().enumerate() {
            let multiple = if wide { 32 } else { 16 };
            if !stride.is_multiple_of(multiple) || stride >= 1 << 40 {
                return Err(Stride { index, stride, multiple });
            }
            if stride < extent {
                return Err(StrideOverlap { index, stride, minimum: extent });
            }
            extent = stride * self.dims[index + 1];
        }
        for (index, &size) in self.box_dims.iter().enumerate() {
            if size == 0 || size > 256 {
                return Err(BoxSize { index, size });
            }
        }
        let inner = self.box_dims[0] as u64 * esize;
        if !interleaved {
            if !inner.is_multiple_of(16) {
                return Err(InnerBoxBytes { bytes: inner });
            }
            if self.swizzle != TensorSwizzle::None && inner > self.swizzle.span() {
                return Err(SwizzleSpan { bytes: inner, swizzle: self.swizzle });
            }
        }
        for (index, &stride) in self.element_strides.iter().enumerate() {
            if stride == 0 || stride > 8 {
                return Err(ElementStride { index, stride });
            }
        }
        if wide && self.swizzle != TensorSwizzle::B32 {
            return Err(InterleaveSwizzle { swizzle: self.swizzle });
        }
        if self.nan_fill && !self.data_type.is_float() {
            return Err(NanFillType { data_type: self.data_type });
        }
        Ok(())
    }

    /// Validates the description and encodes the map
    /// (`cuTensorMapEncodeTiled`; needs the driver, not a context).
    pub fn encode(&self) -> Result<TensorMap, TensorMapError> {
        self.validate()?;
        let d = driver::initialized()?;
        let mut map = TensorMap { words: [0; 16] };
        // SAFETY: `map` is 128 writable, 64-byte aligned bytes; the arrays
        // have the lengths the rank requires (validated above) and outlive
        // the call; the enums carry the driver's values.
        unsafe {
            cu!(
                d,
                cuTensorMapEncodeTiled(
                    (&mut map as *mut TensorMap).cast(),
                    self.data_type as u32,
                    self.dims.len() as u32,
                    self.address as *mut std::ffi::c_void,
                    self.dims.as_ptr(),
                    self.strides.as_ptr(),
                    self.box_dims.as_ptr(),
                    self.element_strides.as_ptr(),
                    self.interleave as u32,
                    self.swizzle as u32,
                    self.l2_promotion as u32,
                    self.nan_fill as u32,
                )
            )?
        };
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf16_matrix() -> TensorMapBuilder {
        TensorMap::tiled(TensorDataType::BF16, 0x1000, &[8192, 4096], &[16384], &[64, 128])
            .swizzle(TensorSwizzle::B128)
    }

    #[test]
    fn a_gemm_operand_is_valid() {
        assert_eq!(bf16_matrix().validate(), Ok(()));
    }

    #[test]
    fn matrix_b128_is_a_row_major_matrix_in_128_byte_boxes() {
        let m = TensorMap::matrix_b128(TensorDataType::BF16, 0x1000, 4096, 8192, 128);
        assert_eq!(format!("{m:?}"), format!("{:?}", bf16_matrix()));
        // One byte per element: a box row is 128 of them.
        let fp8 = TensorMap::matrix_b128(TensorDataType::U8, 0x1000, 256, 1024, 64);
        let spelled = TensorMap::tiled(TensorDataType::U8, 0x1000, &[1024, 256], &[1024], &[128, 64]).swizzle(TensorSwizzle::B128);
        assert_eq!(format!("{fp8:?}"), format!("{spelled:?}"));
        assert_eq!(fp8.validate(), Ok(()));
    }

    #[test]
    fn each_rule_is_a_typed_error() {
        use TensorMapError::*;
        let t = |b: TensorMapBuilder| b.validate().unwrap_err();
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::U8, 0, &[16; 6], &[16; 5], &[16; 6])),
            Rank { rank: 6, .. }
        ));
        assert!(matches!(t(bf16_matrix().interleave(TensorInterleave::B16)), Rank { rank: 2, interleaved: true }));
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::BF16, 0, &[64, 64], &[], &[64, 64])),
            Length { what: "strides", expected: 1, got: 0 }
        ));
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::BF16, 8, &[64, 64], &[128], &[64, 64])),
            BaseAlignment { address: 8, required: 16 }
        ));
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::BF16, 0, &[64, 0], &[128], &[64, 1])),
            Dimension { index: 1, size: 0 }
        ));
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::BF16, 0, &[60, 4], &[120], &[8, 4])),
            Stride { index: 0, stride: 120, multiple: 16 }
        ));
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::BF16, 0, &[8, 4], &[1 << 40], &[8, 4])),
            Stride { .. }
        ));
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::BF16, 0, &[64, 4], &[64], &[8, 4])),
            StrideOverlap { index: 0, stride: 64, minimum: 128 }
        ));
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::BF16, 0, &[512, 512], &[1024], &[64, 257])),
            BoxSize { index: 1, size: 257 }
        ));
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::BF16, 0, &[64, 64], &[128], &[4, 64])),
            InnerBoxBytes { bytes: 8 }
        ));
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::BF16, 0, &[128, 64], &[256], &[128, 64]).swizzle(TensorSwizzle::B128)),
            SwizzleSpan { bytes: 256, swizzle: TensorSwizzle::B128 }
        ));
        assert!(matches!(t(bf16_matrix().swizzle(TensorSwizzle::B64)), SwizzleSpan { bytes: 128, .. }));
        assert!(matches!(t(bf16_matrix().element_strides(&[1, 9])), ElementStride { index: 1, stride: 9 }));
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::BF16, 0, &[16, 4, 4], &[32, 128], &[16, 4, 4])
                .interleave(TensorInterleave::B32)),
            InterleaveSwizzle { swizzle: TensorSwizzle::None }
        ));
        assert!(matches!(
            t(TensorMap::tiled(TensorDataType::U16, 0, &[64, 64], &[128], &[64, 64]).nan_fill(true)),
            NanFillType { .. }
        ));
    }

    #[test]
    fn errors_explain_themselves() {
        let e = TensorMap::tiled(TensorDataType::BF16, 0, &[128, 64], &[256], &[128, 64])
            .swizzle(TensorSwizzle::B128)
            .validate()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid tensor map: the inner box is 256 bytes, wider than the 128 bytes of swizzle B128"
        );
    }

    #[test]
    fn the_map_is_128_bytes_aligned_to_64() {
        assert_eq!(std::mem::size_of::<TensorMap>(), 128);
        assert_eq!(std::mem::align_of::<TensorMap>(), 64);
    }
}
