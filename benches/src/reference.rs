//! The references: the nvcc-compiled twins (embedded cubin) and raw
//! `cuLaunchKernel` through a `dlopen` of the driver.

use cuda_core::{launch_kernel, CudaContext, CudaFunction, CudaModule, CudaStream, LaunchConfig};
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::Arc;

/// `cuda/kernels.cu` compiled by build.rs with `nvcc -O3 -arch=sm_90 -cubin`.
pub static KERNELS_CUBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels.cubin"));

/// The architecture build.rs gave nvcc.
pub const NVCC_ARCH: &str = env!("OXIDE_BENCH_NVCC_ARCH");

/// Loads the embedded cubin of the CUDA C++ twins.
pub fn load(ctx: &Arc<CudaContext>) -> Result<Arc<CudaModule>, String> {
    ctx.load_module_image(KERNELS_CUBIN)
        .map_err(|e| format!("cannot load the nvcc cubin ({NVCC_ARCH}): {e}"))
}

/// The arguments of one raw launch, each stored in an 8-byte slot (every
/// parameter of the twins is a pointer, a `size_t` or a `float`).
#[derive(Default)]
pub struct RawArgs {
    slots: Vec<[u8; 8]>,
}

impl RawArgs {
    /// No arguments yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A device pointer or a `size_t`.
    pub fn u64(mut self, value: u64) -> Self {
        self.slots.push(value.to_le_bytes());
        self
    }

    /// A `size_t`.
    pub fn usize(self, value: usize) -> Self {
        self.u64(value as u64)
    }

    /// A `float` (the driver copies its 4 bytes from the start of the slot).
    pub fn f32(mut self, value: f32) -> Self {
        let mut slot = [0u8; 8];
        slot[..4].copy_from_slice(&value.to_le_bytes());
        self.slots.push(slot);
        self
    }

    /// Launches `f` with these arguments.
    ///
    /// # Safety
    /// The arguments must match `f`'s parameters in number, order and type,
    /// and device pointers among them must be valid for what `f` accesses.
    pub unsafe fn launch(&mut self, f: &CudaFunction, config: LaunchConfig, stream: &CudaStream) -> Result<(), String> {
        let mut params: Vec<*mut c_void> = self.slots.iter_mut().map(|s| s.as_mut_ptr().cast()).collect();
        // SAFETY: one pointer per parameter, each to bytes of the right size
        // (the caller's contract); the slots outlive the call, which copies them.
        unsafe { launch_kernel(f, config, stream, &mut params) }.map_err(|e| format!("nvcc kernel `{}`: {e}", f.name()))
    }
}

/// `cuLaunchKernel`'s C signature.
type CuLaunchKernel = unsafe extern "C" fn(
    *mut c_void,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> c_int;

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}
const RTLD_NOW: c_int = 2;

/// `cuLaunchKernel` itself, for the launch-overhead baseline: nothing
/// between the caller and the driver.
pub struct RawLauncher {
    launch: CuLaunchKernel,
}

impl RawLauncher {
    /// Resolves `cuLaunchKernel` from `libcuda.so.1` (already loaded by
    /// cuda-core, so this finds the same library).
    pub fn new() -> Result<Self, String> {
        // SAFETY: NUL-terminated name and symbol; the handle is never closed.
        unsafe {
            let lib = dlopen(c"libcuda.so.1".as_ptr(), RTLD_NOW);
            if lib.is_null() {
                return Err("cannot dlopen libcuda.so.1".into());
            }
            let sym = dlsym(lib, c"cuLaunchKernel".as_ptr());
            if sym.is_null() {
                return Err("libcuda.so.1 has no cuLaunchKernel".into());
            }
            // SAFETY: the driver's cuLaunchKernel has exactly this signature.
            Ok(RawLauncher { launch: std::mem::transmute::<*mut c_void, CuLaunchKernel>(sym) })
        }
    }

