//! The emulator's answers to the intrinsic stubs (`cuda_device::emulation::Hooks`).

use std::sync::atomic::{fence, AtomicU16, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::OnceLock;
use std::time::Instant;

use cuda_device::atomic::code;
use cuda_device::emulation::Hooks;
use cuda_device::half::{bf16, bf16x2, f16, f16x2};

use super::engine::{suspend_current, with_block, Arrival, BarrierKind, Block, State, WarpOp};

/// Installs the hooks (once per process).
pub(crate) fn install() {
    static TABLE: OnceLock<()> = OnceLock::new();
    // SAFETY: the hooks below answer as the hardware does: coordinates from
    // the running emulated thread (refusing outside a launch), each block's
    // own shared memory, barriers and collectives over the named threads.
    TABLE.get_or_init(|| unsafe { cuda_device::emulation::install(&HOOKS) });
}

/// The block of the calling emulated thread; a GPU intrinsic outside an
/// emulated launch is a mistake (a kernel called like a function).
fn block<R>(what: &str, f: impl FnOnce(&mut Block<'_, '_>) -> R) -> R {
    with_block(f).unwrap_or_else(|| {
        panic!(
            "oxide: the GPU intrinsic `{what}` was called on the host outside a launch. \
             Kernels are launched with `cuda_launch!`, not called."
        )
    })
}

fn thread_idx_x() -> u32 { block("thread_idx_x", |b| b.threads[b.current].tid.0) }
fn thread_idx_y() -> u32 { block("thread_idx_y", |b| b.threads[b.current].tid.1) }
fn thread_idx_z() -> u32 { block("thread_idx_z", |b| b.threads[b.current].tid.2) }
fn block_idx_x() -> u32 { block("block_idx_x", |b| b.block_idx.0) }
fn block_idx_y() -> u32 { block("block_idx_y", |b| b.block_idx.1) }
fn block_idx_z() -> u32 { block("block_idx_z", |b| b.block_idx.2) }
fn block_dim_x() -> u32 { block("block_dim_x", |b| b.grid().block_dim.0) }
fn block_dim_y() -> u32 { block("block_dim_y", |b| b.grid().block_dim.1) }
fn block_dim_z() -> u32 { block("block_dim_z", |b| b.grid().block_dim.2) }
fn grid_dim_x() -> u32 { block("grid_dim_x", |b| b.grid().grid_dim.0) }
fn grid_dim_y() -> u32 { block("grid_dim_y", |b| b.grid().grid_dim.1) }
fn grid_dim_z() -> u32 { block("grid_dim_z", |b| b.grid().grid_dim.2) }
fn lane_id() -> u32 { block("lane_id", |b| b.threads[b.current].linear % 32) }
fn lanemask_eq() -> u32 { 1 << lane_id() }
fn lanemask_lt() -> u32 { lanemask_eq() - 1 }
fn lanemask_le() -> u32 { lanemask_lt() | lanemask_eq() }
fn lanemask_gt() -> u32 { !lanemask_le() }
fn lanemask_ge() -> u32 { !lanemask_lt() }
fn dynamic_smem_size() -> u32 { block("dynamic_smem_size", |b| b.grid().shared_mem_bytes) }
/// The modelled GPU's, as `cuDeviceGetAttribute` reports it: the host-code
/// emulator runs the kernel's Rust, not PTX built for a target.
fn target_sm() -> u32 {
    let (major, minor) = crate::driver::COMPUTE_CAPABILITY;
    (major * 10 + minor) as u32
}
/// The features of the portable target of that compute capability: the
/// emulator models no architecture-specific instruction (wgmma). Looked up
/// once: a kernel may ask in every thread.
fn target_features() -> u32 {
    static FEATURES: OnceLock<u32> = OnceLock::new();
    *FEATURES.get_or_init(|| cuda_device::arch::features_of_target(&format!("sm_{}", target_sm())).unwrap_or(0))
}

fn nanos() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}
fn clock() -> u32 { nanos() as u32 }
fn clock64() -> u64 { nanos() }
fn globaltimer() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Waits at the block barrier; returns the reduction's result.
fn barrier(kind: BarrierKind, predicate: bool) -> u64 {
    block("sync_threads", |b| {
        let i = b.current;
        b.threads[i].state = State::Barrier;
        b.threads[i].barrier_kind = kind;
        b.threads[i].predicate = predicate;
    });
    suspend_current();
    block("sync_threads", |b| b.threads[b.current].result)
}
fn sync_threads() { barrier(BarrierKind::Plain, false); }
fn sync_threads_count(p: bool) -> u32 { barrier(BarrierKind::Count, p) as u32 }
fn sync_threads_and(p: bool) -> bool { barrier(BarrierKind::And, p) != 0 }
fn sync_threads_or(p: bool) -> bool { barrier(BarrierKind::Or, p) != 0 }

