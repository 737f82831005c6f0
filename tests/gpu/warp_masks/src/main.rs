//! GPU test: lane masks, `elect_sync`, and scans and reductions over partial
//! warps. Each warp of the launch uses its own member mask (full, halves,
//! single lanes, gaps, alternating lanes); every lane makes every call, the
//! lanes outside the mask included (they take no part and get their own value
//! or the identity back). Each result is checked against the same rule
//! computed on the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, warp, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

const BLOCK: usize = 64;
const BLOCKS: usize = 4;
/// Results per thread.
const OUTS: usize = 11;
/// The member mask of each warp of the launch (warp `w` uses `MASKS[w]`).
const MASKS: [u32; BLOCK * BLOCKS / 32] =
    [u32::MAX, 0x0000_ffff, 0x8000_0001, 0x5555_5555, 0xb4f0_0c31, 1 << 17, 0xffff_0000, 0x7fff_fffe];
/// What a lane outside the mask writes for `elect_sync`.
const NOT_MEMBER: u64 = u64::MAX;

fn input(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17
}

/// `x -> m*x + c` (mod 2^32) packed as `m | c << 32`; `compose(f, g)` is
/// `f` then `g`: associative, not commutative, so a scan that reorders its
/// operands shows.
fn compose(f: u64, g: u64) -> u64 {
    let (m1, c1) = (f as u32, (f >> 32) as u32);
    let (m2, c2) = (g as u32, (g >> 32) as u32);
    let m = m2.wrapping_mul(m1);
    let c = m2.wrapping_mul(c1).wrapping_add(c2);
    m as u64 | (c as u64) << 32
}
const IDENTITY_MAP: u64 = 1;

/// The affine map of an input: odd multiplier, so nothing collapses to 0.
fn affine(v: u64) -> u64 {
    (v as u32 | 1) as u64 | (v >> 32 << 32)
}

#[kernel]
pub fn partial_warps(data: &[u64], masks: &[u32], mut out: DisjointSlice<u64>) {
    let g = thread::index_1d().get();
    let mask = masks[g / 32];
    let v = data[g];
    let small = (v & 0xffff) as u32;

    let mut r = [0u64; OUTS];
    r[0] = warp::lanemask_lt() as u64 | (warp::lanemask_gt() as u64) << 32;
    r[1] = warp::lanemask_le() as u64 | (warp::lanemask_ge() as u64) << 32;
    r[2] = warp::lanemask_eq() as u64;
    r[3] = if mask & warp::lanemask_eq() != 0 {
        let e = warp::elect_sync(mask);
        e.leader as u64 | (e.elected as u64) << 32
    } else {
        NOT_MEMBER
    };
    r[4] = warp::inclusive_sum(mask, small) as u64;
    r[5] = warp::exclusive_sum(mask, small) as u64;
    r[6] = warp::sum_masked(mask, small) as u64;
    r[7] = warp::inclusive_scan(mask, affine(v), compose);
    r[8] = warp::exclusive_scan(mask, affine(v), IDENTITY_MAP, compose);
    r[9] = warp::reduce_masked(mask, v, |a, b| if b > a { b } else { a });
    r[10] = warp::inclusive_sum(mask, (v % 100) as f32).to_bits() as u64;
    for (k, value) in r.iter().enumerate() {
        // SAFETY: thread g alone writes elements g*OUTS .. g*OUTS+OUTS.
        unsafe { *out.get_unchecked_mut(g * OUTS + k) = *value };
    }
}

