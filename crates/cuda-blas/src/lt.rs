//! [`BlasLt`]: cuBLASLt matmuls with a fused epilogue (bias, ReLU, GELU).

use std::ffi::c_void;
use std::sync::Arc;

use cuda_core::{CudaStream, DeviceBuffer, DeviceSlice, DeviceSliceMut};

use crate::blas::{compute_type, cublaslt_api, same_context};
use crate::cpu::{self, Activation};
use crate::element::LtElement;
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
                self.gpu_matmul::<T>(api, *handle, workspace, &plan, compute, raw_epilogue, bias_ptr, alpha, beta, x1, x2, c.device_ptr())
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn gpu_matmul<T: LtElement>(
        &self,
        api: &CublasLtApi,
        handle: cublasLtHandle_t,
        workspace: &DeviceBuffer<u8>,
        plan: &Plan,
        compute: sys::cublasComputeType_t,
        epilogue: u32,
        bias: u64,
        alpha: f32,
        beta: f32,
        x1: u64,
        x2: u64,
        c: u64,
    ) -> Result<(), BlasError> {
        let check = BlasError::check;
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
                let dt: i32 = T::DATA_TYPE;
                set(sys::CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, (&dt as *const i32).cast(), 4)?;
            }
            let layout = |rows: usize, cols: usize, ld: usize| -> Result<Desc, BlasError> {
                let mut d = Desc { ptr: std::ptr::null_mut(), destroy: api.cublasLtMatrixLayoutDestroy };
                check(
                    "cublasLtMatrixLayoutCreate",
                    (api.cublasLtMatrixLayoutCreate)(&mut d.ptr, T::DATA_TYPE, rows as u64, cols as u64, ld as i64),
                )?;
                Ok(d)
            };
            let stored = |op: Transpose, rows: usize, cols: usize| match op {
                Transpose::No => (rows, cols),
                Transpose::Yes => (cols, rows),
            };
            let (r1, c1) = stored(plan.op1, plan.m, plan.k);
            let (r2, c2) = stored(plan.op2, plan.k, plan.n);
            let l1 = layout(r1, c1, plan.ld1)?;
            let l2 = layout(r2, c2, plan.ld2)?;
            let lc = layout(plan.m, plan.n, plan.ldc)?;
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
}
