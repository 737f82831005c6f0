//! Block and warp collectives: rendezvous of the threads that take part.
//!
//! It owns what happens when a thread reaches an [`Op::Collective`]:
//! - block barriers (`bar`/`barrier` `.sync .arrive .red`, ids 0..15, with or
//!   without a thread count): a thread waits for the non-exited threads of
//!   its warp, then its warp counts as arrived; the barrier completes when
//!   every warp with non-exited threads has arrived (or, with a count, when
//!   that many threads' warps have). Threads may reach a barrier from
//!   different instructions (non-`.aligned` `barrier.sync`). An `.aligned`
//!   barrier (`bar.sync`, `barrier.sync.aligned`) is a promise that every
//!   lane of a warp executes that one instruction: lanes of one warp that
//!   reach a barrier from two instructions, one of them aligned, fault
//!   (on the GPU the warp would be counted twice or never: undefined).
//!   Different warps may still use different instructions (a producer's
//!   `bar.arrive` and a consumer's `bar.sync`), as the PTX ISA allows.
//! - warp collectives (`shfl vote match redux elect bar.warp.sync ldmatrix
//!   stmatrix` `.sync`): each lane waits until every non-exited lane of its
//!   member mask waits at a collective of the same kind with the same mask;
//!   lanes with disjoint masks form independent groups. A lane whose own
//!   bit is not in the mask it passes faults (undefined in the PTX ISA).
//! - `activemask`: the lanes of the warp that reached the same instruction
//!   in the same scheduling round.
//! - the cluster barrier (`barrier.cluster.arrive/wait`).
//!
//! A thread exiting can complete a barrier or a group, so exits are
//! reported here too.

use crate::exec::{load, store, MemView, Thread, ThreadState};
use crate::fault::{Fault, StuckThread, ThreadRef};
use crate::int::sext;
use crate::launch::Ctx;
use crate::program::*;
use crate::scheduler::{BlockState, ClusterState};

/// A lane waiting at a warp collective.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    key: u32,
    mask: u32,
}

/// Per warp.
#[derive(Clone, Debug)]
pub(crate) struct WarpState {
    pending: [Option<Pending>; 32],
    /// Lanes waiting in `activemask`.
    soft: u32,
    /// Lanes that have not exited.
    pub live: u32,
}

impl WarpState {
    pub(crate) fn new(present: u32) -> WarpState {
        WarpState {
            pending: [None; 32],
            soft: 0,
            live: present,
        }
    }
}

/// One of a block's 16 barriers.
#[derive(Clone, Debug, Default)]
pub(crate) struct BarrierState {
    /// Lanes arrived, per warp.
    arrived: Vec<u32>,
    /// Per warp, the instruction (function, pc) its first lane arrived
    /// from in this phase and whether that instruction is aligned.
    arrived_at: Vec<Option<(u32, u32, bool)>>,
    counted: Vec<bool>,
    count: u32,
    expected: Option<u32>,
    popc: u32,
    all: bool,
    any: bool,
    sync_waiters: Vec<u32>,
    arrive_waiters: Vec<u32>,
    active: bool,
}

impl BarrierState {
    fn reset(&mut self, warps: usize) {
        self.arrived.clear();
        self.arrived.resize(warps, 0);
        self.arrived_at.clear();
        self.arrived_at.resize(warps, None);
        self.counted.clear();
        self.counted.resize(warps, false);
        self.count = 0;
        self.expected = None;
        self.popc = 0;
        self.all = true;
        self.any = false;
        self.sync_waiters.clear();
        self.arrive_waiters.clear();
        self.active = false;
    }
}

/// The collective a blocked thread waits at.
pub(crate) fn collective_of<'a>(ctx: &'a Ctx, th: &Thread) -> Option<&'a Collective> {
    let f = &ctx.module.functions[th.func as usize];
    match f.code.get(th.pc as usize).map(|i| &i.op) {
        Some(Op::Collective { index }) => f.collectives.get(*index as usize),
        _ => None,
    }
}

