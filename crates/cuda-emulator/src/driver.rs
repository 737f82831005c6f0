//! The CUDA driver API on host memory: what `libcuda.so.1` would answer, for
//! the emulator's one device.
//!
//! Device memory is host memory (a device pointer is the host address), so
//! copies are `memcpy`s and kernels read buffers directly. Every stream runs
//! its work at submission, in order: a copy or a launch has finished when the
//! call returns, events complete when recorded (stamped with the host clock),
//! and host functions run at once on the submitting thread. A kernel fault
//! makes its context unusable (sticky), as on the GPU, until that context is
//! destroyed (`context.rs`); streams and events answer for the context they
//! were made in, everything else for the calling thread's current context.

#![allow(non_snake_case)] // the entry points keep the driver's names

use std::ffi::{c_char, c_int, c_uchar, c_uint, c_void, CStr, CString};
use std::ptr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use cuda_driver_sys::{
    builtin_name, CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUhostFn, CUlaunchConfig, CUmodule,
    CUmemoryPool, CUoccupancyB2DSize, CUresult, CUstream, CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_HANDLE as INVALID_HANDLE, CUDA_ERROR_INVALID_PTX,
    CUDA_ERROR_INVALID_VALUE as INVALID_VALUE, CUDA_ERROR_NOT_FOUND as NOT_FOUND,
    CUDA_ERROR_NOT_SUPPORTED as NOT_SUPPORTED, CUDA_ERROR_OUT_OF_MEMORY as OUT_OF_MEMORY, CUDA_SUCCESS as SUCCESS,
    CU_EVENT_DISABLE_TIMING, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
    CU_LIMIT_STACK_SIZE,
};

use crate::context::{self, Context};
use crate::engine::Grid;
use crate::error::LaunchError;
use crate::launch::{launch, Launch};
use crate::module::{Function, Module};

fn host_alloc(bytes: usize) -> Option<*mut u8> {
    crate::memory::alloc(bytes)
}

fn host_free(p: u64) -> CUresult {
    match crate::memory::free(p) {
        true => SUCCESS,
        false if p == 0 => SUCCESS,
        false => INVALID_VALUE,
    }
}

/// A stream: the context it was made in.
struct Stream {
    context: &'static Context,
}

struct Event {
    context: &'static Context,
    recorded: Mutex<Option<Instant>>,
    /// Made without `CU_EVENT_DISABLE_TIMING`: `cuEventElapsedTime` takes it.
    timing: bool,
}

/// The status of the context of stream `s` (the calling thread's current
/// context for the legacy default stream).
///
/// # Safety
/// `s` must be null or a live stream of this driver.
unsafe fn stream_status(s: CUstream) -> CUresult {
    // SAFETY: the caller's contract.
    match unsafe { s.cast::<Stream>().as_ref() } {
        Some(stream) => stream.context.status(),
        None => context::current_status(),
    }
}

macro_rules! table {
    ($($name:ident),* $(,)?) => {
        /// The emulator's entry point named `name`, as `dlsym` would give it.
        pub(crate) fn symbol(name: &CStr) -> *mut c_void {
            match name.to_bytes() {
                $(n if n == stringify!($name).as_bytes() => $name as *mut c_void,)*
                _ => ptr::null_mut(),
            }
        }
    };
}

