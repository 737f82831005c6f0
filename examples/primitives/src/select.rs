//! `cuda_prims::select` against the CPU: select_if, select_flagged and
//! partition_if over several element types and sizes (tile boundaries,
//! more than 32 tiles, none and all selected), and selections and
//! partitions under fixed keep patterns (runs across tiles, alternating,
//! sparse) that check every element's place.

use crate::inputs::{samples, Sample};
use crate::Sizes;
use cuda_core::{CudaContext, CudaStream, DeviceBuffer};
use cuda_host::KernelModule;
use cuda_prims::op::Element;
use cuda_prims::select;
use std::sync::Arc;

/// The sizes a run checks: around tiles of 4096 and 2048 elements, and
/// around the tiles the selection of `T` takes now (`tile`: its default,
/// or what `OXIDE_PRIMS_SELECT` asks for): one vector short of or past a
/// tile, one element either side.
pub fn lengths(sizes: Sizes, tile: usize) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 31, 33, 255, 257, 2047, 2049, 4095, 4096, 4097, 3 * 4096 + 17];
    v.extend([tile - 4, tile - 1, tile, tile + 1, tile + 4, 2 * tile + 3, 3 * tile - 1]);
    if sizes.emulated {
        v.extend([33 * 2048 + 5, 33 * 4096 + 1]);
    } else {
        v.extend([(1 << 20) + 3, (1 << 22) + 777]);
    }
    v
}

trait Check: Element + Sample + PartialOrd {
    /// About `fraction` of the samples lie below the threshold.
    fn threshold(fraction: f64) -> Self;
}
impl Check for u32 {
    fn threshold(fraction: f64) -> Self {
        (fraction * u32::MAX as f64) as u32
    }
}
impl Check for i32 {
    fn threshold(fraction: f64) -> Self {
        (i32::MIN as f64 + fraction * u32::MAX as f64) as i32
    }
}
impl Check for u64 {
    fn threshold(fraction: f64) -> Self {
        (fraction * u64::MAX as f64) as u64
    }
}
impl Check for f32 {
    fn threshold(fraction: f64) -> Self {
        (2.0 * fraction - 1.0) as f32
    }
}

fn bits<T: Element>(v: &[T]) -> Vec<u64> {
    // Compared as bit patterns: -0.0 and NaN stay what they were.
    v.iter()
        .map(|x| {
            let mut b = 0u64;
            // SAFETY: T is 4 or 8 bytes of plain data.
            unsafe { std::ptr::copy_nonoverlapping(x as *const T as *const u8, &mut b as *mut u64 as *mut u8, std::mem::size_of::<T>()) };
            b
        })
        .collect()
}

