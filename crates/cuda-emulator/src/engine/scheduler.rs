//! Runs one launch on the CPU: blocks in parallel on the host's cores, the
//! threads of a block as fibers on one OS thread, switched at barriers and
//! warp collectives.
//!
//! Each worker OS thread takes the next block index from a shared counter
//! and runs that block to completion with a small scheduler: every emulated
//! thread runs until it finishes or waits (at `sync_threads`, or in a warp
//! collective for the other lanes of its mask); a barrier opens when every
//! thread of the block waits at one; a warp collective completes when every
//! lane of its mask has called it with that mask. When nothing can run and
//! threads are still waiting, the block is stuck and the launch fails with a
//! description of who waits for whom (barrier divergence), instead of
//! hanging.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use super::fiber::{self, Stack};
use crate::DevicePanic;

/// Host code of a kernel: what one emulated thread calls.
///
/// `call(data, params)` runs the kernel for the calling emulated thread;
/// `params` is the launch's `kernelParams` array (one pointer per parameter,
/// to the argument's bytes). `cuda-host` builds one from the kernel's entry
/// wrapper; tests build one from a closure with [`HostKernel::from_fn`].
#[derive(Clone, Copy, Debug)]
pub struct HostKernel {
    data: *const (),
    call: unsafe fn(*const (), *const *mut c_void),
    name: &'static str,
}

// SAFETY: `data` is a function pointer or a `Sync` closure (see the constructors).
unsafe impl Send for HostKernel {}
// SAFETY: see `Send`.
unsafe impl Sync for HostKernel {}

impl HostKernel {
    /// A kernel whose host code is `call(data, params)`.
    ///
    /// # Safety
    /// `call` must be safe to run from many OS threads at once with `data`
    /// and the `params` of any launch this kernel is used for, and `data`
    /// must stay valid while launches of it run.
    pub unsafe fn new(data: *const (), call: unsafe fn(*const (), *const *mut c_void)) -> Self {
        HostKernel { data, call, name: "" }
    }

    /// The same kernel, named `name` (its Rust path) in traces and errors.
    pub fn named(self, name: &'static str) -> Self {
        HostKernel { name, ..self }
    }

    /// The name given with [`named`](Self::named) ("" if none).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// A kernel whose body is the closure `f` (it ignores the launch's
    /// parameters; it reads its coordinates through `cuda_device::thread`).
    pub fn from_fn<F: Fn() + Sync>(f: &F) -> Self {
        unsafe fn call<F: Fn()>(data: *const (), _: *const *mut c_void) {
            // SAFETY: `data` is the `&F` given to `from_fn`.
            unsafe { (*data.cast::<F>())() }
        }
        HostKernel { data: (f as *const F).cast(), call: call::<F>, name: "" }
    }
}

/// A launch to emulate.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    /// Blocks in x, y, z.
    pub grid_dim: (u32, u32, u32),
    /// Threads per block in x, y, z.
    pub block_dim: (u32, u32, u32),
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

/// Why an emulated launch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A thread panicked (bounds check, overflow, `unwrap`, `panic!`): the
    /// error a GPU launch reports too.
    Panic(DevicePanic),
    /// The emulator found what the GPU would not forgive: barrier divergence,
    /// a shared-memory race, an out-of-bounds shared access, a warp
    /// collective some lane never joins, a trap.
    Emulator(String),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Panic(p) => write!(f, "{p}"),
            Fault::Emulator(m) => f.write_str(m),
        }
    }
}

/// What every worker of one launch shares.
struct LaunchState<'a> {
    grid: Grid,
    kernel: &'a HostKernel,
    params: *const *mut c_void,
    next_block: AtomicUsize,
    failed: AtomicBool,
    fault: Mutex<Option<Fault>>,
}

// SAFETY: `params` points to argument bytes that the launch only reads
// (each emulated thread copies them, as the GPU does).
unsafe impl Sync for LaunchState<'_> {}

impl LaunchState<'_> {
    fn fail(&self, fault: Fault) {
        let mut slot = self.fault.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(fault);
        }
        self.failed.store(true, Ordering::SeqCst);
    }
}

/// Grids of at most this many threads run on the launching thread alone.
const SMALL_GRID_THREADS: usize = 8192;

