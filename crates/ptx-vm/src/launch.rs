//! The launch API: [`launch`] and what it takes.
//!
//! It owns the checks made before anything runs (the kernel exists, the
//! dimensions and parameters fit, and no instruction the VM does not
//! implement is reachable from the kernel), the kernel's parameter buffer,
//! and the snapshot of memory the launch may touch; then it hands the grid
//! to the scheduler.

use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crate::fault::{Fault, Location};
use crate::memory::Regions;
use crate::module::Module;
use crate::program::{Callee, Op};

/// The grid and block shape of a launch, and its dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    /// Blocks per grid (`%nctaid`).
    pub grid: (u32, u32, u32),
    /// Threads per block (`%ntid`).
    pub block: (u32, u32, u32),
    /// Bytes of dynamic shared memory per block.
    pub dynamic_shared_bytes: u32,
}

/// What the VM needs from the program that embeds it. Its methods are
/// called from the launch's worker threads, possibly at the same time.
pub trait Environment: Sync {
    /// The device memory a launch may access: every allocation alive when
    /// it starts, as host address ranges. Accesses outside them (and
    /// outside the module's own variables) fault.
    fn valid_regions(&self) -> Vec<Range<u64>>;

    /// `vprintf(format, args)`: `format` is the C format string without
    /// its NUL; `args` points at a copy of the argument buffer as CUDA's
    /// `vprintf` receives it: one argument per conversion, each at its
    /// natural size and alignment (4 bytes for `%d %u %x %c`, 8 for `%ll…`,
    /// the doubles of `%f %e %g` and the pointers of `%s %p`), 8-byte
    /// aligned. Every `%s` argument is a host pointer (or null), wherever the
    /// string lives; the pointers are valid only during the call.
    fn printf(&self, format: &[u8], args: *const u8);

    /// `cudaGraphSetConditional(handle, value)`: sets the condition of a
    /// graph's conditional node. An embedder without graphs answers with
    /// the reason it cannot (the default), which fails the launch.
    fn set_conditional(&self, handle: u64, value: u32) -> Result<(), String> {
        let _ = (handle, value);
        Err("cudaGraphSetConditional is not emulated by this embedder of the PTX VM".to_string())
    }

    /// `%globaltimer`: nanoseconds. Defaults to the host's wall clock.
    fn globaltimer(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    }
}

/// How to run a launch.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// Host threads running blocks (0: as many as the host has cores).
    pub workers: usize,
    /// The launch fails with [`Fault::Timeout`] past this.
    pub timeout: Duration,
    /// Blocks per cluster (`cudaLaunchAttributeClusterDimension`); `None`
    /// takes the kernel's `.reqnctapercluster`, else clusters of one block.
    pub cluster: Option<(u32, u32, u32)>,
    /// Instructions a thread runs before the next thread of its block gets a
    /// turn (threads also yield at barriers and warp collectives). Small
    /// enough that a thread spinning on a flag another thread of its block
    /// sets lets that thread run.
    pub quantum: u32,
    /// Clusters (blocks, without clusters) each worker keeps resident and
    /// interleaves, so that a block waiting on a flag that another started
    /// block sets makes progress.
    pub resident: usize,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            workers: 0,
            timeout: Duration::from_secs(120),
            cluster: None,
            quantum: 10_000,
            resident: 4,
        }
    }
}

/// What a launch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchStats {
    /// Instructions executed (over all threads).
    pub instructions: u64,
    pub blocks: u64,
    pub threads: u64,
    pub elapsed: Duration,
}

/// Everything a launch's threads share (read-only but for `abort`).
pub(crate) struct Ctx<'a> {
    pub module: &'a Module,
    pub kernel: u32,
    pub kernel_name: &'a str,
    pub env: &'a dyn Environment,
    pub regions: Regions,
    /// The kernel's parameter buffer (16-byte aligned: `ld.param` through
    /// an address checks alignment like any access).
    pub kparams: Vec<u128>,
    pub kparams_addr: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub cluster: [u32; 3],
    pub explicit_cluster: bool,
    pub dynamic_shared: u32,
    /// Static plus dynamic shared memory per block.
    pub shared_bytes: u32,
    pub workers: usize,
    pub quantum: u32,
    pub resident: usize,
    pub started: Instant,
    pub timeout: Duration,
    pub abort: AtomicBool,
}

