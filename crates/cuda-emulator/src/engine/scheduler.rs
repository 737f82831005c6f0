//! Runs one block: its threads are fibers on one OS thread, switched when
//! they wait.
//!
//! Every emulated thread runs until it finishes or waits (at `sync_threads`,
//! in a warp collective for the other lanes of its mask, or at a spin point:
//! an atomic or `nanosleep` that it has reached often without waiting, which
//! is how a spin-wait on another thread lets that thread run); a barrier
//! opens when every thread of the block waits at one; a warp collective
//! completes when every lane of its mask has called it with that mask. When
//! nothing can run and threads are still waiting, the block is stuck and the
//! launch fails with a description of who waits for whom, instead of
//! hanging (`deadlock.rs`).

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::Mutex;

use super::fiber::{self, Stack};
use super::kernel::{Fault, Grid, HostPanic};
use super::launch_state::LaunchState;
use super::shared_memory::SharedMemory;
use super::thread::{self, name, BarrierKind, Slot, State};
use super::warp::{self, Warps};
use super::watchdog::WorkerWatch;
use super::{deadlock, panic_capture};

/// Spin points a thread passes without waiting before it lets the others
/// run: enough that ordinary atomics rarely switch, few enough that a
/// spin-wait hands over at once.
const SPINS_BEFORE_YIELD: u32 = 32;

/// One block being run; reachable from its fibers through [`CURRENT`].
pub(crate) struct Block<'l, 's> {
    launch: &'l LaunchState<'s>,
    watch: &'l WorkerWatch,
    pub block_idx: (u32, u32, u32),
    pub threads: Vec<Slot>,
    pub current: usize,
    scheduler_rsp: usize,
    runnable: VecDeque<usize>,
    at_barrier: usize,
    done: usize,
    warps: Warps,
    shared: SharedMemory,
    free_stacks: Vec<Stack>,
    fault: Option<Fault>,
}

thread_local! {
    /// The block this OS thread is running (null outside emulated launches).
    static CURRENT: Cell<*mut Block<'static, 'static>> = const { Cell::new(std::ptr::null_mut()) };
}

/// Stacks kept between launches.
static STACKS: Mutex<Vec<Stack>> = Mutex::new(Vec::new());

/// Keeps a worker's stacks for later launches.
pub(super) fn keep_stacks(stacks: Vec<Stack>) {
    STACKS.lock().unwrap_or_else(|p| p.into_inner()).extend(stacks);
}

/// Called on a fiber: suspends the current emulated thread (its state says
/// why) until the scheduler resumes it. No reference to the block may be
/// live across this call: the scheduler changes the block meanwhile.
pub(crate) fn suspend_current() {
    let block = CURRENT.with(Cell::get);
    assert!(!block.is_null(), "suspend_current outside an emulated launch");
    thread::set_on_fiber(false);
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
    thread::set_on_fiber(true);
}

/// Runs `f` with the running block (`None` outside an emulated launch).
/// `f` must not switch fibers, except to end the thread (`fail_thread`).
pub(crate) fn with_block<R>(f: impl FnOnce(&mut Block<'_, '_>) -> R) -> Option<R> {
    let block = CURRENT.with(Cell::get);
    if block.is_null() {
        return None;
    }
    // SAFETY: CURRENT points to the block whose fiber runs on this OS thread;
    // the scheduler does not touch it while a fiber runs, and `f` does not
    // switch fibers (or never comes back: `fail_thread`).
    Some(thread::in_hook(|| f(unsafe { &mut *block })))
}

/// Lets the other threads of the block run before the current one goes on
/// (`nanosleep`); nothing outside an emulated launch.
pub(crate) fn yield_now() {
    if with_block(|_| ()).is_some() {
        suspend_current(); // the state stays Runnable: back in the queue
    }
}