fn fence_any() { fence(SeqCst) }
fn nanosleep(_nanoseconds: u32) { super::engine::yield_now() }

/// Joins a warp collective; returns this lane's result.
fn warp(op: WarpOp, mask: u32, value: u64, arg: u32, clamp: u32) -> u64 {
    block("warp collective", |b| {
        let i = b.current;
        b.threads[i].arrival = Some(Arrival { op, mask, value, arg, clamp });
        b.threads[i].state = State::Warp;
    });
    suspend_current();
    block("warp collective", |b| b.threads[b.current].result)
}
fn sync_warp(mask: u32) { warp(WarpOp::Sync, mask, 0, 0, 0); }
fn active_mask() -> u32 { block("active_mask", |b| b.active_mask()) }
fn shfl_idx(m: u32, v: u32, l: u32, c: u32) -> u32 { warp(WarpOp::ShflIdx, m, v as u64, l, c) as u32 }
fn shfl_up(m: u32, v: u32, d: u32, c: u32) -> u32 { warp(WarpOp::ShflUp, m, v as u64, d, c) as u32 }
fn shfl_down(m: u32, v: u32, d: u32, c: u32) -> u32 { warp(WarpOp::ShflDown, m, v as u64, d, c) as u32 }
fn shfl_xor(m: u32, v: u32, x: u32, c: u32) -> u32 { warp(WarpOp::ShflXor, m, v as u64, x, c) as u32 }
fn vote_all(m: u32, p: bool) -> bool { warp(WarpOp::All, m, p as u64, 0, 0) != 0 }
fn vote_any(m: u32, p: bool) -> bool { warp(WarpOp::Any, m, p as u64, 0, 0) != 0 }
fn vote_ballot(m: u32, p: bool) -> u32 { warp(WarpOp::Ballot, m, p as u64, 0, 0) as u32 }
fn vote_ballot_agree(m: u32, v: u32) -> u32 {
    let lanes = vote_ballot(m, v != 0);
    if v != 0 { lanes } else { !lanes }
}
fn match_any_u32(m: u32, v: u32) -> u32 { warp(WarpOp::Match, m, v as u64, 0, 0) as u32 }
fn match_any_u64(m: u32, v: u64) -> u32 { warp(WarpOp::Match, m, v, 0, 0) as u32 }
fn redux_add(v: u32, m: u32) -> u32 { warp(WarpOp::ReduxAdd, m, v as u64, 0, 0) as u32 }
fn redux_umin(v: u32, m: u32) -> u32 { warp(WarpOp::ReduxUmin, m, v as u64, 0, 0) as u32 }
fn redux_umax(v: u32, m: u32) -> u32 { warp(WarpOp::ReduxUmax, m, v as u64, 0, 0) as u32 }
fn redux_min(v: i32, m: u32) -> i32 { warp(WarpOp::ReduxMin, m, v as u32 as u64, 0, 0) as u32 as i32 }
fn redux_max(v: i32, m: u32) -> i32 { warp(WarpOp::ReduxMax, m, v as u32 as u64, 0, 0) as u32 as i32 }
fn redux_and(v: u32, m: u32) -> u32 { warp(WarpOp::ReduxAnd, m, v as u64, 0, 0) as u32 }
fn redux_or(v: u32, m: u32) -> u32 { warp(WarpOp::ReduxOr, m, v as u64, 0, 0) as u32 }
fn redux_xor(v: u32, m: u32) -> u32 { warp(WarpOp::ReduxXor, m, v as u64, 0, 0) as u32 }
fn elect_one(m: u32) -> bool { elect_sync(m) >> 32 != 0 }
/// The leader's lane in bits 0..32, whether it is the caller at bit 32 (the
/// stub's packing of elect.sync's two results).
fn elect_sync(m: u32) -> u64 { warp(WarpOp::Elect, m, 0, 0, 0) }

