//! The warp- and block-level building blocks of `cuda-prims`, called from
//! this program's own kernels, against the same computation on the CPU.

use crate::inputs::samples;
use crate::Sizes;
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, shared, thread, DisjointSlice};
use cuda_host::{cuda_launch, KernelModule};
use cuda_prims::block::Block;
use cuda_prims::op::{FnOp, Max, Sum};
use cuda_prims::warp;
use std::sync::Arc;

/// Threads per block of the block checks.
const BLOCK: usize = 256;
/// Items per thread of the block checks.
const ITEMS: usize = 4;
type B = Block<BLOCK>;

/// The mask of the masked warp scan: the even lanes.
const EVEN_LANES: u32 = 0x5555_5555;

/// Per thread: the warp's inclusive and exclusive sums, its maximum, and
/// the inclusive sum over the even lanes (odd lanes keep their value).
#[kernel]
pub fn warp_checks(
    input: &[u32],
    mut inclusive: DisjointSlice<u32>,
    mut exclusive: DisjointSlice<u32>,
    mut maximum: DisjointSlice<u32>,
    mut masked: DisjointSlice<u32>,
) {
    let idx = thread::index_1d();
    // Every lane takes part; lanes past the end contribute the identity.
    let x = input.get(idx.get()).copied().unwrap_or(0);
    let inc = warp::inclusive_scan(x, Sum);
    let (exc, _total) = warp::exclusive_scan(x, Sum);
    let max = warp::reduce(x, Max);
    let m = warp::inclusive_scan_masked(EVEN_LANES, x, Sum);
    if let Some(o) = inclusive.get_mut(idx) {
        *o = inc;
    }
    if let Some(o) = exclusive.get_mut(idx) {
        *o = exc;
    }
    if let Some(o) = maximum.get_mut(idx) {
        *o = max;
    }
    if let Some(o) = masked.get_mut(idx) {
        *o = m;
    }
}

/// Per block of 256 threads × 4 items (blocked): the exclusive prefix sums
/// of the tile (into `scanned`), the tile's maximum in every element of
/// `maxima`'s tile, and a striped load stored back striped (`copied`).
#[kernel]
pub fn block_checks(input: &[u32], mut scanned: DisjointSlice<u32>, mut maxima: DisjointSlice<u32>, mut copied: DisjointSlice<u32>) {
    shared! { static TEMP: [u32; B::WARPS]; }
    let tile = thread::blockIdx_x() as usize * B::tile_len(ITEMS);
    let items: [u32; ITEMS] = B::load_blocked(input, tile, 0);
    let (prefixes, _total) = B::exclusive_scan_items(items, Sum, &TEMP);
    B::store_blocked(&mut scanned, prefixes);
    // The same storage again: the calls wait for each other.
    let max = B::reduce_items(items, Max, &TEMP);
    B::store_blocked(&mut maxima, [max; ITEMS]);
    let striped: [u32; ITEMS] = B::load_striped(input, tile, 0);
    B::store_striped(&mut copied, striped);
}

/// Per thread: the inclusive scan over the block of a non-commutative
/// operator (keep the later of two values unless it is zero), which shows
/// that the order of the threads is kept.
#[kernel]
pub fn block_ordered(input: &[u64], mut out: DisjointSlice<u64>) {
    shared! { static TEMP: [u64; B::WARPS]; }
    let idx = thread::index_1d();
    let x = input.get(idx.get()).copied().unwrap_or(0);
    let last_nonzero = FnOp::new(0u64, |a: u64, b: u64| if b != 0 { b } else { a });
    let r = B::inclusive_scan(x, last_nonzero, &TEMP);
    if let Some(o) = out.get_mut(idx) {
        *o = r;
    }
}

fn compare<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Result<(), String> {
    match (0..want.len()).find(|&i| got[i] != want[i]) {
        Some(i) => Err(format!("{what}: element {i}: GPU {:?}, CPU {:?}", got[i], want[i])),
        None => Ok(()),
    }
}

fn config(n: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: (n.div_ceil(BLOCK).max(1) as u32, 1, 1), block_dim: (BLOCK as u32, 1, 1), shared_mem_bytes: 0 }
}