impl Ctx<'_> {
    /// The parameter buffer as bytes.
    pub(crate) fn kparam_bytes(&self) -> &[u8] {
        // SAFETY: a `Vec<u128>`'s elements viewed as their bytes.
        unsafe {
            std::slice::from_raw_parts(self.kparams.as_ptr() as *const u8, self.kparams.len() * 16)
        }
    }

    pub(crate) fn location(&self, func: u32, pc: u32) -> Location {
        Location {
            function: self.module.functions[func as usize].name.clone(),
            instruction: self.module.inst_text(func, pc).to_string(),
            line: self.module.inst_line(func, pc),
        }
    }
}

fn invalid(kernel: &str, reason: impl Into<String>) -> Fault {
    Fault::InvalidLaunch {
        kernel: kernel.to_string(),
        reason: reason.into(),
    }
}

/// The first instruction the VM cannot run that `kernel` can reach, if any.
fn check_reachable(module: &Module, kernel: u32, name: &str) -> Result<(), Fault> {
    let n = module.functions.len();
    let mut seen = vec![false; n];
    let mut stack = vec![kernel];
    let mut taken: Vec<u32> = module.address_taken.clone();
    let mut indirect = false;
    loop {
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut seen[i as usize], true) {
                continue;
            }
            let f = &module.functions[i as usize];
            let at = |pc: usize| Location {
                function: f.name.clone(),
                instruction: module.inst_text(i, pc as u32).to_string(),
                line: module.inst_line(i, pc as u32),
            };
            for (pc, inst) in f.code.iter().enumerate() {
                match inst.op {
                    Op::Unsupported { index } => {
                        return Err(Fault::Unsupported {
                            kernel: name.to_string(),
                            at: at(pc),
                            reason: f.unsupported[index as usize].clone(),
                        });
                    }
                    Op::Call { site } => {
                        match f.calls[site as usize].callee {
                            Callee::Direct(j) if module.functions[j as usize].is_extern => {
                                let callee = &module.functions[j as usize].name;
                                return Err(Fault::Unsupported {
                                kernel: name.to_string(),
                                at: at(pc),
                                reason: format!("`{callee}` is an external function the VM does not provide"),
                            });
                            }
                            Callee::Direct(j) => stack.push(j),
                            Callee::Indirect(_) => indirect = true,
                            Callee::Vprintf | Callee::SetConditional => {}
                        }
                    }
                    _ => {}
                }
            }
            taken.extend_from_slice(&f.referenced);
        }
        // An indirect call may reach any function whose address was taken.
        if !indirect {
            return Ok(());
        }
        let before = stack.len();
        stack.extend(taken.iter().copied().filter(|&j| !seen[j as usize]));
        taken.clear();
        if stack.len() == before {
            return Ok(());
        }
    }
}

