//! GPU test: atomics. Every operation of `cuda_device::atomic` (and of
//! `core::sync::atomic`, which gets the system scope) on u32, i32, u64, i64,
//! f32 and f64, at every scope, in global and in shared memory, checked
//! against the CPU: many threads add into few counters (totals exact), min,
//! max, and/or/xor masks, nand, swap chains (the old values and the last one
//! are a permutation of what was swapped in), tickets, a compare-exchange
//! counter, wrapping inc/dec, store then load, float add/sub/min/max totals.
//! Then spin locks protecting non-atomic counters, one lane per warp taking
//! the lock: compare_exchange(Acquire) + store(Release) at Device scope,
//! swap(Acquire) + swap(Release), core's swap/store, fetch_or/fetch_and at
//! System scope, and Block-scope locks in shared memory. An acquire or release
//! that the compiler dropped shows as a lost update (a counter below the
//! number of critical sections): on an H200, with the device linker's
//! LowerAtomics pass disabled (LLVM's relaxed-only atomicrmw), the core
//! swap lock and the fetch_or lock lost 20-25% of their updates in every run.
//! (compare_exchange and atomic stores were already lowered right by LLVM.)

use core::fmt::Debug;
use core::ops::{BitAnd, BitOr, BitXor, Not};
use core::sync::atomic::Ordering::{self, AcqRel, Acquire, Relaxed, Release, SeqCst};
use core::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64};
use cuda_core::{CudaContext, CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::atomic::{AtomicF32, AtomicF64, Scope, ScopedAtomic, ScopedAtomicWrap};
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const BLOCK: usize = 128;
const BLOCKS: usize = 24;
const N: usize = BLOCK * BLOCKS;
/// Counters per operation: per block (Block and Cluster scope, which only
/// synchronise one block when the launch has no clusters) or for the grid.
const C: usize = 4;
const GROUP: usize = BLOCKS * C;
const SCOPES: usize = 5;
const SCOPE_NAMES: [&str; SCOPES] = ["Block", "Cluster", "Device", "System", "unscoped (system)"];
/// `None`: core::sync::atomic's own methods (AtomicF32's unscoped ones).
const SCOPE_OF: [Option<Scope>; SCOPES] =
    [Some(Scope::Block), Some(Scope::Cluster), Some(Scope::Device), Some(Scope::System), None];
const PER_BLOCK: [bool; SCOPES] = [true, true, false, false, false];
const ORDS: [Ordering; 5] = [Relaxed, Acquire, Release, AcqRel, SeqCst];
const LOADS: [Ordering; 3] = [Relaxed, Acquire, SeqCst];
const STORES: [Ordering; 3] = [Relaxed, Release, SeqCst];
const WRAP_LIMIT: u64 = 5;

// Integer operations, one counter array each.
const ADD: usize = 0;
const SUB: usize = 1;
const MIN: usize = 2;
const MAX: usize = 3;
const AND: usize = 4;
const OR: usize = 5;
const XOR: usize = 6;
const NAND: usize = 7;
const SWAP: usize = 8;
const CAS: usize = 9;
const TICKET: usize = 10;
const INC: usize = 11;
const DEC: usize = 12;
const INT_OPS: usize = 13;
const INT_OP_NAMES: [&str; INT_OPS] = [
    "fetch_add", "fetch_sub", "fetch_min", "fetch_max", "fetch_and", "fetch_or", "fetch_xor",
    "fetch_nand", "swap", "compare_exchange counter", "fetch_add tickets", "fetch_inc_wrap",
    "fetch_dec_wrap",
];
/// Per thread and scope: the old value of the swap, the ticket, the
/// stored-then-loaded value.
const INT_PT: usize = 3;

// Float operations.
const FADD: usize = 0;
const FSUB: usize = 1;
const FMIN: usize = 2;
const FMAX: usize = 3;
const FSWAP: usize = 4;
const FCAS: usize = 5;
const FLOAT_OPS: usize = 6;
const FLOAT_OP_NAMES: [&str; FLOAT_OPS] =
    ["fetch_add", "fetch_sub", "fetch_min", "fetch_max", "swap", "compare_exchange counter"];
/// Per thread and scope: the old value of the swap, the stored-then-loaded value.
const FLOAT_PT: usize = 2;

fn hash(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

//===-- Integers ------------------------------------------------------------===//

trait Int:
    Copy + Ord + Debug + BitAnd<Output = Self> + BitOr<Output = Self> + BitXor<Output = Self> + Not<Output = Self>
{
    const BITS: u32;
    const LO: Self;
    const HI: Self;
    fn from_u64(x: u64) -> Self;
    fn wadd(self, other: Self) -> Self;
    fn wsub(self, other: Self) -> Self;
}
macro_rules! int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const BITS: u32 = <$t>::BITS;
            const LO: Self = <$t>::MIN;
            const HI: Self = <$t>::MAX;
            #[inline(always)]
            fn from_u64(x: u64) -> Self { x as $t }
            #[inline(always)]
            fn wadd(self, other: Self) -> Self { self.wrapping_add(other) }
            #[inline(always)]
            fn wsub(self, other: Self) -> Self { self.wrapping_sub(other) }
        }
    )*};
}
int!(u32, i32, u64, i64);