table!(
    cuGetErrorName, cuGetErrorString, cuInit, cuDriverGetVersion, cuDeviceGet, cuDeviceGetCount,
    cuDeviceGetName, cuDeviceGetAttribute, cuDeviceTotalMem_v2, cuDevicePrimaryCtxRetain,
    cuDevicePrimaryCtxRelease_v2, cuCtxGetCurrent, cuCtxSetCurrent, cuCtxSynchronize, cuCtxGetLimit, cuCtxSetLimit,
    cuStreamCreate, cuStreamDestroy_v2,
    cuStreamSynchronize, cuStreamQuery, cuStreamWaitEvent, cuLaunchHostFunc, cuEventCreate,
    cuEventDestroy_v2, cuEventRecord, cuEventQuery, cuEventSynchronize, cuEventElapsedTime,
    cuMemGetInfo_v2, cuMemcpyDtoDAsync_v2, cuMemcpyPeerAsync, cuMemsetD16Async, cuMemsetD32Async,
    cuMemAlloc_v2, cuMemFree_v2, cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2, cuMemsetD8Async,
    cuMemcpyHtoD_v2, cuMemHostAlloc, cuMemHostGetDevicePointer_v2, cuMemFreeHost, cuModuleGetGlobal_v2,
    cuModuleLoadDataEx, cuModuleUnload, cuModuleGetFunction, cuFuncGetAttribute, cuFuncSetAttribute,
    cuOccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxPotentialBlockSize, cuLaunchKernel,
    cuLaunchKernelEx, cuMemAllocAsync, cuMemFreeAsync, cuDeviceGetDefaultMemPool, cuMemPoolSetAttribute,
    cuMemPoolGetAttribute, cuMemPoolTrimTo,
);

/// The device totals the emulator reports.
const TOTAL_MEMORY: usize = 16 << 30;

fn cores() -> c_int {
    std::thread::available_parallelism().map_or(1, |n| n.get() as c_int)
}

unsafe extern "C" fn cuGetErrorName(code: CUresult, out: *mut *const c_char) -> CUresult {
    match builtin_name(code) {
        Some((name, _)) => {
            // SAFETY: the caller passes a writable out-pointer.
            unsafe { *out = intern(name) };
            SUCCESS
        }
        None => INVALID_VALUE,
    }
}

unsafe extern "C" fn cuGetErrorString(code: CUresult, out: *mut *const c_char) -> CUresult {
    match builtin_name(code) {
        Some((_, text)) => {
            // SAFETY: the caller passes a writable out-pointer.
            unsafe { *out = intern(text) };
            SUCCESS
        }
        None => INVALID_VALUE,
    }
}

/// A C string for `text` that lives for the whole program (one per text).
fn intern(text: &'static str) -> *const c_char {
    static STRINGS: Mutex<Vec<(&'static str, CString)>> = Mutex::new(Vec::new());
    let mut all = STRINGS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, c)) = all.iter().find(|(t, _)| *t == text) {
        return c.as_ptr();
    }
    let c = CString::new(text).unwrap_or_default();
    let p = c.as_ptr();
    all.push((text, c)); // the CString's heap buffer does not move
    p
}

