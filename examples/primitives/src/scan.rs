//! `cuda_prims::scan` against the CPU: inclusive and exclusive scans with
//! sums, maxima and an operator that is not commutative, over several
//! element types and sizes (tile boundaries, more than 32 tiles so that the
//! look-back crosses windows, ragged ends).

use crate::inputs::{samples, Check};
use crate::Sizes;
use cuda_core::{CudaContext, CudaStream, DeviceBuffer};
use cuda_host::KernelModule;
use cuda_prims::op::{FnOp, Max, ReduceOp, Sum};
use cuda_prims::scan;
use std::sync::Arc;

/// The sizes a run checks: around the tile sizes (4096 four-byte, 2048
/// eight-byte elements), and beyond 32 tiles.
///
/// And around the tiles the scan of the element type takes now (`tile`:
/// its default, or what `OXIDE_PRIMS_SCAN` asks for): one vector short of
/// or past a tile, one element either side.
pub fn lengths(sizes: Sizes, tile: usize) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 31, 32, 33, 255, 256, 257, 2047, 2048, 2049, 4095, 4096, 4097, 3 * 4096 + 17];
    v.extend([tile - 4, tile - 1, tile, tile + 1, tile + 4, 2 * tile + 3, 3 * tile - 1]);
    if sizes.emulated {
        v.extend([33 * 2048 + 5, 33 * 4096 + 1]);
    } else {
        v.extend([40 * 4096 + 1, (1 << 20) + 3, (1 << 22) + 777]);
    }
    v
}

fn check_one<T: Check, Op: ReduceOp<T>>(
    module: &KernelModule,
    stream: &CudaStream,
    name: &str,
    host: &[T],
    input: &DeviceBuffer<T>,
    op: Op,
) -> Result<usize, String> {
    let n = host.len();
    let mut out = DeviceBuffer::<T>::zeroed(stream, n).map_err(|e| e.to_string())?;
    for inclusive in [true, false] {
        let kind = if inclusive { "inclusive" } else { "exclusive" };
        let run = if inclusive { scan::inclusive_scan::<T, Op> } else { scan::exclusive_scan::<T, Op> };
        run(module, stream, input, &mut out, op).map_err(|e| format!("{kind} scan {name}: {e}"))?;
        let got = out.to_host_vec(stream).map_err(|e| e.to_string())?;
        let (mut acc, mut abs) = (op.identity(), 0.0f64);
        for i in 0..n {
            let before = acc;
            acc = op.combine(acc, host[i]);
            abs += host[i].magnitude();
            let want = if inclusive { acc } else { before };
            if !T::agrees(got[i], want, abs, i + 1) {
                return Err(format!(
                    "{kind} scan {name} of {n} {}: element {i}: GPU {:?}, CPU {want:?}",
                    std::any::type_name::<T>(),
                    got[i]
                ));
            }
        }
    }
    Ok(2)
}

fn check_type<T: Check>(module: &KernelModule, stream: &CudaStream, sizes: Sizes, seed: u64) -> Result<usize, String> {
    let mut checks = 0;
    for n in lengths(sizes, scan::tile_elements::<T>()) {
        let host = samples::<T>(n, seed + n as u64);
        let input = DeviceBuffer::from_host(stream, &host).map_err(|e| e.to_string())?;
        checks += check_one(module, stream, "Sum", &host, &input, Sum)?;
        checks += check_one(module, stream, "Max", &host, &input, Max)?;
    }
    Ok(checks)
}

