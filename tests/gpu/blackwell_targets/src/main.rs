//! GPU test: Blackwell's tcgen05, compile-only. The program is built for
//! sm_100a, so the device linker compiles `tensor_memory_tile` (tensor
//! memory allocation, an MMA, its commit to an mbarrier, loads and stores
//! of tensor memory) and ptxas assembles it, or the build fails.
//!
//! Where it runs:
//! * on a GPU that sm_100a PTX does not run on (the H200: sm_90), loading
//!   the module must fail with `HostError::WrongGpu`, naming sm_100a and the
//!   GPU, before the driver would reject the PTX with a bare error;
//! * on a Blackwell GPU of the sm_100 architecture it loads and `fill` runs
//!   (`tensor_memory_tile` needs operands prepared by a real GEMM and is not
//!   launched);
//! * emulated, the load is not refused (the emulator runs every target's
//!   PTX) and `fill` runs.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::mbarrier::{shared_address, MBarrier};
use cuda_device::{kernel, shared, tcgen05, thread, warp, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module, HostError};
use std::process::ExitCode;

/// One 128×64 f32 tile of D = A·B in tensor memory, read back by the first
/// warpgroup: the shape of a Blackwell GEMM's inner step. Never launched
/// here; compiled and assembled for sm_100a.
#[kernel]
pub fn tensor_memory_tile(da: u64, db: u64, idesc: u32, mut out: DisjointSlice<u32>) {
    shared! { static SLOT: [u32; 1]; }
    shared! { static BAR: [u64; 1]; }
    let tid = thread::threadIdx_x();
    let warp_id = tid / warp::WARP_SIZE;
    // SAFETY: BAR is a shared u64 initialised by thread 0 before the barrier
    // below publishes it.
    let bar = unsafe { MBarrier::at(BAR.as_mut_ptr()) };
    if warp_id == 0 {
        // SAFETY: warp 0 allocates together into SLOT, which nothing else
        // touches until the barrier; the block frees the columns below.
        unsafe { tcgen05::alloc::<64>(shared_address(SLOT.as_mut_ptr())) };
        tcgen05::relinquish_alloc_permit();
    }
    if tid == 0 {
        unsafe { bar.init(1) };
        cuda_device::mbarrier::fence_init();
    }
    tcgen05::fence_before_thread_sync();
    thread::sync_threads();
    tcgen05::fence_after_thread_sync();
    // SAFETY: written by tcgen05.alloc before the barrier.
    let tmem = unsafe { *SLOT.as_mut_ptr() };
    if tid == 0 {
        // SAFETY: the descriptors are the caller's shared operands (this
        // kernel is only compiled), D is the block's allocation.
        unsafe { tcgen05::mma_f16(tmem, da, db, idesc, false) };
        unsafe { tcgen05::commit(bar) };
    }
    bar.wait(0);
    tcgen05::fence_after_thread_sync();
    let mut value = 0;
    if warp_id < 4 {
        let lane_base = (warp_id * 32) << 16;
        // SAFETY: each warp of the first warpgroup reads its own 32 lanes of
        // the allocation, column 0 and 1.
        value = unsafe { tcgen05::load_32x32b_x1(tmem + lane_base) };
        let pair = unsafe { tcgen05::load_32x32b_x2(tmem + lane_base + 2) };
        tcgen05::wait_load();
        value ^= pair as u32 ^ (pair >> 32) as u32;
        unsafe { tcgen05::store_32x32b_x1(tmem + lane_base + 4, value) };
        tcgen05::wait_store();
    }
    tcgen05::fence_before_thread_sync();
    thread::sync_threads();
    if warp_id == 0 {
        // SAFETY: every access to the columns finished before the barrier.
        unsafe { tcgen05::dealloc::<64>(tmem) };
    }
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = value;
    }
}

/// `out[i] = 3·i + 1`.
#[kernel]
pub fn fill(mut out: DisjointSlice<u32>) {
    let i = thread::index_1d();
    let v = 3 * i.get() as u32 + 1;
    if let Some(o) = out.get_mut(i) {
        *o = v;
    }
}

fn run() -> Result<String, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let emulated = ctx.backend().is_emulated();
    let (major, minor) = ctx.compute_capability()?;
    let module = match load_kernel_module(&ctx, "blackwell_targets") {
        Err(HostError::WrongGpu { built_for, gpu, .. }) if !emulated && major != 10 => {
            if built_for != "sm_100a" || gpu != (major, minor) {
                return Err(format!("refused for {built_for} on {gpu:?}, expected sm_100a on ({major}, {minor})").into());
            }
            return Ok(format!("sm_100a kernels (tcgen05 assembled by ptxas) refused on sm_{major}{minor} with WrongGpu"));
        }
        Err(e) => return Err(e.into()),
        Ok(_) if !emulated && major != 10 => {
            return Err(format!("sm_100a kernels loaded on sm_{major}{minor}: the load should refuse them").into());
        }
        Ok(module) => module,
    };
    let stream = ctx.default_stream();
    let n = 1000;
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, n)?;
    cuda_launch! {
        kernel: fill, stream: stream, module: module, config: LaunchConfig::for_num_elems(n as u32),
        args: [slice_mut(out)]
    }?;
    let got = out.to_host_vec(&stream)?;
    for (i, &v) in got.iter().enumerate() {
        if v != 3 * i as u32 + 1 {
            return Err(format!("out[{i}] = {v}, expected {}", 3 * i + 1).into());
        }
    }
    Ok(format!("sm_100a module loaded ({}) and `fill` matched the CPU", if emulated { "emulated" } else { "Blackwell" }))
}

fn main() -> ExitCode {
    match run() {
        Ok(what) => {
            println!("✓ SUCCESS: blackwell_targets: {what}");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