/// The operand thread `g` uses for operation `op`.
#[inline(always)]
fn int_value(op: usize, g: usize, bits: u32) -> u64 {
    let h = hash(g as u64 * 64 + op as u64);
    match op {
        ADD => g as u64 % 7 + 1,
        SUB => g as u64 % 5 + 1,
        AND => !(1u64 << (h % bits as u64)),
        OR => 1u64 << (h % bits as u64),
        SWAP => g as u64 + 1,
        _ => h, // min, max, xor, store
    }
}

/// The value counter `cell` of operation `op` starts with.
#[inline(always)]
fn int_init<T: Int>(op: usize, cell: usize) -> T {
    match op {
        SUB => T::from_u64(1_000_000),
        MIN => T::HI,
        MAX => T::LO,
        AND => T::from_u64(u64::MAX),
        NAND => T::from_u64(hash(2_000_000 + cell as u64)),
        _ => T::from_u64(0),
    }
}

/// The nand operand of counter `cell` (the same for all its threads, so the
/// result does not depend on their order).
#[inline(always)]
fn nand_operand(cell: usize) -> u64 {
    hash(1_000_000 + cell as u64)
}

/// One integer atomic type, through cuda_device's scoped methods or (scope
/// `None`) core's.
trait TestAtomic: Sync + Sized {
    type V: Int;
    fn new(v: Self::V) -> Self;
    /// # Safety
    /// As `AtomicU32::from_ptr`.
    unsafe fn at<'a>(p: *mut Self::V) -> &'a Self;
    fn rmw(&self, op: usize, v: Self::V, scope: Option<Scope>, o: Ordering) -> Self::V;
    fn cas(&self, cur: Self::V, new: Self::V, scope: Option<Scope>, s: Ordering, f: Ordering)
        -> Result<Self::V, Self::V>;
    fn load(&self, scope: Option<Scope>, o: Ordering) -> Self::V;
    fn store(&self, v: Self::V, scope: Option<Scope>, o: Ordering);
}

macro_rules! test_atomic {
    // Wrapping inc/dec: cuda_device's on unsigned types, core's fetch_update
    // (a compare_exchange_weak loop) for the unscoped case; nothing on signed.
    (@inc wrap, $self:ident, $v:ident, $s:ident, $o:ident) => { $self.fetch_inc_wrap_scoped($v, $s, $o) };
    (@dec wrap, $self:ident, $v:ident, $s:ident, $o:ident) => { $self.fetch_dec_wrap_scoped($v, $s, $o) };
    (@core_inc wrap, $self:ident, $v:ident, $o:ident) => {
        match $self.fetch_update($o, Relaxed, |x| Some(if x >= $v { 0 } else { x + 1 })) { Ok(x) | Err(x) => x }
    };
    (@core_dec wrap, $self:ident, $v:ident, $o:ident) => {
        match $self.fetch_update($o, Relaxed, |x| Some(if x == 0 || x > $v { $v } else { x - 1 })) { Ok(x) | Err(x) => x }
    };
    (@$any:ident nowrap, $self:ident, $v:ident, $($rest:ident),*) => { { let _ = $v; 0 } };
    ($a:ty, $t:ty, $wrap:ident) => {
        impl TestAtomic for $a {
            type V = $t;
            #[inline(always)]
            fn new(v: $t) -> Self {
                <$a>::new(v)
            }
            #[inline(always)]
            unsafe fn at<'a>(p: *mut $t) -> &'a Self {
                <$a>::from_ptr(p)
            }
            #[inline(always)]
            fn rmw(&self, op: usize, v: $t, scope: Option<Scope>, o: Ordering) -> $t {
                match scope {
                    Some(s) => match op {
                        ADD => self.fetch_add_scoped(v, s, o),
                        SUB => self.fetch_sub_scoped(v, s, o),
                        MIN => self.fetch_min_scoped(v, s, o),
                        MAX => self.fetch_max_scoped(v, s, o),
                        AND => self.fetch_and_scoped(v, s, o),
                        OR => self.fetch_or_scoped(v, s, o),
                        XOR => self.fetch_xor_scoped(v, s, o),
                        NAND => self.fetch_nand_scoped(v, s, o),
                        SWAP => self.swap_scoped(v, s, o),
                        INC => test_atomic!(@inc $wrap, self, v, s, o),
                        _ => test_atomic!(@dec $wrap, self, v, s, o),
                    },
                    None => match op {
                        ADD => self.fetch_add(v, o),
                        SUB => self.fetch_sub(v, o),
                        MIN => self.fetch_min(v, o),
                        MAX => self.fetch_max(v, o),
                        AND => self.fetch_and(v, o),
                        OR => self.fetch_or(v, o),
                        XOR => self.fetch_xor(v, o),
                        NAND => self.fetch_nand(v, o),
                        SWAP => self.swap(v, o),
                        INC => test_atomic!(@core_inc $wrap, self, v, o),
                        _ => test_atomic!(@core_dec $wrap, self, v, o),
                    },
                }
            }
            #[inline(always)]
            fn cas(&self, cur: $t, new: $t, scope: Option<Scope>, s: Ordering, f: Ordering) -> Result<$t, $t> {
                match scope {
                    Some(sc) => self.compare_exchange_scoped(cur, new, sc, s, f),
                    None => self.compare_exchange(cur, new, s, f),
                }
            }
            #[inline(always)]
            fn load(&self, scope: Option<Scope>, o: Ordering) -> $t {
                match scope {
                    Some(s) => self.load_scoped(s, o),
                    None => <$a>::load(self, o),
                }
            }
            #[inline(always)]
            fn store(&self, v: $t, scope: Option<Scope>, o: Ordering) {
                match scope {
                    Some(s) => self.store_scoped(v, s, o),
                    None => <$a>::store(self, v, o),
                }
            }
        }
    };
}
test_atomic!(AtomicU32, u32, wrap);
test_atomic!(AtomicI32, i32, nowrap);
test_atomic!(AtomicU64, u64, wrap);
test_atomic!(AtomicI64, i64, nowrap);