    /// Launches the parameterless kernel `f` with a `grid`×`block` shape.
    ///
    /// # Safety
    /// `f` takes no parameters and `stream` belongs to its context, which is
    /// current on this thread.
    pub unsafe fn launch_empty(&self, f: &CudaFunction, grid: u32, block: u32, stream: &CudaStream) -> Result<(), String> {
        // SAFETY: live handles (caller); no kernel parameters, no extra options.
        let status = unsafe {
            (self.launch)(f.raw(), grid, 1, 1, block, 1, 1, 0, stream.raw(), std::ptr::null_mut(), std::ptr::null_mut())
        };
        if status == 0 {
            Ok(())
        } else {
            Err(format!("cuLaunchKernel failed with CUresult {status}"))
        }
    }
}

/// `cuMemAllocAsync`'s and `cuMemFreeAsync`'s C signatures.
type CuMemAllocAsync = unsafe extern "C" fn(*mut u64, usize, *mut c_void) -> c_int;
type CuMemFreeAsync = unsafe extern "C" fn(u64, *mut c_void) -> c_int;

/// `cuMemAllocAsync` and `cuMemFreeAsync` called directly, as
/// [`RawLauncher`] calls `cuLaunchKernel`: what a stream-ordered allocation
/// costs through the driver API with nothing of oxide's around it, so the
/// `alloc` rows can tell oxide's own overhead from the driver API's.
pub struct RawAllocator {
    alloc: CuMemAllocAsync,
    free: CuMemFreeAsync,
}

impl RawAllocator {
    /// Resolves both entry points from `libcuda.so.1`.
    pub fn new() -> Result<Self, String> {
        // SAFETY: NUL-terminated names; the handle is never closed.
        unsafe {
            let lib = dlopen(c"libcuda.so.1".as_ptr(), RTLD_NOW);
            if lib.is_null() {
                return Err("cannot dlopen libcuda.so.1".into());
            }
            let (alloc, free) = (dlsym(lib, c"cuMemAllocAsync".as_ptr()), dlsym(lib, c"cuMemFreeAsync".as_ptr()));
            if alloc.is_null() || free.is_null() {
                return Err("libcuda.so.1 has no cuMemAllocAsync/cuMemFreeAsync".into());
            }
            // SAFETY: the driver's functions have exactly these signatures.
            Ok(RawAllocator {
                alloc: std::mem::transmute::<*mut c_void, CuMemAllocAsync>(alloc),
                free: std::mem::transmute::<*mut c_void, CuMemFreeAsync>(free),
            })
        }
    }

    /// `pairs` × (allocate `bytes`, free) on `stream`, then a
    /// synchronisation: the wall time in seconds.
    ///
    /// # Safety
    /// `stream`'s context must be current on this thread.
    pub unsafe fn pairs(&self, stream: &CudaStream, bytes: usize, pairs: u32) -> Result<f64, String> {
        stream.synchronize().map_err(|e| e.to_string())?;
        let start = std::time::Instant::now();
        for _ in 0..pairs {
            let mut ptr = 0u64;
            // SAFETY: an out-pointer to a local; a live stream of the current
            // context; the pointer is freed once, never used.
            let status = unsafe {
                match (self.alloc)(&mut ptr, bytes, stream.raw()) {
                    0 => (self.free)(ptr, stream.raw()),
                    e => e,
                }
            };
            if status != 0 {
                return Err(format!("cuMemAllocAsync/cuMemFreeAsync failed with CUresult {status}"));
            }
        }
        stream.synchronize().map_err(|e| e.to_string())?;
        Ok(start.elapsed().as_secs_f64())
    }
}

extern "C" {
    /// `cuda/runtime.cu`: `pairs` × (cudaMallocAsync, cudaFreeAsync) of
    /// `bytes` on `stream`, then a synchronisation; wall seconds in `seconds`.
    fn oxide_ref_malloc_free_async(stream: *mut c_void, bytes: usize, pairs: c_int, seconds: *mut f64) -> c_int;
}

