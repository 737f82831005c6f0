//! [`BlasLt`]: cuBLASLt matmuls with a fused epilogue (bias, ReLU, GELU),
//! on f32, f16 and bf16 ([`BlasLt::matmul`]) and on FP8 inputs with
//! per-tensor scales ([`BlasLt::matmul_fp8`]).

use std::ffi::c_void;
use std::sync::Arc;

use cuda_core::{CudaStream, DeviceBuffer, DeviceSlice, DeviceSliceMut};

use crate::blas::{compute_type, cublaslt_api, same_context};
use crate::cpu::{self, Activation};
use crate::element::{Fp8Element, Fp8Output, Fp8Pair, LtElement};
use crate::result::{BlasError, CublasStatus, Operand};
use crate::shape::{Compute, GemmConfig, Plan, StridedBatch, Transpose};
use crate::sys::{self, cublasLtHandle_t, CublasLtApi};

/// The workspace cuBLASLt may use per call (32 MiB, what NVIDIA advises for
/// Hopper).
pub const WORKSPACE_BYTES: usize = 32 << 20;

/// What is applied to each element of `alpha·op(A)·op(B) + beta·C` before
/// it is stored, in the same kernel.
///
/// The bias is a vector of the element type with one entry per column of C
/// in [`RowMajor`](crate::Layout::RowMajor) (length `n`: a bias per output
/// feature, added to every row), per row of C in
/// [`ColMajor`](crate::Layout::ColMajor) (length `m`). The bias is added
/// before the activation.
#[derive(Clone, Copy, Debug)]
pub enum Epilogue<'a, T> {
    /// Nothing (a plain GEMM).
    None,
    /// `max(x, 0)`.
    Relu,
    /// GELU, tanh approximation: `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
    Gelu,
    /// `x + bias`.
    Bias(DeviceSlice<'a, T>),
    /// `max(x + bias, 0)`.
    BiasRelu(DeviceSlice<'a, T>),
    /// `gelu(x + bias)`.
    BiasGelu(DeviceSlice<'a, T>),
}

impl<'a, T> Epilogue<'a, T> {
    fn parts(&self) -> (Option<DeviceSlice<'a, T>>, Activation, u32) {
        match *self {
            Epilogue::None => (None, Activation::None, sys::CUBLASLT_EPILOGUE_DEFAULT),
            Epilogue::Relu => (None, Activation::Relu, sys::CUBLASLT_EPILOGUE_RELU),
            Epilogue::Gelu => (None, Activation::Gelu, sys::CUBLASLT_EPILOGUE_GELU),
            Epilogue::Bias(b) => (Some(b), Activation::None, sys::CUBLASLT_EPILOGUE_BIAS),
            Epilogue::BiasRelu(b) => (Some(b), Activation::Relu, sys::CUBLASLT_EPILOGUE_RELU_BIAS),
            Epilogue::BiasGelu(b) => (Some(b), Activation::Gelu, sys::CUBLASLT_EPILOGUE_GELU_BIAS),
        }
    }
}

/// The per-tensor scale factors of an FP8 matmul: one `f32` each for A and
/// B, in device memory, read when the matmul runs (so a graph replays the
/// current values, and a kernel may compute them just before).
///
/// FP8 tensors are usually stored divided by a per-tensor factor that
/// brings their range into FP8's; the matmul multiplies the product by
/// both factors back: `D = epilogue(alpha·scale_a·scale_b·op(A)·op(B) +
/// beta·C)`.
#[derive(Clone, Copy, Debug)]
pub struct Fp8Scales<'a> {
    /// A's factor (the first element is used).
    pub a: DeviceSlice<'a, f32>,
    /// B's factor (the first element is used).
    pub b: DeviceSlice<'a, f32>,
}

impl<'a> Fp8Scales<'a> {
    /// The factors in the first element of `a` and of `b` (each may be a
    /// buffer of length 1).
    pub fn new(a: &'a DeviceBuffer<f32>, b: &'a DeviceBuffer<f32>) -> Fp8Scales<'a> {
        Fp8Scales { a: a.as_slice(), b: b.as_slice() }
    }
}