/// Stacks kept between launches.
static STACKS: Mutex<Vec<Stack>> = Mutex::new(Vec::new());

/// Runs `grid` with `kernel` on the CPU. `params` is `kernelParams`.
///
/// # Safety
/// `params` must hold what `kernel` expects, valid until this returns.
pub unsafe fn run(grid: Grid, kernel: &HostKernel, params: *const *mut c_void) -> Result<(), Fault> {
    install_panic_hook();
    let (gx, gy, gz) = grid.grid_dim;
    let blocks = gx as usize * gy as usize * gz as usize;
    let state = LaunchState {
        grid,
        kernel,
        params,
        next_block: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        fault: Mutex::new(None),
    };
    // A small grid runs on the calling thread: starting workers would cost
    // more than its blocks.
    let (bx, by, bz) = grid.block_dim;
    let threads = blocks * (bx * by * bz) as usize;
    let workers = if threads <= SMALL_GRID_THREADS { 1 } else { workers().min(blocks).max(1) };
    if workers == 1 {
        worker(&state);
    } else {
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| worker(&state));
            }
        });
    }
    match state.fault.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(fault) => Err(fault),
        None => Ok(()),
    }
}

/// Worker threads per launch: `OXIDE_EMULATE_THREADS`, else the host's cores.
fn workers() -> usize {
    std::env::var("OXIDE_EMULATE_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn worker(state: &LaunchState<'_>) {
    let (gx, gy, gz) = state.grid.grid_dim;
    let total = gx as usize * gy as usize * gz as usize;
    let mut stacks = Vec::new();
    loop {
        if state.failed.load(Ordering::Relaxed) {
            break;
        }
        let b = state.next_block.fetch_add(1, Ordering::Relaxed);
        if b >= total {
            break;
        }
        let idx = ((b % gx as usize) as u32, ((b / gx as usize) % gy as usize) as u32, (b / (gx as usize * gy as usize)) as u32);
        let mut block = Block::new(state, idx, std::mem::take(&mut stacks));
        let result = block.run();
        stacks = std::mem::take(&mut block.free_stacks);
        if let Err(fault) = result {
            // Fibers of a failed block may be suspended mid-kernel: their
            // stacks are dropped, never resumed (a GPU kernel that faults
            // stops all its threads too).
            for slot in &mut block.threads {
                slot.stack = None;
            }
            state.fail(fault);
        } else {
            for slot in &mut block.threads {
                if let Some(s) = slot.stack.take() {
                    stacks.push(s);
                }
            }
        }
    }
    let mut pool = STACKS.lock().unwrap_or_else(|p| p.into_inner());
    pool.extend(stacks);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    NotStarted,
    Runnable,
    Barrier,
    Warp,
    Done,
    Faulted,
}

/// The kinds of warp collective (one rendezvous each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WarpOp {
    Sync,
    ShflIdx,
    ShflUp,
    ShflDown,
    ShflXor,
    All,
    Any,
    Ballot,
    Match,
    ReduxAdd,
    ReduxUmin,
    ReduxUmax,
    ReduxMin,
    ReduxMax,
    ReduxAnd,
    ReduxOr,
    ReduxXor,
    Elect,
}

impl WarpOp {
    fn name(self) -> &'static str {
        match self {
            WarpOp::Sync => "sync_warp",
            WarpOp::ShflIdx => "shfl_idx",
            WarpOp::ShflUp => "shfl_up",
            WarpOp::ShflDown => "shfl_down",
            WarpOp::ShflXor => "shfl_xor",
            WarpOp::All => "all",
            WarpOp::Any => "any",
            WarpOp::Ballot => "ballot",
            WarpOp::Match => "match_any",
            WarpOp::ReduxAdd | WarpOp::ReduxUmin | WarpOp::ReduxUmax | WarpOp::ReduxMin => "reduce_*",
            WarpOp::ReduxMax | WarpOp::ReduxAnd | WarpOp::ReduxOr | WarpOp::ReduxXor => "reduce_*",
            WarpOp::Elect => "elect_one",
        }
    }
}