/// A place where a spin-wait may loop (an atomic): every
/// [`SPINS_BEFORE_YIELD`]th passage without waiting yields, so a thread
/// spinning on a value another thread of its block sets lets that thread run.
pub(crate) fn spin_point() {
    let yield_now = with_block(|b| {
        let t = &mut b.threads[b.current];
        t.spins += 1;
        t.spins >= SPINS_BEFORE_YIELD
    });
    if yield_now == Some(true) {
        suspend_current();
    }
}

/// The watchdog's signal arrived on this OS thread: if an emulated thread
/// runs kernel code here (not a hook) and the watchdog asked for it, take
/// it off for good and return to the scheduler, which reports the stall.
/// Returns only when the signal was not for this thread.
///
/// # Safety
/// Must only be called from the watchdog's signal handler.
pub(super) unsafe fn take_off_stalled_thread() {
    let block = CURRENT.with(Cell::get);
    if block.is_null() || !thread::on_fiber() || thread::hook_running() {
        return;
    }
    // SAFETY: CURRENT is the running block and its fiber was interrupted in
    // kernel code (no reference to the block is live: not in a hook); the
    // scheduler is suspended in `resume`. The fiber is never resumed (its
    // stack, holding the signal frame, is dropped), as for `fail_thread`.
    unsafe {
        if !(*block).watch.asked_to_stop() {
            return;
        }
        let i = (*block).current;
        (&mut (*block).threads)[i].state = State::Stalled;
        thread::set_on_fiber(false);
        let mut dead = 0usize;
        fiber::switch(&mut dead, (*block).scheduler_rsp);
    }
    unreachable!("a stalled emulated thread was resumed")
}

/// A panic that cannot unwind reached `abort()` on this OS thread's running
/// emulated thread: end that thread with the panic `take_panic` gives for
/// its coordinates, as if it had unwound, and return to the scheduler for
/// good (`panic_capture.rs`). Returns only when there is no such thread.
///
/// # Safety
/// Must only be called from the `SIGABRT` handler, with an emulated thread
/// running kernel code (not a hook) on this OS thread.
pub(super) unsafe fn fail_after_abort(take_panic: fn((u32, u32, u32), (u32, u32, u32)) -> Option<HostPanic>) {
    let block = CURRENT.with(Cell::get);
    if block.is_null() {
        return;
    }
    // SAFETY: CURRENT is the running block and its fiber stopped in kernel
    // code inside `abort()` (no reference to the block is live: not in a
    // hook); the scheduler is suspended in `resume`. The fiber is never
    // resumed (its stack, holding the abandoned frames, is dropped), as for
    // `fail_thread`.
    unsafe {
        let b = &mut *block;
        let Some(panic) = take_panic(b.threads[b.current].tid, b.block_idx) else { return };
        b.thread_panicked(panic);
        eprintln!(
            "oxide emulator: the panic above could not unwind; the emulator does not abort but fails the launch, \
             as the GPU's trap does"
        );
        thread::set_on_fiber(false);
        let mut dead = 0usize;
        fiber::switch(&mut dead, b.scheduler_rsp);
    }
    unreachable!("an emulated thread that aborted was resumed")
}

/// A kernel access faulted in a guard page of a device allocation on this
/// OS thread's running emulated thread: end that thread, failing the
/// launch with an illegal address described by `what`, and return to the
/// scheduler for good (`memory_fault.rs`). Returns only outside a launch.
///
/// # Safety
/// Must only be called from the fault's signal handler, with an emulated
/// thread running kernel code (not a hook) on this OS thread.
pub(super) unsafe fn fail_after_memory_fault(what: String) {
    let block = CURRENT.with(Cell::get);
    if block.is_null() {
        return;
    }
    // SAFETY: as in `fail_after_abort`: the fiber stopped in kernel code,
    // the scheduler is suspended in `resume`, and the fiber is never resumed.
    unsafe {
        let b = &mut *block;
        let i = b.current;
        if b.fault.is_none() {
            b.fault = Some(Fault::IllegalAddress(format!(
                "emulator: thread {} of block {}: {what}",
                name(b.threads[i].tid),
                name(b.block_idx)
            )));
        }
        b.threads[i].state = State::Faulted;
        thread::set_on_fiber(false);
        let mut dead = 0usize;
        fiber::switch(&mut dead, b.scheduler_rsp);
    }
    unreachable!("an emulated thread that faulted was resumed")
}