fn check_type<T: Check>(module: &KernelModule, stream: &CudaStream, sizes: Sizes, seed: u64) -> Result<usize, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let name = std::any::type_name::<T>();
    let mut checks = 0;
    for n in lengths(sizes, select::tile_elements::<T>()) {
        let host = samples::<T>(n, seed + n as u64);
        let input = DeviceBuffer::from_host(stream, &host).map_err(|x| e(&x))?;
        let mut out = DeviceBuffer::<T>::zeroed(stream, n).map_err(|x| e(&x))?;
        for fraction in [0.0, 0.3, 1.01] {
            let t = T::threshold(fraction);
            let below = move |x: T| x < t;
            let want: Vec<T> = host.iter().copied().filter(|&x| x < t).collect();
            let kept = select::select_if(module, stream, &input, &mut out, below).map_err(|x| e(&x))?;
            let got = out.to_host_vec(stream).map_err(|x| e(&x))?;
            if kept != want.len() || bits(&got[..kept]) != bits(&want) {
                return Err(format!("select_if of {n} {name} (x < {t:?}): {kept} kept, CPU {}", want.len()));
            }
            let kept = select::partition_if(module, stream, &input, &mut out, below).map_err(|x| e(&x))?;
            let got = out.to_host_vec(stream).map_err(|x| e(&x))?;
            let mut want_part = want.clone();
            // The rejected: those the predicate refuses (NaN included), last first.
            want_part.extend(host.iter().copied().filter(|&x| !below(x)).rev());
            if kept != want.len() || bits(&got) != bits(&want_part) {
                return Err(format!("partition_if of {n} {name} (x < {t:?}): {kept} first, CPU {}", want.len()));
            }
            checks += 2;
        }
        let flags: Vec<u8> = (0..n).map(|i| (i % 3 == 0 || i % 7 == 0) as u8 * (i as u8 | 1)).collect();
        let flags_dev = DeviceBuffer::from_host(stream, &flags).map_err(|x| e(&x))?;
        let kept = select::select_flagged(module, stream, &input, &flags_dev, &mut out).map_err(|x| e(&x))?;
        let want: Vec<T> = host.iter().zip(&flags).filter(|(_, &f)| f != 0).map(|(&x, _)| x).collect();
        let got = out.to_host_vec(stream).map_err(|x| e(&x))?;
        if kept != want.len() || bits(&got[..kept]) != bits(&want) {
            return Err(format!("select_flagged of {n} {name}: {kept} kept, CPU {}", want.len()));
        }
        checks += 1;
    }
    Ok(checks)
}

/// Both ways a tile finds its number, on one stream, each pass after
/// passes of the other kind (the kept status words' tickets and epochs):
/// block order (the default) and the tile counter (`ticket`), over several
/// tiles and more than a look-back window of them on the GPU.
fn check_tile_order<T: Check>(module: &KernelModule, stream: &CudaStream, sizes: Sizes, seed: u64) -> Result<usize, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let tile = select::tile_elements::<T>();
    let mut lens = vec![tile + 1, 3 * tile - 1];
    if !sizes.emulated {
        lens.extend([70 * tile + 5, (1 << 22) + 777]);
    }
    let default = select::SelectTuning::from_env();
    let orders = [
        ("block order", default.parse("block-order")),
        ("ticket", default.parse("ticket")),
        ("block order, store=run", default.parse("block-order,store=run")),
        ("block order, no prefetch", default.parse("block-order,prefetch=0,wide-prefetch=0")),
        ("block order, prefetch by sectors", default.parse("block-order,prefetch=8,wide-prefetch=8,prefetch-step=32,prefetch-when=always")),
        ("block order, prefetch in bulk", default.parse("block-order,prefetch=8,wide-prefetch=8,prefetch-step=bulk,prefetch-when=always")),
    ];
    let t = T::threshold(0.5);
    let mut checks = 0;
    for n in lens {
        let host = samples::<T>(n, seed + n as u64);
        let want: Vec<T> = host.iter().copied().filter(|&x| x < t).collect();
        let input = DeviceBuffer::from_host(stream, &host).map_err(|x| e(&x))?;
        let mut out = DeviceBuffer::<T>::zeroed(stream, n).map_err(|x| e(&x))?;
        let mut count = DeviceBuffer::<u64>::zeroed(stream, 1).map_err(|x| e(&x))?;
        for (name, tuning) in orders.iter().chain(orders.iter()) {
            select::select_if_into_with_tuning(module, stream, &input, &mut out, &mut count, move |x: T| x < t, tuning)
                .map_err(|x| format!("select_if ({name}): {x}"))?;
            let kept = count.to_host_vec(stream).map_err(|x| e(&x))?[0] as usize;
            let got = out.to_host_vec(stream).map_err(|x| e(&x))?;
            if kept != want.len() || bits(&got[..kept]) != bits(&want) {
                return Err(format!("select_if ({name}) of {n} {} (x < {t:?}): {kept} kept, CPU {}", std::any::type_name::<T>(), want.len()));
            }
            checks += 1;
        }
    }
    Ok(checks)
}