/// Runs the warp and block checks.
pub fn run(ctx: &Arc<CudaContext>, module: &KernelModule, sizes: Sizes) -> Result<usize, String> {
    let stream = ctx.default_stream();
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let lengths: &[usize] = if sizes.emulated { &[1, 31, 33, 256, 1000, 1025] } else { &[1, 31, 33, 1000, 1025, 1 << 20, (1 << 22) + 77] };
    let mut checks = 0;
    for &n in lengths {
        // Small values, so that sums of a block stay readable in messages.
        let host: Vec<u32> = samples::<u32>(n, n as u64).into_iter().map(|x| x % 1000).collect();
        let input = DeviceBuffer::from_host(&stream, &host).map_err(|x| e(&x))?;

        // Warp level.
        let mut outs: Vec<DeviceBuffer<u32>> =
            (0..4).map(|_| DeviceBuffer::zeroed(&stream, n)).collect::<Result<_, _>>().map_err(|x| e(&x))?;
        let [inc, exc, max, masked] = &mut outs[..] else { unreachable!() };
        cuda_launch! {
            kernel: warp_checks, stream: stream, module: module, config: config(n),
            args: [slice(input), slice_mut(*inc), slice_mut(*exc), slice_mut(*max), slice_mut(*masked)]
        }
        .map_err(|x| e(&x))?;
        let padded: Vec<u32> = host.iter().copied().chain(std::iter::repeat(0)).take(n.div_ceil(32) * 32).collect();
        let (mut want_inc, mut want_exc, mut want_max, mut want_masked) = (vec![], vec![], vec![], vec![]);
        for warp_vals in padded.chunks(32) {
            let (mut run, mut run_even) = (0u32, 0u32);
            let m = *warp_vals.iter().max().unwrap();
            for (lane, &x) in warp_vals.iter().enumerate() {
                want_exc.push(run);
                run = run.wrapping_add(x);
                want_inc.push(run);
                want_max.push(m);
                if lane % 2 == 0 {
                    run_even = run_even.wrapping_add(x);
                    want_masked.push(run_even);
                } else {
                    want_masked.push(x);
                }
            }
        }
        compare(&format!("warp::inclusive_scan, n = {n}"), &inc.to_host_vec(&stream).map_err(|x| e(&x))?, &want_inc[..n])?;
        compare(&format!("warp::exclusive_scan, n = {n}"), &exc.to_host_vec(&stream).map_err(|x| e(&x))?, &want_exc[..n])?;
        compare(&format!("warp::reduce(Max), n = {n}"), &max.to_host_vec(&stream).map_err(|x| e(&x))?, &want_max[..n])?;
        compare(&format!("warp::inclusive_scan_masked, n = {n}"), &masked.to_host_vec(&stream).map_err(|x| e(&x))?, &want_masked[..n])?;
        checks += 4;

        // Block level: tiles of BLOCK · ITEMS elements.
        let tile = BLOCK * ITEMS;
        let mut scanned = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
        let mut maxima = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
        let mut copied = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
        let cfg = LaunchConfig { grid_dim: (n.div_ceil(tile) as u32, 1, 1), ..config(n) };
        cuda_launch! {
            kernel: block_checks, stream: stream, module: module, config: cfg,
            args: [slice(input), slice_mut(scanned), slice_mut(maxima), slice_mut(copied)]
        }
        .map_err(|x| e(&x))?;
        let (mut want_scan, mut want_maxima) = (vec![], vec![]);
        for t in host.chunks(tile) {
            let mut run = 0u32;
            let m = *t.iter().max().unwrap();
            for &x in t {
                want_scan.push(run);
                run = run.wrapping_add(x);
                want_maxima.push(m);
            }
        }
        compare(&format!("Block::exclusive_scan_items, n = {n}"), &scanned.to_host_vec(&stream).map_err(|x| e(&x))?, &want_scan)?;
        compare(&format!("Block::reduce_items(Max), n = {n}"), &maxima.to_host_vec(&stream).map_err(|x| e(&x))?, &want_maxima)?;
        compare(&format!("Block::load_striped + store_striped, n = {n}"), &copied.to_host_vec(&stream).map_err(|x| e(&x))?, &host)?;
        checks += 3;

        // A block scan whose operator is not commutative.
        let wide: Vec<u64> = samples::<u64>(n, 7 + n as u64).into_iter().map(|x| if x % 3 == 0 { 0 } else { x }).collect();
        let wide_in = DeviceBuffer::from_host(&stream, &wide).map_err(|x| e(&x))?;
        let mut ordered = DeviceBuffer::<u64>::zeroed(&stream, n).map_err(|x| e(&x))?;
        cuda_launch! {
            kernel: block_ordered, stream: stream, module: module, config: config(n),
            args: [slice(wide_in), slice_mut(ordered)]
        }
        .map_err(|x| e(&x))?;
        let mut want_ordered = vec![];
        for b in wide.chunks(BLOCK) {
            let mut last = 0u64;
            for &x in b {
                if x != 0 {
                    last = x;
                }
                want_ordered.push(last);
            }
        }
        compare(&format!("Block::inclusive_scan (ordered operator), n = {n}"), &ordered.to_host_vec(&stream).map_err(|x| e(&x))?, &want_ordered)?;
        checks += 1;
    }
    Ok(checks)
}