fn release(th: &mut Thread) {
    th.pc += 1;
    th.state = ThreadState::Runnable;
}

fn thread_ref(blk: &BlockState, t: usize) -> ThreadRef {
    let b = blk.info.ctaid;
    let tid = blk.threads[t].tid;
    ThreadRef {
        block: (b[0], b[1], b[2]),
        thread: (tid[0], tid[1], tid[2]),
    }
}

fn exec_fault(ctx: &Ctx, blk: &BlockState, t: usize, reason: String) -> Fault {
    let th = &blk.threads[t];
    Fault::ExecutionError {
        kernel: ctx.kernel_name.to_string(),
        thread: thread_ref(blk, t),
        at: ctx.location(th.func, th.pc),
        reason,
    }
}

/// A thread has reached collective `index` of its function.
pub(crate) fn arrive(
    ctx: &Ctx,
    cl: &mut ClusterState,
    b: usize,
    t: usize,
    index: u32,
) -> Result<(), Fault> {
    let th = &cl.blocks[b].threads[t];
    let coll = ctx.module.functions[th.func as usize].collectives[index as usize].clone();
    let lane = t % 32;
    let w = t / 32;
    match coll {
        Collective::Barrier {
            kind,
            aligned,
            id,
            count,
            pred,
            pred_neg,
            ..
        } => {
            let blk = &mut cl.blocks[b];
            let id_v = blk.threads[t].reg(id);
            if id_v >= 16 {
                return Err(exec_fault(
                    ctx,
                    blk,
                    t,
                    format!("barrier {id_v} does not exist (ids are 0..15)"),
                ));
            }
            let count_v = count.map(|c| blk.threads[t].reg(c) as u32);
            let p = (blk.threads[t].reg(pred) != 0) != pred_neg;
            let nwarps = blk.warps.len();
            let bar = &mut blk.barriers[id_v as usize];
            if !bar.active {
                bar.reset(nwarps);
                bar.active = true;
            }
            if bar.arrived[w] & (1 << lane) != 0 {
                return Err(exec_fault(
                    ctx,
                    blk,
                    t,
                    format!("arrived at barrier {id_v} twice before it completed"),
                ));
            }
            let here = (blk.threads[t].func, blk.threads[t].pc);
            match bar.arrived_at[w] {
                None => bar.arrived_at[w] = Some((here.0, here.1, aligned)),
                Some((func, pc, first_aligned)) if (func, pc) != here && (aligned || first_aligned) => {
                    let other = ctx.location(func, pc);
                    return Err(exec_fault(
                        ctx,
                        blk,
                        t,
                        format!(
                            "reached barrier {id_v} while lanes of its warp wait at it from another instruction, \
                             {other}; an aligned barrier (`bar`, `barrier.*.aligned`) must be executed by every lane \
                             of the warp at the same instruction (undefined on the GPU: the warp can be counted \
                             twice or hang). A compiler that made it aligned proved the branches above it uniform \
                             wrongly; code written by hand wants `barrier.sync` here"
                        ),
                    ));
                }
                Some(_) => {}
            }
            bar.arrived[w] |= 1 << lane;
            if let Some(c) = count_v {
                bar.expected = Some(c);
            }
            bar.popc += p as u32;
            bar.all &= p;
            bar.any |= p;
            if kind == BarKind::Arrive {
                bar.arrive_waiters.push(t as u32);
            } else {
                bar.sync_waiters.push(t as u32);
            }
            blk.threads[t].state = ThreadState::Blocked;
            check_barrier(ctx, blk, id_v as usize);
        }
        Collective::ClusterArrive => {
            let phase = cl.cluster_phase;
            let th = &mut cl.blocks[b].threads[t];
            if th.cluster_arrival != phase + 1 {
                th.cluster_arrival = phase + 1;
                cl.cluster_arrived += 1;
            }
            release(&mut cl.blocks[b].threads[t]);
            check_cluster(ctx, cl);
        }
        Collective::ClusterWait => {
            let phase = cl.cluster_phase;
            let th = &mut cl.blocks[b].threads[t];
            if th.cluster_arrival == 0 {
                // A wait without an arrive arrives first.
                th.cluster_arrival = phase + 1;
                cl.cluster_arrived += 1;
            }
            let th = &mut cl.blocks[b].threads[t];
            if th.cluster_arrival <= cl.cluster_phase {
                th.cluster_arrival = 0;
                release(th);
            } else {
                th.state = ThreadState::Blocked;
                check_cluster(ctx, cl);
            }
        }
        Collective::Activemask { .. } => {
            let blk = &mut cl.blocks[b];
            blk.warps[w].soft |= 1 << lane;
            blk.threads[t].state = ThreadState::Blocked;
        }
        _ => {
            let blk = &mut cl.blocks[b];
            let mask = match &coll {
                Collective::WarpSync { mask }
                | Collective::Shfl { mask, .. }
                | Collective::Vote { mask, .. }
                | Collective::Match { mask, .. }
                | Collective::Redux { mask, .. }
                | Collective::Elect { mask, .. } => blk.threads[t].reg(*mask) as u32,
                // .sync.aligned over the whole warp.
                _ => blk.warps[w].live,
            };
            if mask & 1 << lane == 0 {
                return Err(exec_fault(
                    ctx,
                    blk,
                    t,
                    format!(
                        "lane {lane} executes a warp collective whose member mask {mask:#010x} leaves it out; \
                         the PTX ISA leaves that undefined (on the GPU it can hang or read another group's values): \
                         a lane outside the mask must not make the call"
                    ),
                ));
            }
            blk.warps[w].pending[lane] = Some(Pending {
                key: coll.kind_key(),
                mask,
            });
            blk.threads[t].state = ThreadState::Blocked;
            try_warp(ctx, cl, b, w, lane)?;
        }
    }
    Ok(())
}