fn vprintf(format: *const u8, args: *const u8) -> i32 {
    // SAFETY: cuda_device::printf passes a NUL-terminated format and one
    // 8-byte argument per conversion (its contract with `vprintf`).
    unsafe { super::printf::print(format, args) }
}

/// `cudaGraphSetConditional` in host code: a handle no graph made is a
/// failure of the launch (only `unsafe` code can forge one).
fn graph_set_conditional(handle: u64, value: u32) {
    if let Err(reason) = super::graph::set_conditional(handle, value) {
        block("graph_set_conditional", |b| b.fail_thread(format!("emulator: block {:?}: {reason}", b.block_idx)))
    }
}

fn trap() -> ! {
    block("trap", |b| b.fail_thread(format!("emulator: block {:?}: the kernel executed a trap", b.block_idx)))
}

/// Inline PTX has no host code: a kernel that uses `ptx_asm!` runs on the
/// PTX VM (`--emulate=ptx`) or a GPU, never as host code.
fn ptx_asm(_spec: *const u8, _len: usize) {
    block("ptx_asm", |b| {
        b.fail_thread(format!(
            "emulator: block {:?}: the kernel runs inline PTX (`ptx_asm!`), which host-code \
             emulation (--emulate=host) cannot run; run it on the PTX VM \
             (`cargo oxide run --emulate=ptx`, OXIDE_EMULATE=ptx) or on a GPU",
            b.block_idx
        ))
    })
}

fn unmodelled(intrinsic: &'static str) -> ! {
    block(intrinsic, |b| {
        b.fail_thread(format!(
            "emulator: block {:?}: the kernel uses `{intrinsic}`, a GPU instruction the CPU emulator \
             does not model (Hopper async copies, TMA, wgmma, clusters, ldmatrix, setmaxnreg …); \
             run this kernel on a GPU",
            b.block_idx
        ))
    })
}

fn block_shared(own: *mut u8, size: usize, _align: usize) -> *mut u8 {
    let dynamic = std::ptr::eq(own.cast_const(), std::ptr::addr_of!(cuda_device::shared::__oxide_dynamic_shared).cast());
    with_block(|b| b.block_shared(own as usize, size, dynamic)).unwrap_or(own)
}

fn shared_access(ptr: *const u8, size: usize, write: bool) {
    with_block(|b| b.shared_access(ptr as usize, size, write));
}

// --- atomics: real host atomics (always sequentially consistent, which is at
// least as strong as any ordering and scope the kernel asked for) ----------

fn int_op<T>(op: u32, old: T, v: T) -> T
where
    T: Copy + Ord + std::ops::BitAnd<Output = T> + std::ops::BitOr<Output = T> + std::ops::BitXor<Output = T>
        + std::ops::Not<Output = T> + IntOps,
{
    match op {
        code::OP_XCHG => v,
        code::OP_ADD => old.wadd(v),
        code::OP_SUB => old.wsub(v),
        code::OP_AND => old & v,
        code::OP_NAND => !(old & v),
        code::OP_OR => old | v,
        code::OP_XOR => old ^ v,
        code::OP_MAX => old.smax(v),
        code::OP_MIN => old.smin(v),
        code::OP_UMAX => old.max(v),
        code::OP_UMIN => old.min(v),
        code::OP_INC_WRAP => if old >= v { T::ZERO } else { old.wadd(T::ONE) },
        code::OP_DEC_WRAP => if old == T::ZERO || old > v { v } else { old.wsub(T::ONE) },
        _ => v,
    }
}