/// Both ways a tile finds its number, on one stream, each pass after
/// passes of the other kind (the kept status words' tickets and epochs):
/// block order (the default) and the tile counter (`ticket`), and block
/// order with the L2 prefetch of a later tile, over several tiles and more
/// than a look-back window of them on the GPU.
fn check_tile_order<T: Check>(module: &KernelModule, stream: &CudaStream, sizes: Sizes, seed: u64) -> Result<usize, String> {
    let tile = scan::tile_elements::<T>();
    let mut lens = vec![tile + 1, 3 * tile - 1];
    if !sizes.emulated {
        lens.extend([70 * tile + 5, (1 << 22) + 777]);
    }
    let default = scan::ScanTuning::scan_from_env();
    // The L2 prefetch (one tile ahead per multiprocessor, at every size:
    // these inputs fit in a GPU's L2) asks for sectors or lines up to the
    // input's end and past no tile boundary it should not; in bulk (one
    // request per tile on sm_90 and newer, the default) for the tile's
    // part inside the input; and none at all.
    let orders = [
        ("block order", default.parse_scan("check", "block-order")),
        ("ticket", default.parse_scan("check", "ticket")),
        ("no prefetch", default.parse_scan("check", "block-order,prefetch=0,wide-prefetch=0")),
        ("prefetch by sectors", default.parse_scan("check", "block-order,prefetch=8,wide-prefetch=8,prefetch-step=32,prefetch-when=always")),
        ("prefetch by lines", default.parse_scan("check", "block-order,prefetch=8,wide-prefetch=8,prefetch-step=128,prefetch-when=always")),
        ("prefetch in bulk", default.parse_scan("check", "block-order,prefetch=8,wide-prefetch=8,prefetch-step=bulk,prefetch-when=always")),
    ];
    let mut checks = 0;
    for n in lens {
        let host = samples::<T>(n, seed + n as u64);
        let input = DeviceBuffer::from_host(stream, &host).map_err(|e| e.to_string())?;
        let mut out = DeviceBuffer::<T>::zeroed(stream, n).map_err(|e| e.to_string())?;
        for (name, tuning) in orders.iter().chain(orders.iter()) {
            scan::scan_with_tuning(module, stream, &input, &mut out, Sum, true, tuning).map_err(|e| format!("scan ({name}): {e}"))?;
            let got = out.to_host_vec(stream).map_err(|e| e.to_string())?;
            let (mut acc, mut abs) = (<Sum as ReduceOp<T>>::identity(&Sum), 0.0f64);
            for i in 0..n {
                acc = Sum.combine(acc, host[i]);
                abs += host[i].magnitude();
                if !T::agrees(got[i], acc, abs, i + 1) {
                    return Err(format!(
                        "inclusive scan ({name}) of {n} {}: element {i}: GPU {:?}, CPU {acc:?}",
                        std::any::type_name::<T>(),
                        got[i]
                    ));
                }
            }
            checks += 1;
        }
    }
    Ok(checks)
}

