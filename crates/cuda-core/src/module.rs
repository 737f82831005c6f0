//! [`CudaModule`], [`CudaFunction`], [`LaunchConfig`] and [`launch_kernel`].

use std::ffi::{c_int, c_void, CStr, CString};
use std::ptr;
use std::sync::Arc;

use cuda_emulator::{HostKernel, LaunchError};

use crate::backend::Backend;
use crate::context::{CudaContext, CudaStream};
use crate::driver::{self, cu, CUdeviceptr, CUfunction, CUmodule};
use crate::error::{DriverError, ErrorKind};

/// A loaded device image (PTX, cubin or fatbin); `Arc`-shared.
///
/// Functions taken from it hold an `Arc` to it, so it is unloaded only when
/// the last of them is gone.
#[derive(Debug)]
pub struct CudaModule {
    module: CUmodule,
    pub(crate) ctx: Arc<CudaContext>,
}

// SAFETY: a CUmodule is a process-wide handle usable from any thread once its
// context is current (every method binds it); the struct is immutable.
unsafe impl Send for CudaModule {}
// SAFETY: see `Send`.
unsafe impl Sync for CudaModule {}

impl CudaModule {
    /// Looks up the kernel entry point `name` (the PTX `.entry` name).
    pub fn function(self: &Arc<Self>, name: &str) -> Result<CudaFunction, DriverError> {
        let cname = CString::new(name).map_err(|_| {
            DriverError::new(
                ErrorKind::InvalidArgument,
                format!("kernel name {name:?} contains a NUL byte"),
                "CudaModule::function",
            )
        })?;
        let d = self.ctx.bind()?;
        let mut func: CUfunction = ptr::null_mut();
        // SAFETY: out-pointer to a local; module live; name NUL-terminated.
        unsafe {
            cu!(
                d,
                cuModuleGetFunction(&mut func, self.module, cname.as_ptr())
            )
        }
        .map_err(|e| e.with_detail(format!("the module has no kernel named `{name}`")))?;
        Ok(CudaFunction {
            func,
            module: self.clone(),
            name: Arc::from(name),
        })
    }

    /// The context the module was loaded into.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The raw `CUmodule` handle.
    pub fn raw(&self) -> *mut c_void {
        self.module
    }

    /// Overwrites the module's global variable `name` (a `.global` or
    /// `.const` variable, e.g. a `#[constant]` static) with `bytes`, which
    /// must be exactly its size. Ordered after all earlier work on the context.
    pub fn write_global(&self, name: &str, bytes: &[u8]) -> Result<(), DriverError> {
        let global = self.global(name, bytes.len(), "were given", "CudaModule::write_global")?;
        let d = self.ctx.bind()?;
        // SAFETY: the destination is the global's bytes, as many as the
        // source slice holds. cuMemcpyHtoD orders after prior work.
        unsafe { cu!(d, cuMemcpyHtoD_v2(global, bytes.as_ptr().cast(), bytes.len())) }
    }

    /// Copies the module's global variable `name` into `bytes`, which must be
    /// exactly its size. Waits for all earlier work on the context first, so
    /// the bytes are what the kernels launched before left there.
    pub fn read_global(&self, name: &str, bytes: &mut [u8]) -> Result<(), DriverError> {
        let global = self.global(name, bytes.len(), "were asked for", "CudaModule::read_global")?;
        self.ctx.synchronize()?;
        let d = self.ctx.bind()?;
        // SAFETY: the source is the global's bytes, as many as the
        // destination slice holds, borrowed until the copy is waited for
        // below; the context is idle (synchronized above). The null stream
        // is the context's legacy default stream.
        unsafe { cu!(d, cuMemcpyDtoHAsync_v2(bytes.as_mut_ptr().cast(), global, bytes.len(), std::ptr::null_mut())) }?;
        self.ctx.synchronize()
    }

    /// The device address of global `name`, checked to be `len` bytes long
    /// (`what` says how the caller's bytes came, for the mismatch error).
    fn global(&self, name: &str, len: usize, what: &str, op: &'static str) -> Result<CUdeviceptr, DriverError> {
        let c_name = CString::new(name)
            .map_err(|_| DriverError::new(ErrorKind::InvalidArgument, "a global's name contains a NUL byte", op))?;
        let d = self.ctx.bind()?;
        let mut global: CUdeviceptr = 0;
        let mut size: usize = 0;
        // SAFETY: out-pointers to locals; the module is live; the name is a C string.
        unsafe { cu!(d, cuModuleGetGlobal_v2(&mut global, &mut size, self.module, c_name.as_ptr())) }
            .map_err(|e| e.with_detail(format!("the module has no global `{name}`")))?;
        if size != len {
            return Err(DriverError::new(
                ErrorKind::LengthMismatch,
                format!("global `{name}` has {size} bytes but {len} {what}"),
                op,
            ));
        }
        Ok(global)
    }
}

