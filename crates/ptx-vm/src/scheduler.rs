//! The scheduler: which thread runs when, on which host thread.
//!
//! It owns:
//! - the grid: clusters (a block is a cluster of one without clusters) are
//!   handed out in launch order to `workers` host threads
//!   (`std::thread::scope`). Each worker keeps several clusters resident and
//!   interleaves them round by round, so a block spinning on a flag that an
//!   earlier block sets (decoupled look-back) lets that block progress; a
//!   cluster's blocks stay on one worker, so distributed shared memory and
//!   the cluster barrier need no locking.
//! - a round of a cluster: each runnable thread runs until it blocks at a
//!   collective, exits, faults or uses its quantum; then `activemask` groups
//!   resolve. The quantum is what lets a legal intra-block spin-wait
//!   complete: the waiting thread gives way to the one that sets the flag.
//! - deadlock (after a round, no thread of the cluster can run and some have
//!   not exited: nothing can ever wake them) and timeout detection, and the
//!   first fault of a launch stopping every worker.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::collective::{self, BarrierState, WarpState};
use crate::exec::{self, BlockInfo, ExecError, MemView, Stop, Thread, ThreadState};
use crate::fault::{Fault, StuckThread, ThreadRef};
use crate::launch::Ctx;
use crate::memory::space_name;

/// A resident block.
pub(crate) struct BlockState {
    pub info: BlockInfo,
    pub threads: Vec<Thread>,
    pub warps: Vec<WarpState>,
    pub barriers: Vec<BarrierState>,
    /// Threads that have not exited.
    pub live: u32,
}

/// A resident cluster: its blocks and their shared memories.
pub(crate) struct ClusterState {
    pub blocks: Vec<BlockState>,
    pub shared: Vec<Vec<u8>>,
    pub cluster_phase: u64,
    pub cluster_arrived: u32,
}

/// A fault raised by thread `t` of `blk`.
pub(crate) fn fault_of(ctx: &Ctx, blk: &BlockState, t: usize, e: ExecError) -> Fault {
    let th = &blk.threads[t];
    let b = blk.info.ctaid;
    let thread = ThreadRef {
        block: (b[0], b[1], b[2]),
        thread: (th.tid[0], th.tid[1], th.tid[2]),
    };
    let at = ctx.location(th.func, th.pc);
    let kernel = ctx.kernel_name.to_string();
    match e {
        ExecError::Trap => Fault::Trap { kernel, thread, at },
        ExecError::Mem {
            addr,
            size,
            space,
            write,
        } => Fault::MemoryViolation {
            kernel,
            thread,
            address: addr,
            size,
            space: space_name(space),
            write,
            at,
        },
        ExecError::Misaligned { addr, size, space } => Fault::MisalignedAddress {
            kernel,
            thread,
            address: addr,
            size,
            space: space_name(space),
            at,
        },
        ExecError::Unsupported(i) => Fault::Unsupported {
            kernel,
            reason: ctx.module.functions[th.func as usize]
                .unsupported
                .get(i as usize)
                .cloned()
                .unwrap_or_default(),
            at,
        },
        ExecError::Other(reason) => Fault::ExecutionError {
            kernel,
            thread,
            at,
            reason,
        },
    }
}

/// The thread vectors (and shared memories) of finished blocks, reused by
/// the next ones: a block's threads are reset in place, never moved.
struct Pool {
    threads: Vec<Vec<Thread>>,
    shared: Vec<Vec<u8>>,
}