/// Completes the barrier if every participating warp has arrived.
fn check_barrier(ctx: &Ctx, blk: &mut BlockState, id: usize) {
    let nwarps = blk.warps.len();
    let bar = &mut blk.barriers[id];
    if !bar.active {
        return;
    }
    for w in 0..nwarps {
        let live = blk.warps[w].live;
        if !bar.counted[w] && bar.arrived[w] != 0 && bar.arrived[w] & live == live {
            bar.counted[w] = true;
            bar.count += 1;
            let waiters = std::mem::take(&mut bar.arrive_waiters);
            let (mine, others): (Vec<u32>, Vec<u32>) =
                waiters.into_iter().partition(|&t| t as usize / 32 == w);
            bar.arrive_waiters = others;
            for t in mine {
                release(&mut blk.threads[t as usize]);
            }
        }
    }
    let complete = match bar.expected {
        Some(n) => bar.count * 32 >= n,
        None => (0..nwarps).all(|w| blk.warps[w].live == 0 || bar.counted[w]),
    };
    if !complete {
        return;
    }
    let (popc, all, any) = (bar.popc, bar.all, bar.any);
    let sync = std::mem::take(&mut bar.sync_waiters);
    let arrive = std::mem::take(&mut bar.arrive_waiters);
    bar.reset(nwarps);
    for t in sync {
        let th = &mut blk.threads[t as usize];
        if let Some(Collective::Barrier { kind, d, .. }) = collective_of(ctx, th).cloned() {
            match kind {
                BarKind::RedPopc => th.set_reg(d, popc as u64),
                BarKind::RedAnd => th.set_reg(d, all as u64),
                BarKind::RedOr => th.set_reg(d, any as u64),
                _ => {}
            }
        }
        release(th);
    }
    for t in arrive {
        release(&mut blk.threads[t as usize]);
    }
}

fn check_cluster(ctx: &Ctx, cl: &mut ClusterState) {
    let live: u32 = cl.blocks.iter().map(|b| b.live).sum();
    if cl.cluster_arrived < live || live == 0 {
        return;
    }
    cl.cluster_phase += 1;
    cl.cluster_arrived = 0;
    let phase = cl.cluster_phase;
    for blk in &mut cl.blocks {
        for th in &mut blk.threads {
            if th.state == ThreadState::Blocked
                && th.cluster_arrival != 0
                && th.cluster_arrival <= phase
            {
                if let Some(Collective::ClusterWait) = collective_of(ctx, th) {
                    th.cluster_arrival = 0;
                    release(th);
                }
            }
        }
    }
}