/// Runs `kernel` over the grid. `params` is `cuLaunchKernel`'s
/// `kernelParams`: one pointer per parameter, to as many bytes as the
/// parameter's size. Returns when every thread has finished, or with the
/// first fault.
pub fn launch(
    module: &Module,
    kernel: &str,
    dims: LaunchDims,
    params: &[*const u8],
    env: &dyn Environment,
    options: &LaunchOptions,
) -> Result<LaunchStats, Fault> {
    let Some(&index) = module.by_name.get(kernel) else {
        return Err(invalid(kernel, "the module has no such kernel"));
    };
    let f = &module.functions[index as usize];
    if !f.is_entry {
        return Err(invalid(kernel, "it is a .func, not a kernel (.entry)"));
    }
    let grid = [dims.grid.0, dims.grid.1, dims.grid.2];
    let block = [dims.block.0, dims.block.1, dims.block.2];
    if grid.contains(&0) || block.contains(&0) {
        return Err(invalid(
            kernel,
            format!(
                "grid {:?} and block {:?} must have no zero dimension",
                dims.grid, dims.block
            ),
        ));
    }
    let threads = block.iter().map(|&x| x as u64).product::<u64>();
    if threads > 1024 || block[2] > 64 {
        return Err(invalid(
            kernel,
            format!(
                "a block of {:?} threads is larger than a GPU allows (1024, z at most 64)",
                dims.block
            ),
        ));
    }
    if grid[1] > 65535 || grid[2] > 65535 {
        return Err(invalid(
            kernel,
            format!("grid {:?}: y and z are at most 65535", dims.grid),
        ));
    }
    if let Some(r) = f.reqntid {
        if r != block {
            return Err(invalid(
                kernel,
                format!("the kernel requires blocks of {r:?} threads (.reqntid), not {block:?}"),
            ));
        }
    }
    if let Some(m) = f.maxntid {
        if threads > m.iter().map(|&x| x as u64).product::<u64>() {
            return Err(invalid(
                kernel,
                format!(
                    "the kernel allows at most {m:?} threads per block (.maxntid), not {block:?}"
                ),
            ));
        }
    }
    let (cluster, explicit_cluster) = match (options.cluster, f.reqnctapercluster) {
        (Some(c), _) => ([c.0, c.1, c.2], true),
        (None, Some(c)) => (c, true),
        (None, None) => ([1, 1, 1], false),
    };
    if cluster.contains(&0) || (0..3).any(|i| !grid[i].is_multiple_of(cluster[i])) {
        return Err(invalid(
            kernel,
            format!("clusters of {cluster:?} blocks must tile the grid {grid:?}"),
        ));
    }
    if cluster.iter().product::<u32>() > 16 {
        return Err(invalid(
            kernel,
            format!("clusters of {cluster:?} blocks: at most 16 blocks per cluster"),
        ));
    }
    check_reachable(module, index, kernel)?;

    if params.len() != f.kernel_params.len() {
        return Err(invalid(
            kernel,
            format!(
                "it takes {} parameters, the launch passed {}",
                f.kernel_params.len(),
                params.len()
            ),
        ));
    }
    let total = f
        .kernel_params
        .iter()
        .zip(&f.kernel_param_offsets)
        .map(|(p, &o)| o as usize + p.size)
        .max()
        .unwrap_or(0);
    let mut kparams = vec![0u128; total.div_ceil(16).max(1)];
    let kparams_len = kparams.len() * 16;
    for (k, (p, &off)) in f
        .kernel_params
        .iter()
        .zip(&f.kernel_param_offsets)
        .enumerate()
    {
        if params[k].is_null() {
            return Err(invalid(kernel, format!("parameter {k} is a null pointer")));
        }
        // SAFETY: `cuLaunchKernel`'s contract: each pointer points at the
        // parameter's bytes, as many as its size.
        let bytes = unsafe { std::slice::from_raw_parts(params[k], p.size) };
        // SAFETY: the buffer holds `kparams_len` bytes, more than the last
        // parameter's end; u128 has no invalid bit patterns.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(kparams.as_mut_ptr() as *mut u8, kparams_len) };
        dst[off as usize..off as usize + p.size].copy_from_slice(bytes);
    }
    let kparams_addr = kparams.as_ptr() as u64;

    let shared_bytes = module.dynamic_shared_offset as u64 + dims.dynamic_shared_bytes as u64;
    let shared_bytes = if dims.dynamic_shared_bytes == 0 {
        module.static_shared as u64
    } else {
        shared_bytes
    };
    if shared_bytes > (1 << 24) - 1 {
        return Err(invalid(
            kernel,
            format!("{shared_bytes} bytes of shared memory per block is more than the VM supports"),
        ));
    }
    let mut writable = env.valid_regions();
    writable.push(module.storage_range());
    let regions = Regions::new(
        writable,
        std::iter::once(kparams_addr..kparams_addr + kparams_len as u64),
    );

    let workers = match options.workers {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        n => n,
    };
    let ctx = Ctx {
        module,
        kernel: index,
        kernel_name: kernel,
        env,
        regions,
        kparams,
        kparams_addr,
        grid,
        block,
        cluster,
        explicit_cluster,
        dynamic_shared: dims.dynamic_shared_bytes,
        shared_bytes: shared_bytes as u32,
        workers,
        quantum: options.quantum.max(1),
        resident: options.resident.max(1),
        started: Instant::now(),
        timeout: options.timeout,
        abort: AtomicBool::new(false),
    };
    let instructions = crate::scheduler::run_grid(&ctx)?;
    let blocks = grid.iter().map(|&x| x as u64).product::<u64>();
    Ok(LaunchStats {
        instructions,
        blocks,
        threads: blocks * threads,
        elapsed: ctx.started.elapsed(),
    })
}