impl Drop for CudaModule {
    fn drop(&mut self) {
        if driver::loaded().is_none() {
            return;
        }
        // Unloading a module with kernels still running is undefined, so the
        // unload waits for the context first; while another thread captures
        // a graph on it, after that capture (the wait would break it).
        let (ctx, module) = (self.ctx.clone(), self.module as usize);
        crate::graph::after_captures(
            &self.ctx,
            Box::new(move || {
                let Some(d) = driver::loaded() else { return };
                // SAFETY: the module is unloaded once, here, after every
                // queued kernel of the context; errors are ignored (a drop
                // never panics).
                unsafe {
                    (d.cuCtxSetCurrent)(ctx.raw());
                    (d.cuCtxSynchronize)();
                    (d.cuModuleUnload)(module as _);
                }
            }),
        );
    }
}

pub(crate) fn load_ptx(ctx: &Arc<CudaContext>, ptx: &str) -> Result<Arc<CudaModule>, DriverError> {
    let text = CString::new(ptx.trim_end_matches('\0')).map_err(|_| {
        DriverError::new(
            ErrorKind::InvalidArgument,
            "the PTX text contains a NUL byte",
            "load_module_ptx",
        )
    })?;
    load(ctx, text.as_ptr().cast(), JitDebug::of_image(ptx.as_bytes()))
}

pub(crate) fn load_image(
    ctx: &Arc<CudaContext>,
    image: &[u8],
) -> Result<Arc<CudaModule>, DriverError> {
    if image.is_empty() {
        return Err(DriverError::new(
            ErrorKind::InvalidArgument,
            "the module image is empty",
            "load_module_image",
        ));
    }
    // Copy into 8-byte aligned storage with a trailing NUL: ELF and fatbin
    // headers are read in place, and PTX text needs its terminator.
    let mut aligned = vec![0u64; image.len() / 8 + 1];
    // SAFETY: `aligned` has at least image.len() + 1 bytes; no overlap.
    unsafe {
        ptr::copy_nonoverlapping(
            image.as_ptr(),
            aligned.as_mut_ptr().cast::<u8>(),
            image.len(),
        )
    };
    load(ctx, aligned.as_ptr().cast(), JitDebug::of_image(image))
}

/// What debug information the driver's JIT keeps for a PTX image: the same
/// as the device linker put into the PTX (`cargo oxide debug` / `sanitize`
/// build with OXIDE_DEVICE_DEBUG), so cuda-gdb and compute-sanitizer can
/// name Rust file:line. Without the JIT options the driver drops it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JitDebug {
    /// No debug info in the image (or not PTX): nothing to ask for.
    None,
    /// `.loc` line tables: `CU_JIT_GENERATE_LINE_INFO`.
    Lines,
    /// Everything (`// oxide-device-debug: full` heads the PTX):
    /// `CU_JIT_GENERATE_DEBUG_INFO` (like nvcc -G).
    Full,
}