/// Thread `g`'s operations at scope index `s` on the counters at `cells`
/// (operation k's array starts at `k * stride`); `pt` is the thread's own
/// slice of per-thread results.
#[inline(always)]
unsafe fn int_ops<A: TestAtomic>(cells: *mut A::V, stride: usize, pt: *mut A::V, g: usize, cell: usize, s: usize) {
    let scope = SCOPE_OF[s];
    let at = |k: usize| A::at(cells.add((s * INT_OPS + k) * stride + cell));
    let o = |k: usize| ORDS[(s + k) % ORDS.len()];
    let v = |k: usize| A::V::from_u64(int_value(k, g, A::V::BITS));
    let one = A::V::from_u64(1);
    let limit = A::V::from_u64(WRAP_LIMIT);
    at(ADD).rmw(ADD, v(ADD), scope, o(ADD));
    at(SUB).rmw(SUB, v(SUB), scope, o(SUB));
    at(MIN).rmw(MIN, v(MIN), scope, o(MIN));
    at(MAX).rmw(MAX, v(MAX), scope, o(MAX));
    at(AND).rmw(AND, v(AND), scope, o(AND));
    at(OR).rmw(OR, v(OR), scope, o(OR));
    at(XOR).rmw(XOR, v(XOR), scope, o(XOR));
    at(NAND).rmw(NAND, A::V::from_u64(nand_operand(cell)), scope, o(NAND));
    *pt.add(s * INT_PT) = at(SWAP).rmw(SWAP, v(SWAP), scope, o(SWAP));
    let counter = at(CAS);
    let failure = LOADS[s % LOADS.len()];
    let mut current = counter.load(scope, failure);
    while let Err(seen) = counter.cas(current, current.wadd(one), scope, o(CAS), failure) {
        current = seen;
    }
    *pt.add(s * INT_PT + 1) = at(TICKET).rmw(ADD, one, scope, o(TICKET));
    at(INC).rmw(INC, limit, scope, o(INC));
    at(DEC).rmw(DEC, limit, scope, o(DEC));
    let slot = A::at(pt.add(s * INT_PT + 2));
    slot.store(v(MIN), scope, STORES[s % STORES.len()]);
    let back = slot.load(scope, LOADS[s % LOADS.len()]);
    slot.store(back.wadd(one), scope, Relaxed);
}

macro_rules! int_kernels {
    ($global:ident, $shared:ident, $a:ty, $t:ty) => {
        /// Every operation at every scope on counters in global memory.
        #[kernel]
        pub fn $global(mut cells: DisjointSlice<$t>, mut per_thread: DisjointSlice<$t>) {
            let g = thread::index_1d().get();
            let b = thread::blockIdx_x() as usize;
            let c = g % C;
            let cells = cells.as_mut_ptr();
            // SAFETY: each thread has its own SCOPES * INT_PT results; the
            // counters are only accessed atomically; the host sized both.
            unsafe {
                let pt = per_thread.as_mut_ptr().add(g * SCOPES * INT_PT);
                int_ops::<$a>(cells, GROUP, pt, g, b * C + c, 0);
                int_ops::<$a>(cells, GROUP, pt, g, b * C + c, 1);
                int_ops::<$a>(cells, GROUP, pt, g, c, 2);
                int_ops::<$a>(cells, GROUP, pt, g, c, 3);
                int_ops::<$a>(cells, GROUP, pt, g, c, 4);
            }
        }

        /// The same on counters in shared memory, copied out per block.
        #[kernel]
        pub fn $shared(mut out: DisjointSlice<$t>, mut per_thread: DisjointSlice<$t>) {
            shared! { static CELLS: [$a; SCOPES * INT_OPS * C]; }
            const TOTAL: usize = SCOPES * INT_OPS * C;
            let g = thread::index_1d().get();
            let b = thread::blockIdx_x() as usize;
            let t = thread::threadIdx_x() as usize;
            let c = g % C;
            let mut i = t;
            while i < TOTAL {
                // SAFETY: each thread initialises its own slots before the barrier.
                unsafe { CELLS.write(i, <$a as TestAtomic>::new(int_init::<$t>((i / C) % INT_OPS, i % C))) };
                i += BLOCK;
            }
            thread::sync_threads();
            // SAFETY: as in the global kernel; the shared counters were
            // initialised before the barrier and are only accessed atomically.
            unsafe {
                let cells = CELLS.as_mut_ptr() as *mut $t;
                let pt = per_thread.as_mut_ptr().add(g * SCOPES * INT_PT);
                int_ops::<$a>(cells, C, pt, g, c, 0);
                int_ops::<$a>(cells, C, pt, g, c, 1);
                int_ops::<$a>(cells, C, pt, g, c, 2);
                int_ops::<$a>(cells, C, pt, g, c, 3);
                int_ops::<$a>(cells, C, pt, g, c, 4);
            }
            thread::sync_threads();
            let mut i = t;
            while i < TOTAL {
                // SAFETY: every thread's atomics are done (barrier); block b owns its TOTAL outputs.
                unsafe { *out.get_unchecked_mut(b * TOTAL + i) = CELLS.get_ref(i).load(Relaxed) };
                i += BLOCK;
            }
        }
    };
}
int_kernels!(int_global_u32, int_shared_u32, AtomicU32, u32);
int_kernels!(int_global_i32, int_shared_i32, AtomicI32, i32);
int_kernels!(int_global_u64, int_shared_u64, AtomicU64, u64);
int_kernels!(int_global_i64, int_shared_i64, AtomicI64, i64);