/// One lane's call of a warp collective.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arrival {
    pub op: WarpOp,
    pub mask: u32,
    pub value: u64,
    pub arg: u32,
    pub clamp: u32,
}

/// The barrier reduction a thread asked for (`sync_threads_count/and/or`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BarrierKind {
    Plain,
    Count,
    And,
    Or,
}

pub(crate) struct Slot {
    pub rsp: usize,
    pub state: State,
    stack: Option<Stack>,
    pub tid: (u32, u32, u32),
    pub linear: u32,
    /// The result of the last barrier reduction or warp collective.
    pub result: u64,
    pub predicate: bool,
    pub barrier_kind: BarrierKind,
    pub arrival: Option<Arrival>,
}

/// The last access to one shared-memory address in the current epoch.
#[derive(Clone, Copy, Default)]
struct Access {
    epoch: u64,
    writer: Option<(u32, u64)>,
    readers: [Option<(u32, u64)>; 2],
}

/// Hashes shared-memory addresses with one multiplication (SipHash, the
/// default, costs more than the rest of an access check).
#[derive(Clone, Copy, Default)]
struct BuildAddressHasher;

#[derive(Default)]
struct AddressHasher(u64);

impl std::hash::BuildHasher for BuildAddressHasher {
    type Hasher = AddressHasher;
    fn build_hasher(&self) -> AddressHasher {
        AddressHasher(0)
    }
}

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
}

/// Bytes after each shared region in which out-of-bounds accesses are caught.
const REGION_MARGIN: usize = 256;

/// One `shared!` array (or the dynamic area) of this block.
struct Region {
    key: usize,
    memory: Vec<u128>,
    size: usize,
}

impl Region {
    fn new(key: usize, size: usize) -> Region {
        // Shared memory starts uninitialised on the GPU; all-ones bytes make
        // a read before any write visible (NaN, -1) instead of a quiet zero.
        // A margin after the end turns an access just past it (the common
        // off-by-one) into a report instead of a write to another allocation.
        Region { key, memory: vec![u128::MAX; size.div_ceil(16) + REGION_MARGIN / 16], size }
    }
    fn start(&self) -> usize {
        self.memory.as_ptr() as usize
    }
}

/// One block being run; reachable from its fibers through [`CURRENT`].
pub(crate) struct Block<'l, 's> {
    launch: &'l LaunchState<'s>,
    pub block_idx: (u32, u32, u32),
    pub threads: Vec<Slot>,
    pub current: usize,
    scheduler_rsp: usize,
    runnable: std::collections::VecDeque<usize>,
    at_barrier: usize,
    done: usize,
    epoch: u64,
    /// Per warp: bumped at every completed collective and `sync_warp`.
    warp_generation: Vec<u64>,
    /// Per warp: the lanes waiting in a collective.
    warp_waiting: Vec<u32>,
    regions: Vec<Region>,
    dynamic: Option<Region>,
    accesses: HashMap<usize, Access, BuildAddressHasher>,
    free_stacks: Vec<Stack>,
    fault: Option<Fault>,
}

thread_local! {
    /// The block this OS thread is running (null outside emulated launches).
    static CURRENT: Cell<*mut Block<'static, 'static>> = const { Cell::new(std::ptr::null_mut()) };
    /// Set while an emulated thread's kernel code runs on this OS thread.
    static IN_KERNEL: Cell<bool> = const { Cell::new(false) };
    /// Where the last panic in kernel code happened, from the panic hook.
    static LAST_PANIC: Cell<Option<(String, String, u32, u32)>> = const { Cell::new(None) };
}

/// Called on a fiber: suspends the current emulated thread (its state says
/// why) until the scheduler resumes it. No reference to the block may be
/// live across this call: the scheduler changes the block meanwhile.
pub(crate) fn suspend_current() {
    let block = CURRENT.with(Cell::get);
    assert!(!block.is_null(), "suspend_current outside an emulated launch");
    // SAFETY: CURRENT is the running block (see `Block::run`); the scheduler
    // is suspended in `resume` and resumes this thread with the `rsp` saved
    // here. The place expressions make no reference that outlives them.
    unsafe {
        let i = (*block).current;
        let slot = (&mut (*block).threads)[i..].as_mut_ptr();
        let save = std::ptr::addr_of_mut!((*slot).rsp);
        let to = (*block).scheduler_rsp;
        fiber::switch(save, to);
    }
}