/// Completes the warp group `lane` waits in, if every member is there.
fn try_warp(
    ctx: &Ctx,
    cl: &mut ClusterState,
    b: usize,
    w: usize,
    lane: usize,
) -> Result<(), Fault> {
    let ws = &cl.blocks[b].warps[w];
    let Some(me) = ws.pending[lane] else {
        return Ok(());
    };
    let members = me.mask & ws.live;
    for j in 0..32 {
        if members & (1 << j) != 0 {
            match ws.pending[j] {
                Some(p) if p.key == me.key && p.mask == me.mask => {}
                _ => return Ok(()),
            }
        }
    }
    {
        let ws = &mut cl.blocks[b].warps[w];
        for j in 0..32 {
            if members & (1 << j) != 0 {
                ws.pending[j] = None;
            }
        }
    }
    perform(ctx, cl, b, w, members)
}

/// Carries out a complete warp collective for the lanes in `members`.
fn perform(
    ctx: &Ctx,
    cl: &mut ClusterState,
    b: usize,
    w: usize,
    members: u32,
) -> Result<(), Fault> {
    let lanes: Vec<usize> = (0..32).filter(|j| members & (1 << j) != 0).collect();
    let tidx = |j: usize| w * 32 + j;
    let colls: Vec<Collective> = {
        let blk = &cl.blocks[b];
        lanes
            .iter()
            .map(|&j| {
                collective_of(ctx, &blk.threads[tidx(j)])
                    .cloned()
                    .unwrap_or(Collective::WarpSync { mask: 0 })
            })
            .collect()
    };
    let reg = |cl: &ClusterState, j: usize, s: Slot| cl.blocks[b].threads[tidx(j)].reg(s);
    let mut writes: Vec<(usize, Slot, u64)> = Vec::new();
    match &colls[0] {
        Collective::WarpSync { .. } => {}
        Collective::Shfl { mode, .. } => {
            let mut a_of = [0u64; 32];
            for (k, &j) in lanes.iter().enumerate() {
                if let Collective::Shfl { a, .. } = colls[k] {
                    a_of[j] = reg(cl, j, a) & 0xffff_ffff;
                }
            }
            for (k, &j) in lanes.iter().enumerate() {
                let Collective::Shfl { d, p, b: bs, c, .. } = colls[k] else {
                    continue;
                };
                let bval = reg(cl, j, bs) as u32 & 31;
                let cv = reg(cl, j, c) as u32;
                let cval = cv & 31;
                let segmask = (cv >> 8) & 31;
                let lane = j as u32;
                let max_lane = (lane & segmask) | (cval & !segmask);
                let min_lane = lane & segmask;
                let (src, ok) = match mode {
                    ShflMode::Up => {
                        let s = lane as i32 - bval as i32;
                        (s, s >= max_lane as i32)
                    }
                    ShflMode::Down => {
                        let s = lane + bval;
                        (s as i32, s <= max_lane)
                    }
                    ShflMode::Bfly => {
                        let s = lane ^ bval;
                        (s as i32, s <= max_lane)
                    }
                    ShflMode::Idx => {
                        let s = min_lane | (bval & !segmask);
                        (s as i32, s <= max_lane)
                    }
                };
                let src = if ok { src as usize } else { j };
                // A source lane outside the group (exited, or not in the
                // mask) has no defined value; the lane keeps its own.
                let v = if members & (1 << src) != 0 {
                    a_of[src]
                } else {
                    a_of[j]
                };
                writes.push((j, d, v));
                writes.push((j, p, ok as u64));
            }
        }
        Collective::Vote { mode, .. } => {
            let mut ballot = 0u32;
            for (k, &j) in lanes.iter().enumerate() {
                if let Collective::Vote { a, a_neg, .. } = colls[k] {
                    if (reg(cl, j, a) != 0) != a_neg {
                        ballot |= 1 << j;
                    }
                }
            }
            let result = match mode {
                VoteMode::All => (ballot == members) as u64,
                VoteMode::Any => (ballot != 0) as u64,
                VoteMode::Uni => (ballot == 0 || ballot == members) as u64,
                VoteMode::Ballot => ballot as u64,
            };
            for (k, &j) in lanes.iter().enumerate() {
                if let Collective::Vote { d, .. } = colls[k] {
                    writes.push((j, d, result));
                }
            }
        }
        Collective::Match { all, .. } => {
            let vals: Vec<u64> = lanes
                .iter()
                .enumerate()
                .map(|(k, &j)| {
                    if let Collective::Match { a, .. } = colls[k] {
                        reg(cl, j, a)
                    } else {
                        0
                    }
                })
                .collect();
            let same = vals.iter().all(|&v| v == vals[0]);
            for (k, &j) in lanes.iter().enumerate() {
                let Collective::Match { d, p, .. } = colls[k] else {
                    continue;
                };
                if *all {
                    writes.push((j, d, if same { members as u64 } else { 0 }));
                    writes.push((j, p, same as u64));
                } else {
                    let m = lanes
                        .iter()
                        .zip(&vals)
                        .filter(|(_, &v)| v == vals[k])
                        .fold(0u64, |m, (&l, _)| m | 1 << l);
                    writes.push((j, d, m));
                }
            }
        }
        Collective::Redux { op, .. } => {
            let vals: Vec<u64> = lanes
                .iter()
                .enumerate()
                .map(|(k, &j)| {
                    if let Collective::Redux { a, .. } = colls[k] {
                        reg(cl, j, a) & 0xffff_ffff
                    } else {
                        0
                    }
                })
                .collect();
            let r = match op {
                ReduxOp::Add => vals.iter().fold(0u64, |s, &v| s.wrapping_add(v)) & 0xffff_ffff,
                ReduxOp::MinU => vals.iter().copied().min().unwrap_or(0),
                ReduxOp::MaxU => vals.iter().copied().max().unwrap_or(0),
                ReduxOp::MinS => {
                    vals.iter().map(|&v| sext(v, 32)).min().unwrap_or(0) as u64 & 0xffff_ffff
                }
                ReduxOp::MaxS => {
                    vals.iter().map(|&v| sext(v, 32)).max().unwrap_or(0) as u64 & 0xffff_ffff
                }
                ReduxOp::And => vals.iter().fold(0xffff_ffff, |s, &v| s & v),
                ReduxOp::Or => vals.iter().fold(0, |s, &v| s | v),
                ReduxOp::Xor => vals.iter().fold(0, |s, &v| s ^ v),
            };
            for (k, &j) in lanes.iter().enumerate() {
                if let Collective::Redux { d, .. } = colls[k] {
                    writes.push((j, d, r));
                }
            }
        }
        Collective::Elect { .. } => {
            let leader = lanes[0];
            for (k, &j) in lanes.iter().enumerate() {
                if let Collective::Elect { d, p, .. } = colls[k] {
                    writes.push((j, d, leader as u64));
                    writes.push((j, p, (j == leader) as u64));
                }
            }
        }
        Collective::Ldmatrix { n, trans, .. } => {
            let n = *n as usize;
            let mut rows = [0u64; 32];
            for (k, &j) in lanes.iter().enumerate() {
                if let Collective::Ldmatrix { addr, off, .. } = colls[k] {
                    rows[j] = reg(cl, j, addr).wrapping_add(off as u64);
                }
            }
            let space = if let Collective::Ldmatrix { space, .. } = colls[0] {
                space
            } else {
                MemSpace::Shared
            };
            for (k, &j) in lanes.iter().enumerate() {
                let Collective::Ldmatrix { d, .. } = colls[k] else {
                    continue;
                };
                for (i, &di) in d.iter().enumerate().take(n) {
                    let (r, c) = (j / 4, 2 * (j % 4));
                    let mut v = 0u64;
                    for e in 0..2 {
                        let (row, col) = if *trans { (c + e, r) } else { (r, c + e) };
                        let at = rows[8 * i + row] + 2 * col as u64;
                        let h = matrix_load(ctx, cl, b, tidx(j), space, at)?;
                        v |= h << (16 * e);
                    }
                    writes.push((j, di, v));
                }
            }
        }
        Collective::Stmatrix { n, trans, .. } => {
            let n = *n as usize;
            let mut rows = [0u64; 32];
            let mut vals = [[0u64; 4]; 32];
            for (k, &j) in lanes.iter().enumerate() {
                if let Collective::Stmatrix { addr, off, s, .. } = colls[k] {
                    rows[j] = reg(cl, j, addr).wrapping_add(off as u64);
                    for i in 0..n {
                        vals[j][i] = reg(cl, j, s[i]);
                    }
                }
            }
            let space = if let Collective::Stmatrix { space, .. } = colls[0] {
                space
            } else {
                MemSpace::Shared
            };
            for &j in &lanes {
                for i in 0..n {
                    let (r, c) = (j / 4, 2 * (j % 4));
                    for e in 0..2 {
                        let (row, col) = if *trans { (c + e, r) } else { (r, c + e) };
                        let at = rows[8 * i + row] + 2 * col as u64;
                        let h = (vals[j][i] >> (16 * e)) & 0xffff;
                        matrix_store(ctx, cl, b, tidx(j), space, at, h)?;
                    }
                }
            }
        }
        _ => {}
    }
    let blk = &mut cl.blocks[b];
    for (j, s, v) in writes {
        blk.threads[tidx(j)].set_reg(s, v);
    }
    for &j in &lanes {
        release(&mut blk.threads[tidx(j)]);
    }
    Ok(())
}