trait IntOps: Sized {
    const ZERO: Self;
    const ONE: Self;
    fn wadd(self, o: Self) -> Self;
    fn wsub(self, o: Self) -> Self;
    fn smax(self, o: Self) -> Self;
    fn smin(self, o: Self) -> Self;
}
impl IntOps for u32 {
    const ZERO: u32 = 0;
    const ONE: u32 = 1;
    fn wadd(self, o: u32) -> u32 { self.wrapping_add(o) }
    fn wsub(self, o: u32) -> u32 { self.wrapping_sub(o) }
    fn smax(self, o: u32) -> u32 { (self as i32).max(o as i32) as u32 }
    fn smin(self, o: u32) -> u32 { (self as i32).min(o as i32) as u32 }
}
impl IntOps for u64 {
    const ZERO: u64 = 0;
    const ONE: u64 = 1;
    fn wadd(self, o: u64) -> u64 { self.wrapping_add(o) }
    fn wsub(self, o: u64) -> u64 { self.wrapping_sub(o) }
    fn smax(self, o: u64) -> u64 { (self as i64).max(o as i64) as u64 }
    fn smin(self, o: u64) -> u64 { (self as i64).min(o as i64) as u64 }
}

fn flush32(x: f32) -> f32 {
    if x.is_subnormal() { 0.0f32.copysign(x) } else { x }
}

fn float_op32(op: u32, old: f32, v: f32) -> f32 {
    match op {
        code::OP_FADD => flush32(flush32(old) + flush32(v)),
        code::OP_FSUB => flush32(flush32(old) - flush32(v)),
        code::OP_FMAX => old.max(v),
        code::OP_FMIN => old.min(v),
        code::OP_FMAXIMUM => if old.is_nan() || v.is_nan() { f32::NAN } else { old.max(v) },
        code::OP_FMINIMUM => if old.is_nan() || v.is_nan() { f32::NAN } else { old.min(v) },
        _ => v,
    }
}

fn float_op64(op: u32, old: f64, v: f64) -> f64 {
    match op {
        code::OP_FADD => old + v,
        code::OP_FSUB => old - v,
        code::OP_FMAX => old.max(v),
        code::OP_FMIN => old.min(v),
        code::OP_FMAXIMUM => if old.is_nan() || v.is_nan() { f64::NAN } else { old.max(v) },
        code::OP_FMINIMUM => if old.is_nan() || v.is_nan() { f64::NAN } else { old.min(v) },
        _ => v,
    }
}