/// Runs `f` with the running block (`None` outside an emulated launch).
pub(crate) fn with_block<R>(f: impl FnOnce(&mut Block<'_, '_>) -> R) -> Option<R> {
    let block = CURRENT.with(Cell::get);
    if block.is_null() {
        return None;
    }
    // SAFETY: CURRENT points to the block whose fiber runs on this OS thread;
    // the scheduler does not touch it while a fiber runs, and `f` does not
    // switch fibers.
    Some(f(unsafe { &mut *block }))
}

impl<'l, 's> Block<'l, 's> {
    fn new(launch: &'l LaunchState<'s>, block_idx: (u32, u32, u32), free_stacks: Vec<Stack>) -> Self {
        let (bx, by, bz) = launch.grid.block_dim;
        let n = (bx * by * bz) as usize;
        let threads = (0..n as u32)
            .map(|i| Slot {
                rsp: 0,
                state: State::NotStarted,
                stack: None,
                tid: (i % bx, (i / bx) % by, i / (bx * by)),
                linear: i,
                result: 0,
                predicate: false,
                barrier_kind: BarrierKind::Plain,
                arrival: None,
            })
            .collect();
        Block {
            launch,
            block_idx,
            threads,
            current: 0,
            scheduler_rsp: 0,
            runnable: (0..n).collect(),
            at_barrier: 0,
            done: 0,
            epoch: 0,
            warp_generation: vec![0; n.div_ceil(32)],
            warp_waiting: vec![0; n.div_ceil(32)],
            regions: Vec::new(),
            dynamic: None,
            accesses: HashMap::default(),
            free_stacks,
            fault: None,
        }
    }

    pub(crate) fn grid(&self) -> Grid {
        self.launch.grid
    }