fn mem_fault(ctx: &Ctx, blk: &BlockState, t: usize, e: crate::exec::ExecError) -> Fault {
    crate::scheduler::fault_of(ctx, blk, t, e)
}

fn matrix_load(
    ctx: &Ctx,
    cl: &mut ClusterState,
    b: usize,
    t: usize,
    space: MemSpace,
    at: u64,
) -> Result<u64, Fault> {
    let ClusterState { blocks, shared, .. } = cl;
    let th = &blocks[b].threads[t];
    let view = MemView {
        shared: shared.as_mut_slice(),
        rank: b,
    };
    if !at.is_multiple_of(2) {
        return Err(mem_fault(
            ctx,
            &blocks[b],
            t,
            crate::exec::ExecError::Misaligned {
                addr: at,
                size: 2,
                space,
            },
        ));
    }
    load(
        ctx,
        &view,
        &th.local,
        th.local_top(),
        space,
        at,
        2,
        Order::Relaxed,
    )
    .map_err(|e| mem_fault(ctx, &blocks[b], t, e))
}

fn matrix_store(
    ctx: &Ctx,
    cl: &mut ClusterState,
    b: usize,
    t: usize,
    space: MemSpace,
    at: u64,
    v: u64,
) -> Result<(), Fault> {
    let ClusterState { blocks, shared, .. } = cl;
    if !at.is_multiple_of(2) {
        return Err(mem_fault(
            ctx,
            &blocks[b],
            t,
            crate::exec::ExecError::Misaligned {
                addr: at,
                size: 2,
                space,
            },
        ));
    }
    let blk = &mut blocks[b];
    let th = &mut blk.threads[t];
    let ltop = th.local_top();
    let mut view = MemView {
        shared: shared.as_mut_slice(),
        rank: b,
    };
    let r = store(
        ctx,
        &mut view,
        &mut th.local,
        ltop,
        space,
        at,
        2,
        v,
        Order::Relaxed,
    );
    r.map_err(|e| mem_fault(ctx, &blocks[b], t, e))
}

