//! What a block that cannot finish is told: who waits for whom.
//!
//! Two ways to get stuck. Nothing can run although threads still wait
//! (a barrier some thread never reaches, a warp collective some lane never
//! joins): the scheduler sees it at once ([`stuck`]). Or one thread runs on
//! without ever waiting while others wait for their turn (a spin on a
//! `core::sync::atomic` flag, which the host-code engine cannot switch out
//! of): the watchdog takes it off ([`stalled`]).

use super::kernel::Fault;
use super::thread::{list, name, Slot, State};
use super::warp::lanes_of;
use super::watchdog;

/// The threads in state `s`.
fn in_state(threads: &[Slot], s: State) -> Vec<usize> {
    (0..threads.len()).filter(|&i| threads[i].state == s).collect()
}

/// Nothing can run in `block` but not every thread has finished: say why.
pub(super) fn stuck(threads: &[Slot], block: (u32, u32, u32)) -> Fault {
    let (barrier, warp, done) = (in_state(threads, State::Barrier), in_state(threads, State::Warp), in_state(threads, State::Done));
    let b = name(block);
    if !barrier.is_empty() && warp.is_empty() {
        return Fault::Emulator(format!(
            "emulator: barrier divergence in block {b}: {} thread(s) wait at sync_threads (threads {}) \
             but {} exited without reaching it (threads {}); on the GPU this hangs or corrupts the barrier. \
             Every thread of a block must reach every sync_threads (no early `return` before a barrier).",
            barrier.len(),
            list(threads, &barrier),
            done.len(),
            list(threads, &done)
        ));
    }
    let Some(&first) = warp.first() else {
        return Fault::Emulator(format!("emulator: block {b} stopped with threads neither done nor waiting"));
    };
    let a = threads[first].arrival.expect("waiting lanes have arrivals");
    let w = first / 32;
    let missing: Vec<String> = (0..32usize)
        .filter(|l| a.mask & lanes_of(threads.len(), w) & (1 << l) != 0)
        .filter_map(|l| {
            let t = &threads[w * 32 + l];
            match (t.state, t.arrival) {
                (State::Warp, Some(o)) if o.mask == a.mask => None,
                (State::Done, _) => Some(format!("lane {l} exited")),
                (State::Barrier, _) => Some(format!("lane {l} waits at sync_threads")),
                (State::Warp, Some(o)) => Some(format!("lane {l} waits in {} with mask {:#010x}", o.op.name(), o.mask)),
                _ => Some(format!("lane {l} never arrived")),
            }
        })
        .collect();
    Fault::Emulator(format!(
        "emulator: warp divergence in block {b}: lanes of warp {w} wait in {} with mask {:#010x} \
         (thread {} first), but {}. Every lane named in the mask must call the same collective with the same mask.",
        a.op.name(),
        a.mask,
        name(threads[first].tid),
        missing.join(", ")
    ))
}

/// Thread `i` of `block` was taken off by the watchdog: it ran for the
/// watchdog's limit without waiting while `waiting` (threads of the block)
/// waited for their turn.
pub(super) fn stalled(threads: &[Slot], waiting: &[usize], i: usize, block: (u32, u32, u32)) -> Fault {
    let mut waiting: Vec<usize> = waiting.iter().copied().filter(|&t| t != i).collect();
    waiting.sort_unstable();
    let (barrier, warp) = (in_state(threads, State::Barrier), in_state(threads, State::Warp));
    let mut others = Vec::new();
    if !waiting.is_empty() {
        others.push(format!("threads {} wait for their turn", list(threads, &waiting)));
    }
    if !barrier.is_empty() {
        others.push(format!("threads {} wait at sync_threads", list(threads, &barrier)));
    }
    if !warp.is_empty() {
        others.push(format!("threads {} wait in a warp collective", list(threads, &warp)));
    }
    if others.is_empty() {
        others.push("blocks that have not started yet wait for its worker".to_string());
    }
    Fault::Emulator(format!(
        "emulator: deadlock in block {}: thread {} ran for {} without waiting (no barrier, warp collective, \
         cuda_device atomic or nanosleep), while {}. It most likely spins on a value another thread sets \
         (`while flag.load(Acquire) == 0 {{}}` on a core::sync::atomic): legal on the GPU, but the host-code \
         emulator switches threads only where they wait. Wait through cuda_device's atomics (`load_scoped`, \
         which lets the other threads run) or put `thread::nanosleep` in the loop; or, where this build has the \
         device-code mode, run the kernel's PTX (OXIDE_EMULATE=ptx). If the thread was computing, not waiting, raise {} (seconds; \
         0 turns the watchdog off).",
        name(block),
        name(threads[i].tid),
        watchdog::describe_limit(),
        others.join("; "),
        watchdog::ENV
    ))
}