impl JitDebug {
    pub(crate) fn of_image(image: &[u8]) -> JitDebug {
        let is_ptx = image.iter().take(4096).all(|&b| b != 0) && contains(image, b".target");
        if !is_ptx {
            JitDebug::None
        } else if contains(image, crate::abi::DEVICE_DEBUG_FULL_MARKER.as_bytes()) {
            // The device linker marks OXIDE_DEVICE_DEBUG=full images; line
            // tables alone also come with DWARF sections, so those say nothing.
            JitDebug::Full
        } else if contains(image, b"\t.loc\t") || contains(image, b".loc ") {
            JitDebug::Lines
        } else {
            JitDebug::None
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Points the module's `__oxide_panic_record` (present when its kernels can
/// panic) at the context's panic record, so device panics reach the host.
fn install_panic_record(module: &CudaModule) -> Result<(), DriverError> {
    let d = module.ctx.bind()?;
    let mut global: CUdeviceptr = 0;
    let mut size: usize = 0;
    // SAFETY: out-pointers to locals; the module is live; the name is a C string.
    let found = unsafe {
        cu!(d, cuModuleGetGlobal_v2(&mut global, &mut size, module.module, driver::panic_record::RECORD_GLOBAL.as_ptr()))
    };
    if found.is_err() || size != std::mem::size_of::<u64>() {
        return Ok(()); // no panicking code in this module
    }
    let Some(address) = module.ctx.panic_record_address() else {
        return Ok(());
    };
    // SAFETY: `global` is an 8-byte device variable; the source is a local u64.
    unsafe { cu!(d, cuMemcpyHtoD_v2(global, (&address as *const u64).cast(), 8)) }
}

/// `cuModuleLoadDataEx` with JIT error and info log buffers; on failure the
/// logs become the error's detail.
fn load(ctx: &Arc<CudaContext>, image: *const c_void, debug: JitDebug) -> Result<Arc<CudaModule>, DriverError> {
    const LOG: usize = 16 * 1024;
    let d = ctx.bind()?;
    let mut error_log = vec![0u8; LOG];
    let mut info_log = vec![0u8; LOG];
    let mut options: Vec<c_int> = vec![
        driver::CU_JIT_ERROR_LOG_BUFFER,
        driver::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        driver::CU_JIT_INFO_LOG_BUFFER,
        driver::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut values: Vec<*mut c_void> = vec![
        error_log.as_mut_ptr().cast(),
        ptr::without_provenance_mut(LOG),
        info_log.as_mut_ptr().cast(),
        ptr::without_provenance_mut(LOG),
    ];
    // Integer options travel in the pointer-sized value slot.
    match debug {
        JitDebug::None => {}
        JitDebug::Lines => {
            options.push(driver::CU_JIT_GENERATE_LINE_INFO);
            values.push(ptr::without_provenance_mut(1));
        }
        JitDebug::Full => {
            options.push(driver::CU_JIT_GENERATE_DEBUG_INFO);
            values.push(ptr::without_provenance_mut(1));
        }
    }
    let mut module: CUmodule = ptr::null_mut();
    // SAFETY: `image` points to a NUL-terminated or self-describing image
    // that outlives the call; the option arrays have the same length; the log
    // buffers hold LOG bytes, as their size options say.
    let result = unsafe {
        cu!(
            d,
            cuModuleLoadDataEx(
                &mut module,
                image,
                options.len() as std::ffi::c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr()
            )
        )
    };
    match result {
        Ok(()) => {
            let module = Arc::new(CudaModule { module, ctx: ctx.clone() });
            install_panic_record(&module)?;
            Ok(module)
        }
        Err(mut e) => {
            for (label, log) in [("JIT error log", &error_log), ("JIT info log", &info_log)] {
                let text = CStr::from_bytes_until_nul(log)
                    .map(|s| s.to_string_lossy())
                    .unwrap_or_default();
                if !text.trim().is_empty() {
                    e = e.with_detail(format!("{label}:\n{}", text.trim_end()));
                }
            }
            Err(e)
        }
    }
}

/// A kernel entry point of a [`CudaModule`] (which it keeps loaded).
#[derive(Clone, Debug)]
pub struct CudaFunction {
    pub(crate) func: CUfunction,
    pub(crate) module: Arc<CudaModule>,
    pub(crate) name: Arc<str>,
}

// SAFETY: a CUfunction is a process-wide handle usable from any thread once
// its context is current (every use binds it); the struct is immutable.
unsafe impl Send for CudaFunction {}
// SAFETY: see `Send`.
unsafe impl Sync for CudaFunction {}

impl CudaFunction {
    /// The entry name the function was looked up with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The module this function belongs to.
    pub fn module(&self) -> &Arc<CudaModule> {
        &self.module
    }

    /// The raw `CUfunction` handle.
    pub fn raw(&self) -> *mut c_void {
        self.func
    }

    /// Queries a `CUfunction_attribute` (see `cuda.h` for the numbers).
    pub fn attribute(&self, attribute: i32) -> Result<i32, DriverError> {
        let d = self.module.ctx.bind()?;
        let mut v: c_int = 0;
        // SAFETY: writes one int; the function handle is live (module held).
        unsafe { cu!(d, cuFuncGetAttribute(&mut v, attribute, self.func))? };
        Ok(v)
    }

    /// The largest block size this kernel can be launched with.
    pub fn max_threads_per_block(&self) -> Result<u32, DriverError> {
        Ok(self.attribute(driver::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32)
    }

    /// Registers used by each thread.
    pub fn num_regs(&self) -> Result<u32, DriverError> {
        Ok(self.attribute(driver::CU_FUNC_ATTRIBUTE_NUM_REGS)? as u32)
    }

    /// All the `CU_FUNC_ATTRIBUTE_*` values of this kernel at once.
    pub fn attributes(&self) -> Result<FunctionAttributes, DriverError> {
        let a = |attr: i32| self.attribute(attr).map(|v| v.max(0) as u32);
        Ok(FunctionAttributes {
            max_threads_per_block: a(0)?,
            static_shared_bytes: a(1)?,
            const_bytes: a(2)?,
            local_bytes_per_thread: a(3)?,
            num_regs: a(4)?,
            ptx_version: a(5)?,
            binary_version: a(6)?,
            max_dynamic_shared_bytes: a(8)?,
        })
    }

    /// Allows launches of this kernel with up to `bytes` of dynamic shared
    /// memory (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`); needed
    /// past what the kernel's static shared memory leaves of 48 KiB, up to
    /// [`DeviceLimits::max_shared_memory_per_block_optin`](crate::DeviceLimits::max_shared_memory_per_block_optin)
    /// minus the kernel's static shared memory. A refused limit's error says
    /// how much the kernel may have.
    pub fn set_max_dynamic_shared_memory(&self, bytes: u32) -> Result<(), DriverError> {
        let requested = bytes;
        let bytes = c_int::try_from(bytes).map_err(|_| {
            DriverError::new(
                ErrorKind::InvalidArgument,
                format!("{bytes} bytes of dynamic shared memory is beyond any device's limit"),
                "CudaFunction::set_max_dynamic_shared_memory",
            )
        })?;
        let d = self.module.ctx.bind()?;
        // SAFETY: the function handle is live; attribute 8 takes an int.
        unsafe { cu!(d, cuFuncSetAttribute(self.func, 8, bytes)) }.map_err(|e| self.explain_shared_limit(e, requested))
    }

    /// The driver's refusal `e` of a dynamic shared memory limit of `bytes`,
    /// with what the kernel may have where its static shared memory and the
    /// device's opt-in maximum tell why (the driver says only "invalid
    /// argument").
    #[cold]
    fn explain_shared_limit(&self, e: DriverError, bytes: u32) -> DriverError {
        const CUDA_ERROR_INVALID_VALUE: i32 = 1;
        if e.code() != CUDA_ERROR_INVALID_VALUE {
            return e;
        }
        let static_bytes = self.attribute(driver::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES).map(|b| b.max(0) as u32);
        let (Ok(static_bytes), Ok(limits)) = (static_bytes, self.module.ctx.limits()) else { return e };
        let optin = limits.max_shared_memory_per_block_optin;
        if u64::from(bytes) + u64::from(static_bytes) <= u64::from(optin) {
            return e;
        }
        e.with_detail(format!(
            "kernel `{}` has {static_bytes} bytes of static shared memory, which count against the device's \
             {optin} bytes per block: its dynamic shared memory limit can be at most {}",
            self.name,
            optin.saturating_sub(static_bytes)
        ))
    }

    /// How many blocks of `block_size` threads, each with
    /// `dynamic_shared_bytes` of dynamic shared memory, fit on one
    /// multiprocessor at once (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        block_size: u32,
        dynamic_shared_bytes: usize,
    ) -> Result<u32, DriverError> {
        let block = occupancy_int(block_size, "CudaFunction::max_active_blocks_per_multiprocessor")?;
        let d = self.module.ctx.bind()?;
        let mut blocks: c_int = 0;
        // SAFETY: writes one int; the function handle is live.
        unsafe {
            cu!(
                d,
                cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut blocks, self.func, block, dynamic_shared_bytes)
            )?
        };
        Ok(blocks.max(0) as u32)
    }

    /// The block size that maximises occupancy, with a constant
    /// `dynamic_shared_bytes` per block and at most `block_size_limit`
    /// threads (0: no limit); returns `(min_grid_size, block_size)`, where
    /// `min_grid_size` blocks fill the whole device
    /// (`cuOccupancyMaxPotentialBlockSize`).
    pub fn max_potential_block_size(
        &self,
        dynamic_shared_bytes: usize,
        block_size_limit: u32,
    ) -> Result<(u32, u32), DriverError> {
        let limit = occupancy_int(block_size_limit, "CudaFunction::max_potential_block_size")?;
        let d = self.module.ctx.bind()?;
        let (mut grid, mut block): (c_int, c_int) = (0, 0);
        // SAFETY: writes two ints; the function handle is live; with no
        // size callback the driver uses `dynamic_shared_bytes` throughout.
        unsafe {
            cu!(
                d,
                cuOccupancyMaxPotentialBlockSize(&mut grid, &mut block, self.func, None, dynamic_shared_bytes, limit)
            )?
        };
        Ok((grid.max(0) as u32, block.max(0) as u32))
    }
}

fn occupancy_int(v: u32, op: &'static str) -> Result<c_int, DriverError> {
    c_int::try_from(v).map_err(|_| {
        DriverError::new(ErrorKind::InvalidArgument, format!("block size {v} is out of range"), op)
    })
}

/// The `CU_FUNC_ATTRIBUTE_*` values of a kernel, from [`CudaFunction::attributes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FunctionAttributes {
    /// Largest block this kernel can be launched with (register use may
    /// make it smaller than the device's limit).
    pub max_threads_per_block: u32,
    /// Statically allocated shared memory per block, bytes.
    pub static_shared_bytes: u32,
    /// User constant memory, bytes.
    pub const_bytes: u32,
    /// Local memory (stack and spills) per thread, bytes.
    pub local_bytes_per_thread: u32,
    /// Registers per thread.
    pub num_regs: u32,
    /// PTX ISA version the kernel was compiled for, `major * 10 + minor`.
    pub ptx_version: u32,
    /// SASS version, `major * 10 + minor` (e.g. 90 for sm_90).
    pub binary_version: u32,
    /// Most dynamic shared memory a launch may ask for now, bytes.
    pub max_dynamic_shared_bytes: u32,
}

/// Grid and block shape of a kernel launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid, (x, y, z).
    pub grid_dim: (u32, u32, u32),
    /// Threads in each block, (x, y, z).
    pub block_dim: (u32, u32, u32),
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// Threads per block used by [`LaunchConfig::for_num_elems`].
    pub const DEFAULT_BLOCK: u32 = 256;

    /// One thread per element: blocks of 256 threads, `ceil(n / 256)` blocks
    /// (at least one), no dynamic shared memory.
    pub fn for_num_elems(n: u32) -> Self {
        LaunchConfig {
            grid_dim: (n.div_ceil(Self::DEFAULT_BLOCK).max(1), 1, 1),
            block_dim: (Self::DEFAULT_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Threads per block (`x * y * z`).
    #[inline]
    pub fn threads_per_block(&self) -> u64 {
        let (x, y, z) = self.block_dim;
        x as u64 * y as u64 * z as u64
    }

    /// Checks the limits every CUDA GPU shares: no zero dimension, at most
    /// 1024 threads and z ≤ 64 in a block, grid x < 2³¹ and y, z ≤ 65535.
    #[inline]
    pub fn validate(&self) -> Result<(), DriverError> {
        if self.fits_every_gpu() {
            return Ok(());
        }
        self.invalid()
    }

    /// Whether [`validate`](Self::validate) accepts the configuration.
    #[inline]
    fn fits_every_gpu(&self) -> bool {
        let ((gx, gy, gz), (bx, by, bz)) = (self.grid_dim, self.block_dim);
        let positive = gx.min(gy).min(gz).min(bx).min(by).min(bz) != 0;
        positive && self.threads_per_block() <= 1024 && bz <= 64 && gx <= i32::MAX as u32 && gy.max(gz) <= 65535
    }

    /// Why [`validate`](Self::validate) refuses the configuration.
    #[cold]
    fn invalid(&self) -> Result<(), DriverError> {
        let fail = |msg: String| {
            Err(DriverError::new(
                ErrorKind::InvalidLaunchConfig,
                msg,
                "launch_kernel",
            ))
        };
        let (g, b) = (self.grid_dim, self.block_dim);
        for (what, (x, y, z)) in [("grid_dim", g), ("block_dim", b)] {
            if x == 0 || y == 0 || z == 0 {
                return fail(format!(
                    "invalid launch config: {what} ({x}, {y}, {z}) has a zero dimension; every grid and block dimension must be at least 1"
                ));
            }
        }
        if self.threads_per_block() > 1024 {
            return fail(format!(
                "invalid launch config: block_dim ({}, {}, {}) asks for {} threads per block; the limit is 1024",
                b.0, b.1, b.2, self.threads_per_block()
            ));
        }
        if b.2 > 64 {
            return fail(format!(
                "invalid launch config: block_dim.z = {} exceeds the limit of 64",
                b.2
            ));
        }
        if g.0 > i32::MAX as u32 || g.1 > 65535 || g.2 > 65535 {
            return fail(format!(
                "invalid launch config: grid_dim ({}, {}, {}) exceeds the limits (x ≤ 2147483647, y ≤ 65535, z ≤ 65535)",
                g.0, g.1, g.2
            ));
        }
        Ok(())
    }

    /// [`validate`](Self::validate), then checks the configuration against
    /// one device's own limits (block and grid dimensions, threads per
    /// block, dynamic shared memory up to the opt-in maximum).
    pub fn validate_for(&self, limits: &crate::DeviceLimits) -> Result<(), DriverError> {
        self.validate()?;
        let fail = |msg: String| Err(DriverError::new(ErrorKind::InvalidLaunchConfig, msg, "launch_kernel"));
        let (g, b) = (self.grid_dim, self.block_dim);
        let within = |v: (u32, u32, u32), m: (u32, u32, u32)| v.0 <= m.0 && v.1 <= m.1 && v.2 <= m.2;
        if self.threads_per_block() > limits.max_threads_per_block as u64 {
            return fail(format!(
                "invalid launch config: {} threads per block; this device allows {}",
                self.threads_per_block(),
                limits.max_threads_per_block
            ));
        }
        if !within(b, limits.max_block_dim) {
            let m = limits.max_block_dim;
            return fail(format!(
                "invalid launch config: block_dim ({}, {}, {}) exceeds this device's ({}, {}, {})",
                b.0, b.1, b.2, m.0, m.1, m.2
            ));
        }
        if !within(g, limits.max_grid_dim) {
            let m = limits.max_grid_dim;
            return fail(format!(
                "invalid launch config: grid_dim ({}, {}, {}) exceeds this device's ({}, {}, {})",
                g.0, g.1, g.2, m.0, m.1, m.2
            ));
        }
        let smem = limits.max_shared_memory_per_block.max(limits.max_shared_memory_per_block_optin);
        if self.shared_mem_bytes > smem {
            return fail(format!(
                "invalid launch config: {} bytes of dynamic shared memory; this device allows at most {} per block",
                self.shared_mem_bytes, smem
            ));
        }
        Ok(())
    }
}

/// Launches `f` on `stream` with the given configuration (asynchronously:
/// errors inside the kernel surface at the next synchronisation).
///
/// The configuration is checked with [`LaunchConfig::validate`] before the
/// driver sees it. `params` holds one pointer per kernel parameter, each to
/// the bytes of that argument (`cuLaunchKernel`'s `kernelParams`).
///
/// # Safety
/// `params` must have exactly one entry per kernel parameter, each pointing
/// to a value whose size and layout match that parameter; device pointers
/// among them must stay valid until the kernel has finished.
#[inline]
pub unsafe fn launch_kernel(
    f: &CudaFunction,
    config: LaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    unsafe { launch(f, config, stream, params, None) }
}

/// [`launch_kernel`] with the kernel's host code, which the CPU emulator's
/// host-code mode (`OXIDE_EMULATE=host`, see [`emulator`](crate::emulator))
/// runs instead of the PTX; on a GPU, and in device-code mode, `host` only
/// names the kernel in fault reports. `cuda-host` launches this way.
///
/// # Safety
/// As for [`launch_kernel`]; and `host` must be the host code of `f`'s
/// kernel, taking the same `params`.
#[inline]
pub unsafe fn launch_kernel_with_host_code(
    f: &CudaFunction,
    config: LaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    host: &HostKernel,
) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    unsafe { launch(f, config, stream, params, Some(host)) }
}

/// # Safety
/// As for [`launch_kernel_with_host_code`].
#[inline]
unsafe fn launch(
    f: &CudaFunction,
    config: LaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    host: Option<&HostKernel>,
) -> Result<(), DriverError> {
    // Most launches: a valid shape, a kernel of the stream's context, a
    // stream that captures nothing, a GPU. The same checks as the general
    // path, each one test; everything else, and every error, out of line.
    let ctx = stream.context();
    let common = config.fits_every_gpu()
        && f.module.ctx.same(ctx)
        && !stream.handle().is_capturing()
        && !ctx.backend().is_emulated();
    if !common {
        // SAFETY: the caller's contract.
        return unsafe { launch_general(f, config, stream, params, host) };
    }
    let d = ctx.bind()?;
    let (g, b) = (config.grid_dim, config.block_dim);
    let params_ptr = if params.is_empty() { ptr::null_mut() } else { params.as_mut_ptr() };
    // SAFETY: function and stream are live and of the current context; the
    // argument pointers are valid for this kernel (caller's contract).
    let code = unsafe {
        (d.cuLaunchKernel)(f.func, g.0, g.1, g.2, b.0, b.1, b.2, config.shared_mem_bytes, stream.raw(), params_ptr, ptr::null_mut())
    };
    if code != 0 {
        return Err(launch_code_failed(f, ctx, code));
    }
    ctx.record_launch_of(f, host);
    Ok(())
}

/// A `cuLaunchKernel` of `f` that returned `code` (not success), explained.
#[cold]
#[inline(never)]
fn launch_code_failed(f: &CudaFunction, ctx: &CudaContext, code: cuda_driver_sys::CUresult) -> DriverError {
    match crate::error::check(code, "cuLaunchKernel") {
        Err(e) => launch_failed(f, ctx, e),
        Ok(()) => unreachable!("called with a failure code"),
    }
}

/// [`launch`] off its common path: an invalid shape, a kernel of another
/// context, a capturing stream, the CPU emulator.
///
/// # Safety
/// As for [`launch_kernel_with_host_code`].
#[cold]
#[inline(never)]
unsafe fn launch_general(
    f: &CudaFunction,
    config: LaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    host: Option<&HostKernel>,
) -> Result<(), DriverError> {
    config.validate()?;
    let ctx = stream.context();
    if !f.module.ctx.same(ctx) {
        return Err(foreign_kernel(f, stream));
    }
    if stream.handle().is_capturing() {
        note_kernel_in_capture(f, stream);
    }
    let d = ctx.bind()?;
    if let Backend::Emulator(_) = ctx.backend() {
        // SAFETY: as below; `host` is the kernel's host code (caller).
        return unsafe { launch_emulated(f, config, stream, params, host, None, false) };
    }
    let (g, b) = (config.grid_dim, config.block_dim);
    let params_ptr = if params.is_empty() {
        ptr::null_mut()
    } else {
        params.as_mut_ptr()
    };
    // SAFETY: function and stream are live and of the current context; the
    // argument pointers are valid for this kernel (caller's contract).
    unsafe {
        cu!(
            d,
            cuLaunchKernel(
                f.func,
                g.0,
                g.1,
                g.2,
                b.0,
                b.1,
                b.2,
                config.shared_mem_bytes,
                stream.raw(),
                params_ptr,
                ptr::null_mut()
            )
        )
    }
    .map_err(|e| launch_failed(f, ctx, e))?;
    ctx.record_launch_of(f, host);
    Ok(())
}

/// The error of a launch of `f` on a stream of another context.
#[cold]
fn foreign_kernel(f: &CudaFunction, stream: &CudaStream) -> DriverError {
    DriverError::new(
        ErrorKind::InvalidArgument,
        format!(
            "kernel `{}` belongs to the context of device {} but the stream to that of device {}",
            f.name,
            f.module.ctx.ordinal(),
            stream.context().ordinal()
        ),
        "launch_kernel",
    )
}

/// Notes `f`'s module in the capture under way on `stream`: a graph keeps
/// its kernels loaded.
#[cold]
fn note_kernel_in_capture(f: &CudaFunction, stream: &CudaStream) {
    if let Some(capture) = stream.handle().capture() {
        capture.note_module(&f.module);
    }
}

/// A failed `cuLaunchKernel` of `f`, explained and naming the kernel.
#[cold]
fn launch_failed(f: &CudaFunction, ctx: &CudaContext, e: DriverError) -> DriverError {
    ctx.explain(e).with_detail(format!("while launching kernel `{}`", f.name))
}

/// The one extra attribute of a [`launch_ex`]: what makes it more than a
/// plain `cuLaunchKernel`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum LaunchAttr {
    /// Thread-block clusters of this many blocks.
    Cluster((u32, u32, u32)),
    /// Every block resident at once.
    Cooperative,
}

impl LaunchAttr {
    /// The attribute as `cuLaunchKernelEx` and the occupancy queries read it.
    pub(crate) fn driver_attribute(self) -> driver::CUlaunchAttribute {
        let (id, value) = match self {
            LaunchAttr::Cluster(c) => (driver::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, [c.0, c.1, c.2]),
            // The cooperative attribute's value is the int 1 at the start of the union.
            LaunchAttr::Cooperative => (driver::CU_LAUNCH_ATTRIBUTE_COOPERATIVE, [1, 0, 0]),
        };
        driver::CUlaunchAttribute { id, pad: [0; 4], value: driver::CUlaunchAttributeValue { cluster_dim: value, pad: [0; 52] } }
    }
}

/// `config` with the one attribute `attr` as a `CUlaunchConfig` on `stream`
/// (null for the occupancy queries, which launch nothing). The result points
/// at `attr`: keep both alive across the driver call.
pub(crate) fn driver_launch_config(
    config: LaunchConfig,
    stream: driver::CUstream,
    attr: &mut driver::CUlaunchAttribute,
) -> driver::CUlaunchConfig {
    let (g, b) = (config.grid_dim, config.block_dim);
    driver::CUlaunchConfig {
        grid_dim: [g.0, g.1, g.2],
        block_dim: [b.0, b.1, b.2],
        shared_mem_bytes: config.shared_mem_bytes,
        stream,
        attrs: attr,
        num_attrs: 1,
    }
}

/// Refuses a kernel of another context than `stream`'s (`op` names the
/// caller in the error).
pub(crate) fn check_same_context(f: &CudaFunction, stream: &CudaStream, op: &'static str) -> Result<(), DriverError> {
    if f.module.ctx.same(stream.context()) {
        return Ok(());
    }
    Err(DriverError::new(
        ErrorKind::InvalidArgument,
        format!("kernel `{}` and the stream belong to different contexts", f.name),
        op,
    ))
}

/// `cuLaunchKernelEx` of `f` with one attribute, after the caller's checks
/// (launch shape, same context, whatever the attribute needs): on the CPU
/// emulator its launch with the same meaning; the error names the kernel
/// and `how` it was launched ("cooperatively", "with clusters of …").
///
/// # Safety
/// As for [`launch_kernel_with_host_code`].
pub(crate) unsafe fn launch_ex(
    f: &CudaFunction,
    config: LaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    host: Option<&HostKernel>,
    attr: LaunchAttr,
    how: &str,
) -> Result<(), DriverError> {
    let ctx = stream.context();
    if let Some(capture) = stream.handle().capture() {
        capture.refuse_launch_attribute(
            "a cluster or cooperative launch in Graph::add_kernel or GraphExec::set_kernel_params (which keep no \
             launch attributes; capture it with CudaStream::capture)",
        )?;
        capture.note_module(&f.module);
    }
    let d = ctx.bind()?;
    if ctx.backend().is_emulated() {
        let (cluster, cooperative) = match attr {
            LaunchAttr::Cluster(c) => (Some(c), false),
            LaunchAttr::Cooperative => (None, true),
        };
        // SAFETY: the caller's contract.
        return unsafe { launch_emulated(f, config, stream, params, host, cluster, cooperative) };
    }
    let mut attr = attr.driver_attribute();
    let launch = driver_launch_config(config, stream.raw(), &mut attr);
    let params_ptr = if params.is_empty() { ptr::null_mut() } else { params.as_mut_ptr() };
    // SAFETY: `launch` and `attr` are laid out as cuda.h's structs and live
    // across the call; function and stream are of the current context; the
    // argument pointers are valid for this kernel (caller's contract).
    unsafe { cu!(d, cuLaunchKernelEx(ptr::addr_of!(launch).cast(), f.func, params_ptr, ptr::null_mut())) }
        .map_err(|e| ctx.explain(e))
        .map_err(|e| e.with_detail(format!("while launching kernel `{}` {how}", f.name)))?;
    ctx.record_launch_of(f, host);
    Ok(())
}

/// An emulated launch (in clusters of `cluster` blocks, if given): the
/// emulator runs it now, with the executor of its mode (the kernel's host
/// code, or its PTX).
///
/// # Safety
/// As for [`launch_kernel_with_host_code`]; `f` is a function of the
/// emulated driver (its context's backend is the emulator).
pub(crate) unsafe fn launch_emulated(
    f: &CudaFunction,
    config: LaunchConfig,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    host: Option<&HostKernel>,
    cluster: Option<(u32, u32, u32)>,
    cooperative: bool,
) -> Result<(), DriverError> {
    let grid = cuda_emulator::Grid {
        grid_dim: config.grid_dim,
        block_dim: config.block_dim,
        shared_mem_bytes: config.shared_mem_bytes,
    };
    let launch = cuda_emulator::Launch { function: f.func, grid, cluster, cooperative, params: params.as_ptr(), host_code: host, stream: stream.raw() };
    let op = if cluster.is_some() || cooperative { "cuLaunchKernelEx" } else { "cuLaunchKernel" };
    // SAFETY: the caller's contract.
    match unsafe { cuda_emulator::launch(&launch) } {
        Ok(()) => {
            stream.context().record_launch_of(f, host);
            Ok(())
        }
        Err(LaunchError::Context(code)) => Err(stream.context().explain(DriverError::from_code(code, op))),
        Err(e @ LaunchError::NoHostCode { .. }) => Err(DriverError::new(ErrorKind::InvalidArgument, e.to_string(), "launch_kernel")),
        Err(e @ LaunchError::Invalid { .. }) => {
            Err(DriverError::from_code(driver::CUDA_ERROR_INVALID_VALUE, op).with_detail(e.to_string()))
        }
        Err(e @ (LaunchError::DeviceCodeUnavailable { .. } | LaunchError::ClustersNeedDeviceCode { .. })) => {
            Err(DriverError::from_code(driver::CUDA_ERROR_NOT_SUPPORTED, op).with_detail(e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::JitDebug;

    #[test]
    fn jit_debug_follows_what_the_ptx_carries() {
        let plain = b"//\n.version 8.7\n.target sm_90\n.address_size 64\n.visible .entry k() { ret; }\n";
        assert_eq!(JitDebug::of_image(plain), JitDebug::None);
        let lines = b".version 8.7\n.target sm_90\n.file\t1 \"src/main.rs\"\n.entry k() {\n\t.loc\t1 9 5\n ret; }\n";
        assert_eq!(JitDebug::of_image(lines), JitDebug::Lines);
        let full = b"// oxide-device-debug: full\n.version 8.7\n.target sm_90, debug\n.entry k() {\n\t.loc\t1 9 5\n ret; }\n.section\t.debug_info\n{\n}\n";
        assert_eq!(JitDebug::of_image(full), JitDebug::Full);
        // A cubin (ELF, with NUL bytes) is never given JIT options.
        let mut elf = b"\x7fELF\x02\x01\x01\0\0\0".to_vec();
        elf.extend_from_slice(b".target .loc .section .debug_info");
        assert_eq!(JitDebug::of_image(&elf), JitDebug::None);
    }
}
