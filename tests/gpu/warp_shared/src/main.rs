//! GPU test: warp collectives, block-barrier reductions and shared memory
//! (static and dynamic), each checked against the same rule computed on the
//! CPU for every thread of a 2-block launch.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{dynamic_shared, kernel, shared, thread, warp, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const BLOCK: usize = 128;
const BLOCKS: usize = 2;
/// Results per thread.
const OUTS: usize = 15;

fn input(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20
}

#[kernel]
pub fn collectives(data: &[u64], mut out: DisjointSlice<u64>) {
    shared! { static STAGE: [u32; BLOCK]; }
    let g = thread::index_1d().get();
    let t = thread::threadIdx_x() as usize;
    let lane = warp::lane_id();
    let v = data[g];
    let small = (v % 4) as u32;
    let f = v as f64 * 0.5;
    let m = warp::FULL_MASK;

    let mut r = [0u64; OUTS];
    r[0] = warp::shfl_idx(m, v, 31 - lane);
    r[1] = warp::shfl_up(m, v, 3);
    r[2] = warp::shfl_down(m, v, 5);
    r[3] = warp::shfl_xor(m, f, 1).to_bits();
    r[4] = warp::ballot(m, v % 3 == 0) as u64;
    r[5] = warp::any(m, v % 97 == 0) as u64 | (warp::all(m, v > 0) as u64) << 1;
    r[6] = warp::match_any(m, small) as u64;
    r[7] = warp::reduce_add_u32(m, v as u32 & 0xffff) as u64;
    r[8] = warp::reduce_max_u32(m, v as u32) as u64;
    r[9] = warp::sum(v as u32 & 0xff) as u64;
    r[10] = warp::elect_one(m) as u64;
    r[11] = thread::sync_threads_count(v % 2 == 0) as u64
        | (thread::sync_threads_and(v < u64::MAX) as u64) << 32
        | (thread::sync_threads_or(v % 1000 == 7) as u64) << 33;
    // Static shared memory through the safe stage/sync/done pattern.
    let view = STAGE.stage(v as u32).sync();
    r[12] = view.get(BLOCK - 1 - t) as u64;
    view.done();
    // Dynamic shared memory: each thread writes its slot, reads its neighbour's.
    // SAFETY: the launch gives BLOCK u64s; writes and reads are split by a barrier.
    unsafe {
        let (dynamic, len) = dynamic_shared::<u64>();
        if t < len {
            dynamic.add(t).write(v ^ 0xabcd);
        }
        thread::sync_threads();
        r[13] = if len == BLOCK { dynamic.add((t + 1) % BLOCK).read() } else { u64::MAX };
    }
    // Lanes whose bit 2 of v % 7 agrees with this lane's; a half mask keeps
    // the complement's bits of the other half (the word's complement).
    r[14] = warp::ballot_agree(m, (v % 7) as u32 & 4) as u64;
    if lane < 16 {
        r[14] |= (warp::ballot_agree(0xffff, (v % 5) as u32) as u64) << 32;
    }
    for (k, value) in r.iter().enumerate() {
        // SAFETY: thread g alone writes elements g*OUTS .. g*OUTS+OUTS.
        unsafe { *out.get_unchecked_mut(g * OUTS + k) = *value };
    }
}