/// The same results on the CPU: the lanes of each warp's mask in lane order.
fn expected(data: &[u64]) -> Vec<u64> {
    let mut out = vec![0u64; data.len() * OUTS];
    for g in 0..data.len() {
        let (lane, w) = (g % 32, g / 32);
        let mask = MASKS[w];
        let v = data[g];
        let r = &mut out[g * OUTS..g * OUTS + OUTS];
        let lt = (1u32 << lane) - 1;
        let eq = 1u32 << lane;
        r[0] = lt as u64 | (!(lt | eq) as u64) << 32;
        r[1] = (lt | eq) as u64 | (!lt as u64) << 32;
        r[2] = eq as u64;
        r[3] = NOT_MEMBER; // checked separately (any one member may be elected)
        let member = mask & eq != 0;
        // The members up to and including this lane, and all of them.
        let upto: Vec<u64> = (0..=lane).filter(|l| mask >> l & 1 != 0).map(|l| data[w * 32 + l]).collect();
        let all: Vec<u64> = (0..32).filter(|l| mask >> l & 1 != 0).map(|l| data[w * 32 + l]).collect();
        let small = |x: &u64| (x & 0xffff) as u32;
        if member {
            let before = &upto[..upto.len() - 1];
            r[4] = upto.iter().map(small).sum::<u32>() as u64;
            r[5] = before.iter().map(small).sum::<u32>() as u64;
            r[6] = all.iter().map(small).sum::<u32>() as u64;
            r[7] = upto.iter().map(|&x| affine(x)).fold(IDENTITY_MAP, compose);
            r[8] = before.iter().map(|&x| affine(x)).fold(IDENTITY_MAP, compose);
            r[9] = *all.iter().max().unwrap();
            r[10] = upto.iter().map(|x| (x % 100) as f32).sum::<f32>().to_bits() as u64;
        } else {
            // Outside the mask: own value back, the identity for exclusive scans.
            r[4] = small(&v) as u64;
            r[5] = 0;
            r[6] = small(&v) as u64;
            r[7] = affine(v);
            r[8] = IDENTITY_MAP;
            r[9] = v;
            r[10] = ((v % 100) as f32).to_bits() as u64;
        }
    }
    out
}

/// Exactly one member of each warp's mask is elected, and every member names it.
fn check_election(gpu: &[u64], failures: &mut Vec<String>) {
    for (w, &mask) in MASKS.iter().enumerate() {
        let result = |l: usize| gpu[(w * 32 + l) * OUTS + 3];
        let members: Vec<usize> = (0..32).filter(|l| mask >> l & 1 != 0).collect();
        if let Some(l) = (0..32).find(|l| mask >> l & 1 == 0 && result(*l) != NOT_MEMBER) {
            failures.push(format!("elect_sync: warp {w}: lane {l} is outside the mask but wrote {:#x}", result(l)));
        }
        let elected: Vec<usize> = members.iter().copied().filter(|&l| result(l) >> 32 == 1).collect();
        let leaders: Vec<u64> = members.iter().map(|&l| result(l) & 0xffff_ffff).collect();
        let agreed = leaders.windows(2).all(|p| p[0] == p[1]);
        let ok = elected.len() == 1 && agreed && leaders[0] == elected[0] as u64;
        if !ok {
            failures.push(format!(
                "elect_sync: warp {w} (mask {mask:#010x}): elected lanes {elected:?}, leaders named {leaders:?}"
            ));
        }
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let n = BLOCK * BLOCKS;
    let data: Vec<u64> = (0..n).map(input).collect();
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let dev = DeviceBuffer::from_host(&stream, &data)?;
    let masks = DeviceBuffer::from_host(&stream, &MASKS)?;
    let mut out = DeviceBuffer::<u64>::zeroed(&stream, n * OUTS)?;
    let module = load_kernel_module(&ctx, "warp_masks")?;
    let config = LaunchConfig { grid_dim: (BLOCKS as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: partial_warps, stream: stream, module: module, config: config,
        args: [slice(dev), slice(masks), slice_mut(out)]
    }?;
    let gpu = out.to_host_vec(&stream)?;
    let cpu = expected(&data);
    const NAMES: [&str; OUTS] = [
        "lanemask_lt/gt", "lanemask_le/ge", "lanemask_eq", "elect_sync", "inclusive_sum", "exclusive_sum",
        "sum_masked", "inclusive_scan (affine maps)", "exclusive_scan (affine maps)", "reduce_masked max",
        "inclusive_sum f32",
    ];
    let mut failures = Vec::new();
    check_election(&gpu, &mut failures);
    for k in (0..OUTS).filter(|&k| k != 3) {
        if let Some(g) = (0..n).find(|&g| gpu[g * OUTS + k] != cpu[g * OUTS + k]) {
            failures.push(format!(
                "{}: thread {g} (warp mask {:#010x}, lane {}): GPU {:#x} CPU {:#x}",
                NAMES[k], MASKS[g / 32], g % 32, gpu[g * OUTS + k], cpu[g * OUTS + k]
            ));
        }
    }
    if failures.is_empty() { Ok(OUTS) } else { Err(failures.join("\n").into()) }
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!(
                "✓ SUCCESS: {n} lane-mask/elect/partial-warp results matched the CPU on every thread of {} masks",
                MASKS.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