    fn stack(&mut self) -> Result<Stack, Fault> {
        if let Some(s) = self.free_stacks.pop() {
            return Ok(s);
        }
        if let Some(s) = STACKS.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(s);
        }
        Stack::new().ok_or_else(|| Fault::Emulator("emulator: out of memory for thread stacks".into()))
    }

    fn run(&mut self) -> Result<(), Fault> {
        let me: *mut Self = self;
        let previous = CURRENT.with(|c| c.replace(me.cast()));
        // SAFETY: `me` is this block, alive for the call. The scheduler and
        // the fibers reach it only through `me` (CURRENT holds the same
        // pointer) and never keep a reference across a switch.
        let result = unsafe { Self::schedule(me) };
        CURRENT.with(|c| c.set(previous));
        result
    }

    /// # Safety
    /// `this` is the running block (see `run`).
    unsafe fn schedule(this: *mut Self) -> Result<(), Fault> {
        // SAFETY (every dereference below): `this` is valid (caller), and
        // each reference made from it ends before the next switch.
        let n = unsafe { (*this).threads.len() };
        while let Some(i) = unsafe { (*this).runnable.pop_front() } {
            if unsafe { (*this).launch.failed.load(Ordering::Relaxed) } {
                return Ok(()); // another block failed: stop, like the GPU
            }
            unsafe { Self::resume(this, i)? };
            let b = unsafe { &mut *this };
            if let Some(fault) = b.fault.take() {
                return Err(fault);
            }
            match b.threads[i].state {
                State::Done => {
                    b.done += 1;
                    if let Some(s) = b.threads[i].stack.take() {
                        b.free_stacks.push(s);
                    }
                }
                State::Barrier => {
                    b.at_barrier += 1;
                    if b.at_barrier == n {
                        b.open_barrier();
                    }
                }
                State::Warp => b.try_complete_warp(i)?,
                State::Faulted => unreachable!("a faulted thread leaves a fault"),
                State::Runnable | State::NotStarted => b.runnable.push_back(i),
            }
        }
        let b = unsafe { &*this };
        if b.done == n {
            Ok(())
        } else {
            Err(b.diagnose_stuck())
        }
    }

    /// Runs thread `i` until it finishes or waits.
    ///
    /// # Safety
    /// `this` is the running block (see `run`).
    unsafe fn resume(this: *mut Self, i: usize) -> Result<(), Fault> {
        // SAFETY: `this` is valid (caller); `b` ends before the switch.
        let to = {
            let b = unsafe { &mut *this };
            b.current = i;
            if b.threads[i].state == State::NotStarted {
                let stack = b.stack()?;
                b.threads[i].rsp = fiber::prepare(&stack, thread_main);
                b.threads[i].stack = Some(stack);
            }
            b.threads[i].state = State::Runnable;
            b.threads[i].rsp
        };
        // SAFETY: `this` is valid; thread i is suspended (or prepared) on its
        // own mapped stack and switches back to `scheduler_rsp` when it
        // finishes or waits.
        unsafe { fiber::switch(std::ptr::addr_of_mut!((*this).scheduler_rsp), to) };
        Ok(())
    }

    /// Called on the fiber: ends the current thread with `fault` (the launch
    /// fails); never returns.
    pub(crate) fn fail_thread(&mut self, message: String) -> ! {
        let i = self.current;
        if self.fault.is_none() {
            self.fault = Some(Fault::Emulator(message));
        }
        self.threads[i].state = State::Faulted;
        let mut dead = 0usize;
        let to = self.scheduler_rsp;
        // SAFETY: as in `suspend`; this thread is never resumed.
        unsafe { fiber::switch(&mut dead, to) };
        unreachable!("a faulted emulated thread was resumed")
    }

    fn open_barrier(&mut self) {
        let count = self.threads.iter().filter(|t| t.predicate).count() as u64;
        let n = self.threads.len() as u64;
        for t in &mut self.threads {
            t.result = match t.barrier_kind {
                BarrierKind::Plain => 0,
                BarrierKind::Count => count,
                BarrierKind::And => (count == n) as u64,
                BarrierKind::Or => (count > 0) as u64,
            };
            t.state = State::Runnable;
        }
        self.at_barrier = 0;
        self.epoch += 1;
        self.runnable.extend(0..self.threads.len());
    }

    /// The lanes of warp `w` that exist in this block.
    fn lanes_of(&self, w: usize) -> u32 {
        let n = self.threads.len() - w * 32;
        if n >= 32 {
            u32::MAX
        } else {
            (1u32 << n) - 1
        }
    }

    /// Completes the collective that thread `i` just joined, if every lane
    /// of its mask has joined it.
    fn try_complete_warp(&mut self, i: usize) -> Result<(), Fault> {
        let arrival = self.threads[i].arrival.expect("a thread in a warp op has an arrival");
        let (w, lane) = (i / 32, i % 32);
        let group = arrival.mask & self.lanes_of(w);
        if group & (1 << lane) == 0 {
            return Err(self.fault_at(
                i,
                format!(
                    "{} called with mask {:#010x}, which does not include the calling lane {lane}; \
                     every lane that calls a warp collective must be in its mask",
                    arrival.op.name(),
                    arrival.mask
                ),
            ));
        }
        self.warp_waiting[w] |= 1 << lane;
        if group & !self.warp_waiting[w] != 0 {
            return Ok(()); // not everyone is here yet
        }
        let base = w * 32;
        let mut lanes = Vec::with_capacity(32);
        for l in 0..32 {
            if group & (1 << l) == 0 {
                continue;
            }
            let t = &self.threads[base + l];
            match (t.state, t.arrival) {
                (State::Warp, Some(a)) if a.mask == arrival.mask => {
                    if a.op != arrival.op {
                        return Err(self.fault_at(
                            i,
                            format!(
                                "lanes of warp {w} meet with mask {:#010x} in different collectives \
                                 (lane {l}: {}, lane {lane}: {}); they must all call the same one",
                                arrival.mask,
                                a.op.name(),
                                arrival.op.name()
                            ),
                        ));
                    }
                    lanes.push((l, a));
                }
                _ => return Ok(()), // not everyone is here yet
            }
        }
        let results = warp_results(&lanes, group);
        self.warp_waiting[w] &= !group;
        for (l, r) in lanes.iter().map(|(l, _)| *l).zip(results) {
            let t = &mut self.threads[base + l];
            t.result = r;
            t.arrival = None;
            t.state = State::Runnable;
            self.runnable.push_back(base + l);
        }
        self.warp_generation[w] += 1;
        Ok(())
    }

    fn coords(&self, i: usize) -> String {
        let (x, y, z) = self.threads[i].tid;
        format!("({x}, {y}, {z})")
    }

    fn block_name(&self) -> String {
        let (x, y, z) = self.block_idx;
        format!("({x}, {y}, {z})")
    }

    fn fault_at(&self, i: usize, what: String) -> Fault {
        Fault::Emulator(format!("emulator: thread {} of block {}: {what}", self.coords(i), self.block_name()))
    }

    /// Nothing can run but not every thread has finished: say why.
    fn diagnose_stuck(&self) -> Fault {
        let pick = |s: State| -> Vec<usize> { (0..self.threads.len()).filter(|&i| self.threads[i].state == s).collect() };
        let (barrier, warp, done) = (pick(State::Barrier), pick(State::Warp), pick(State::Done));
        let list = |v: &[usize]| -> String {
            let shown: Vec<String> = v.iter().take(4).map(|&i| self.coords(i)).collect();
            let more = if v.len() > 4 { format!(" and {} more", v.len() - 4) } else { String::new() };
            format!("{}{more}", shown.join(", "))
        };
        let b = self.block_name();
        if !barrier.is_empty() && warp.is_empty() {
            return Fault::Emulator(format!(
                "emulator: barrier divergence in block {b}: {} thread(s) wait at sync_threads (threads {}) \
                 but {} exited without reaching it (threads {}); on the GPU this hangs or corrupts the barrier. \
                 Every thread of a block must reach every sync_threads (no early `return` before a barrier).",
                barrier.len(),
                list(&barrier),
                done.len(),
                list(&done)
            ));
        }
        let Some(&first) = warp.first() else {
            return Fault::Emulator(format!("emulator: block {b} stopped with threads neither done nor waiting"));
        };
        let a = self.threads[first].arrival.expect("waiting lanes have arrivals");
        let w = first / 32;
        let missing: Vec<String> = (0..32usize)
            .filter(|l| a.mask & self.lanes_of(w) & (1 << l) != 0)
            .filter_map(|l| {
                let t = &self.threads[w * 32 + l];
                match (t.state, t.arrival) {
                    (State::Warp, Some(o)) if o.mask == a.mask => None,
                    (State::Done, _) => Some(format!("lane {l} exited")),
                    (State::Barrier, _) => Some(format!("lane {l} waits at sync_threads")),
                    (State::Warp, Some(o)) => {
                        Some(format!("lane {l} waits in {} with mask {:#010x}", o.op.name(), o.mask))
                    }
                    _ => Some(format!("lane {l} never arrived")),
                }
            })
            .collect();
        Fault::Emulator(format!(
            "emulator: warp divergence in block {b}: lanes of warp {w} wait in {} with mask {:#010x} \
             (thread {} first), but {}. Every lane named in the mask must call the same collective with the same mask.",
            a.op.name(),
            a.mask,
            self.coords(first),
            missing.join(", ")
        ))
    }

    /// The block's copy of the shared static at `key` (`size` bytes).
    pub(crate) fn block_shared(&mut self, key: usize, size: usize, dynamic: bool) -> *mut u8 {
        if dynamic {
            let bytes = self.launch.grid.shared_mem_bytes as usize;
            let region = self.dynamic.get_or_insert_with(|| Region::new(key, bytes));
            return region.memory.as_mut_ptr().cast();
        }
        if let Some(r) = self.regions.iter_mut().find(|r| r.key == key) {
            return r.memory.as_mut_ptr().cast();
        }
        self.regions.push(Region::new(key, size));
        self.regions.last_mut().expect("just pushed").memory.as_mut_ptr().cast()
    }

    /// Records an access through the SharedArray API; reports a race or an
    /// out-of-bounds access by ending the thread.
    pub(crate) fn shared_access(&mut self, address: usize, size: usize, write: bool) {
        let i = self.current;
        let inside = self.regions.iter().chain(self.dynamic.as_ref()).find(|r| {
            address >= r.start() && address < r.start() + r.memory.len() * 16
        });
        let Some(region) = inside else { return }; // not shared memory: not tracked
        let (start, len) = (region.start(), region.size);
        if address + size > start + len {
            let msg = format!(
                "emulator: thread {} of block {}: shared-memory access out of bounds: {size} bytes at byte {} \
                 of a {len}-byte shared array",
                self.coords(i),
                self.block_name(),
                address - start
            );
            self.fail_thread(msg);
        }
        let me = i as u32;
        let warp_gen = |b: &Block<'_, '_>, t: u32| b.warp_generation[t as usize / 32];
        let my_gen = warp_gen(self, me);
        let epoch = self.epoch;
        let entry = self.accesses.entry(address).or_default();
        if entry.epoch != epoch {
            *entry = Access { epoch, ..Access::default() };
        }
        // Another thread's access conflicts unless a sync_warp (or collective)
        // of a shared warp separates them.
        let conflict = |other: Option<(u32, u64)>| {
            other.filter(|&(t, g)| t != me && !(t / 32 == me / 32 && g != my_gen))
        };
        let (writer, readers) = (entry.writer, entry.readers);
        let clash = if write {
            conflict(writer).map(|w| (w.0, "wrote")).or_else(|| {
                readers.iter().copied().find_map(|r| conflict(r)).map(|r| (r.0, "read"))
            })
        } else {
            conflict(writer).map(|w| (w.0, "wrote"))
        };
        if let Some((other, did)) = clash {
            let offset = address - start;
            let msg = format!(
                "emulator: shared-memory race in block {}: thread {} {did} byte {offset} of a {len}-byte shared \
                 array (address {address:#x}) and thread {} then {} it, with no sync_threads between them",
                self.block_name(),
                self.coords(other as usize),
                self.coords(i),
                if write { "wrote" } else { "read" }
            );
            self.fail_thread(msg);
        }
        let entry = self.accesses.get_mut(&address).expect("inserted above");
        if write {
            entry.writer = Some((me, my_gen));
        } else if !entry.readers.iter().flatten().any(|r| r.0 == me) {
            if let Some(slot) = entry.readers.iter_mut().find(|r| r.is_none()) {
                *slot = Some((me, my_gen));
            } else {
                entry.readers[1] = Some((me, my_gen));
            }
        }
    }

    /// The lanes of the current thread's warp that have not exited.
    pub(crate) fn active_mask(&self) -> u32 {
        let w = self.current / 32;
        (0..32)
            .filter(|l| w * 32 + l < self.threads.len() && self.threads[w * 32 + l].state != State::Done)
            .fold(0, |m, l| m | 1 << l)
    }
}

