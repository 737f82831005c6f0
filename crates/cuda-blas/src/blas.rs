//! [`Blas`]: a cuBLAS handle bound to one stream, and its GEMMs.

use std::ffi::c_void;
use std::cell::RefCell;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use cuda_core::{CudaContext, CudaStream, DeviceBuffer, DeviceSlice, DeviceSliceMut};

use crate::cpu::{self, Activation};
use crate::lt::WORKSPACE_BYTES;
use crate::element::GemmElement;
use crate::result::{BlasError, Operand};
use crate::shape::{Compute, GemmConfig, Plan, StridedBatch};
use crate::sys::{self, cublasHandle_t, CublasApi, CublasLtApi, LoadError};

/// The cuBLAS table of this process, loaded on first use.
pub fn cublas_api() -> Result<&'static CublasApi, BlasError> {
    static API: OnceLock<Result<CublasApi, LoadError>> = OnceLock::new();
    API.get_or_init(CublasApi::load).as_ref().map_err(|e| e.clone().into())
}

/// The cuBLASLt table of this process, loaded on first use.
pub fn cublaslt_api() -> Result<&'static CublasLtApi, BlasError> {
    static API: OnceLock<Result<CublasLtApi, LoadError>> = OnceLock::new();
    API.get_or_init(CublasLtApi::load).as_ref().map_err(|e| e.clone().into())
}

/// Refuses a buffer of another context than `ctx`.
pub(crate) fn same_context(ctx: &Arc<CudaContext>, other: &Arc<CudaContext>, operand: Operand) -> Result<(), BlasError> {
    if Arc::ptr_eq(ctx, other) || ctx.raw() == other.raw() {
        Ok(())
    } else {
        Err(BlasError::WrongContext { operand })
    }
}

enum Engine {
    /// cuBLAS, with a handle bound to the stream.
    Gpu { api: &'static CublasApi, handle: cublasHandle_t },
    /// The CPU reference, on the emulator's device memory.
    Emulated,
}

/// A cuBLAS handle whose work runs on one stream.
///
/// Every call queues its work on [`stream`](Self::stream) and returns
/// without waiting for it; read the result back (e.g. `to_host_vec` on that
/// stream) to wait. Each operand is ordered like any other use of a
/// cuda-core buffer: A and B as reads, C as a write, so work on other
/// streams that uses them is ordered before or after the GEMM as it would be
/// for a kernel launch.
///
/// Under the CPU emulator (`OXIDE_EMULATE`, `cargo oxide run` without a
/// GPU) no library is loaded: the same calls run the crate's CPU reference
/// on the emulated device memory, with the same checks.
///
/// The handle may be moved to another thread but not shared (cuBLAS
/// handles are not meant for concurrent use); dropping it destroys the
/// cuBLAS handle.
pub struct Blas {
    stream: Arc<CudaStream>,
    engine: Engine,
    /// The workspace given to cuBLAS (`cublasSetWorkspace_v2`), if any.
    workspace: RefCell<Option<DeviceBuffer<u8>>>,
}

// SAFETY: a cuBLAS handle may be used from any thread, one at a time; every
// call binds the stream's context to the calling thread first. `Blas` is not
// `Sync`, so no two threads use it at once.
unsafe impl Send for Blas {}

impl Blas {
    /// A handle whose work runs on `stream` (`cublasCreate_v2`,
    /// `cublasSetStream_v2`). Loads cuBLAS on first use; without it this
    /// fails with [`BlasError::LibraryNotFound`], which says what to install.
    pub fn new(stream: &Arc<CudaStream>) -> Result<Blas, BlasError> {
        let ctx = stream.context();
        if ctx.backend().is_emulated() {
            return Ok(Blas { stream: stream.clone(), engine: Engine::Emulated, workspace: RefCell::new(None) });
        }
        let api = cublas_api()?;
        ctx.bind_to_thread()?;
        let mut handle: cublasHandle_t = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the context is current.
        BlasError::check("cublasCreate_v2", unsafe { (api.cublasCreate_v2)(&mut handle) })?;
        let blas = Blas { stream: stream.clone(), engine: Engine::Gpu { api, handle }, workspace: RefCell::new(None) };
        // SAFETY: a live handle and a live stream of the current context.
        BlasError::check("cublasSetStream_v2", unsafe { (api.cublasSetStream_v2)(handle, stream.raw()) })?;
        Ok(blas)
    }

