//! Warp collectives: each call is a rendezvous of the lanes of its mask
//! (partial masks form independent groups), completed when the last of them
//! arrives, with the results PTX defines (`shfl.sync`'s clamp and segment
//! mask, votes, ballot, match, redux, elect).

use super::thread::{Arrival, Slot, State, WarpOp};

/// The warps of one block.
pub(super) struct Warps {
    /// Per warp: bumped at every completed collective and `sync_warp`.
    generation: Vec<u64>,
    /// Per warp: the lanes waiting in a collective.
    waiting: Vec<u32>,
}

impl Warps {
    pub(super) fn new(threads: usize) -> Warps {
        Warps { generation: vec![0; threads.div_ceil(32)], waiting: vec![0; threads.div_ceil(32)] }
    }

    /// How many collectives the warp of thread `t` has completed: two
    /// accesses of one warp with different generations are ordered.
    pub(super) fn generation_of(&self, t: u32) -> u64 {
        self.generation[t as usize / 32]
    }

    /// Thread `i` (in state `Warp`, with its arrival) joined a collective:
    /// completes it if every lane of its mask has joined it, and returns the
    /// lanes that may run again (their results set). An error says what is
    /// wrong with thread `i`'s call.
    pub(super) fn arrive(&mut self, threads: &mut [Slot], i: usize) -> Result<Vec<usize>, String> {
        let arrival = threads[i].arrival.expect("a thread in a warp op has an arrival");
        let (w, lane) = (i / 32, i % 32);
        let group = arrival.mask & lanes_of(threads.len(), w);
        if group & (1 << lane) == 0 {
            return Err(format!(
                "{} called with mask {:#010x}, which does not include the calling lane {lane}; \
                 every lane that calls a warp collective must be in its mask",
                arrival.op.name(),
                arrival.mask
            ));
        }
        self.waiting[w] |= 1 << lane;
        if group & !self.waiting[w] != 0 {
            return Ok(Vec::new()); // not everyone is here yet
        }
        let base = w * 32;
        let mut lanes = Vec::with_capacity(32);
        for l in 0..32 {
            if group & (1 << l) == 0 {
                continue;
            }
            let t = &threads[base + l];
            match (t.state, t.arrival) {
                (State::Warp, Some(a)) if a.mask == arrival.mask => {
                    if a.op != arrival.op {
                        return Err(format!(
                            "lanes of warp {w} meet with mask {:#010x} in different collectives \
                             (lane {l}: {}, lane {lane}: {}); they must all call the same one",
                            arrival.mask,
                            a.op.name(),
                            arrival.op.name()
                        ));
                    }
                    lanes.push((l, a));
                }
                _ => return Ok(Vec::new()), // not everyone is here yet
            }
        }
        let results = warp_results(&lanes, group);
        self.waiting[w] &= !group;
        let mut released = Vec::with_capacity(lanes.len());
        for (l, r) in lanes.iter().map(|(l, _)| *l).zip(results) {
            let t = &mut threads[base + l];
            t.result = r;
            t.arrival = None;
            t.state = State::Runnable;
            released.push(base + l);
        }
        self.generation[w] += 1;
        Ok(released)
    }
}

/// The lanes of warp `w` that exist in a block of `threads` threads.
pub(super) fn lanes_of(threads: usize, w: usize) -> u32 {
    let n = threads - w * 32;
    if n >= 32 {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

/// The lanes of thread `current`'s warp that have not exited.
pub(super) fn active_mask(threads: &[Slot], current: usize) -> u32 {
    let w = current / 32;
    (0..32)
        .filter(|l| w * 32 + l < threads.len() && threads[w * 32 + l].state != State::Done)
        .fold(0, |m, l| m | 1 << l)
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
            // The leader's lane, and at bit 32 whether it is this one.
            WarpOp::Elect => lanes[0].0 as u64 | ((lane == lanes[0].0) as u64) << 32,
        })
        .collect()
}