/// The result of one collective for each of `lanes` (lane, arrival).
fn warp_results(lanes: &[(usize, Arrival)], group: u32) -> Vec<u64> {
    let mut by_lane = [None; 32];
    for &(l, a) in lanes {
        by_lane[l] = Some(a.value);
    }
    let value_of = |l: usize| by_lane.get(l).copied().flatten();
    let op = lanes[0].1.op;
    let all32 = |f: &dyn Fn(u32, u32) -> u32, init: u32| lanes.iter().fold(init, |acc, (_, a)| f(acc, a.value as u32));
    lanes
        .iter()
        .map(|&(lane, a)| match op {
            WarpOp::Sync => 0,
            WarpOp::ShflIdx | WarpOp::ShflUp | WarpOp::ShflDown | WarpOp::ShflXor => {
                // PTX shfl.sync: segment mask and clamp value from `c`.
                let lane = lane as i64;
                let seg = ((a.clamp >> 8) & 0x1f) as i64;
                let cval = (a.clamp & 0x1f) as i64;
                let max_lane = (lane & seg) | (cval & !seg);
                let min_lane = lane & seg;
                let b = a.arg as i64;
                let (j, ok) = match op {
                    WarpOp::ShflIdx => {
                        let j = min_lane | ((b & 0x1f) & !seg);
                        (j, j <= max_lane)
                    }
                    WarpOp::ShflUp => {
                        let j = lane - (b & 0x1f);
                        (j, j >= max_lane)
                    }
                    WarpOp::ShflDown => {
                        let j = lane + (b & 0x1f);
                        (j, j <= max_lane)
                    }
                    _ => {
                        let j = lane ^ (b & 0x1f);
                        (j, j <= max_lane)
                    }
                };
                let j = if ok { j } else { lane };
                // A source lane outside the mask gives an undefined value on
                // the GPU; the emulator returns the caller's own.
                value_of(j as usize).filter(|_| group & (1 << j) != 0).unwrap_or(a.value)
            }
            WarpOp::All => lanes.iter().all(|(_, x)| x.value != 0) as u64,
            WarpOp::Any => lanes.iter().any(|(_, x)| x.value != 0) as u64,
            WarpOp::Ballot => lanes.iter().filter(|(_, x)| x.value != 0).fold(0u64, |m, (l, _)| m | 1 << l),
            WarpOp::Match => lanes.iter().filter(|(_, x)| x.value == a.value).fold(0u64, |m, (l, _)| m | 1 << l),
            WarpOp::ReduxAdd => all32(&|x, y| x.wrapping_add(y), 0) as u64,
            WarpOp::ReduxUmin => all32(&|x, y| x.min(y), u32::MAX) as u64,
            WarpOp::ReduxUmax => all32(&|x, y| x.max(y), 0) as u64,
            WarpOp::ReduxMin => all32(&|x, y| (x as i32).min(y as i32) as u32, i32::MAX as u32) as u64,
            WarpOp::ReduxMax => all32(&|x, y| (x as i32).max(y as i32) as u32, i32::MIN as u32) as u64,
            WarpOp::ReduxAnd => all32(&|x, y| x & y, u32::MAX) as u64,
            WarpOp::ReduxOr => all32(&|x, y| x | y, 0) as u64,
            WarpOp::ReduxXor => all32(&|x, y| x ^ y, 0) as u64,
            WarpOp::Elect => (lane == lanes[0].0) as u64,
        })
        .collect()
}

