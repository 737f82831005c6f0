//! An emulated thread: its record in the block ([`Slot`]), and what runs on
//! this OS thread now (an emulated thread's code, a hook's critical part, or
//! the scheduler).

use std::cell::Cell;

use super::fiber::Stack;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    NotStarted,
    Runnable,
    Barrier,
    Warp,
    Done,
    Faulted,
    /// Taken off its OS thread by the watchdog: it ran too long without
    /// waiting while other threads waited for their turn.
    Stalled,
}

/// The barrier reduction a thread asked for (`sync_threads_count/and/or`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BarrierKind {
    Plain,
    Count,
    And,
    Or,
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
    pub(super) fn name(self) -> &'static str {
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

/// One emulated thread of a block.
pub(crate) struct Slot {
    /// Its saved stack pointer while suspended.
    pub rsp: usize,
    pub state: State,
    pub(super) stack: Option<Stack>,
    pub tid: (u32, u32, u32),
    pub linear: u32,
    /// The result of the last barrier reduction or warp collective.
    pub result: u64,
    pub predicate: bool,
    pub barrier_kind: BarrierKind,
    pub arrival: Option<Arrival>,
    /// Spin points passed since the thread last waited.
    pub(super) spins: u32,
}

impl Slot {
    /// Thread `linear` of a block of `block_dim`, not started.
    pub(super) fn new(linear: u32, block_dim: (u32, u32, u32)) -> Slot {
        let (bx, by, _) = block_dim;
        Slot {
            rsp: 0,
            state: State::NotStarted,
            stack: None,
            tid: (linear % bx, (linear / bx) % by, linear / (bx * by)),
            linear,
            result: 0,
            predicate: false,
            barrier_kind: BarrierKind::Plain,
            arrival: None,
            spins: 0,
        }
    }
}

/// Coordinates as reports give them: `(x, y, z)`.
pub(super) fn name((x, y, z): (u32, u32, u32)) -> String {
    format!("({x}, {y}, {z})")
}

/// Up to four threads of `v` (indices into `threads`) by coordinates, and
/// how many more.
pub(super) fn list(threads: &[Slot], v: &[usize]) -> String {
    let shown: Vec<String> = v.iter().take(4).map(|&i| name(threads[i].tid)).collect();
    let more = if v.len() > 4 { format!(" and {} more", v.len() - 4) } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

thread_local! {
    /// Set exactly while an emulated thread (kernel code or a hook it
    /// called) runs on this OS thread; the fibers set and clear it at every
    /// switch, so the scheduler never runs with it set.
    static ON_FIBER: Cell<bool> = const { Cell::new(false) };
    /// Set while a hook works on the block or holds a lock (`in_hook`): the
    /// watchdog never takes a thread away there.
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
}

/// Whether an emulated thread runs on this OS thread now. Reads one
/// thread-local: safe in a signal handler.
pub(super) fn on_fiber() -> bool {
    ON_FIBER.with(Cell::get)
}

/// Says whether an emulated thread runs on this OS thread from now on.
pub(super) fn set_on_fiber(on: bool) {
    ON_FIBER.with(|f| f.set(on));
}

/// Whether a hook's critical part runs now (safe in a signal handler).
pub(super) fn hook_running() -> bool {
    IN_HOOK.with(Cell::get)
}

/// The scheduler has control: no hook runs (one that ended its thread from
/// inside never cleared its mark).
pub(super) fn scheduler_resumed() {
    set_on_fiber(false);
    IN_HOOK.with(|h| h.set(false));
}

/// Runs `f` as a hook's critical part: the watchdog leaves the thread alone
/// meanwhile (it may hold a lock or a reference to the block).
pub(crate) fn in_hook<R>(f: impl FnOnce() -> R) -> R {
    let _restore = HookMark(IN_HOOK.with(|h| h.replace(true)));
    f()
}

/// Restores the "in a hook" mark when a hook's critical part ends, also by
/// unwinding (a hook that panics, caught by the thread's `catch_unwind`).
struct HookMark(bool);

impl Drop for HookMark {
    fn drop(&mut self) {
        IN_HOOK.with(|h| h.set(self.0));
    }
}