/// A set of counters that the same threads updated: where each lives in the
/// result, its id (for the nand operand) and the threads.
struct Cell {
    index: usize,
    id: usize,
    members: Vec<usize>,
}

/// The counters of operation `op` at scope `s`: in the global kernel's
/// buffer, or (`shared`) in the blocks' copies of their shared counters.
fn cells_of(s: usize, op: usize, ops: usize, shared: bool) -> Vec<Cell> {
    let mut cells = Vec::new();
    if shared {
        for b in 0..BLOCKS {
            for c in 0..C {
                cells.push(Cell {
                    index: b * SCOPES * ops * C + (s * ops + op) * C + c,
                    id: c,
                    members: (b * BLOCK..(b + 1) * BLOCK).filter(|g| g % C == c).collect(),
                });
            }
        }
    } else if PER_BLOCK[s] {
        for b in 0..BLOCKS {
            for c in 0..C {
                let id = b * C + c;
                cells.push(Cell {
                    index: (s * ops + op) * GROUP + id,
                    id,
                    members: (b * BLOCK..(b + 1) * BLOCK).filter(|g| g % C == c).collect(),
                });
            }
        }
    } else {
        for c in 0..C {
            cells.push(Cell { index: (s * ops + op) * GROUP + c, id: c, members: (0..N).filter(|g| g % C == c).collect() });
        }
    }
    cells
}

fn int_expected<T: Int>(op: usize, cell: &Cell, wraps: bool) -> T {
    let init: T = int_init(op, cell.id);
    let vals = cell.members.iter().map(|&g| T::from_u64(int_value(op, g, T::BITS)));
    let count = cell.members.len() as u64;
    match op {
        ADD => vals.fold(init, T::wadd),
        SUB => vals.fold(init, T::wsub),
        MIN => vals.fold(init, Ord::min),
        MAX => vals.fold(init, Ord::max),
        AND => vals.fold(init, |a, b| a & b),
        OR => vals.fold(init, |a, b| a | b),
        XOR => vals.fold(init, |a, b| a ^ b),
        NAND => {
            let k = T::from_u64(nand_operand(cell.id));
            (0..count).fold(init, |x, _| !(x & k))
        }
        CAS | TICKET => T::from_u64(count),
        INC if wraps => T::from_u64(count % (WRAP_LIMIT + 1)),
        DEC if wraps => {
            T::from_u64((0..count).fold(0, |x, _| if x == 0 || x > WRAP_LIMIT { WRAP_LIMIT } else { x - 1 }))
        }
        _ => init, // SWAP is checked separately; inc/dec do nothing on signed types
    }
}

fn check_int<T: Int>(name: &str, shared: bool, wraps: bool, cells: &[T], pt: &[T], failures: &mut Vec<String>) {
    let space = if shared { "shared" } else { "global" };
    for s in 0..SCOPES {
        for (op, op_name) in INT_OP_NAMES.iter().enumerate() {
            for cell in cells_of(s, op, INT_OPS, shared) {
                let gpu = cells[cell.index];
                if op == SWAP {
                    // The old values and the last value: what was there and what was swapped in.
                    let mut seen: Vec<T> = cell.members.iter().map(|&g| pt[g * SCOPES * INT_PT + s * INT_PT]).collect();
                    seen.push(gpu);
                    let mut want: Vec<T> =
                        cell.members.iter().map(|&g| T::from_u64(int_value(SWAP, g, T::BITS))).collect();
                    want.push(T::from_u64(0));
                    seen.sort();
                    want.sort();
                    if seen != want {
                        failures.push(format!("{name} {space} {} swap: the old values are not a permutation of what was swapped in", SCOPE_NAMES[s]));
                        return;
                    }
                    continue;
                }
                if op == TICKET {
                    let mut tickets: Vec<T> = cell.members.iter().map(|&g| pt[g * SCOPES * INT_PT + s * INT_PT + 1]).collect();
                    tickets.sort();
                    let want: Vec<T> = (0..cell.members.len() as u64).map(T::from_u64).collect();
                    if tickets != want {
                        failures.push(format!("{name} {space} {} fetch_add: tickets are not 0..{}", SCOPE_NAMES[s], want.len()));
                        return;
                    }
                }
                let cpu: T = int_expected(op, &cell, wraps);
                if gpu != cpu {
                    failures.push(format!(
                        "{name} {space} {} {op_name}: counter {}: GPU {gpu:?} CPU {cpu:?}",
                        SCOPE_NAMES[s], cell.index
                    ));
                    return;
                }
            }
        }
        for g in 0..N {
            let want = T::from_u64(int_value(MIN, g, T::BITS)).wadd(T::from_u64(1));
            let got = pt[g * SCOPES * INT_PT + s * INT_PT + 2];
            if got != want {
                failures.push(format!("{name} {space} {} store/load: thread {g}: GPU {got:?} CPU {want:?}", SCOPE_NAMES[s]));
                return;
            }
        }
    }
}