unsafe extern "C" fn cuInit(_flags: c_uint) -> CUresult {
    SUCCESS
}
unsafe extern "C" fn cuDriverGetVersion(v: *mut c_int) -> CUresult {
    // SAFETY: writable out-pointer (caller).
    unsafe { *v = 13000 };
    SUCCESS
}
unsafe extern "C" fn cuDeviceGet(d: *mut CUdevice, ordinal: c_int) -> CUresult {
    if ordinal != 0 {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    // SAFETY: writable out-pointer (caller).
    unsafe { *d = 0 };
    SUCCESS
}
unsafe extern "C" fn cuDeviceGetCount(n: *mut c_int) -> CUresult {
    // SAFETY: writable out-pointer (caller).
    unsafe { *n = 1 };
    SUCCESS
}
unsafe extern "C" fn cuDeviceGetName(buf: *mut c_char, len: c_int, _d: CUdevice) -> CUresult {
    let name = b"oxide CPU emulator\0";
    let n = name.len().min(len.max(0) as usize);
    // SAFETY: `buf` holds `len` bytes (caller); we write at most that.
    unsafe { ptr::copy_nonoverlapping(name.as_ptr().cast(), buf, n) };
    SUCCESS
}
unsafe extern "C" fn cuDeviceGetAttribute(v: *mut c_int, attribute: c_int, _d: CUdevice) -> CUresult {
    let value = match attribute {
        1 => 1024,
        2 | 3 => 1024,
        4 => 64,
        5 => i32::MAX,
        6 | 7 => 65535,
        8 => 48 * 1024,
        9 => 64 * 1024,
        10 => 32,
        12 => 65536,
        16 => cores(),
        39 => 2048,
        75 => 9,
        76 => 0,
        81 => 228 * 1024,
        97 => 227 * 1024,
        115 => 1, // memory pools: stream-ordered allocation (mem_pool.rs)
        _ => 0,
    };
    // SAFETY: writable out-pointer (caller).
    unsafe { *v = value };
    SUCCESS
}
unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, _d: CUdevice) -> CUresult {
    // SAFETY: writable out-pointer (caller).
    unsafe { *bytes = TOTAL_MEMORY };
    SUCCESS
}
unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut CUcontext, d: CUdevice) -> CUresult {
    if d != 0 {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    // SAFETY: writable out-pointer (caller).
    unsafe { *ctx = context::retain_primary().handle() };
    SUCCESS
}
unsafe extern "C" fn cuDevicePrimaryCtxRelease_v2(_d: CUdevice) -> CUresult {
    context::release_primary();
    SUCCESS
}
unsafe extern "C" fn cuCtxGetCurrent(ctx: *mut CUcontext) -> CUresult {
    let current = context::current().map_or(ptr::null_mut(), Context::handle);
    // SAFETY: writable out-pointer (caller).
    unsafe { *ctx = current };
    SUCCESS
}
unsafe extern "C" fn cuCtxSetCurrent(ctx: CUcontext) -> CUresult {
    // SAFETY: the caller passes null or a context handle of this driver.
    context::set_current(unsafe { Context::from_handle(ctx) });
    SUCCESS
}
unsafe extern "C" fn cuCtxSynchronize() -> CUresult {
    context::current_status()
}
/// The emulator keeps only the stack limit: it accepts and remembers it per
/// context (its threads run on host stacks of their own, so the value changes
/// nothing else), which lets tests see what a launch asked the driver for.
unsafe extern "C" fn cuCtxGetLimit(value: *mut usize, limit: c_int) -> CUresult {
    let Some(context) = context::current() else { return context::current_status() };
    if limit != CU_LIMIT_STACK_SIZE {
        return INVALID_VALUE;
    }
    // SAFETY: writable out-pointer (caller).
    unsafe { *value = context.stack_limit() };
    context.status()
}
unsafe extern "C" fn cuCtxSetLimit(limit: c_int, value: usize) -> CUresult {
    let Some(context) = context::current() else { return context::current_status() };
    if limit != CU_LIMIT_STACK_SIZE {
        return INVALID_VALUE;
    }
    context.set_stack_limit(value);
    context.status()
}
unsafe extern "C" fn cuStreamCreate(s: *mut CUstream, _flags: c_uint) -> CUresult {
    let Some(context) = context::current() else { return context::current_status() };
    // SAFETY: writable out-pointer (caller).
    unsafe { *s = Box::into_raw(Box::new(Stream { context })).cast() };
    SUCCESS
}
unsafe extern "C" fn cuStreamDestroy_v2(s: CUstream) -> CUresult {
    if !s.is_null() {
        // SAFETY: made by cuStreamCreate, destroyed once.
        drop(unsafe { Box::from_raw(s.cast::<Stream>()) });
    }
    SUCCESS
}
unsafe extern "C" fn cuStreamSynchronize(s: CUstream) -> CUresult {
    // SAFETY: a stream of this driver or null (caller).
    unsafe { stream_status(s) }
}
unsafe extern "C" fn cuStreamQuery(s: CUstream) -> CUresult {
    // SAFETY: as for cuStreamSynchronize.
    unsafe { stream_status(s) }
}
unsafe extern "C" fn cuStreamWaitEvent(s: CUstream, _e: CUevent, _flags: c_uint) -> CUresult {
    // SAFETY: as for cuStreamSynchronize.
    unsafe { stream_status(s) }
}
unsafe extern "C" fn cuLaunchHostFunc(s: CUstream, f: CUhostFn, data: *mut c_void) -> CUresult {
    // SAFETY: as for cuStreamSynchronize.
    let code = unsafe { stream_status(s) };
    if code != SUCCESS {
        return code;
    }
    // SAFETY: the stream has finished all earlier work (everything runs at
    // submission), which is when the driver would call `f(data)`.
    unsafe { f(data) };
    SUCCESS
}
unsafe extern "C" fn cuEventCreate(e: *mut CUevent, flags: c_uint) -> CUresult {
    let Some(context) = context::current() else { return context::current_status() };
    let timing = flags & CU_EVENT_DISABLE_TIMING == 0;
    let event = Box::new(Event { context, recorded: Mutex::new(None), timing });
    // SAFETY: writable out-pointer (caller).
    unsafe { *e = Box::into_raw(event).cast() };
    SUCCESS
}
unsafe extern "C" fn cuEventDestroy_v2(e: CUevent) -> CUresult {
    if !e.is_null() {
        // SAFETY: made by cuEventCreate, destroyed once.
        drop(unsafe { Box::from_raw(e.cast::<Event>()) });
    }
    SUCCESS
}
unsafe extern "C" fn cuEventRecord(e: CUevent, s: CUstream) -> CUresult {
    // SAFETY: a live event made by cuEventCreate.
    let event = unsafe { &*e.cast::<Event>() };
    *event.recorded.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    // SAFETY: a stream of this driver or null (caller).
    unsafe { stream_status(s) }
}
unsafe extern "C" fn cuEventQuery(e: CUevent) -> CUresult {
    // SAFETY: a live event made by cuEventCreate.
    unsafe { &*e.cast::<Event>() }.context.status()
}
unsafe extern "C" fn cuEventSynchronize(e: CUevent) -> CUresult {
    // SAFETY: a live event made by cuEventCreate.
    unsafe { &*e.cast::<Event>() }.context.status()
}
unsafe extern "C" fn cuEventElapsedTime(ms: *mut f32, start: CUevent, end: CUevent) -> CUresult {
    // SAFETY: live events made by cuEventCreate.
    let (a, b) = unsafe { (&*start.cast::<Event>(), &*end.cast::<Event>()) };
    if !a.timing || !b.timing {
        return INVALID_HANDLE; // as the driver answers for an event made without timing
    }
    let a = *a.recorded.lock().unwrap_or_else(|p| p.into_inner());
    let b = *b.recorded.lock().unwrap_or_else(|p| p.into_inner());
    match (a, b) {
        (Some(a), Some(b)) => {
            let d = if b >= a { b.duration_since(a).as_secs_f64() } else { -a.duration_since(b).as_secs_f64() };
            // SAFETY: writable out-pointer (caller).
            unsafe { *ms = (d * 1e3) as f32 };
            SUCCESS
        }
        _ => INVALID_HANDLE, // never recorded: the driver's answer too
    }
}
unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    // SAFETY: writable out-pointers (caller).
    unsafe {
        *free = TOTAL_MEMORY;
        *total = TOTAL_MEMORY;
    }
    SUCCESS
}