/// The element types of one cuBLASLt call, in its column-major order.
struct Types {
    x1: sys::cudaDataType_t,
    x2: sys::cudaDataType_t,
    c: sys::cudaDataType_t,
    bias: sys::cudaDataType_t,
}

/// The FP8 rules cuBLASLt's kernels impose, checked on a [`Plan`] and the
/// operands' addresses before anything is queued; `out_size` is the size
/// of C's elements.
pub(crate) fn check_fp8(
    cfg: &GemmConfig<f32>,
    plan: &Plan,
    out_size: usize,
    addresses: [(Operand, u64); 3],
) -> Result<(), BlasError> {
    // "TN": the first column-major operand transposed, the second not.
    if plan.op1 != Transpose::Yes || plan.op2 != Transpose::No {
        return Err(BlasError::Fp8Layout { layout: cfg.layout, trans_a: cfg.trans_a, trans_b: cfg.trans_b });
    }
    let (lda, ldb) = if plan.swapped { (plan.ld2, plan.ld1) } else { (plan.ld1, plan.ld2) };
    let c_multiple = 16 / out_size;
    for (what, value, multiple) in
        [("m", cfg.m, 16), ("n", cfg.n, 16), ("k", cfg.k, 16), ("lda", lda, 16), ("ldb", ldb, 16), ("ldc", plan.ldc, c_multiple)]
    {
        if value % multiple != 0 {
            return Err(BlasError::Fp8NotMultipleOf16 { what, value, multiple });
        }
    }
    for (operand, address) in addresses {
        if address % 16 != 0 {
            return Err(BlasError::Fp8Misaligned { operand, address });
        }
    }
    Ok(())
}

/// Refuses compute capabilities without FP8 tensor cores (below 8.9).
pub(crate) fn check_fp8_arch((major, minor): (u32, u32)) -> Result<(), BlasError> {
    if (major, minor) < (8, 9) {
        return Err(BlasError::Fp8NeedsSm89 { major, minor });
    }
    Ok(())
}

enum Engine {
    Gpu { api: &'static CublasLtApi, handle: cublasLtHandle_t, workspace: DeviceBuffer<u8> },
    Emulated,
}

/// A cuBLASLt handle and its workspace, for matmuls on one stream with a
/// fused [`Epilogue`].
///
/// Like [`Blas`](crate::Blas): work is queued on [`stream`](Self::stream),
/// operands are ordered as reads (A, B, the bias) and a write (C), every
/// shape is checked first, and under the emulator the CPU reference runs
/// instead (no library is loaded). Not `Sync`.
pub struct BlasLt {
    stream: Arc<CudaStream>,
    engine: Engine,
}

// SAFETY: as for `Blas`: used from one thread at a time, each call binding
// the context first.
unsafe impl Send for BlasLt {}

/// Destroys a cuBLASLt descriptor when dropped.
struct Desc {
    ptr: *mut c_void,
    destroy: unsafe extern "C" fn(*mut c_void) -> sys::cublasStatus_t,
}

impl Drop for Desc {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: a live descriptor made by the matching create, destroyed once.
            unsafe { (self.destroy)(self.ptr) };
        }
    }
}