//===-- Floats --------------------------------------------------------------===//

trait TestFloat: Sync + Sized {
    type V: Copy + PartialEq + Debug;
    fn from_f64(x: f64) -> Self::V;
    fn to_f64(v: Self::V) -> f64;
    fn new(v: Self::V) -> Self;
    /// # Safety
    /// As `AtomicF32::from_ptr`.
    unsafe fn at<'a>(p: *mut Self::V) -> &'a Self;
    fn rmw(&self, op: usize, v: Self::V, scope: Option<Scope>, o: Ordering) -> Self::V;
    fn cas(&self, cur: Self::V, new: Self::V, scope: Option<Scope>, s: Ordering, f: Ordering)
        -> Result<Self::V, Self::V>;
    fn load(&self, scope: Option<Scope>, o: Ordering) -> Self::V;
    fn store(&self, v: Self::V, scope: Option<Scope>, o: Ordering);
}

macro_rules! test_float {
    ($a:ty, $t:ty) => {
        impl TestFloat for $a {
            type V = $t;
            #[inline(always)]
            fn from_f64(x: f64) -> $t {
                x as $t
            }
            #[inline(always)]
            fn to_f64(v: $t) -> f64 {
                v as f64
            }
            #[inline(always)]
            fn new(v: $t) -> Self {
                <$a>::new(v)
            }
            #[inline(always)]
            unsafe fn at<'a>(p: *mut $t) -> &'a Self {
                <$a>::from_ptr(p)
            }
            #[inline(always)]
            fn rmw(&self, op: usize, v: $t, scope: Option<Scope>, o: Ordering) -> $t {
                match scope {
                    Some(s) => match op {
                        FADD => self.fetch_add_scoped(v, s, o),
                        FSUB => self.fetch_sub_scoped(v, s, o),
                        FMIN => self.fetch_min_scoped(v, s, o),
                        FMAX => self.fetch_max_scoped(v, s, o),
                        _ => self.swap_scoped(v, s, o),
                    },
                    None => match op {
                        FADD => self.fetch_add(v, o),
                        FSUB => self.fetch_sub(v, o),
                        FMIN => self.fetch_min(v, o),
                        FMAX => self.fetch_max(v, o),
                        _ => self.swap(v, o),
                    },
                }
            }
            #[inline(always)]
            fn cas(&self, cur: $t, new: $t, scope: Option<Scope>, s: Ordering, f: Ordering) -> Result<$t, $t> {
                match scope {
                    Some(sc) => self.compare_exchange_scoped(cur, new, sc, s, f),
                    None => self.compare_exchange(cur, new, s, f),
                }
            }
            #[inline(always)]
            fn load(&self, scope: Option<Scope>, o: Ordering) -> $t {
                match scope {
                    Some(s) => self.load_scoped(s, o),
                    None => <$a>::load(self, o),
                }
            }
            #[inline(always)]
            fn store(&self, v: $t, scope: Option<Scope>, o: Ordering) {
                match scope {
                    Some(s) => self.store_scoped(v, s, o),
                    None => <$a>::store(self, v, o),
                }
            }
        }
    };
}
test_float!(AtomicF32, f32);
test_float!(AtomicF64, f64);

/// Operands: small integers and quarters, so every sum and difference is exact.
#[inline(always)]
fn float_value(op: usize, g: usize) -> f64 {
    match op {
        FADD => (g % 5 + 1) as f64,
        FSUB => (g % 3 + 1) as f64,
        FSWAP => (g + 1) as f64,
        _ => ((hash(g as u64 * 64 + op as u64) % 2001) as f64 - 1000.0) * 0.25, // min, max, store
    }
}

#[inline(always)]
fn float_init(op: usize) -> f64 {
    match op {
        FSUB => 100_000.0,
        FMIN => f64::INFINITY,
        FMAX => f64::NEG_INFINITY,
        _ => 0.0,
    }
}