/// An element type whose values say whether the pattern keeps them: the
/// pattern checks select by predicate on the value, so a predicate can
/// follow any pattern of indices.
trait Tagged: Element {
    /// The value at index `i`, kept or not (distinct for every `i`).
    fn tag(i: usize, keep: bool) -> Self;
    /// Whether `tag` made this value kept.
    fn kept(self) -> bool;
    /// A value no `tag` of the checked lengths makes.
    fn sentinel() -> Self;
}
impl Tagged for u32 {
    fn tag(i: usize, keep: bool) -> Self {
        (i as u32) << 1 | keep as u32
    }
    fn kept(self) -> bool {
        self & 1 != 0
    }
    fn sentinel() -> Self {
        u32::MAX - 1
    }
}
impl Tagged for i32 {
    fn tag(i: usize, keep: bool) -> Self {
        -((i as i32) << 1 | keep as i32) - 2
    }
    fn kept(self) -> bool {
        self & 1 != 0
    }
    fn sentinel() -> Self {
        0
    }
}
impl Tagged for f32 {
    fn tag(i: usize, keep: bool) -> Self {
        ((i as u32) << 1 | keep as u32) as f32
    }
    fn kept(self) -> bool {
        (self as u32) & 1 != 0
    }
    fn sentinel() -> Self {
        -1.0
    }
}
impl Tagged for u64 {
    fn tag(i: usize, keep: bool) -> Self {
        // The high half too: a store that moved only 4 of the 8 bytes shows.
        (i as u64) << 40 | (i as u64) << 1 | keep as u64
    }
    fn kept(self) -> bool {
        self & 1 != 0
    }
    fn sentinel() -> Self {
        u64::MAX - 1
    }
}

/// The keep patterns of the two-phase store's regression checks, by name:
/// whether element `i` of `n` is kept (`tile`: elements per tile).
const PATTERNS: &[(&str, fn(usize, usize, usize) -> bool)] = &[
    ("all kept", |_, _, _| true),
    ("none kept", |_, _, _| false),
    ("alternating", |i, _, _| i % 2 == 0),
    ("one run across two tile boundaries", |i, _, t| (t / 2..2 * t + t / 3).contains(&i)),
    ("runs of 37 kept, 29 not", |i, _, _| i % 66 < 37),
    ("sparse", |i, _, _| i % 97 == 5),
    ("only the first and the last", |i, n, _| i == 0 || i + 1 == n),
];