impl BlasLt {
    /// A handle whose work runs on `stream` (`cublasLtCreate`), with a
    /// [`WORKSPACE_BYTES`] workspace allocated on it. Fails with
    /// [`BlasError::LibraryNotFound`] when there is no `libcublasLt`.
    pub fn new(stream: &Arc<CudaStream>) -> Result<BlasLt, BlasError> {
        let ctx = stream.context();
        if ctx.backend().is_emulated() {
            return Ok(BlasLt { stream: stream.clone(), engine: Engine::Emulated });
        }
        let api = cublaslt_api()?;
        let workspace = DeviceBuffer::<u8>::zeroed(stream, WORKSPACE_BYTES)?;
        ctx.bind_to_thread()?;
        let mut handle: cublasLtHandle_t = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the context is current.
        BlasError::check("cublasLtCreate", unsafe { (api.cublasLtCreate)(&mut handle) })?;
        Ok(BlasLt { stream: stream.clone(), engine: Engine::Gpu { api, handle, workspace } })
    }

    /// The stream the handle's work runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Whether calls run the CPU reference (the context is emulated).
    pub fn is_emulated(&self) -> bool {
        matches!(self.engine, Engine::Emulated)
    }

    /// `C = epilogue(alpha·op(A)·op(B) + beta·C)` (`cublasLtMatmul`), queued
    /// on the handle's stream. Shapes as for [`Blas::gemm`](crate::Blas::gemm);
    /// the bias length is checked too.
    pub fn matmul<T: LtElement>(
        &self,
        cfg: &GemmConfig<f32>,
        epilogue: Epilogue<'_, T>,
        a: DeviceSlice<'_, T>,
        b: DeviceSlice<'_, T>,
        mut c: DeviceSliceMut<'_, T>,
    ) -> Result<(), BlasError> {
        let compute = compute_type::<T>(cfg.compute)?;
        let ctx = self.stream.context();
        same_context(ctx, a.context(), Operand::A)?;
        same_context(ctx, b.context(), Operand::B)?;
        same_context(ctx, c.as_slice().context(), Operand::C)?;
        let (bias, act, raw_epilogue) = epilogue.parts();
        let plan = Plan::new(cfg, &StridedBatch::ONE, [a.len(), b.len(), c.len()])?;
        if let Some(bias) = &bias {
            same_context(ctx, bias.context(), Operand::Bias)?;
            // One entry per column-major row of C (plan.m).
            if bias.len() < plan.m {
                return Err(BlasError::BufferTooSmall { operand: Operand::Bias, len: bias.len(), needed: plan.m });
            }
        }
        if plan.is_empty() {
            return Ok(());
        }
        a.order_read(&self.stream)?;
        b.order_read(&self.stream)?;
        if let Some(bias) = &bias {
            bias.order_read(&self.stream)?;
        }
        c.order_write(&self.stream)?;
        let (x1, x2) = if plan.swapped { (b.device_ptr(), a.device_ptr()) } else { (a.device_ptr(), b.device_ptr()) };
        let bias_ptr = bias.map_or(0, |b| b.device_ptr());
        let (alpha, beta) = (cfg.alpha, cfg.beta);
        match &self.engine {
            Engine::Emulated => {
                let tf32 = cfg.compute == Compute::Tf32;
                let [na, nb, nc] = plan.needed;
                let (n1, n2) = if plan.swapped { (nb, na) } else { (na, nb) };
                let (cp, has_bias, m) = (c.device_ptr(), bias.is_some(), plan.m);
                self.stream.launch_host_fn_replayable(move || {
                    // SAFETY: as in `Blas::gemm`; the bias holds `m`
                    // elements (checked) and is only read.
                    let (x1, x2, c) = unsafe { cpu::views::<T>(x1, n1, x2, n2, cp, nc) };
                    // SAFETY: as above.
                    let bias = has_bias.then(|| unsafe { cpu::view::<T>(bias_ptr, m) });
                    cpu::gemm(&plan, alpha, beta, tf32, x1, x2, c, bias, act);
                })?;
                Ok(())
            }
            Engine::Gpu { api, handle, workspace } => {
                ctx.bind_to_thread()?;
                let t = T::DATA_TYPE;
                let types = Types { x1: t, x2: t, c: t, bias: t };
                let call = GpuCall { plan: &plan, compute, types, epilogue: raw_epilogue, bias: bias_ptr, scales: None };
                self.gpu_matmul(api, *handle, workspace, &call, alpha, beta, x1, x2, c.device_ptr())
            }
        }
    }