fn atomic_rmw_u32(ptr: *mut u32, value: u32, op: u32, _scope: u32, _ordering: u32) -> u32 {
    super::engine::spin_point();
    // SAFETY: the kernel hands a valid, aligned pointer to memory that is only
    // accessed atomically while the launch runs (the atomic API's contract).
    let a = unsafe { AtomicU32::from_ptr(ptr) };
    a.fetch_update(SeqCst, SeqCst, |old| Some(int_op(op, old, value))).unwrap_or_else(|x| x)
}
fn atomic_rmw_u64(ptr: *mut u64, value: u64, op: u32, _scope: u32, _ordering: u32) -> u64 {
    super::engine::spin_point();
    // SAFETY: as for `atomic_rmw_u32`.
    let a = unsafe { AtomicU64::from_ptr(ptr) };
    a.fetch_update(SeqCst, SeqCst, |old| Some(int_op(op, old, value))).unwrap_or_else(|x| x)
}
/// `atom.add.noftz.f16x2`/`.bf16x2`: both lanes added by the CPU model, so
/// each lane rounds as the GPU's does.
fn atomic_add_pair(address: u64, value: u32, add: fn(u32, u32) -> u32) -> u32 {
    super::engine::spin_point();
    // SAFETY: as for `atomic_rmw_u32` (the address of a live AtomicF16x2 or
    // AtomicBF16x2, 4-byte aligned).
    let a = unsafe { AtomicU32::from_ptr(address as usize as *mut u32) };
    a.fetch_update(SeqCst, SeqCst, |old| Some(add(old, value))).unwrap_or_else(|x| x)
}
fn f16x2_atomic_add(address: u64, value: u32) -> u32 {
    atomic_add_pair(address, value, |a, b| (f16x2::from_bits(a) + f16x2::from_bits(b)).to_bits())
}
fn bf16x2_atomic_add(address: u64, value: u32) -> u32 {
    atomic_add_pair(address, value, |a, b| (bf16x2::from_bits(a) + bf16x2::from_bits(b)).to_bits())
}
/// `atom.add.noftz.f16`/`.bf16`: the sum rounded by the CPU model.
fn atomic_add_half(address: u64, value: u16, add: fn(u16, u16) -> u16) -> u16 {
    super::engine::spin_point();
    // SAFETY: as for `atomic_rmw_u32` (the address of a live AtomicF16 or
    // AtomicBF16, 2-byte aligned).
    let a = unsafe { AtomicU16::from_ptr(address as usize as *mut u16) };
    a.fetch_update(SeqCst, SeqCst, |old| Some(add(old, value))).unwrap_or_else(|x| x)
}
fn f16_atomic_add(address: u64, value: u16) -> u16 {
    atomic_add_half(address, value, |a, b| (f16::from_bits(a) + f16::from_bits(b)).to_bits())
}
fn bf16_atomic_add(address: u64, value: u16) -> u16 {
    atomic_add_half(address, value, |a, b| (bf16::from_bits(a) + bf16::from_bits(b)).to_bits())
}
fn atomic_rmw_f32(ptr: *mut f32, value: f32, op: u32, _scope: u32, _ordering: u32) -> f32 {
    super::engine::spin_point();
    // SAFETY: as for `atomic_rmw_u32`; f32 and u32 have one layout.
    let a = unsafe { AtomicU32::from_ptr(ptr.cast()) };
    let old = a
        .fetch_update(SeqCst, SeqCst, |old| Some(float_op32(op, f32::from_bits(old), value).to_bits()))
        .unwrap_or_else(|x| x);
    f32::from_bits(old)
}
fn atomic_rmw_f64(ptr: *mut f64, value: f64, op: u32, _scope: u32, _ordering: u32) -> f64 {
    super::engine::spin_point();
    // SAFETY: as for `atomic_rmw_u32`; f64 and u64 have one layout.
    let a = unsafe { AtomicU64::from_ptr(ptr.cast()) };
    let old = a
        .fetch_update(SeqCst, SeqCst, |old| Some(float_op64(op, f64::from_bits(old), value).to_bits()))
        .unwrap_or_else(|x| x);
    f64::from_bits(old)
}
fn atomic_cas_u32(ptr: *mut u32, expected: u32, new: u32, _s: u32, _o1: u32, _o2: u32) -> u32 {
    super::engine::spin_point();
    // SAFETY: as for `atomic_rmw_u32`.
    let a = unsafe { AtomicU32::from_ptr(ptr) };
    a.compare_exchange(expected, new, SeqCst, SeqCst).unwrap_or_else(|x| x)
}
fn atomic_cas_u64(ptr: *mut u64, expected: u64, new: u64, _s: u32, _o1: u32, _o2: u32) -> u64 {
    super::engine::spin_point();
    // SAFETY: as for `atomic_rmw_u32`.
    let a = unsafe { AtomicU64::from_ptr(ptr) };
    a.compare_exchange(expected, new, SeqCst, SeqCst).unwrap_or_else(|x| x)
}
fn atomic_load_u32(ptr: *const u32, _s: u32, _o: u32) -> u32 {
    super::engine::spin_point();
    // SAFETY: as for `atomic_rmw_u32`.
    unsafe { AtomicU32::from_ptr(ptr.cast_mut()) }.load(SeqCst)
}
fn atomic_load_u64(ptr: *const u64, _s: u32, _o: u32) -> u64 {
    super::engine::spin_point();
    // SAFETY: as for `atomic_rmw_u32`.
    unsafe { AtomicU64::from_ptr(ptr.cast_mut()) }.load(SeqCst)
}
fn atomic_store_u32(ptr: *mut u32, value: u32, _s: u32, _o: u32) {
    // SAFETY: as for `atomic_rmw_u32`.
    unsafe { AtomicU32::from_ptr(ptr) }.store(value, SeqCst)
}
fn atomic_store_u64(ptr: *mut u64, value: u64, _s: u32, _o: u32) {
    // SAFETY: as for `atomic_rmw_u32`.
    unsafe { AtomicU64::from_ptr(ptr) }.store(value, SeqCst)
}