/// select_if and partition_if of `T` under every pattern, at lengths around
/// the tile (not multiples of it, and one), against the CPU; the output
/// past the kept elements of a selection must stay untouched.
/// The tunings of each way kept elements reach memory
/// (`select::Store`), on the tuning in force.
fn stores() -> [(&'static str, select::SelectTuning); 3] {
    let now = select::SelectTuning::from_env();
    [("store=direct", now.parse("store=direct")), ("store=warp", now.parse("store=warp")), ("store=run", now.parse("store=run"))]
}

/// Whether `out` holds `want` in its first `kept` elements and the
/// sentinel after them (nothing written past the selection).
fn check_stored<T: Tagged>(out: &DeviceBuffer<T>, kept: usize, want: &[T], stream: &CudaStream) -> Result<(), String> {
    let got = out.to_host_vec(stream).map_err(|x| x.to_string())?;
    let n = got.len();
    if kept != want.len() || bits(&got[..kept.min(n)]) != bits(want) {
        return Err(format!("{kept} kept, CPU {}, or the elements differ", want.len()));
    }
    if got[kept..].iter().any(|x| bits(&[*x]) != bits(&[T::sentinel()])) {
        return Err(format!("wrote past the {kept} kept elements"));
    }
    Ok(())
}

fn check_patterns<T: Tagged>(module: &KernelModule, stream: &CudaStream) -> Result<usize, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let name = std::any::type_name::<T>();
    let tile = select::tile_elements::<T>();
    let mut checks = 0;
    for n in [1, 33, tile - 1, tile, 3 * tile + 5] {
        for (pattern, keeps) in PATTERNS {
            let host: Vec<T> = (0..n).map(|i| T::tag(i, keeps(i, n, tile))).collect();
            let input = DeviceBuffer::from_host(stream, &host).map_err(|x| e(&x))?;
            let want: Vec<T> = host.iter().copied().filter(|x| x.kept()).collect();
            let mut out = DeviceBuffer::from_host(stream, &vec![T::sentinel(); n]).map_err(|x| e(&x))?;
            let kept = select::select_if(module, stream, &input, &mut out, |x: T| x.kept()).map_err(|x| e(&x))?;
            check_stored(&out, kept, &want, stream).map_err(|why| format!("select_if of {n} {name} ({pattern}): {why}"))?;
            // Every way of storing, whatever the one in force.
            for (how, tuning) in stores() {
                let mut out = DeviceBuffer::from_host(stream, &vec![T::sentinel(); n]).map_err(|x| e(&x))?;
                let mut count = DeviceBuffer::<u64>::zeroed(stream, 1).map_err(|x| e(&x))?;
                select::select_if_into_with_tuning(module, stream, &input, &mut out, &mut count, |x: T| x.kept(), &tuning)
                    .map_err(|x| e(&x))?;
                let kept = count.to_host_vec(stream).map_err(|x| e(&x))?[0] as usize;
                check_stored(&out, kept, &want, stream).map_err(|why| format!("select_if ({how}) of {n} {name} ({pattern}): {why}"))?;
                checks += 1;
            }
            let kept = select::partition_if(module, stream, &input, &mut out, |x: T| x.kept()).map_err(|x| e(&x))?;
            let got = out.to_host_vec(stream).map_err(|x| e(&x))?;
            let mut want_part = want.clone();
            want_part.extend(host.iter().copied().filter(|x| !x.kept()).rev());
            if kept != want.len() || bits(&got) != bits(&want_part) {
                let first_bad = (0..n).find(|&i| bits(&[got[i]]) != bits(&[want_part[i]]));
                return Err(format!(
                    "partition_if of {n} {name} ({pattern}): {kept} first, CPU {}; first difference at {first_bad:?}",
                    want.len()
                ));
            }
            checks += 2;
        }
    }
    Ok(checks)
}

/// Runs the select checks.
pub fn run(ctx: &Arc<CudaContext>, module: &KernelModule, sizes: Sizes) -> Result<usize, String> {
    let stream = ctx.default_stream();
    let mut checks = 0;
    checks += check_type::<u32>(module, &stream, sizes, 21)?;
    checks += check_type::<f32>(module, &stream, sizes, 22)?;
    checks += check_type::<u64>(module, &stream, sizes, 23)?;
    if !sizes.emulated {
        checks += check_type::<i32>(module, &stream, sizes, 24)?;
    }
    checks += check_tile_order::<u32>(module, &stream, sizes, 25)?;
    checks += check_tile_order::<u64>(module, &stream, sizes, 26)?;
    // The two-phase store's regression checks (issue 23).
    checks += check_patterns::<u32>(module, &stream)?;
    checks += check_patterns::<f32>(module, &stream)?;
    checks += check_patterns::<u64>(module, &stream)?;
    checks += check_patterns::<i32>(module, &stream)?;
    // Flags must be as long as the input.
    let input = DeviceBuffer::from_host(&stream, &[1u32, 2, 3]).map_err(|e| e.to_string())?;
    let flags = DeviceBuffer::from_host(&stream, &[1u8, 0]).map_err(|e| e.to_string())?;
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 3).map_err(|e| e.to_string())?;
    match select::select_flagged(module, &stream, &input, &flags, &mut out) {
        Err(cuda_prims::PrimsError::LengthMismatch { expected: 3, found: 2, .. }) => checks += 1,
        other => return Err(format!("select_flagged with 2 flags for 3 elements: expected a length error, got {other:?}")),
    }
    Ok(checks)
}