#[inline(always)]
unsafe fn float_ops<A: TestFloat>(cells: *mut A::V, stride: usize, pt: *mut A::V, g: usize, cell: usize, s: usize) {
    let scope = SCOPE_OF[s];
    let at = |k: usize| A::at(cells.add((s * FLOAT_OPS + k) * stride + cell));
    let o = |k: usize| ORDS[(s + k) % ORDS.len()];
    let v = |k: usize| A::from_f64(float_value(k, g));
    at(FADD).rmw(FADD, v(FADD), scope, o(FADD));
    at(FSUB).rmw(FSUB, v(FSUB), scope, o(FSUB));
    at(FMIN).rmw(FMIN, v(FMIN), scope, o(FMIN));
    at(FMAX).rmw(FMAX, v(FMAX), scope, o(FMAX));
    *pt.add(s * FLOAT_PT) = at(FSWAP).rmw(FSWAP, v(FSWAP), scope, o(FSWAP));
    let counter = at(FCAS);
    let failure = LOADS[s % LOADS.len()];
    let mut current = counter.load(scope, failure);
    while let Err(seen) = counter.cas(current, A::from_f64(A::to_f64(current) + 1.0), scope, o(FCAS), failure) {
        current = seen;
    }
    let slot = A::at(pt.add(s * FLOAT_PT + 1));
    slot.store(v(FMIN), scope, STORES[s % STORES.len()]);
    let back = slot.load(scope, LOADS[s % LOADS.len()]);
    slot.store(A::from_f64(A::to_f64(back) + 0.5), scope, Relaxed);
}

macro_rules! float_kernels {
    ($global:ident, $shared:ident, $a:ty, $t:ty) => {
        /// Every float operation at every scope on counters in global memory.
        #[kernel]
        pub fn $global(mut cells: DisjointSlice<$t>, mut per_thread: DisjointSlice<$t>) {
            let g = thread::index_1d().get();
            let b = thread::blockIdx_x() as usize;
            let c = g % C;
            let cells = cells.as_mut_ptr();
            // SAFETY: as in the integer kernels.
            unsafe {
                let pt = per_thread.as_mut_ptr().add(g * SCOPES * FLOAT_PT);
                float_ops::<$a>(cells, GROUP, pt, g, b * C + c, 0);
                float_ops::<$a>(cells, GROUP, pt, g, b * C + c, 1);
                float_ops::<$a>(cells, GROUP, pt, g, c, 2);
                float_ops::<$a>(cells, GROUP, pt, g, c, 3);
                float_ops::<$a>(cells, GROUP, pt, g, c, 4);
            }
        }

        /// The same on counters in shared memory, copied out per block.
        #[kernel]
        pub fn $shared(mut out: DisjointSlice<$t>, mut per_thread: DisjointSlice<$t>) {
            shared! { static CELLS: [$a; SCOPES * FLOAT_OPS * C]; }
            const TOTAL: usize = SCOPES * FLOAT_OPS * C;
            let g = thread::index_1d().get();
            let b = thread::blockIdx_x() as usize;
            let t = thread::threadIdx_x() as usize;
            let c = g % C;
            let mut i = t;
            while i < TOTAL {
                // SAFETY: each thread initialises its own slots before the barrier.
                unsafe { CELLS.write(i, <$a as TestFloat>::new(float_init((i / C) % FLOAT_OPS) as $t)) };
                i += BLOCK;
            }
            thread::sync_threads();
            // SAFETY: as in the integer kernels.
            unsafe {
                let cells = CELLS.as_mut_ptr() as *mut $t;
                let pt = per_thread.as_mut_ptr().add(g * SCOPES * FLOAT_PT);
                float_ops::<$a>(cells, C, pt, g, c, 0);
                float_ops::<$a>(cells, C, pt, g, c, 1);
                float_ops::<$a>(cells, C, pt, g, c, 2);
                float_ops::<$a>(cells, C, pt, g, c, 3);
                float_ops::<$a>(cells, C, pt, g, c, 4);
            }
            thread::sync_threads();
            let mut i = t;
            while i < TOTAL {
                // SAFETY: every thread's atomics are done (barrier); block b owns its TOTAL outputs.
                unsafe { *out.get_unchecked_mut(b * TOTAL + i) = CELLS.get_ref(i).load(Relaxed) };
                i += BLOCK;
            }
        }
    };
}
float_kernels!(float_global_f32, float_shared_f32, AtomicF32, f32);
float_kernels!(float_global_f64, float_shared_f64, AtomicF64, f64);

fn check_float<A: TestFloat>(name: &str, shared: bool, cells: &[A::V], pt: &[A::V], failures: &mut Vec<String>) {
    let space = if shared { "shared" } else { "global" };
    for s in 0..SCOPES {
        for (op, op_name) in FLOAT_OP_NAMES.iter().enumerate() {
            for cell in cells_of(s, op, FLOAT_OPS, shared) {
                let gpu = A::to_f64(cells[cell.index]);
                let vals = cell.members.iter().map(|&g| float_value(op, g));
                let init = float_init(op);
                let cpu = match op {
                    FADD => vals.fold(init, |a, b| a + b),
                    FSUB => vals.fold(init, |a, b| a - b),
                    FMIN => vals.fold(init, f64::min),
                    FMAX => vals.fold(init, f64::max),
                    FCAS => cell.members.len() as f64,
                    _ => {
                        let mut seen: Vec<f64> =
                            cell.members.iter().map(|&g| A::to_f64(pt[g * SCOPES * FLOAT_PT + s * FLOAT_PT])).collect();
                        seen.push(gpu);
                        let mut want: Vec<f64> = vals.collect();
                        want.push(0.0);
                        seen.sort_by(f64::total_cmp);
                        want.sort_by(f64::total_cmp);
                        if seen != want {
                            failures.push(format!("{name} {space} {} swap: the old values are not a permutation of what was swapped in", SCOPE_NAMES[s]));
                            return;
                        }
                        continue;
                    }
                };
                if gpu != cpu {
                    failures.push(format!(
                        "{name} {space} {} {op_name}: counter {}: GPU {gpu} CPU {cpu}",
                        SCOPE_NAMES[s], cell.index
                    ));
                    return;
                }
            }
        }
        for g in 0..N {
            let want = float_value(FMIN, g) + 0.5;
            let got = A::to_f64(pt[g * SCOPES * FLOAT_PT + s * FLOAT_PT + 1]);
            if got != want {
                failures.push(format!("{name} {space} {} store/load: thread {g}: GPU {got} CPU {want}", SCOPE_NAMES[s]));
                return;
            }
        }
    }
}