/// Copies `n` bytes; ranges may overlap (the driver's behaviour is
/// unspecified then; `memmove` is the forgiving choice).
///
/// # Safety
/// Both ranges must be valid for `n` bytes.
unsafe fn copy(dst: u64, src: u64, n: usize) -> CUresult {
    let code = context::current_status();
    if code != SUCCESS {
        return code;
    }
    if n > 0 {
        // SAFETY: the caller's contract.
        unsafe { ptr::copy(src as *const u8, dst as *mut u8, n) };
    }
    SUCCESS
}
unsafe extern "C" fn cuMemcpyDtoDAsync_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize, _s: CUstream) -> CUresult {
    // SAFETY: both are emulated device ranges of `n` bytes (cuda-core checks lengths).
    unsafe { copy(dst, src, n) }
}
unsafe extern "C" fn cuMemcpyPeerAsync(dst: CUdeviceptr, _dc: CUcontext, src: CUdeviceptr, _sc: CUcontext, n: usize, _s: CUstream) -> CUresult {
    // SAFETY: as for cuMemcpyDtoDAsync_v2.
    unsafe { copy(dst, src, n) }
}
unsafe extern "C" fn cuMemcpyHtoDAsync_v2(dst: CUdeviceptr, src: *const c_void, n: usize, _s: CUstream) -> CUresult {
    // SAFETY: as for cuMemcpyDtoDAsync_v2; `src` is host memory of `n` bytes.
    unsafe { copy(dst, src as u64, n) }
}
unsafe extern "C" fn cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, n: usize) -> CUresult {
    // SAFETY: as for cuMemcpyHtoDAsync_v2.
    unsafe { copy(dst, src as u64, n) }
}
unsafe extern "C" fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: CUdeviceptr, n: usize, _s: CUstream) -> CUresult {
    // SAFETY: as for cuMemcpyHtoDAsync_v2.
    unsafe { copy(dst as u64, src, n) }
}