fn make_cluster(ctx: &Ctx, id: u64, pool: &mut Pool, smid: u32) -> ClusterState {
    let [cx, cy, cz] = ctx.cluster;
    let per = [ctx.grid[0] / cx, ctx.grid[1] / cy];
    let k = [
        (id % per[0] as u64) as u32,
        ((id / per[0] as u64) % per[1] as u64) as u32,
        (id / (per[0] as u64 * per[1] as u64)) as u32,
    ];
    let nthreads = (ctx.block[0] * ctx.block[1] * ctx.block[2]) as usize;
    let nwarps = nthreads.div_ceil(32);
    let nblocks = (cx * cy * cz) as usize;
    let mut blocks = Vec::with_capacity(nblocks);
    let mut shared = Vec::with_capacity(nblocks);
    for rank in 0..nblocks as u32 {
        let r = [rank % cx, (rank / cx) % cy, rank / (cx * cy)];
        let ctaid = [k[0] * cx + r[0], k[1] * cy + r[1], k[2] * cz + r[2]];
        let mut threads = pool.threads.pop().unwrap_or_default();
        threads.truncate(nthreads);
        for i in 0..nthreads as u32 {
            let tid = [
                i % ctx.block[0],
                (i / ctx.block[0]) % ctx.block[1],
                i / (ctx.block[0] * ctx.block[1]),
            ];
            match threads.get_mut(i as usize) {
                Some(th) => th.reset(ctx, tid, i),
                None => threads.push(Thread::new(ctx, tid, i)),
            }
        }
        let warps = (0..nwarps)
            .map(|w| {
                let n = (nthreads - w * 32).min(32);
                WarpState::new(if n == 32 { u32::MAX } else { (1u32 << n) - 1 })
            })
            .collect();
        blocks.push(BlockState {
            info: BlockInfo {
                ctaid,
                rank,
                cluster_ctaid: r,
                clusterid: k,
                smid,
            },
            threads,
            warps,
            barriers: vec![BarrierState::default(); 16],
            live: nthreads as u32,
        });
        // Shared memory starts zeroed (a GPU's holds whatever was there).
        let mut memory = pool.shared.pop().unwrap_or_default();
        memory.clear();
        memory.resize(ctx.shared_bytes as usize, 0);
        shared.push(memory);
    }
    ClusterState {
        blocks,
        shared,
        cluster_phase: 0,
        cluster_arrived: 0,
    }
}

enum RoundResult {
    Running,
    Finished,
}

fn run_round(ctx: &Ctx, cl: &mut ClusterState) -> Result<RoundResult, Fault> {
    for b in 0..cl.blocks.len() {
        for t in 0..cl.blocks[b].threads.len() {
            if cl.blocks[b].threads[t].state != ThreadState::Runnable {
                continue;
            }
            let stop = {
                let ClusterState { blocks, shared, .. } = &mut *cl;
                let blk = &mut blocks[b];
                let mut view = MemView {
                    shared: shared.as_mut_slice(),
                    rank: b,
                };
                exec::run(ctx, &blk.info, &mut blk.threads[t], &mut view, ctx.quantum)
            };
            match stop {
                Stop::Quantum | Stop::Yield => {}
                Stop::Exited => {
                    cl.blocks[b].threads[t].state = ThreadState::Exited;
                    collective::exited(ctx, cl, b, t)?;
                }
                Stop::Collective(index) => collective::arrive(ctx, cl, b, t, index)?,
                Stop::Error(e) => return Err(fault_of(ctx, &cl.blocks[b], t, e)),
            }
        }
    }
    collective::resolve_activemask(ctx, cl);
    let mut runnable = false;
    let mut live = false;
    for blk in &cl.blocks {
        for th in &blk.threads {
            match th.state {
                ThreadState::Runnable => runnable = true,
                ThreadState::Blocked => live = true,
                ThreadState::Exited => {}
            }
        }
    }
    if runnable {
        return Ok(RoundResult::Running);
    }
    if !live {
        return Ok(RoundResult::Finished);
    }
    let threads = collective::stuck_threads(ctx, cl);
    let waiting = threads.len();
    let block = threads.first().map(|s| s.thread.block).unwrap_or((0, 0, 0));
    Err(Fault::Deadlock {
        kernel: ctx.kernel_name.to_string(),
        block,
        threads: summarise(threads),
        waiting,
    })
}

/// At most a few threads per distinct wait, at most 16 in all.
fn summarise(threads: Vec<StuckThread>) -> Vec<StuckThread> {
    let mut out: Vec<StuckThread> = Vec::new();
    for t in threads {
        let same = out
            .iter()
            .filter(|o| o.waiting_for == t.waiting_for && o.at == t.at)
            .count();
        if same < 2 && out.len() < 16 {
            out.push(t);
        }
    }
    out
}