    /// A handle whose work runs on `stream`, with a workspace of its own
    /// ([`WORKSPACE_BYTES`], allocated on `stream`): what a handle needs to
    /// be used while its stream captures a graph. Under the emulator no
    /// workspace is allocated (the CPU reference needs none).
    pub fn with_workspace(stream: &Arc<CudaStream>) -> Result<Blas, BlasError> {
        let blas = Blas::new(stream)?;
        if !blas.is_emulated() {
            blas.set_workspace(DeviceBuffer::<u8>::zeroed(stream, WORKSPACE_BYTES)?)?;
        }
        Ok(blas)
    }

    /// Gives cuBLAS `workspace` for its calls (`cublasSetWorkspace_v2`); the
    /// handle owns it from now on (a previous one is dropped, its free
    /// ordered after the calls that used it).
    ///
    /// cuBLAS needs a workspace of the caller's to be captured into a
    /// graph: without one it allocates its own, which a capture cannot
    /// record, so a call on a capturing stream without one is refused with
    /// [`BlasError::CaptureNeedsWorkspace`]. Every call orders the
    /// workspace as written on the handle's stream, so a captured graph
    /// launched on another stream waits for the handle's other calls (and
    /// they for it). A graph captured with it uses it at every launch, so
    /// keep the handle alive while the graph is launched (a launch after
    /// the workspace was dropped or replaced is refused with
    /// `GraphError::BufferDropped`). NVIDIA advises 32 MiB on Hopper and
    /// later, 4 MiB before; cuBLAS uses what it is given.
    pub fn set_workspace(&self, workspace: DeviceBuffer<u8>) -> Result<(), BlasError> {
        same_context(self.stream.context(), workspace.context(), Operand::Workspace)?;
        if let Engine::Gpu { api, handle } = self.engine {
            self.stream.context().bind_to_thread()?;
            // SAFETY: a live handle; the workspace is live device memory of
            // its context that the handle keeps until it is replaced or the
            // handle is destroyed (which waits for the handle's work).
            BlasError::check("cublasSetWorkspace_v2", unsafe {
                (api.cublasSetWorkspace_v2)(handle, workspace.device_ptr() as *mut c_void, workspace.size_in_bytes())
            })?;
        }
        *self.workspace.borrow_mut() = Some(workspace);
        Ok(())
    }

    /// The size of the handle's own workspace in bytes (`None` without one).
    pub fn workspace_bytes(&self) -> Option<usize> {
        self.workspace.borrow().as_ref().map(|w| w.size_in_bytes())
    }

    /// Moves the handle's work to `stream` (`cublasSetStream_v2`), a stream
    /// of the same context; the handle's workspace stays in use.
    pub fn set_stream(&mut self, stream: &Arc<CudaStream>) -> Result<(), BlasError> {
        if Arc::ptr_eq(stream, &self.stream) {
            return Ok(());
        }
        same_context(self.stream.context(), stream.context(), Operand::Stream)?;
        if let Engine::Gpu { api, handle } = self.engine {
            self.stream.context().bind_to_thread()?;
            // SAFETY: a live handle and a live stream of its context.
            BlasError::check("cublasSetStream_v2", unsafe { (api.cublasSetStream_v2)(handle, stream.raw()) })?;
            // cublasSetStream resets the workspace to cuBLAS's own pool.
            if let Some(ws) = self.workspace.get_mut() {
                // SAFETY: as in `set_workspace`.
                BlasError::check("cublasSetWorkspace_v2", unsafe {
                    (api.cublasSetWorkspace_v2)(handle, ws.device_ptr() as *mut c_void, ws.size_in_bytes())
                })?;
            }
        }
        self.stream = stream.clone();
        Ok(())
    }

    /// Before a cuBLAS call: a capture needs the handle's own workspace,
    /// which is ordered as written on the handle's stream.
    fn prepare_gpu_call(&self, call: &'static str) -> Result<(), BlasError> {
        let mut ws = self.workspace.borrow_mut();
        match ws.as_mut() {
            Some(ws) => Ok(ws.order_write(&self.stream)?),
            None if self.stream.is_capturing() => Err(BlasError::CaptureNeedsWorkspace { call }),
            None => Ok(()),
        }
    }