//===-- Spin locks ----------------------------------------------------------===//

const LOCK_ITERS: usize = 32;
/// Global lock words, each with its counter on another cache line (an atomic
/// on the lock's own line would also refresh the counter's line in L1).
const LOCKS: usize = 4;
const LINE: usize = 32;
const LOCK_NAMES: [&str; LOCKS] = [
    "compare_exchange(Acquire) + store(Release), Device scope",
    "swap(Acquire) + swap(Release), Device scope",
    "core swap(Acquire) + store(Release), system scope",
    "fetch_or(Acquire) + fetch_and(Release), System scope",
];
const SHARED_LOCKS: usize = 2;
const SHARED_LOCK_NAMES: [&str; SHARED_LOCKS] = [
    "shared memory swap(Acquire) + store(Release), Block scope",
    "shared memory compare_exchange(SeqCst) + swap(SeqCst), Block scope",
];

/// Adds one to a non-atomic counter (plain load and store).
///
/// # Safety
/// The caller holds the lock that protects `counter`.
#[inline(always)]
unsafe fn bump(counter: *mut u32) {
    counter.write(counter.read() + 1);
}

/// Lane 0 of every warp takes each lock LOCK_ITERS times and increments the
/// counter it protects without atomics. (One lane per warp: the lock holder
/// never waits for a lane of its own warp.)
#[kernel]
pub fn spin_locks(mut words: DisjointSlice<u32>, mut per_block: DisjointSlice<u32>) {
    shared! { static SH: [u32; SHARED_LOCKS * 2]; }
    let t = thread::threadIdx_x() as usize;
    let b = thread::blockIdx_x() as usize;
    if t < SHARED_LOCKS * 2 {
        // SAFETY: one slot per thread, before the barrier.
        unsafe { SH.write(t, 0) };
    }
    thread::sync_threads();
    if t.is_multiple_of(32) {
        let w = words.as_mut_ptr();
        let sh = SH.as_mut_ptr();
        for _ in 0..LOCK_ITERS {
            // SAFETY: the lock words are only accessed atomically, each counter
            // only while its lock is held; the host sized the buffer.
            unsafe {
                let lock = AtomicU32::from_ptr(w);
                while lock.compare_exchange_scoped(0, 1, Scope::Device, Acquire, Relaxed).is_err() {}
                bump(w.add(LINE));
                lock.store_scoped(0, Scope::Device, Release);

                let lock = AtomicU32::from_ptr(w.add(2 * LINE));
                while lock.swap_scoped(1, Scope::Device, Acquire) != 0 {}
                bump(w.add(3 * LINE));
                lock.swap_scoped(0, Scope::Device, Release);

                let lock = AtomicU32::from_ptr(w.add(4 * LINE));
                while lock.swap(1, Acquire) != 0 {}
                bump(w.add(5 * LINE));
                lock.store(0, Release);

                let lock = AtomicU32::from_ptr(w.add(6 * LINE));
                while lock.fetch_or_scoped(1, Scope::System, Acquire) & 1 != 0 {}
                bump(w.add(7 * LINE));
                lock.fetch_and_scoped(!1, Scope::System, Release);

                let lock = AtomicU32::from_ptr(sh);
                while lock.swap_scoped(1, Scope::Block, Acquire) != 0 {}
                bump(sh.add(1));
                lock.store_scoped(0, Scope::Block, Release);

                let lock = AtomicU32::from_ptr(sh.add(2));
                while lock.compare_exchange_scoped(0, 1, Scope::Block, SeqCst, SeqCst).is_err() {}
                bump(sh.add(3));
                lock.swap_scoped(0, Scope::Block, SeqCst);
            }
        }
    }
    thread::sync_threads();
    if t < SHARED_LOCKS {
        // SAFETY: all critical sections are over (barrier); block b owns its outputs.
        unsafe { *per_block.get_unchecked_mut(b * SHARED_LOCKS + t) = SH.read(2 * t + 1) };
    }
}

//===-- Host ----------------------------------------------------------------===//