/// Fills `n` elements of `T` at `dst`.
///
/// # Safety
/// `dst` must be valid for `n` elements.
unsafe fn fill<T: Copy>(dst: CUdeviceptr, value: T, n: usize) -> CUresult {
    let code = context::current_status();
    if code != SUCCESS {
        return code;
    }
    let p = dst as *mut T;
    for i in 0..n {
        // SAFETY: the caller's contract; device allocations are 256-aligned
        // and views keep the element alignment.
        unsafe { p.add(i).write_unaligned(value) };
    }
    SUCCESS
}
unsafe extern "C" fn cuMemsetD8Async(dst: CUdeviceptr, v: c_uchar, n: usize, _s: CUstream) -> CUresult {
    // SAFETY: an emulated device range of `n` bytes.
    unsafe { fill(dst, v, n) }
}
unsafe extern "C" fn cuMemsetD16Async(dst: CUdeviceptr, v: u16, n: usize, _s: CUstream) -> CUresult {
    // SAFETY: an emulated device range of `n` halfwords.
    unsafe { fill(dst, v, n) }
}
unsafe extern "C" fn cuMemsetD32Async(dst: CUdeviceptr, v: c_uint, n: usize, _s: CUstream) -> CUresult {
    // SAFETY: an emulated device range of `n` words.
    unsafe { fill(dst, v, n) }
}
unsafe extern "C" fn cuMemAlloc_v2(out: *mut CUdeviceptr, bytes: usize) -> CUresult {
    match host_alloc(bytes) {
        Some(p) => {
            // SAFETY: writable out-pointer (caller).
            unsafe { *out = p as u64 };
            SUCCESS
        }
        None => OUT_OF_MEMORY,
    }
}
unsafe extern "C" fn cuMemFree_v2(p: CUdeviceptr) -> CUresult {
    // cuMemFree takes stream-ordered allocations too.
    if crate::mem_pool::free(p) {
        return SUCCESS;
    }
    host_free(p)
}
unsafe extern "C" fn cuMemAllocAsync(out: *mut CUdeviceptr, bytes: usize, s: CUstream) -> CUresult {
    // SAFETY: the caller passes a live stream or null.
    let status = unsafe { stream_status(s) };
    if status != SUCCESS {
        return status;
    }
    match crate::mem_pool::alloc(bytes) {
        Some(p) => {
            // SAFETY: writable out-pointer (caller).
            unsafe { *out = p };
            SUCCESS
        }
        None => OUT_OF_MEMORY,
    }
}
unsafe extern "C" fn cuMemFreeAsync(p: CUdeviceptr, _s: CUstream) -> CUresult {
    // The stream's earlier work has run already (streams run at submission).
    match crate::mem_pool::free(p) {
        true => SUCCESS,
        false => INVALID_VALUE,
    }
}
unsafe extern "C" fn cuDeviceGetDefaultMemPool(out: *mut CUmemoryPool, d: CUdevice) -> CUresult {
    if d != 0 {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    // SAFETY: writable out-pointer (caller).
    unsafe { *out = crate::mem_pool::handle() };
    SUCCESS
}
/// The reuse policies (attributes 1 to 3, ints) are all on, as the driver's
/// defaults are; the others are u64 books (mem_pool.rs).
const POOL_REUSE_ATTRIBUTES: std::ops::RangeInclusive<c_int> = 1..=3;
unsafe extern "C" fn cuMemPoolSetAttribute(pool: CUmemoryPool, attribute: c_int, value: *mut c_void) -> CUresult {
    if pool != crate::mem_pool::handle() || value.is_null() {
        return INVALID_VALUE;
    }
    if POOL_REUSE_ATTRIBUTES.contains(&attribute) {
        return SUCCESS;
    }
    // SAFETY: the caller passes a u64 for the u64 attributes.
    match crate::mem_pool::set(attribute, unsafe { *value.cast::<u64>() }) {
        true => SUCCESS,
        false => INVALID_VALUE,
    }
}
unsafe extern "C" fn cuMemPoolGetAttribute(pool: CUmemoryPool, attribute: c_int, value: *mut c_void) -> CUresult {
    if pool != crate::mem_pool::handle() || value.is_null() {
        return INVALID_VALUE;
    }
    if POOL_REUSE_ATTRIBUTES.contains(&attribute) {
        // SAFETY: an int out-pointer for these attributes (caller).
        unsafe { *value.cast::<c_int>() = 1 };
        return SUCCESS;
    }
    match crate::mem_pool::get(attribute) {
        Some(v) => {
            // SAFETY: a u64 out-pointer for these attributes (caller).
            unsafe { *value.cast::<u64>() = v };
            SUCCESS
        }
        None => INVALID_VALUE,
    }
}
unsafe extern "C" fn cuMemPoolTrimTo(pool: CUmemoryPool, _keep: usize) -> CUresult {
    // Nothing is cached (mem_pool.rs), so nothing is released.
    if pool != crate::mem_pool::handle() {
        return INVALID_VALUE;
    }
    SUCCESS
}
unsafe extern "C" fn cuMemHostAlloc(out: *mut *mut c_void, bytes: usize, _flags: c_uint) -> CUresult {
    match host_alloc(bytes) {
        Some(p) => {
            // SAFETY: writable out-pointer (caller).
            unsafe { *out = p.cast() };
            SUCCESS
        }
        None => OUT_OF_MEMORY,
    }
}
unsafe extern "C" fn cuMemHostGetDevicePointer_v2(out: *mut CUdeviceptr, p: *mut c_void, _flags: c_uint) -> CUresult {
    // SAFETY: writable out-pointer (caller). Host memory is device memory here.
    unsafe { *out = p as u64 };
    SUCCESS
}
unsafe extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    host_free(p as u64)
}
unsafe extern "C" fn cuModuleGetGlobal_v2(out: *mut CUdeviceptr, size: *mut usize, m: CUmodule, name: *const c_char) -> CUresult {
    // SAFETY: a live module made by cuModuleLoadDataEx; `name` is a C string.
    let (module, name) = unsafe { (&*m.cast::<Module>(), CStr::from_ptr(name)) };
    let Some((address, bytes)) = module.global(name) else { return NOT_FOUND };
    // SAFETY: writable out-pointers (caller).
    unsafe {
        *out = address;
        *size = bytes;
    }
    SUCCESS
}
unsafe extern "C" fn cuModuleLoadDataEx(out: *mut CUmodule, image: *const c_void, n: c_uint, options: *mut c_int, values: *mut *mut c_void) -> CUresult {
    let Some(context) = context::current() else { return context::current_status() };
    let code = context.status();
    if code != SUCCESS {
        return code;
    }
    // SAFETY: a PTX text or binary image, as cuModuleLoadDataEx takes (caller).
    match unsafe { Module::load(context, image, crate::launch::mode()) } {
        Ok(module) => {
            // SAFETY: writable out-pointer (caller).
            unsafe { *out = Box::into_raw(Box::new(module)).cast() };
            SUCCESS
        }
        Err(log) => {
            // SAFETY: `n` options with their values (caller).
            unsafe { write_error_log(n, options, values, &log) };
            CUDA_ERROR_INVALID_PTX
        }
    }
}