    /// `D = epilogue(alpha·scale_a·scale_b·op(A)·op(B) + beta·C)` with FP8
    /// A and B (`cublasLtMatmul` on FP8 tensor cores, accumulating in f32),
    /// queued on the handle's stream; C is f32, f16 or bf16 and the bias
    /// is bf16 for an f32 C, else C's type ([`Fp8Output::Bias`]).
    ///
    /// cuBLASLt's FP8 kernels are strict, and each rule is checked here
    /// before anything is queued, on the GPU and under the emulator alike:
    ///
    /// * the GPU has compute capability 8.9 or newer
    ///   ([`BlasError::Fp8NeedsSm89`]);
    /// * the layout is "TN" ([`BlasError::Fp8Layout`]): in row-major,
    ///   `GemmConfig::row_major(m, n, k).transpose_b()` (A stored `m × k`,
    ///   B stored `n × k`, as a linear layer's weights are); in
    ///   column-major, `GemmConfig::col_major(m, n, k).transpose_a()`;
    /// * `m`, `n`, `k`, `lda` and `ldb` are multiples of 16, `ldc` of 16
    ///   bytes ([`BlasError::Fp8NotMultipleOf16`]);
    /// * A, B and C start 16-byte aligned ([`BlasError::Fp8Misaligned`]);
    /// * compute is [`Compute::Default`] (f32 accumulation;
    ///   [`BlasError::Tf32NeedsF32`] otherwise);
    /// * each scale holds at least one element, of the handle's context.
    ///
    /// The element types are checked when compiling: E5M2 × E5M2 has no
    /// kernel ([`Fp8Pair`]), and a bias of another type than
    /// [`Fp8Output::Bias`] is a type error.
    ///
    /// Under the emulator the CPU reference runs: the FP8 values decoded
    /// exactly, products accumulated in f32, scaled, the epilogue applied
    /// in f32 and the result rounded once to C's type.
    ///
    /// ```
    /// use cuda_blas::{BlasLt, Epilogue, Fp8Scales, GemmConfig};
    /// use cuda_core::{CudaContext, DeviceBuffer};
    /// use cuda_device::half::{bf16, f8e4m3};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # if std::env::var_os("OXIDE_EMULATE").is_none() { std::env::set_var("OXIDE_EMULATE", "1"); }
    /// let stream = CudaContext::new(0)?.default_stream();
    /// let lt = BlasLt::new(&stream)?;
    /// let (m, n, k) = (16, 32, 64);
    /// // Row-major activations x (m×k) and weights w (n×k): y = x·wᵀ + bias.
    /// let x = DeviceBuffer::from_host(&stream, &vec![f8e4m3::from_f32(0.5); m * k])?;
    /// let w = DeviceBuffer::from_host(&stream, &vec![f8e4m3::from_f32(0.25); n * k])?;
    /// let bias = DeviceBuffer::from_host(&stream, &vec![bf16::from_f32(1.0); n])?;
    /// let (sx, sw) = (DeviceBuffer::from_host(&stream, &[2.0f32])?, DeviceBuffer::from_host(&stream, &[4.0f32])?);
    /// let mut y = DeviceBuffer::<f32>::zeroed(&stream, m * n)?;
    /// let cfg = GemmConfig::row_major(m, n, k).transpose_b();
    /// lt.matmul_fp8(&cfg, Fp8Scales::new(&sx, &sw), Epilogue::Bias(bias.as_slice()), x.as_slice(), w.as_slice(), y.as_slice_mut())?;
    /// // 64 · 0.5 · 0.25 · (2 · 4) + 1
    /// assert!(y.to_host_vec(&stream)?.iter().all(|&v| v == 65.0));
    ///
    /// // B not transposed is not a layout cuBLASLt's FP8 kernels take.
    /// let err = lt.matmul_fp8(&GemmConfig::row_major(m, n, k), Fp8Scales::new(&sx, &sw), Epilogue::None,
    ///                         x.as_slice(), w.as_slice(), y.as_slice_mut());
    /// assert!(matches!(err, Err(cuda_blas::BlasError::Fp8Layout { .. })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn matmul_fp8<A, B, D>(
        &self,
        cfg: &GemmConfig<f32>,
        scales: Fp8Scales<'_>,
        epilogue: Epilogue<'_, D::Bias>,
        a: DeviceSlice<'_, A>,
        b: DeviceSlice<'_, B>,
        c: DeviceSliceMut<'_, D>,
    ) -> Result<(), BlasError>
    where
        A: Fp8Pair<B>,
        B: Fp8Element,
        D: Fp8Output,
    {
        self.matmul_fp8_strided_batched(cfg, &StridedBatch::ONE, scales, epilogue, a, b, c)
    }

    /// [`matmul_fp8`](Self::matmul_fp8) for `batch.count` matmuls at once,
    /// the `e`-th on the matrices that start `e · stride` elements into A,
    /// B and C (as [`Blas::gemm_strided_batched`](crate::Blas::gemm_strided_batched);
    /// [`StridedBatch::packed`] for matrices stored back to back). The
    /// scales and the bias are the same for every matmul of the batch. Each
    /// matrix must start 16-byte aligned, so every stride times its
    /// element's size is a multiple of 16 too
    /// ([`BlasError::Fp8NotMultipleOf16`]), besides the rules of
    /// [`matmul_fp8`](Self::matmul_fp8).
    #[allow(clippy::too_many_arguments)]
    pub fn matmul_fp8_strided_batched<A, B, D>(
        &self,
        cfg: &GemmConfig<f32>,
        batch: &StridedBatch,
        scales: Fp8Scales<'_>,
        epilogue: Epilogue<'_, D::Bias>,
        a: DeviceSlice<'_, A>,
        b: DeviceSlice<'_, B>,
        mut c: DeviceSliceMut<'_, D>,
    ) -> Result<(), BlasError>
    where
        A: Fp8Pair<B>,
        B: Fp8Element,
        D: Fp8Output,
    {
        if cfg.compute != Compute::Default {
            return Err(BlasError::Tf32NeedsF32 { element: A::NAME });
        }
        let ctx = self.stream.context();
        same_context(ctx, a.context(), Operand::A)?;
        same_context(ctx, b.context(), Operand::B)?;
        same_context(ctx, c.as_slice().context(), Operand::C)?;
        for (operand, scale) in [(Operand::ScaleA, &scales.a), (Operand::ScaleB, &scales.b)] {
            same_context(ctx, scale.context(), operand)?;
            if scale.is_empty() {
                return Err(BlasError::BufferTooSmall { operand, len: 0, needed: 1 });
            }
        }
        check_fp8_arch(ctx.compute_capability()?)?;
        let (bias, act, raw_epilogue) = epilogue.parts();
        let plan = Plan::new(cfg, batch, [a.len(), b.len(), c.len()])?;
        if let Some(bias) = &bias {
            same_context(ctx, bias.context(), Operand::Bias)?;
            if bias.len() < plan.m {
                return Err(BlasError::BufferTooSmall { operand: Operand::Bias, len: bias.len(), needed: plan.m });
            }
        }
        let addresses = [(Operand::A, a.device_ptr()), (Operand::B, b.device_ptr()), (Operand::C, c.device_ptr())];
        check_fp8(cfg, &plan, std::mem::size_of::<D>(), addresses)?;
        if plan.count > 1 {
            // Every matrix of the batch starts 16-byte aligned, as the first does.
            let strides = [("the A stride", batch.stride_a, 1), ("the B stride", batch.stride_b, 1)];
            for (what, value, size) in strides.into_iter().chain([("the C stride", batch.stride_c, std::mem::size_of::<D>())]) {
                let multiple = 16 / size;
                if value % multiple != 0 {
                    return Err(BlasError::Fp8NotMultipleOf16 { what, value, multiple });
                }
            }
        }
        if plan.is_empty() {
            return Ok(());
        }
        a.order_read(&self.stream)?;
        b.order_read(&self.stream)?;
        scales.a.order_read(&self.stream)?;
        scales.b.order_read(&self.stream)?;
        if let Some(bias) = &bias {
            bias.order_read(&self.stream)?;
        }
        c.order_write(&self.stream)?;
        let bias_ptr = bias.map_or(0, |b| b.device_ptr());
        let (alpha, beta) = (cfg.alpha, cfg.beta);
        let (sa, sb) = (scales.a.device_ptr(), scales.b.device_ptr());
        match &self.engine {
            Engine::Emulated => {
                let [na, nb, nc] = plan.needed;
                let (ap, bp, cp, has_bias, m) = (a.device_ptr(), b.device_ptr(), c.device_ptr(), bias.is_some(), plan.m);
                self.stream.launch_host_fn_replayable(move || {
                    // SAFETY: as in `matmul`; A holds `na` elements, B `nb`
                    // and C `nc` (checked by the plan), the scales one
                    // each, the bias `m`; all but C are only read.
                    let (a, b, c) = unsafe { (cpu::view::<A>(ap, na), cpu::view::<B>(bp, nb), cpu::view_mut::<D>(cp, nc)) };
                    // SAFETY: as above.
                    let scale = unsafe { cpu::view::<f32>(sa, 1)[0] * cpu::view::<f32>(sb, 1)[0] };
                    // SAFETY: as above.
                    let bias = has_bias.then(|| unsafe { cpu::view::<D::Bias>(bias_ptr, m) });
                    if plan.swapped {
                        cpu::matmul_fp8(&plan, alpha * scale, beta, b, a, c, bias, act);
                    } else {
                        cpu::matmul_fp8(&plan, alpha * scale, beta, a, b, c, bias, act);
                    }
                })?;
                Ok(())
            }
            Engine::Gpu { api, handle, workspace } => {
                ctx.bind_to_thread()?;
                let (x1, x2, t1, t2, s1, s2) = if plan.swapped {
                    (b.device_ptr(), a.device_ptr(), B::DATA_TYPE, A::DATA_TYPE, sb, sa)
                } else {
                    (a.device_ptr(), b.device_ptr(), A::DATA_TYPE, B::DATA_TYPE, sa, sb)
                };
                let types = Types { x1: t1, x2: t2, c: D::DATA_TYPE, bias: <D::Bias as crate::GemmElement>::DATA_TYPE };
                let call = GpuCall {
                    plan: &plan,
                    compute: sys::CUBLAS_COMPUTE_32F,
                    types,
                    epilogue: raw_epilogue,
                    bias: bias_ptr,
                    scales: Some((s1, s2)),
                };
                self.gpu_matmul(api, *handle, workspace, &call, alpha, beta, x1, x2, c.device_ptr())
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn gpu_matmul(
        &self,
        api: &CublasLtApi,
        handle: cublasLtHandle_t,
        workspace: &DeviceBuffer<u8>,
        call: &GpuCall<'_>,
        alpha: f32,
        beta: f32,
        x1: u64,
        x2: u64,
        c: u64,
    ) -> Result<(), BlasError> {
        let check = BlasError::check;
        let GpuCall { plan, compute, ref types, epilogue, bias, scales } = *call;
        let mut desc = Desc { ptr: std::ptr::null_mut(), destroy: api.cublasLtMatmulDescDestroy };
        // SAFETY (all calls below): out-pointers to locals, attribute values
        // of the sizes and types cublasLt.h gives, live descriptors; the
        // matmul reads and writes only inside the buffers, whose shapes the
        // plan checked; the workspace is live device memory of the
        // stream's context, used only on this stream.
        unsafe {
            check("cublasLtMatmulDescCreate", (api.cublasLtMatmulDescCreate)(&mut desc.ptr, compute, sys::CUDA_R_32F))?;
            let set = |attr: i32, value: *const c_void, size: usize| {
                check("cublasLtMatmulDescSetAttribute", (api.cublasLtMatmulDescSetAttribute)(desc.ptr, attr, value, size))
            };
            let (op1, op2) = (plan.op1.raw(), plan.op2.raw());
            set(sys::CUBLASLT_MATMUL_DESC_TRANSA, (&op1 as *const i32).cast(), 4)?;
            set(sys::CUBLASLT_MATMUL_DESC_TRANSB, (&op2 as *const i32).cast(), 4)?;
            set(sys::CUBLASLT_MATMUL_DESC_EPILOGUE, (&epilogue as *const u32).cast(), 4)?;
            if bias != 0 {
                set(sys::CUBLASLT_MATMUL_DESC_BIAS_POINTER, (&bias as *const u64).cast(), 8)?;
                let dt: i32 = types.bias;
                set(sys::CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, (&dt as *const i32).cast(), 4)?;
            }
            if let Some((s1, s2)) = scales {
                set(sys::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, (&s1 as *const u64).cast(), 8)?;
                set(sys::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, (&s2 as *const u64).cast(), 8)?;
            }
            let layout = |dt: sys::cudaDataType_t, rows: usize, cols: usize, ld: usize| -> Result<Desc, BlasError> {
                let mut d = Desc { ptr: std::ptr::null_mut(), destroy: api.cublasLtMatrixLayoutDestroy };
                check(
                    "cublasLtMatrixLayoutCreate",
                    (api.cublasLtMatrixLayoutCreate)(&mut d.ptr, dt, rows as u64, cols as u64, ld as i64),
                )?;
                Ok(d)
            };
            let stored = |op: Transpose, rows: usize, cols: usize| match op {
                Transpose::No => (rows, cols),
                Transpose::Yes => (cols, rows),
            };
            let (r1, c1) = stored(plan.op1, plan.m, plan.k);
            let (r2, c2) = stored(plan.op2, plan.k, plan.n);
            let l1 = layout(types.x1, r1, c1, plan.ld1)?;
            let l2 = layout(types.x2, r2, c2, plan.ld2)?;
            let lc = layout(types.c, plan.m, plan.n, plan.ldc)?;
            if plan.count > 1 {
                let count = plan.count as i32;
                for (l, stride) in [(&l1, plan.stride1), (&l2, plan.stride2), (&lc, plan.stride_c)] {
                    let stride = stride as i64;
                    let set = |attr: i32, value: *const c_void, size: usize| {
                        check("cublasLtMatrixLayoutSetAttribute", (api.cublasLtMatrixLayoutSetAttribute)(l.ptr, attr, value, size))
                    };
                    set(sys::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, (&count as *const i32).cast(), 4)?;
                    set(sys::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, (&stride as *const i64).cast(), 8)?;
                }
            }
            let mut pref = Desc { ptr: std::ptr::null_mut(), destroy: api.cublasLtMatmulPreferenceDestroy };
            check("cublasLtMatmulPreferenceCreate", (api.cublasLtMatmulPreferenceCreate)(&mut pref.ptr))?;
            let ws = workspace.len() as u64;
            check(
                "cublasLtMatmulPreferenceSetAttribute",
                (api.cublasLtMatmulPreferenceSetAttribute)(
                    pref.ptr,
                    sys::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    (&ws as *const u64).cast(),
                    8,
                ),
            )?;
            // The heuristic assumes 256-byte aligned matrices unless told
            // otherwise; a view into a buffer may start anywhere.
            for (i, ptr) in [x1, x2, c, c].into_iter().enumerate() {
                let align = alignment(ptr);
                check(
                    "cublasLtMatmulPreferenceSetAttribute",
                    (api.cublasLtMatmulPreferenceSetAttribute)(
                        pref.ptr,
                        sys::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES + i as i32,
                        (&align as *const u32).cast(),
                        4,
                    ),
                )?;
            }
            let mut result = sys::cublasLtMatmulHeuristicResult_t::default();
            let mut found = 0;
            check(
                "cublasLtMatmulAlgoGetHeuristic",
                (api.cublasLtMatmulAlgoGetHeuristic)(
                    handle, desc.ptr, l1.ptr, l2.ptr, lc.ptr, lc.ptr, pref.ptr, 1, &mut result, &mut found,
                ),
            )?;
            if found == 0 {
                return Err(BlasError::Status { call: "cublasLtMatmulAlgoGetHeuristic", status: CublasStatus::NotSupported });
            }
            check(
                "cublasLtMatmul",
                (api.cublasLtMatmul)(
                    handle,
                    desc.ptr,
                    (&alpha as *const f32).cast(),
                    x1 as *const c_void,
                    l1.ptr,
                    x2 as *const c_void,
                    l2.ptr,
                    (&beta as *const f32).cast(),
                    c as *const c_void,
                    lc.ptr,
                    c as *mut c_void,
                    lc.ptr,
                    &result.algo,
                    workspace.device_ptr() as *mut c_void,
                    workspace.len(),
                    self.stream.raw(),
                ),
            )
        }
    }
}

/// What one `cublasLtMatmul` computes, beside its operands and scalars.
struct GpuCall<'p> {
    plan: &'p Plan,
    compute: sys::cublasComputeType_t,
    types: Types,
    epilogue: u32,
    /// The bias's address (0: none).
    bias: u64,
    /// The scale factors' addresses of the first and second column-major
    /// operands (FP8 only).
    scales: Option<(u64, u64)>,
}

/// The largest power of two (up to 256) that divides a device address.
fn alignment(ptr: u64) -> u32 {
    1 << ptr.trailing_zeros().min(8)
}

impl Drop for BlasLt {
    fn drop(&mut self) {
        if let Engine::Gpu { api, handle, .. } = &self.engine {
            // Put off past the graph captures under way on the context, as
            // cublasDestroy (see `Blas`). The workspace is freed on the
            // stream when the fields drop, after the queued matmuls.
            let (api, ctx, handle) = (*api, self.stream.context().clone(), *handle as usize);
            self.stream.context().run_outside_captures(move || {
                let _ = ctx.bind_to_thread();
                // SAFETY: the handle is live and destroyed once.
                unsafe { (api.cublasLtDestroy)(handle as _) };
            });
        }
    }
}

impl std::fmt::Debug for BlasLt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlasLt").field("stream", &self.stream).field("emulated", &self.is_emulated()).finish()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn alignment_is_the_largest_power_of_two_up_to_256() {
        assert_eq!(super::alignment(0x7f00_0000_0000), 256);
        assert_eq!(super::alignment(0x7f00_0000_0104), 4);
        assert_eq!(super::alignment(0x7f00_0000_0130), 16);
        assert_eq!(super::alignment(0), 256);
    }

    #[test]
    fn fp8_needs_compute_capability_8_9() {
        use crate::BlasError;
        for old in [(7, 5), (8, 0), (8, 6), (8, 7)] {
            let e = super::check_fp8_arch(old).unwrap_err();
            assert_eq!(e, BlasError::Fp8NeedsSm89 { major: old.0, minor: old.1 });
            assert!(e.to_string().contains("8.9 or newer") && e.to_string().contains("BlasLt::matmul"), "{e}");
        }
        for new in [(8, 9), (9, 0), (10, 0), (12, 0)] {
            assert_eq!(super::check_fp8_arch(new), Ok(()));
        }
    }
}