/// Runs the scan checks.
pub fn run(ctx: &Arc<CudaContext>, module: &KernelModule, sizes: Sizes) -> Result<usize, String> {
    let stream = ctx.default_stream();
    let mut checks = 0;
    checks += check_type::<u32>(module, &stream, sizes, 11)?;
    checks += check_type::<i32>(module, &stream, sizes, 12)?;
    checks += check_type::<f32>(module, &stream, sizes, 13)?;
    checks += check_type::<u64>(module, &stream, sizes, 14)?;
    if !sizes.emulated {
        checks += check_type::<i64>(module, &stream, sizes, 15)?;
        checks += check_type::<f64>(module, &stream, sizes, 16)?;
    }
    // One large input on the GPU (the CPU side is a debug build).
    if !sizes.emulated {
        let host = samples::<u32>((1 << 24) + 777, 18);
        let input = DeviceBuffer::from_host(&stream, &host).map_err(|e| e.to_string())?;
        checks += check_one(module, &stream, "Sum", &host, &input, Sum)?;
    }
    // An operator that is not commutative: the latest non-zero value.
    let last_nonzero = FnOp::new(0u32, |a: u32, b: u32| if b != 0 { b } else { a });
    for n in lengths(sizes, scan::tile_elements::<u32>()) {
        let host: Vec<u32> = samples::<u32>(n, 77 + n as u64).into_iter().map(|x| if x % 4 == 0 { x } else { 0 }).collect();
        let input = DeviceBuffer::from_host(&stream, &host).map_err(|e| e.to_string())?;
        checks += check_one(module, &stream, "last non-zero (FnOp)", &host, &input, last_nonzero)?;
    }
    // The look-back's windows (64 tiles, two per lane): tile 100 or 300 over
    // prepared flags, the nearest inclusive tile in the first window (in a
    // lane's nearer or farther tile), the second, or only tile 0 (up to five
    // windows, the last reaching before the first tile); with an operator
    // that is not commutative, so the order of the windows shows.
    let last_nonzero = FnOp::new(0u32, |a: u32, b: u32| if b != 0 { b } else { a });
    for (tile, nearest) in [(100usize, 99usize), (100, 98), (100, 80), (100, 37), (100, 36), (100, 35), (100, 5), (100, 0), (300, 150), (300, 0)] {
        let inclusive: Vec<bool> = (0..tile).map(|t| t == 0 || t == nearest).collect();
        let partials: Vec<u32> = (0..tile as u32).map(|t| if t % 5 == 3 { 0 } else { t * 7 + 1 }).collect();
        let inclusives: Vec<u32> = (0..tile as u32).map(|t| 100_000 + t).collect();
        for (name, sum) in [("Sum", true), ("last non-zero", false)] {
            let cpu = |a: u32, b: u32| if sum { a.wrapping_add(b) } else { last_nonzero.combine(a, b) };
            let want = partials[nearest + 1..].iter().fold(inclusives[nearest], |a, &b| cpu(a, b));
            let got = if sum {
                scan::look_back_probe_run(module, &stream, &inclusive, &partials, &inclusives, Sum)
            } else {
                scan::look_back_probe_run(module, &stream, &inclusive, &partials, &inclusives, last_nonzero)
            }
            .map_err(|e| e.to_string())?;
            if got != want {
                return Err(format!("look-back of tile {tile} ({name}), nearest inclusive tile {nearest}: GPU {got}, CPU {want}"));
            }
            checks += 1;
        }
    }
    // Tiles before the nearest inclusive one left unpublished: the
    // look-back must not wait for them (it would hang): in a lane below the
    // nearest inclusive tile's, in the same lane before it, in a window
    // the look-back never reads, and in the window before.
    for (nearest, unpublished) in [(80usize, &[79usize, 60, 37][..]), (81, &[80, 40]), (80, &[20, 5]), (30, &[29, 3])] {
        let tile = 100;
        let inclusive: Vec<bool> = (0..tile).map(|t| t == 0 || t == nearest).collect();
        let partials: Vec<u32> = (0..tile as u32).map(|t| t * 7 + 1).collect();
        let inclusives: Vec<u32> = (0..tile as u32).map(|t| 100_000 + t).collect();
        let want = partials[nearest + 1..].iter().fold(inclusives[nearest], |a, &b| a.wrapping_add(b));
        let got = scan::look_back_probe_run_with_gaps(module, &stream, &inclusive, &partials, &inclusives, unpublished, Sum)
            .map_err(|e| e.to_string())?;
        if got != want {
            return Err(format!("look-back of tile {tile}, nearest inclusive tile {nearest}, {unpublished:?} unpublished: GPU {got}, CPU {want}"));
        }
        checks += 1;
    }
    // 8-byte totals travel as two status words (halves of the total, each
    // beside the flag): totals above 2^32 show both halves.
    for nearest in [99usize, 37, 0] {
        let tile = 100;
        let inclusive: Vec<bool> = (0..tile).map(|t| t == 0 || t == nearest).collect();
        let partials: Vec<u64> = (0..tile as u64).map(|t| (t << 33) + t * 7 + 1).collect();
        let inclusives: Vec<u64> = (0..tile as u64).map(|t| (t << 40) + 100_000 + t).collect();
        let want = partials[nearest + 1..].iter().fold(inclusives[nearest], |a, &b| a.wrapping_add(b));
        let got = scan::look_back_probe_run(module, &stream, &inclusive, &partials, &inclusives, Sum).map_err(|e| e.to_string())?;
        if got != want {
            return Err(format!("look-back of tile {tile} (u64 Sum), nearest inclusive tile {nearest}: GPU {got}, CPU {want}"));
        }
        checks += 1;
    }
    checks += check_tile_order::<u32>(module, &stream, sizes, 31)?;
    checks += check_tile_order::<u64>(module, &stream, sizes, 32)?;
    // The output must be as long as the input.
    let input = DeviceBuffer::from_host(&stream, &[1u32, 2, 3]).map_err(|e| e.to_string())?;
    let mut short = DeviceBuffer::<u32>::zeroed(&stream, 2).map_err(|e| e.to_string())?;
    match scan::inclusive_scan(module, &stream, &input, &mut short, Sum) {
        Err(cuda_prims::PrimsError::LengthMismatch { expected: 3, found: 2, .. }) => checks += 1,
        other => return Err(format!("inclusive_scan into a shorter output: expected a length error, got {other:?}")),
    }
    Ok(checks)
}