/// The CUDA runtime's `cudaMallocAsync` + `cudaFreeAsync`, `pairs` times on
/// `stream` (then a synchronisation): the wall time in seconds.
pub fn runtime_malloc_free_async(stream: &CudaStream, bytes: usize, pairs: u32) -> Result<f64, String> {
    let mut seconds = 0.0;
    // SAFETY: a live stream of the device's primary context (the runtime's
    // own), and an out-pointer to a local.
    let status = unsafe { oxide_ref_malloc_free_async(stream.raw(), bytes, pairs as c_int, &mut seconds) };
    match status {
        0 => Ok(seconds),
        e => Err(format!("the CUDA runtime's cudaMallocAsync/cudaFreeAsync failed with cudaError_t {e}")),
    }
}

extern "C" {
    /// `cuda/runtime.cu`: a graph of `kernels` dependent `data[i] += 1`
    /// launches captured with the CUDA runtime, launched `launches` times.
    fn oxide_ref_graph_launches(
        stream: *mut c_void,
        data: *mut u32,
        n: c_int,
        block: c_int,
        kernels: c_int,
        launches: c_int,
        seconds: *mut f64,
    ) -> c_int;
}

/// The CUDA runtime's graph of `kernels` dependent `data[i] += 1` kernels
/// (nvcc's, captured with `cudaStreamBeginCapture`), launched `launches`
/// times on `stream`: the wall time in seconds of the launches and the
/// final synchronisation. `data` gains `kernels * launches` per element.
pub fn runtime_graph_launches(
    stream: &CudaStream,
    data: &mut cuda_core::DeviceBuffer<u32>,
    block: u32,
    kernels: u32,
    launches: u32,
) -> Result<f64, String> {
    let mut seconds = 0.0;
    // SAFETY: a live stream of the device's primary context (the runtime's
    // own); `data` is a live device buffer of `len` u32s of that context,
    // borrowed mutably for the whole call, which synchronises before it
    // returns.
    let status = unsafe {
        oxide_ref_graph_launches(
            stream.raw(),
            data.device_ptr() as *mut u32,
            data.len() as c_int,
            block as c_int,
            kernels as c_int,
            launches as c_int,
            &mut seconds,
        )
    };
    match status {
        0 => Ok(seconds),
        e => Err(format!("the CUDA runtime's graph capture or launch failed with cudaError_t {e}")),
    }
}

/// `cuda/runtime.cu`'s communicators (`OxideRefNccl`), opaque here.
#[repr(C)]
struct RawNcclReference {
    _private: [u8; 0],
}

extern "C" {
    /// `cuda/runtime.cu`: NCCL opened with dlopen and a communicator per
    /// device of `devices` (`ncclCommInitAll`), in `*out`.
    fn oxide_ref_nccl_open(ndev: c_int, devices: *const c_int, out: *mut *mut RawNcclReference, why: *mut u8, why_len: usize) -> c_int;
    /// `warmup` + `iters` grouped f32 sum all-reduces of `count` elements
    /// on `reference`'s communicators, `send[r]` into `recv[r]` on
    /// `streams[r]`; the wall seconds of the timed ones in `seconds`.
    fn oxide_ref_nccl_all_reduce(
        reference: *mut RawNcclReference,
        send: *const *mut c_void,
        recv: *const *mut c_void,
        count: usize,
        streams: *const *mut c_void,
        warmup: c_int,
        iters: c_int,
        seconds: *mut f64,
        submit_seconds: *mut f64,
        why: *mut u8,
        why_len: usize,
    ) -> c_int;
    /// Destroys the communicators of `oxide_ref_nccl_open`.
    fn oxide_ref_nccl_close(reference: *mut RawNcclReference);
}