static HOOKS: Hooks = Hooks {
    thread_idx_x: Some(thread_idx_x),
    thread_idx_y: Some(thread_idx_y),
    thread_idx_z: Some(thread_idx_z),
    block_idx_x: Some(block_idx_x),
    block_idx_y: Some(block_idx_y),
    block_idx_z: Some(block_idx_z),
    block_dim_x: Some(block_dim_x),
    block_dim_y: Some(block_dim_y),
    block_dim_z: Some(block_dim_z),
    grid_dim_x: Some(grid_dim_x),
    grid_dim_y: Some(grid_dim_y),
    grid_dim_z: Some(grid_dim_z),
    lane_id: Some(lane_id),
    lanemask_eq: Some(lanemask_eq),
    lanemask_lt: Some(lanemask_lt),
    lanemask_le: Some(lanemask_le),
    lanemask_gt: Some(lanemask_gt),
    lanemask_ge: Some(lanemask_ge),
    target_sm: Some(target_sm),
    target_features: Some(target_features),
    dynamic_smem_size: Some(dynamic_smem_size),
    clock: Some(clock),
    clock64: Some(clock64),
    globaltimer: Some(globaltimer),
    sync_threads: Some(sync_threads),
    sync_threads_count: Some(sync_threads_count),
    sync_threads_and: Some(sync_threads_and),
    sync_threads_or: Some(sync_threads_or),
    fence_block: Some(fence_any),
    fence_device: Some(fence_any),
    fence_system: Some(fence_any),
    sync_warp: Some(sync_warp),
    active_mask: Some(active_mask),
    shfl_idx_u32: Some(shfl_idx),
    shfl_up_u32: Some(shfl_up),
    shfl_down_u32: Some(shfl_down),
    shfl_xor_u32: Some(shfl_xor),
    vote_all: Some(vote_all),
    vote_any: Some(vote_any),
    vote_ballot: Some(vote_ballot),
    vote_ballot_agree: Some(vote_ballot_agree),
    match_any_u32: Some(match_any_u32),
    match_any_u64: Some(match_any_u64),
    redux_add_u32: Some(redux_add),
    redux_min_u32: Some(redux_umin),
    redux_max_u32: Some(redux_umax),
    redux_min_i32: Some(redux_min),
    redux_max_i32: Some(redux_max),
    redux_and_u32: Some(redux_and),
    redux_or_u32: Some(redux_or),
    redux_xor_u32: Some(redux_xor),
    elect_one: Some(elect_one),
    elect_sync: Some(elect_sync),
    vprintf: Some(vprintf),
    graph_set_conditional: Some(graph_set_conditional),
    nanosleep: Some(nanosleep),
    trap: Some(trap),
    unmodelled: Some(unmodelled),
    ptx_asm: Some(ptx_asm),
    atomic_rmw_u32: Some(atomic_rmw_u32),
    atomic_rmw_u64: Some(atomic_rmw_u64),
    atomic_rmw_f32: Some(atomic_rmw_f32),
    f16x2_atomic_add: Some(f16x2_atomic_add),
    bf16x2_atomic_add: Some(bf16x2_atomic_add),
    f16_atomic_add: Some(f16_atomic_add),
    bf16_atomic_add: Some(bf16_atomic_add),
    atomic_rmw_f64: Some(atomic_rmw_f64),
    atomic_cas_u32: Some(atomic_cas_u32),
    atomic_cas_u64: Some(atomic_cas_u64),
    atomic_load_u32: Some(atomic_load_u32),
    atomic_load_u64: Some(atomic_load_u64),
    atomic_store_u32: Some(atomic_store_u32),
    atomic_store_u64: Some(atomic_store_u64),
    block_shared: Some(block_shared),
    shared_access: Some(shared_access),
    ..Hooks::NONE
};