fn config() -> LaunchConfig {
    LaunchConfig { grid_dim: (BLOCKS as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 }
}

macro_rules! run_int {
    ($ctx:expr, $stream:expr, $module:expr, $failures:expr, $name:literal, $t:ty, $global:ident, $shared:ident, $wraps:expr) => {{
        let stream: &CudaStream = $stream;
        let init: Vec<$t> = (0..SCOPES * INT_OPS * GROUP).map(|i| int_init::<$t>((i / GROUP) % INT_OPS, i % GROUP)).collect();
        let mut cells = DeviceBuffer::from_host(stream, &init)?;
        let mut pt = DeviceBuffer::<$t>::zeroed(stream, N * SCOPES * INT_PT)?;
        cuda_launch! {
            kernel: $global, stream: stream, module: $module, config: config(),
            args: [slice_mut(cells), slice_mut(pt)]
        }?;
        check_int::<$t>($name, false, $wraps, &cells.to_host_vec(stream)?, &pt.to_host_vec(stream)?, $failures);
        let mut out = DeviceBuffer::<$t>::zeroed(stream, BLOCKS * SCOPES * INT_OPS * C)?;
        let mut pt = DeviceBuffer::<$t>::zeroed(stream, N * SCOPES * INT_PT)?;
        cuda_launch! {
            kernel: $shared, stream: stream, module: $module, config: config(),
            args: [slice_mut(out), slice_mut(pt)]
        }?;
        check_int::<$t>($name, true, $wraps, &out.to_host_vec(stream)?, &pt.to_host_vec(stream)?, $failures);
    }};
}

macro_rules! run_float {
    ($ctx:expr, $stream:expr, $module:expr, $failures:expr, $name:literal, $a:ty, $t:ty, $global:ident, $shared:ident) => {{
        let stream: &CudaStream = $stream;
        let init: Vec<$t> = (0..SCOPES * FLOAT_OPS * GROUP).map(|i| float_init((i / GROUP) % FLOAT_OPS) as $t).collect();
        let mut cells = DeviceBuffer::from_host(stream, &init)?;
        let mut pt = DeviceBuffer::<$t>::zeroed(stream, N * SCOPES * FLOAT_PT)?;
        cuda_launch! {
            kernel: $global, stream: stream, module: $module, config: config(),
            args: [slice_mut(cells), slice_mut(pt)]
        }?;
        check_float::<$a>($name, false, &cells.to_host_vec(stream)?, &pt.to_host_vec(stream)?, $failures);
        let mut out = DeviceBuffer::<$t>::zeroed(stream, BLOCKS * SCOPES * FLOAT_OPS * C)?;
        let mut pt = DeviceBuffer::<$t>::zeroed(stream, N * SCOPES * FLOAT_PT)?;
        cuda_launch! {
            kernel: $shared, stream: stream, module: $module, config: config(),
            args: [slice_mut(out), slice_mut(pt)]
        }?;
        check_float::<$a>($name, true, &out.to_host_vec(stream)?, &pt.to_host_vec(stream)?, $failures);
    }};
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "atomics")?;
    let mut failures = Vec::new();
    run_int!(ctx, &stream, module, &mut failures, "u32", u32, int_global_u32, int_shared_u32, true);
    run_int!(ctx, &stream, module, &mut failures, "i32", i32, int_global_i32, int_shared_i32, false);
    run_int!(ctx, &stream, module, &mut failures, "u64", u64, int_global_u64, int_shared_u64, true);
    run_int!(ctx, &stream, module, &mut failures, "i64", i64, int_global_i64, int_shared_i64, false);
    run_float!(ctx, &stream, module, &mut failures, "f32", AtomicF32, f32, float_global_f32, float_shared_f32);
    run_float!(ctx, &stream, module, &mut failures, "f64", AtomicF64, f64, float_global_f64, float_shared_f64);

    let mut words = DeviceBuffer::<u32>::zeroed(&stream, LOCKS * 2 * LINE)?;
    let mut per_block = DeviceBuffer::<u32>::zeroed(&stream, BLOCKS * SHARED_LOCKS)?;
    cuda_launch! {
        kernel: spin_locks, stream: stream, module: module, config: config(),
        args: [slice_mut(words), slice_mut(per_block)]
    }?;
    let words = words.to_host_vec(&stream)?;
    let warps = BLOCKS * BLOCK / 32;
    for (l, name) in LOCK_NAMES.iter().enumerate() {
        let (lock, count) = (words[2 * l * LINE], words[(2 * l + 1) * LINE] as usize);
        if lock != 0 || count != warps * LOCK_ITERS {
            failures.push(format!("spin lock {name}: counter {count} (lock word {lock}), want {}", warps * LOCK_ITERS));
        }
    }
    let per_block = per_block.to_host_vec(&stream)?;
    for (l, name) in SHARED_LOCK_NAMES.iter().enumerate() {
        if let Some(b) = (0..BLOCKS).find(|&b| per_block[b * SHARED_LOCKS + l] as usize != BLOCK / 32 * LOCK_ITERS) {
            failures.push(format!(
                "spin lock {name}: block {b}: counter {}, want {}",
                per_block[b * SHARED_LOCKS + l],
                BLOCK / 32 * LOCK_ITERS
            ));
        }
    }

    let checks = 4 * 2 * SCOPES * (INT_OPS + 1) + 2 * 2 * SCOPES * (FLOAT_OPS + 1) + LOCKS + SHARED_LOCKS;
    if failures.is_empty() { Ok(checks) } else { Err(failures.join("\n").into()) }
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: {n} atomic checks (6 types × 5 scopes × global/shared, 6 spin locks) matched the CPU");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