    /// The stream the handle's work runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Whether calls run the CPU reference (the context is emulated).
    pub fn is_emulated(&self) -> bool {
        matches!(self.engine, Engine::Emulated)
    }

    /// The cuBLAS library file in use (`None` when emulated).
    pub fn library_path(&self) -> Option<&'static Path> {
        match self.engine {
            Engine::Gpu { api, .. } => Some(&api.path),
            Engine::Emulated => None,
        }
    }

    /// cuBLAS's version as an integer (e.g. 130100 for 13.1.0); `None`
    /// when emulated.
    pub fn version(&self) -> Result<Option<i32>, BlasError> {
        let Engine::Gpu { api, handle } = self.engine else { return Ok(None) };
        self.stream.context().bind_to_thread()?;
        let mut v = 0;
        // SAFETY: live handle; out-pointer to a local.
        BlasError::check("cublasGetVersion_v2", unsafe { (api.cublasGetVersion_v2)(handle, &mut v) })?;
        Ok(Some(v))
    }

    /// `C = alpha·op(A)·op(B) + beta·C` (`cublasGemmEx`), queued on the
    /// handle's stream. See [`GemmConfig`] for the shapes and layouts.
    ///
    /// Every shape, leading dimension and buffer length is checked first;
    /// on error nothing has been queued. `T` is one of f32, f64, f16, bf16
    /// (f16 and bf16 accumulate in f32); `alpha` and `beta` are
    /// `T::Scalar`.
    pub fn gemm<T: GemmElement>(
        &self,
        cfg: &GemmConfig<T::Scalar>,
        a: DeviceSlice<'_, T>,
        b: DeviceSlice<'_, T>,
        c: DeviceSliceMut<'_, T>,
    ) -> Result<(), BlasError> {
        self.run(cfg, &StridedBatch::ONE, a, b, c, "cublasGemmEx")
    }

    /// A strided batch of GEMMs of one shape (`cublasGemmStridedBatchedEx`):
    /// entry `i` computes `C_i = alpha·op(A_i)·op(B_i) + beta·C_i` with the
    /// matrices at `i × stride` elements into each buffer. Checked like
    /// [`gemm`](Self::gemm), the last entry included; C's entries may not
    /// overlap.
    pub fn gemm_strided_batched<T: GemmElement>(
        &self,
        cfg: &GemmConfig<T::Scalar>,
        batch: &StridedBatch,
        a: DeviceSlice<'_, T>,
        b: DeviceSlice<'_, T>,
        c: DeviceSliceMut<'_, T>,
    ) -> Result<(), BlasError> {
        self.run(cfg, batch, a, b, c, "cublasGemmStridedBatchedEx")
    }