/// The text a reference call left in `why` (NUL-terminated).
fn why_text(why: &[u8]) -> String {
    let end = why.iter().position(|&b| b == 0).unwrap_or(why.len());
    format!("NCCL from CUDA C++: {}", String::from_utf8_lossy(&why[..end]))
}

/// NCCL driven from CUDA C++ with its own communicators, one per stream's
/// device, made once and kept (as a program keeps them) until drop.
pub struct NcclReference {
    raw: *mut RawNcclReference,
    devices: Vec<c_int>,
}

impl NcclReference {
    /// Communicators over the devices of `streams` (one stream per device,
    /// in device order).
    pub fn open(streams: &[Arc<CudaStream>]) -> Result<Self, String> {
        let devices: Vec<c_int> = streams.iter().map(|s| s.context().ordinal() as c_int).collect();
        let mut raw = std::ptr::null_mut();
        let mut why = [0u8; 256];
        // SAFETY: `devices` holds `devices.len()` ordinals; out-pointers to
        // locals.
        let status = unsafe { oxide_ref_nccl_open(devices.len() as c_int, devices.as_ptr(), &mut raw, why.as_mut_ptr(), why.len()) };
        match status {
            0 => Ok(NcclReference { raw, devices }),
            _ => Err(why_text(&why)),
        }
    }

    /// NCCL's f32 sum all-reduce called from CUDA C++, rank `r` reducing
    /// `send[r]` into `recv[r]` on `streams[r]` (the streams `open` was
    /// given): the wall time in seconds of `iters` grouped calls after
    /// `warmup` unmeasured ones, and of their submission alone (until the
    /// last call returned).
    pub fn all_reduce(
        &self,
        send: &[cuda_core::DeviceBuffer<f32>],
        recv: &mut [cuda_core::DeviceBuffer<f32>],
        streams: &[Arc<CudaStream>],
        warmup: u32,
        iters: u32,
    ) -> Result<(f64, f64), String> {
        let n = self.devices.len();
        if streams.len() != n || streams.iter().zip(&self.devices).any(|(s, &d)| s.context().ordinal() as c_int != d) {
            return Err("one stream per device of the communicators, in their order".into());
        }
        if send.len() != n || recv.len() != n || send.iter().zip(recv.iter()).any(|(s, r)| s.len() != r.len()) {
            return Err("one send and one receive buffer of one length per stream".into());
        }
        let sends: Vec<*mut c_void> = send.iter().map(|b| b.device_ptr() as *mut c_void).collect();
        let recvs: Vec<*mut c_void> = recv.iter_mut().map(|b| b.device_ptr() as *mut c_void).collect();
        let raw_streams: Vec<*mut c_void> = streams.iter().map(|s| s.raw()).collect();
        let (mut seconds, mut submit_seconds) = (0.0, 0.0);
        let mut why = [0u8; 256];
        // SAFETY: `self.raw` is live (dropped only with self); arrays of `n`
        // live device buffers (of `count` f32s each) and streams of the
        // primary contexts of the communicators' devices, kept borrowed (the
        // receive buffers mutably) for the whole call, which synchronises
        // every stream before it returns; out-pointers to locals.
        let status = unsafe {
            oxide_ref_nccl_all_reduce(
                self.raw,
                sends.as_ptr(),
                recvs.as_ptr(),
                send.first().map_or(0, |b| b.len()),
                raw_streams.as_ptr(),
                warmup as c_int,
                iters as c_int,
                &mut seconds,
                &mut submit_seconds,
                why.as_mut_ptr(),
                why.len(),
            )
        };
        match status {
            0 => Ok((seconds, submit_seconds)),
            _ => Err(why_text(&why)),
        }
    }
}

impl Drop for NcclReference {
    fn drop(&mut self) {
        // SAFETY: made by oxide_ref_nccl_open, destroyed once; every call on
        // it synchronised its streams before returning.
        unsafe { oxide_ref_nccl_close(self.raw) }
    }
}