/// Writes `log` into the JIT error log buffer among the `n` `options` (as
/// much as fits, NUL-terminated), as the driver's JIT reports a PTX error.
///
/// # Safety
/// `options` and `values` must hold `n` entries each (or be null with `n`
/// 0); a log buffer option's value must point to as many bytes as its size
/// option says.
unsafe fn write_error_log(n: c_uint, options: *const c_int, values: *const *mut c_void, log: &str) {
    if n == 0 || options.is_null() || values.is_null() {
        return;
    }
    // SAFETY: `n` entries each (caller).
    let (options, values) = unsafe { (std::slice::from_raw_parts(options, n as usize), std::slice::from_raw_parts(values, n as usize)) };
    let value_of = |option: c_int| options.iter().position(|&o| o == option).map(|i| values[i]);
    let (Some(buffer), Some(size)) = (value_of(CU_JIT_ERROR_LOG_BUFFER), value_of(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)) else {
        return;
    };
    // Integer options travel in the pointer-sized value slot.
    let size = size as usize;
    if buffer.is_null() || size == 0 {
        return;
    }
    let text = format!("ptx-vm: {log}");
    let len = text.len().min(size - 1);
    // SAFETY: the buffer holds `size` bytes (caller); we write `len + 1 <= size`.
    unsafe {
        ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast::<u8>(), len);
        *buffer.cast::<u8>().add(len) = 0;
    }
}
unsafe extern "C" fn cuModuleUnload(m: CUmodule) -> CUresult {
    if !m.is_null() {
        // SAFETY: made by cuModuleLoadDataEx, unloaded once.
        drop(unsafe { Box::from_raw(m.cast::<Module>()) });
    }
    SUCCESS
}
unsafe extern "C" fn cuModuleGetFunction(out: *mut CUfunction, m: CUmodule, name: *const c_char) -> CUresult {
    let module = m.cast::<Module>();
    // SAFETY: `name` is a C string (caller).
    let name = unsafe { CStr::from_ptr(name) }.to_owned();
    // SAFETY: a live module made by cuModuleLoadDataEx.
    if unsafe { &*module }.has_kernel(&name) == Some(false) {
        return NOT_FOUND;
    }
    // One handle per kernel, as the driver gives: attributes set through one
    // lookup (the dynamic shared memory limit) hold for every other.
    // SAFETY: a live module; its functions live as long as it.
    let mut functions = unsafe { (*module).functions.lock() }.unwrap_or_else(|e| e.into_inner());
    let p = match functions.iter().find(|f| f.name == name) {
        Some(f) => &**f as *const Function as CUfunction,
        None => {
            let f = Box::new(Function { module, name, max_dynamic_shared: AtomicI32::new(48 * 1024) });
            let p = &*f as *const Function as CUfunction;
            functions.push(f);
            p
        }
    };
    // SAFETY: writable out-pointer (caller).
    unsafe { *out = p };
    SUCCESS
}
unsafe extern "C" fn cuFuncGetAttribute(v: *mut c_int, attribute: c_int, f: CUfunction) -> CUresult {
    // SAFETY: a live function made by cuModuleGetFunction.
    let f = unsafe { &*f.cast::<Function>() };
    let value = match attribute {
        // SAFETY: a function's module outlives it.
        0 => unsafe { &*f.module }.max_threads_per_block(&f.name) as c_int,
        4 => 32,
        5 | 6 => 90,
        8 => f.max_dynamic_shared.load(Ordering::Relaxed),
        _ => 0,
    };
    // SAFETY: writable out-pointer (caller).
    unsafe { *v = value };
    SUCCESS
}
unsafe extern "C" fn cuFuncSetAttribute(f: CUfunction, attribute: c_int, value: c_int) -> CUresult {
    // SAFETY: a live function made by cuModuleGetFunction.
    let f = unsafe { &*f.cast::<Function>() };
    if attribute == 8 {
        if value < 0 || value > 227 * 1024 {
            return INVALID_VALUE;
        }
        f.max_dynamic_shared.store(value, Ordering::Relaxed);
    }
    SUCCESS
}
unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessor(n: *mut c_int, _f: CUfunction, block: c_int, _smem: usize) -> CUresult {
    // SAFETY: writable out-pointer (caller).
    unsafe { *n = (2048 / block.max(1)).clamp(1, 32) };
    SUCCESS
}
unsafe extern "C" fn cuOccupancyMaxPotentialBlockSize(grid: *mut c_int, block: *mut c_int, _f: CUfunction, _b2d: CUoccupancyB2DSize, _smem: usize, limit: c_int) -> CUresult {
    let b = if limit > 0 { limit.min(1024) } else { 1024 };
    // SAFETY: writable out-pointers (caller).
    unsafe {
        *block = b;
        *grid = cores() * (2048 / b).max(1);
    }
    SUCCESS
}
unsafe extern "C" fn cuLaunchKernel(
    f: CUfunction, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint,
    smem: c_uint, _s: CUstream, params: *mut *mut c_void, _extra: *mut *mut c_void,
) -> CUresult {
    let grid = Grid { grid_dim: (gx, gy, gz), block_dim: (bx, by, bz), shared_mem_bytes: smem };
    // SAFETY: the caller's contract for cuLaunchKernel.
    result_of(unsafe { launch(&Launch { function: f, grid, cluster: None, cooperative: false, params, host_code: None }) })
}
unsafe extern "C" fn cuLaunchKernelEx(config: *const c_void, f: CUfunction, params: *mut *mut c_void, _extra: *mut *mut c_void) -> CUresult {
    // SAFETY: a `CUlaunchConfig` (caller).
    let config = unsafe { &*config.cast::<CUlaunchConfig>() };
    let attributes = match config.num_attrs {
        0 => &[][..],
        // SAFETY: `num_attrs` attributes (caller).
        n => unsafe { std::slice::from_raw_parts(config.attrs, n as usize) },
    };
    // Other attributes (priorities, programmatic launches) change nothing
    // a launch run at submission can observe.
    let cluster = attributes
        .iter()
        .rev()
        .find(|a| a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        .map(|a| (a.value.cluster_dim[0], a.value.cluster_dim[1], a.value.cluster_dim[2]));
    // The cooperative attribute's value is an int at the start of the union.
    let cooperative = attributes
        .iter()
        .rev()
        .find(|a| a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
        .is_some_and(|a| a.value.cluster_dim[0] != 0);
    let [gx, gy, gz] = config.grid_dim;
    let [bx, by, bz] = config.block_dim;
    let grid = Grid { grid_dim: (gx, gy, gz), block_dim: (bx, by, bz), shared_mem_bytes: config.shared_mem_bytes };
    // SAFETY: the caller's contract for cuLaunchKernelEx.
    result_of(unsafe { launch(&Launch { function: f, grid, cluster, cooperative, params, host_code: None }) })
}

/// A launch through the table carries no host code: it runs in device-code
/// mode only. (cuda-core calls `launch` itself, with the host code cuda-host
/// gives it.)
fn result_of(launched: Result<(), LaunchError>) -> CUresult {
    match launched {
        Ok(()) => SUCCESS,
        Err(LaunchError::Context(code)) => code,
        Err(LaunchError::Invalid { .. }) => INVALID_VALUE,
        Err(
            LaunchError::NoHostCode { .. }
            | LaunchError::DeviceCodeUnavailable { .. }
            | LaunchError::ClustersNeedDeviceCode { .. },
        ) => NOT_SUPPORTED,
    }
}

/// The emulated driver's table; the entry points it lacks return
/// `CUDA_ERROR_NOT_SUPPORTED` (the error names the entry point).
pub(crate) fn api() -> cuda_driver_sys::DriverApi {
    // SAFETY: every function `symbol` returns is defined above with the C
    // signature of the driver function of its name.
    unsafe { cuda_driver_sys::DriverApi::from_lookup(symbol, cuda_driver_sys::Missing::NotSupported) }
        .expect("a partial table is never refused")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_table_names_what_it_implements() {
        assert!(crate::implements("cuLaunchKernelEx"));
        assert!(crate::implements("cuModuleLoadDataEx"));
        assert!(!crate::implements("cuTensorMapEncodeTiled"));
        assert!(!crate::implements("no\0such"));
    }
}