/// The first frame of every emulated thread's fiber.
extern "C" fn thread_main() -> ! {
    let block = CURRENT.with(Cell::get);
    // SAFETY: the scheduler passed its block, which outlives its fibers; it
    // is suspended in `resume` while this runs.
    let (kernel, params) = unsafe { (*(*block).launch.kernel, (*block).launch.params) };
    IN_KERNEL.with(|k| k.set(true));
    // SAFETY: the launch's contract: `params` suits `kernel`.
    let outcome = std::panic::catch_unwind(|| unsafe { (kernel.call)(kernel.data, params) });
    IN_KERNEL.with(|k| k.set(false));
    // SAFETY: as above; no other reference to the block is live on this fiber.
    let b = unsafe { &mut *block };
    let i = b.current;
    match outcome {
        Ok(()) => b.threads[i].state = State::Done,
        Err(payload) => {
            let (message, file, line, column) = LAST_PANIC.with(Cell::take).unwrap_or_else(|| {
                let text = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "Box<dyn Any>".to_string());
                (text, "<unknown>".to_string(), 0, 0)
            });
            std::mem::forget(payload); // dropping it could unwind again; it is small
            let panic = DevicePanic { message, file, line, column, thread: b.threads[i].tid, block: b.block_idx };
            // What the device's panic code prints (LowerPanics.cpp), to stdout like vprintf.
            {
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{panic}");
                let _ = out.flush();
            }
            if b.fault.is_none() {
                b.fault = Some(Fault::Panic(panic));
            }
            b.threads[i].state = State::Faulted;
        }
    }
    let mut dead = 0usize;
    let to = b.scheduler_rsp;
    // SAFETY: the scheduler is suspended in `resume`; this fiber is finished
    // and never resumed (its stack is reused).
    unsafe { fiber::switch(&mut dead, to) };
    unreachable!("a finished emulated thread was resumed")
}

/// Records where kernel code panicked (and keeps the default hook quiet for
/// it: the launch's error reports the panic); other panics go to the hook
/// that was installed before.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_KERNEL.with(Cell::get) {
                return previous(info);
            }
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| info.to_string());
            let (file, line, column) =
                info.location().map_or(("<unknown>".to_string(), 0, 0), |l| (l.file().to_string(), l.line(), l.column()));
            LAST_PANIC.with(|p| p.set(Some((message, file, line, column))));
        }));
    });
}