/// A thread has exited: barriers and groups that waited only for it may
/// now be complete.
pub(crate) fn exited(ctx: &Ctx, cl: &mut ClusterState, b: usize, t: usize) -> Result<(), Fault> {
    let (w, lane) = (t / 32, t % 32);
    {
        let blk = &mut cl.blocks[b];
        blk.warps[w].live &= !(1 << lane);
        blk.live -= 1;
        for id in 0..blk.barriers.len() {
            if blk.barriers[id].active {
                check_barrier(ctx, blk, id);
            }
        }
    }
    let phase = cl.cluster_phase;
    if cl.blocks[b].threads[t].cluster_arrival == phase + 1 {
        cl.cluster_arrived -= 1;
    }
    if cl.cluster_arrived > 0 {
        check_cluster(ctx, cl);
    }
    if cl.blocks[b].warps[w].pending.iter().any(Option::is_some) {
        for j in 0..32 {
            if cl.blocks[b].warps[w].pending[j].is_some() {
                try_warp(ctx, cl, b, w, j)?;
            }
        }
    }
    Ok(())
}

/// End of a round: each group of lanes waiting in `activemask` at the same
/// place gets its mask. Returns whether any thread was released.
pub(crate) fn resolve_activemask(ctx: &Ctx, cl: &mut ClusterState) -> bool {
    let mut any = false;
    for blk in &mut cl.blocks {
        for w in 0..blk.warps.len() {
            let soft = std::mem::take(&mut blk.warps[w].soft);
            if soft == 0 {
                continue;
            }
            any = true;
            let mut left = soft;
            while left != 0 {
                let first = left.trailing_zeros() as usize;
                let key = |th: &Thread| (th.func, th.pc, th.depth());
                let k0 = key(&blk.threads[w * 32 + first]);
                let group = (0..32)
                    .filter(|&j| left & (1 << j) != 0 && key(&blk.threads[w * 32 + j]) == k0)
                    .fold(0u32, |m, j| m | 1 << j);
                left &= !group;
                for j in 0..32 {
                    if group & (1 << j) != 0 {
                        let th = &mut blk.threads[w * 32 + j];
                        if let Some(Collective::Activemask { d }) = collective_of(ctx, th).cloned()
                        {
                            th.set_reg(d, group as u64);
                        }
                        release(th);
                    }
                }
            }
        }
    }
    any
}