fn timeout_fault(ctx: &Ctx, resident: &[ClusterState]) -> Fault {
    let mut threads = Vec::new();
    let mut running = 0;
    for cl in resident {
        for blk in &cl.blocks {
            for th in &blk.threads {
                if th.state == ThreadState::Exited {
                    continue;
                }
                running += 1;
                let b = blk.info.ctaid;
                let waiting_for = if th.state == ThreadState::Blocked {
                    collective::describe_wait(ctx, th)
                } else {
                    "nothing (running)".to_string()
                };
                threads.push(StuckThread {
                    thread: ThreadRef {
                        block: (b[0], b[1], b[2]),
                        thread: (th.tid[0], th.tid[1], th.tid[2]),
                    },
                    waiting_for,
                    at: ctx.location(th.func, th.pc),
                });
            }
        }
    }
    Fault::Timeout {
        kernel: ctx.kernel_name.to_string(),
        limit: ctx.timeout,
        threads: summarise(threads),
        running,
    }
}

fn retire(cl: ClusterState, pool: &mut Pool, executed: &AtomicU64) {
    let mut n = 0;
    for blk in cl.blocks {
        n += blk.threads.iter().map(|th| th.executed).sum::<u64>();
        if pool.threads.len() < 64 {
            pool.threads.push(blk.threads);
        }
    }
    if pool.shared.len() < 64 {
        pool.shared.extend(cl.shared);
    }
    executed.fetch_add(n, Ordering::Relaxed);
}

fn worker(
    ctx: &Ctx,
    next: &AtomicU64,
    total: u64,
    smid: u32,
    executed: &AtomicU64,
) -> Result<(), Fault> {
    let mut pool = Pool {
        threads: Vec::new(),
        shared: Vec::new(),
    };
    let mut resident: Vec<ClusterState> = Vec::new();
    loop {
        if ctx.abort.load(Ordering::Relaxed) {
            return Ok(());
        }
        while resident.len() < ctx.resident {
            let id = next.fetch_add(1, Ordering::Relaxed);
            if id >= total {
                break;
            }
            resident.push(make_cluster(ctx, id, &mut pool, smid));
        }
        if resident.is_empty() {
            return Ok(());
        }
        let mut i = 0;
        while i < resident.len() {
            match run_round(ctx, &mut resident[i]) {
                Ok(RoundResult::Running) => i += 1,
                Ok(RoundResult::Finished) => {
                    let cl = resident.remove(i);
                    retire(cl, &mut pool, executed);
                }
                Err(f) => {
                    ctx.abort.store(true, Ordering::Relaxed);
                    return Err(f);
                }
            }
        }
        if ctx.started.elapsed() > ctx.timeout {
            ctx.abort.store(true, Ordering::Relaxed);
            return Err(timeout_fault(ctx, &resident));
        }
    }
}

/// Runs every block of the launch; returns the instructions executed.
pub(crate) fn run_grid(ctx: &Ctx) -> Result<u64, Fault> {
    let clusters_per_grid = (0..3)
        .map(|i| (ctx.grid[i] / ctx.cluster[i]) as u64)
        .product::<u64>();
    let next = AtomicU64::new(0);
    let executed = AtomicU64::new(0);
    let first_fault: Mutex<Option<Fault>> = Mutex::new(None);
    let workers = ctx.workers.min(clusters_per_grid.max(1) as usize).max(1);
    let record = |r: Result<(), Fault>| {
        if let Err(f) = r {
            let mut slot = first_fault.lock().unwrap_or_else(|e| e.into_inner());
            if slot.is_none() {
                *slot = Some(f);
            }
        }
    };
    if workers == 1 {
        record(worker(ctx, &next, clusters_per_grid, 0, &executed));
    } else {
        std::thread::scope(|s| {
            for w in 0..workers {
                let (next, executed, record) = (&next, &executed, &record);
                s.spawn(move || record(worker(ctx, next, clusters_per_grid, w as u32, executed)));
            }
        });
    }
    match first_fault.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(f) => Err(f),
        None => Ok(executed.into_inner()),
    }
}