/// Restores the OS thread's running block when `Block::run` ends, however
/// it ends: a dangling `CURRENT` would let a later hook reach a dead block.
struct CurrentBlock(*mut Block<'static, 'static>);

impl Drop for CurrentBlock {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
        thread::scheduler_resumed();
    }
}

impl<'l, 's> Block<'l, 's> {
    pub(super) fn new(
        launch: &'l LaunchState<'s>,
        block_idx: (u32, u32, u32),
        free_stacks: Vec<Stack>,
        watch: &'l WorkerWatch,
    ) -> Self {
        let (bx, by, bz) = launch.grid.block_dim;
        let n = (bx * by * bz) as usize;
        let threads = (0..n as u32).map(|i| Slot::new(i, launch.grid.block_dim)).collect();
        Block {
            launch,
            watch,
            block_idx,
            threads,
            current: 0,
            scheduler_rsp: 0,
            runnable: (0..n).collect(),
            at_barrier: 0,
            done: 0,
            warps: Warps::new(n),
            shared: SharedMemory::default(),
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

    /// The stacks to reuse once the block has run. Fibers of a failed block
    /// may be suspended mid-kernel: their stacks are dropped, never resumed
    /// (a GPU kernel that faults stops all its threads too).
    pub(super) fn into_stacks(mut self, succeeded: bool) -> Vec<Stack> {
        let mut stacks = std::mem::take(&mut self.free_stacks);
        for slot in &mut self.threads {
            match slot.stack.take() {
                Some(s) if succeeded => stacks.push(s),
                _ => {}
            }
        }
        stacks
    }

    pub(super) fn run(&mut self) -> Result<(), Fault> {
        let me: *mut Self = self;
        let _restore = CurrentBlock(CURRENT.with(|c| c.replace(me.cast())));
        self.watch.enter_block();
        // SAFETY: `me` is this block, alive for the call. The scheduler and
        // the fibers reach it only through `me` (CURRENT holds the same
        // pointer) and never keep a reference across a switch.
        let result = unsafe { Self::schedule(me) };
        self.watch.leave_block();
        result
    }

    /// # Safety
    /// `this` is the running block (see `run`).
    unsafe fn schedule(this: *mut Self) -> Result<(), Fault> {
        // SAFETY (every dereference below): `this` is valid (caller), and
        // each reference made from it ends before the next switch.
        let n = unsafe { (*this).threads.len() };
        while let Some(i) = unsafe { (*this).runnable.pop_front() } {
            if unsafe { (*this).launch.failed() } {
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
                State::Warp => b.complete_warp(i)?,
                State::Stalled => {
                    let waiting: Vec<usize> = b.runnable.iter().copied().collect();
                    return Err(deadlock::stalled(&b.threads, &waiting, i, b.block_idx));
                }
                State::Faulted => unreachable!("a faulted thread leaves a fault"),
                State::Runnable | State::NotStarted => b.runnable.push_back(i),
            }
        }
        let b = unsafe { &*this };
        if b.done == n {
            Ok(())
        } else {
            Err(deadlock::stuck(&b.threads, b.block_idx))
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
            b.threads[i].spins = 0;
            b.watch.switched(!b.runnable.is_empty() || b.launch.blocks_waiting());
            b.threads[i].rsp
        };
        // SAFETY: `this` is valid; thread i is suspended (or prepared) on its
        // own mapped stack and switches back to `scheduler_rsp` when it
        // finishes or waits.
        unsafe { fiber::switch(std::ptr::addr_of_mut!((*this).scheduler_rsp), to) };
        thread::scheduler_resumed();
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
        thread::set_on_fiber(false);
        let mut dead = 0usize;
        let to = self.scheduler_rsp;
        // SAFETY: as in `suspend_current`; this thread is never resumed.
        unsafe { fiber::switch(&mut dead, to) };
        unreachable!("a faulted emulated thread was resumed")
    }

    /// The current thread panicked: print the panic as the device's panic
    /// code does, and fail the launch with it (the first fault wins).
    fn thread_panicked(&mut self, panic: HostPanic) {
        // What the device's panic code prints (LowerPanics.cpp), to stdout like vprintf.
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{panic}");
            let _ = out.flush();
        }
        if self.fault.is_none() {
            self.fault = Some(Fault::Panic(panic));
        }
        let i = self.current;
        self.threads[i].state = State::Faulted;
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
        self.shared.next_epoch();
        self.runnable.extend(0..self.threads.len());
    }

    /// Thread `i` joined a warp collective: complete it if it can be.
    fn complete_warp(&mut self, i: usize) -> Result<(), Fault> {
        match self.warps.arrive(&mut self.threads, i) {
            Ok(released) => {
                self.runnable.extend(released);
                Ok(())
            }
            Err(what) => Err(Fault::Emulator(format!(
                "emulator: thread {} of block {}: {what}",
                name(self.threads[i].tid),
                name(self.block_idx)
            ))),
        }
    }

    /// The lanes of the current thread's warp that have not exited.
    pub(crate) fn active_mask(&self) -> u32 {
        warp::active_mask(&self.threads, self.current)
    }

    /// The block's copy of the shared static at `key` (`size` bytes), or of
    /// the dynamic shared memory.
    pub(crate) fn block_shared(&mut self, key: usize, size: usize, dynamic: bool) -> *mut u8 {
        let dynamic_bytes = dynamic.then_some(self.launch.grid.shared_mem_bytes as usize);
        self.shared.block_copy(key, size, dynamic_bytes)
    }

    /// Records an access through the SharedArray API; reports a race or an
    /// out-of-bounds access by ending the thread.
    pub(crate) fn shared_access(&mut self, address: usize, size: usize, write: bool) {
        let me = self.current as u32;
        let warps = &self.warps;
        let outcome = self.shared.access(address, size, write, me, |t| warps.generation_of(t));
        if let Err(fault) = outcome {
            let threads = &self.threads;
            let message = fault.describe(me, write, &name(self.block_idx), |t| name(threads[t as usize].tid));
            self.fail_thread(message);
        }
    }
}

/// The first frame of every emulated thread's fiber.
extern "C" fn thread_main() -> ! {
    thread::set_on_fiber(true);
    let block = CURRENT.with(Cell::get);
    // SAFETY: the scheduler passed its block, which outlives its fibers; it
    // is suspended in `resume` while this runs.
    let (kernel, params, thread, block_idx) = unsafe {
        let b = &*block;
        (*b.launch.kernel, b.launch.params, b.threads[b.current].tid, b.block_idx)
    };
    // SAFETY: the launch's contract: `params` suits `kernel`.
    let outcome = unsafe { panic_capture::run_kernel(&kernel, params, thread, block_idx) };
    // SAFETY: as above; no other reference to the block is live on this fiber.
    let b = unsafe { &mut *block };
    match outcome {
        Ok(()) => b.threads[b.current].state = State::Done,
        Err(panic) => b.thread_panicked(panic),
    }
    thread::set_on_fiber(false);
    let mut dead = 0usize;
    let to = b.scheduler_rsp;
    // SAFETY: the scheduler is suspended in `resume`; this fiber is finished
    // and never resumed (its stack is reused).
    unsafe { fiber::switch(&mut dead, to) };
    unreachable!("a finished emulated thread was resumed")
}