/// What a blocked thread waits for, in words.
pub(crate) fn describe_wait(ctx: &Ctx, th: &Thread) -> String {
    match collective_of(ctx, th) {
        Some(Collective::Barrier { id, count, .. }) => {
            let idv = th.reg(*id);
            match count {
                Some(c) => format!("barrier {idv} (with {} threads)", th.reg(*c)),
                None => format!("barrier {idv} (all threads of the block)"),
            }
        }
        Some(Collective::ClusterWait) => "the cluster barrier (barrier.cluster.wait)".to_string(),
        Some(Collective::Activemask { .. }) => "activemask".to_string(),
        Some(c) => {
            let mask = match c {
                Collective::WarpSync { mask }
                | Collective::Shfl { mask, .. }
                | Collective::Vote { mask, .. }
                | Collective::Match { mask, .. }
                | Collective::Redux { mask, .. }
                | Collective::Elect { mask, .. } => Some(th.reg(*mask) as u32),
                _ => None,
            };
            match mask {
                Some(m) => format!("the lanes of member mask {m:#010x} (warp collective)"),
                None => "all lanes of its warp (warp collective)".to_string(),
            }
        }
        None => "nothing (running)".to_string(),
    }
}

/// The threads of a cluster that are blocked, for a deadlock report.
pub(crate) fn stuck_threads(ctx: &Ctx, cl: &ClusterState) -> Vec<StuckThread> {
    let mut out = Vec::new();
    for blk in &cl.blocks {
        for (t, th) in blk.threads.iter().enumerate() {
            if th.state == ThreadState::Blocked {
                out.push(StuckThread {
                    thread: thread_ref(blk, t),
                    waiting_for: describe_wait(ctx, th),
                    at: ctx.location(th.func, th.pc),
                });
            }
        }
    }
    out
}