/// The same results, computed per warp/block on the CPU.
fn expected(data: &[u64]) -> Vec<u64> {
    let mut out = vec![0u64; data.len() * OUTS];
    for g in 0..data.len() {
        let (t, lane) = (g % BLOCK, (g % 32) as usize);
        let warp_base = g - lane;
        let block_base = g - t;
        let w = |l: usize| data[warp_base + l];
        let blk = &data[block_base..block_base + BLOCK];
        let v = data[g];
        let r = &mut out[g * OUTS..g * OUTS + OUTS];
        r[0] = w(31 - lane);
        r[1] = if lane >= 3 { w(lane - 3) } else { v };
        r[2] = if lane + 5 < 32 { w(lane + 5) } else { v };
        r[3] = (w(lane ^ 1) as f64 * 0.5).to_bits();
        r[4] = (0..32).filter(|&l| w(l) % 3 == 0).map(|l| 1u64 << l).sum();
        r[5] = (0..32).any(|l| w(l) % 97 == 0) as u64 | ((0..32).all(|l| w(l) > 0) as u64) << 1;
        r[6] = (0..32).filter(|&l| w(l) % 4 == v % 4).map(|l| 1u64 << l).sum();
        r[7] = (0..32).map(|l| w(l) as u32 & 0xffff).fold(0u32, u32::wrapping_add) as u64;
        r[8] = (0..32).map(|l| w(l) as u32).max().unwrap() as u64;
        r[9] = (0..32).map(|l| w(l) as u32 & 0xff).sum::<u32>() as u64;
        r[10] = u64::MAX; // checked separately: exactly one lane per warp
        r[11] = blk.iter().filter(|&&x| x % 2 == 0).count() as u64
            | (blk.iter().all(|&x| x < u64::MAX) as u64) << 32
            | (blk.iter().any(|&x| x % 1000 == 7) as u64) << 33;
        r[12] = blk[BLOCK - 1 - t] as u32 as u64;
        r[13] = blk[(t + 1) % BLOCK] ^ 0xabcd;
        let agree = |mask: u32, bit: &dyn Fn(u64) -> bool| {
            let lanes: u32 = (0..32).filter(|&l| mask >> l & 1 == 1 && bit(w(l))).map(|l| 1u32 << l).sum();
            if bit(v) { lanes } else { !lanes }
        };
        r[14] = agree(u32::MAX, &|x| x % 7 & 4 != 0) as u64 | if lane < 16 { (agree(0xffff, &|x| x % 5 != 0) as u64) << 32 } else { 0 };
    }
    out
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let n = BLOCK * BLOCKS;
    let data: Vec<u64> = (0..n).map(input).collect();
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let dev = DeviceBuffer::from_host(&stream, &data)?;
    let mut out = DeviceBuffer::<u64>::zeroed(&stream, n * OUTS)?;
    let module = load_kernel_module(&ctx, "warp_shared")?;
    let config = LaunchConfig {
        grid_dim: (BLOCKS as u32, 1, 1),
        block_dim: (BLOCK as u32, 1, 1),
        shared_mem_bytes: (BLOCK * 8) as u32,
    };
    cuda_launch! {
        kernel: collectives, stream: stream, module: module, config: config,
        args: [slice(dev), slice_mut(out)]
    }?;
    let gpu = out.to_host_vec(&stream)?;
    let cpu = expected(&data);
    const NAMES: [&str; OUTS] = [
        "shfl_idx u64", "shfl_up", "shfl_down", "shfl_xor f64", "ballot", "any/all", "match_any",
        "redux add", "redux max", "warp::sum", "elect_one", "sync_threads_count/and/or",
        "shared stage/sync/get", "dynamic shared", "ballot_agree",
    ];
    let mut failures = Vec::new();
    for k in 0..OUTS {
        if k == 10 {
            for w in 0..n / 32 {
                let elected = (0..32).filter(|l| gpu[(w * 32 + l) * OUTS + 10] == 1).count();
                if elected != 1 {
                    failures.push(format!("elect_one: warp {w} elected {elected} lanes"));
                }
            }
            continue;
        }
        if let Some(g) = (0..n).find(|&g| gpu[g * OUTS + k] != cpu[g * OUTS + k]) {
            failures.push(format!(
                "{}: thread {g}: GPU {:#x} CPU {:#x}",
                NAMES[k], gpu[g * OUTS + k], cpu[g * OUTS + k]
            ));
        }
    }
    if failures.is_empty() { Ok(OUTS) } else { Err(failures.join("\n").into()) }
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: {n} warp/block/shared-memory operations matched the CPU on every thread");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