    /// A batch of GEMMs of one shape on separate buffers
    /// (`cublasGemmBatchedEx`): `C[i] = alpha·op(A[i])·op(B[i]) + beta·C[i]`.
    /// Every matrix is checked like [`gemm`](Self::gemm)'s, and the three
    /// lists must be equally long. The device pointer arrays cuBLAS reads
    /// are uploaded on the handle's stream for each call (three small
    /// allocations from the pool); prefer
    /// [`gemm_strided_batched`](Self::gemm_strided_batched) when the
    /// matrices are evenly spaced in one buffer.
    pub fn gemm_batched<T: GemmElement>(
        &self,
        cfg: &GemmConfig<T::Scalar>,
        a: &[DeviceSlice<'_, T>],
        b: &[DeviceSlice<'_, T>],
        c: &mut [DeviceSliceMut<'_, T>],
    ) -> Result<(), BlasError> {
        let compute = compute_type::<T>(cfg.compute)?;
        if a.len() != b.len() || a.len() != c.len() {
            return Err(BlasError::BatchCountMismatch { a: a.len(), b: b.len(), c: c.len() });
        }
        if c.len() > i32::MAX as usize {
            return Err(BlasError::TooLarge { what: "the batch count", value: c.len() });
        }
        let ctx = self.stream.context();
        let mut plan = None;
        for ((a, b), c) in a.iter().zip(b).zip(c.iter()) {
            same_context(ctx, a.context(), Operand::A)?;
            same_context(ctx, b.context(), Operand::B)?;
            same_context(ctx, c.as_slice().context(), Operand::C)?;
            // One shape: every entry's plan differs only in `needed`.
            plan = Some(Plan::new(cfg, &StridedBatch::ONE, [a.len(), b.len(), c.len()])?);
        }
        let Some(plan) = plan else { return Ok(()) };
        if plan.is_empty() {
            return Ok(());
        }
        let mut ptrs = Vec::with_capacity(c.len());
        for ((a, b), c) in a.iter().zip(b).zip(c.iter_mut()) {
            a.order_read(&self.stream)?;
            b.order_read(&self.stream)?;
            c.order_write(&self.stream)?;
            let (x1, x2) = if plan.swapped { (b.device_ptr(), a.device_ptr()) } else { (a.device_ptr(), b.device_ptr()) };
            ptrs.push((x1, x2, c.device_ptr()));
        }
        let (alpha, beta) = (cfg.alpha, cfg.beta);
        match self.engine {
            Engine::Emulated => {
                let tf32 = cfg.compute == Compute::Tf32;
                let [na, nb, nc] = plan.needed;
                let (n1, n2) = if plan.swapped { (nb, na) } else { (na, nb) };
                self.stream.launch_host_fn_replayable(move || {
                    for &(x1, x2, cp) in &ptrs {
                        // SAFETY: as in `run`: every entry was checked to hold
                        // its `needed` elements, and the C entries are distinct
                        // mutable borrows, disjoint from every A and B.
                        let (x1, x2, c) = unsafe { cpu::views::<T>(x1, n1, x2, n2, cp, nc) };
                        cpu::gemm(&plan, alpha, beta, tf32, x1, x2, c, None, Activation::None);
                    }
                })?;
                Ok(())
            }
            Engine::Gpu { api, handle } => {
                if self.stream.is_capturing() {
                    return Err(BlasError::NotCapturable {
                        call: "Blas::gemm_batched",
                        why: "it uploads its pointer arrays from host memory on each call (use gemm_strided_batched)",
                    });
                }
                self.prepare_gpu_call("cublasGemmBatchedEx")?;
                let upload = |column: &dyn Fn(&(u64, u64, u64)) -> u64| {
                    DeviceBuffer::from_host(&self.stream, &ptrs.iter().map(column).collect::<Vec<u64>>())
                };
                let (p1, p2, pc) = (upload(&|p| p.0)?, upload(&|p| p.1)?, upload(&|p| p.2)?);
                ctx.bind_to_thread()?;
                let (alpha, beta) = (&alpha as *const T::Scalar as *const c_void, &beta as *const T::Scalar as *const c_void);
                let dt = T::DATA_TYPE;
                // SAFETY: as in `run`, for each entry; the pointer arrays are
                // device memory holding `count` addresses, freed on this
                // stream after the call.
                let status = unsafe {
                    (api.cublasGemmBatchedEx)(
                        handle, plan.op1.raw(), plan.op2.raw(), plan.m as i32, plan.n as i32, plan.k as i32, alpha,
                        p1.device_ptr() as *const *const c_void, dt, plan.ld1 as i32,
                        p2.device_ptr() as *const *const c_void, dt, plan.ld2 as i32, beta,
                        pc.device_ptr() as *const *mut c_void, dt, plan.ldc as i32, ptrs.len() as i32, compute,
                        sys::CUBLAS_GEMM_DEFAULT,
                    )
                };
                BlasError::check("cublasGemmBatchedEx", status)
            }
        }
    }

    fn run<T: GemmElement>(
        &self,
        cfg: &GemmConfig<T::Scalar>,
        batch: &StridedBatch,
        a: DeviceSlice<'_, T>,
        b: DeviceSlice<'_, T>,
        mut c: DeviceSliceMut<'_, T>,
        call: &'static str,
    ) -> Result<(), BlasError> {
        let compute = compute_type::<T>(cfg.compute)?;
        let ctx = self.stream.context();
        same_context(ctx, a.context(), Operand::A)?;
        same_context(ctx, b.context(), Operand::B)?;
        same_context(ctx, c.as_slice().context(), Operand::C)?;
        let plan = Plan::new(cfg, batch, [a.len(), b.len(), c.len()])?;
        if plan.is_empty() {
            return Ok(());
        }
        a.order_read(&self.stream)?;
        b.order_read(&self.stream)?;
        c.order_write(&self.stream)?;
        let (x1, x2) = if plan.swapped { (b.device_ptr(), a.device_ptr()) } else { (a.device_ptr(), b.device_ptr()) };
        let (alpha, beta) = (cfg.alpha, cfg.beta);
        match self.engine {
            Engine::Emulated => {
                let tf32 = cfg.compute == Compute::Tf32;
                let [na, nb, nc] = plan.needed;
                let (n1, n2) = if plan.swapped { (nb, na) } else { (na, nb) };
                let cp = c.device_ptr();
                // Replayable: inside a capture this is a host node that
                // every launch of the graph runs.
                self.stream.launch_host_fn_replayable(move || {
                    // SAFETY: the plan checked that each buffer holds its
                    // `needed` elements; the emulator's device memory is host
                    // memory, alive until its buffer is freed, which the
                    // stream orders after this call; C is borrowed mutably
                    // by the caller, so it overlaps neither A nor B.
                    let (x1, x2, c) = unsafe { cpu::views::<T>(x1, n1, x2, n2, cp, nc) };
                    cpu::gemm(&plan, alpha, beta, tf32, x1, x2, c, None, Activation::None);
                })?;
                Ok(())
            }
            Engine::Gpu { api, handle } => {
                self.prepare_gpu_call(call)?;
                ctx.bind_to_thread()?;
                let (alpha, beta) = (&alpha as *const T::Scalar as *const c_void, &beta as *const T::Scalar as *const c_void);
                let (m, n, k) = (plan.m as i32, plan.n as i32, plan.k as i32);
                let (x1, x2, cp) = (x1 as *const c_void, x2 as *const c_void, c.device_ptr() as *mut c_void);
                let dt = T::DATA_TYPE;
                // SAFETY: the plan checked every dimension and leading
                // dimension against the buffers (which are live device
                // memory of this context, current), so cuBLAS reads and
                // writes only inside them; alpha and beta are host scalars of
                // the compute type's scale type; the handle is live.
                let status = unsafe {
                    if plan.count == 1 {
                        (api.cublasGemmEx)(
                            handle, plan.op1.raw(), plan.op2.raw(), m, n, k, alpha, x1, dt, plan.ld1 as i32, x2, dt,
                            plan.ld2 as i32, beta, cp, dt, plan.ldc as i32, compute, sys::CUBLAS_GEMM_DEFAULT,
                        )
                    } else {
                        (api.cublasGemmStridedBatchedEx)(
                            handle, plan.op1.raw(), plan.op2.raw(), m, n, k, alpha, x1, dt, plan.ld1 as i32,
                            plan.stride1 as i64, x2, dt, plan.ld2 as i32, plan.stride2 as i64, beta, cp, dt,
                            plan.ldc as i32, plan.stride_c as i64, plan.count as i32, compute, sys::CUBLAS_GEMM_DEFAULT,
                        )
                    }
                };
                BlasError::check(call, status)
            }
        }
    }
}

/// The `cublasComputeType_t` of a GEMM of `T` with `compute`.
pub(crate) fn compute_type<T: GemmElement>(compute: Compute) -> Result<sys::cublasComputeType_t, BlasError> {
    match compute {
        Compute::Default => Ok(T::COMPUTE),
        Compute::Tf32 if T::DATA_TYPE == sys::CUDA_R_32F => Ok(sys::CUBLAS_COMPUTE_32F_FAST_TF32),
        Compute::Tf32 => Err(BlasError::Tf32NeedsF32 { element: T::NAME }),
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        if let Engine::Gpu { api, handle } = self.engine {
            // cublasDestroy waits for the device, which would break a graph
            // capture under way on another thread: put off past them.
            let (ctx, handle) = (self.stream.context().clone(), handle as usize);
            self.stream.context().run_outside_captures(move || {
                // Errors are ignored: drop never panics.
                let _ = ctx.bind_to_thread();
                // SAFETY: the handle is live and destroyed once.
                unsafe { (api.cublasDestroy_v2)(handle as _) };
            });
        }
    }
}

impl std::fmt::Debug for Blas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blas")
            .field("stream", &self.stream)
            .field("library", &self.library_path())
            .field("emulated", &self.is_emulated())
            .finish()
    }
}
