//! Radix sort (keys, pairs; u32, i32, f32, u64, f64; both orders) against the
//! CPU's stable sort by the same key order: exact, bits included.

use crate::Sizes;
use cuda_core::{CudaContext, DeviceBuffer, DeviceRepr};
use cuda_host::KernelModule;
use cuda_prims::sort::{sort_keys, sort_on_cpu, sort_pairs, tile_len, Order, RadixKey};
use std::sync::Arc;

/// Deterministic pseudo-random 64-bit words (xorshift64).
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }
    /// The next word.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A key type of the checks: how to make keys from random words.
trait TestKey: RadixKey + DeviceRepr + std::fmt::Debug {
    const NAME: &'static str;
    fn from_word(w: u64) -> Self;
    /// The key's own bits (f32's zeros of both signs differ here).
    fn bits(self) -> u64;
    fn same_bits(self, other: Self) -> bool {
        self.bits() == other.bits()
    }
}
impl TestKey for u32 {
    const NAME: &'static str = "u32";
    fn bits(self) -> u64 {
        self as u64
    }
    fn from_word(w: u64) -> Self {
        w as u32
    }
}
impl TestKey for i32 {
    const NAME: &'static str = "i32";
    fn bits(self) -> u64 {
        self as u32 as u64
    }
    fn from_word(w: u64) -> Self {
        w as i32
    }
}
impl TestKey for u64 {
    const NAME: &'static str = "u64";
    fn bits(self) -> u64 {
        self
    }
    fn from_word(w: u64) -> Self {
        w
    }
}
impl TestKey for f32 {
    const NAME: &'static str = "f32";
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn from_word(w: u64) -> Self {
        // Mostly ordinary numbers of both signs, with zeros of both signs,
        // infinities and NaNs of both signs mixed in.
        match w % 16 {
            0 => 0.0,
            1 => -0.0,
            2 => f32::INFINITY,
            3 => f32::NEG_INFINITY,
            4 => f32::from_bits(0x7FC0_0000 | (w >> 40) as u32 & 0xFF),
            5 => f32::from_bits(0xFFC0_0000 | (w >> 40) as u32 & 0xFF),
            _ => ((w >> 32) as i32 as f32) / 65536.0,
        }
    }
}

impl TestKey for f64 {
    const NAME: &'static str = "f64";
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn from_word(w: u64) -> Self {
        ((w >> 32) as i32 as f64) / 65536.0
    }
}

/// Which zeros a set of float keys holds: the scatter takes a path of its
/// own (every digit reads `-0.0` as `+0.0`) only when a key is `-0.0`.
#[derive(Clone, Copy, Debug)]
enum Zeros {
    /// Only `+0.0`: the usual path.
    Plus,
    /// Only `-0.0`.
    Minus,
    /// Both, mixed: equal keys, which keep their input order and bits.
    Both,
}

/// A float type's keys at the edges of its order: zeros, infinities, NaNs
/// of both signs (quiet and signalling, with payloads), subnormals, the
/// smallest normals, the extremes and their neighbours.
trait BoundaryKey: TestKey {
    fn specials() -> Vec<Self>;
    fn zero(minus: bool) -> Self;
}
impl BoundaryKey for f32 {
    fn specials() -> Vec<f32> {
        let bits = [
            0x7F80_0000u32, 0xFF80_0000, 0x7FC0_0000, 0xFFC0_0000, 0x7FFF_FFFF, 0xFFFF_FFFF, 0x7F80_0001, 0xFF80_0001,
            0x7FBF_FFFF, 0x0000_0001, 0x8000_0001, 0x007F_FFFF, 0x807F_FFFF, 0x0080_0000, 0x8080_0000, 0x7F7F_FFFF,
            0xFF7F_FFFF, 0x3F80_0000, 0xBF80_0000, 0x0000_0100, 0x8000_0100,
        ];
        bits.iter().map(|&b| f32::from_bits(b)).collect()
    }
    fn zero(minus: bool) -> f32 {
        if minus { -0.0 } else { 0.0 }
    }
}
impl BoundaryKey for f64 {
    fn specials() -> Vec<f64> {
        let bits = [
            0x7FF0_0000_0000_0000u64, 0xFFF0_0000_0000_0000, 0x7FF8_0000_0000_0000, 0xFFF8_0000_0000_0000,
            0x7FFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 0x7FF0_0000_0000_0001, 0x0000_0000_0000_0001,
            0x8000_0000_0000_0001, 0x000F_FFFF_FFFF_FFFF, 0x800F_FFFF_FFFF_FFFF, 0x0010_0000_0000_0000,
            0x8010_0000_0000_0000, 0x7FEF_FFFF_FFFF_FFFF, 0xFFEF_FFFF_FFFF_FFFF, 0x3FF0_0000_0000_0000,
        ];
        bits.iter().map(|&b| f64::from_bits(b)).collect()
    }
    fn zero(minus: bool) -> f64 {
        if minus { -0.0 } else { 0.0 }
    }
}

/// Float keys at the edges of the order, with zeros as `zeros` says, in
/// both orders, keys and pairs, at sizes that end mid-tile: exact bits,
/// values in input order among equal keys.
fn boundary<K: BoundaryKey>(ctx: &Arc<CudaContext>, module: &KernelModule, lens: &[usize], rng: &mut Rng) -> Result<usize, String> {
    let specials = K::specials();
    let mut checks = 0;
    for &n in lens {
        for zeros in [Zeros::Plus, Zeros::Minus, Zeros::Both] {
            // A quarter zeros, a quarter specials, half ordinary numbers.
            let keys: Vec<K> = (0..n)
                .map(|i| {
                    let w = rng.next();
                    match w % 4 {
                        0 => K::zero(match zeros {
                            Zeros::Plus => false,
                            Zeros::Minus => true,
                            Zeros::Both => i % 2 == 1 || (w >> 9) & 3 == 0,
                        }),
                        1 => specials[(w >> 8) as usize % specials.len()],
                        _ => K::from_word(w),
                    }
                })
                .collect();
            for order in [Order::Ascending, Order::Descending] {
                checks += check_keys(ctx, module, &keys, &format!("{} boundary n={n} zeros {zeros:?} {order:?}", K::NAME), order)?;
            }
        }
    }
    Ok(checks)
}

/// The shapes of input every size is checked with.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Random,
    /// Few distinct keys: long runs of equal digits, stability matters.
    FewDistinct,
    AllEqual,
    Sorted,
    Reversed,
}

fn make_keys<K: TestKey>(n: usize, shape: Shape, rng: &mut Rng) -> Vec<K> {
    let mut keys: Vec<K> = match shape {
        Shape::Random | Shape::Sorted | Shape::Reversed => (0..n).map(|_| K::from_word(rng.next())).collect(),
        Shape::FewDistinct => (0..n).map(|_| K::from_word(rng.next() % 5 * 0x0101_0101_0101_0101)).collect(),
        Shape::AllEqual => vec![K::from_word(0x8765_4321_1234_5678); n],
    };
    match shape {
        Shape::Sorted => keys = sort_on_cpu::<K, u32>(&keys, &[], Order::Ascending).0,
        Shape::Reversed => keys = sort_on_cpu::<K, u32>(&keys, &[], Order::Descending).0,
        _ => {}
    }
    keys
}

/// One sort of keys (and pairs with u32 indices as values) of `n` keys.
fn check<K: TestKey>(
    ctx: &Arc<CudaContext>,
    module: &KernelModule,
    n: usize,
    shape: Shape,
    order: Order,
    rng: &mut Rng,
) -> Result<usize, String> {
    let keys = make_keys::<K>(n, shape, rng);
    check_keys(ctx, module, &keys, &format!("{} n={n} {shape:?} {order:?}", K::NAME), order)
}

/// One sort of `keys` (and pairs with u32 indices as values) against the
/// CPU's; `what` names the check in an error.
fn check_keys<K: TestKey>(ctx: &Arc<CudaContext>, module: &KernelModule, keys: &[K], what: &str, order: Order) -> Result<usize, String> {
    let stream = ctx.default_stream();
    let n = keys.len();
    let values: Vec<u32> = (0..n as u32).collect();
    let (cpu_keys, cpu_values) = sort_on_cpu(keys, &values, order);
    let e = |x: &dyn std::fmt::Display| format!("{what}: {x}");

    let d_keys = DeviceBuffer::from_host(&stream, keys).map_err(|x| e(&x))?;
    let mut d_out = DeviceBuffer::<K>::zeroed(&stream, n).map_err(|x| e(&x))?;
    sort_keys(module, &stream, &d_keys, &mut d_out, order).map_err(|x| e(&x))?;
    let gpu = d_out.to_host_vec(&stream).map_err(|x| e(&x))?;
    if let Some(i) = (0..n).find(|&i| !gpu[i].same_bits(cpu_keys[i])) {
        return Err(e(&format!("sort_keys: key {i}: GPU {:?} CPU {:?}", gpu[i], cpu_keys[i])));
    }

    let d_values = DeviceBuffer::from_host(&stream, &values).map_err(|x| e(&x))?;
    let mut d_values_out = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
    sort_pairs(module, &stream, &d_keys, &d_values, &mut d_out, &mut d_values_out, order).map_err(|x| e(&x))?;
    let gpu = d_out.to_host_vec(&stream).map_err(|x| e(&x))?;
    let gpu_values = d_values_out.to_host_vec(&stream).map_err(|x| e(&x))?;
    if let Some(i) = (0..n).find(|&i| !gpu[i].same_bits(cpu_keys[i]) || gpu_values[i] != cpu_values[i]) {
        return Err(e(&format!(
            "sort_pairs: pair {i}: GPU ({:?}, {}) CPU ({:?}, {})",
            gpu[i], gpu_values[i], cpu_keys[i], cpu_values[i]
        )));
    }
    Ok(2)
}

/// Every key type, shape and order at the boundary sizes; on a GPU also
/// larger sizes, and two types at 2^24 + 12345 (the CPU's sort of a debug
/// build is what takes the time there).
pub fn run(ctx: &Arc<CudaContext>, module: &KernelModule, sizes: Sizes) -> Result<usize, String> {
    let mut rng = Rng::new(0x5EED_0F50_27ED);
    // Sizes as functions of the key type's tiles: keys alone (`k`) and
    // with u32 values (`p`), which differ for 4-byte keys.
    type Len = fn(usize, usize) -> usize;
    let small: [Len; 8] = [|_, _| 0, |_, _| 1, |_, _| 2, |_, _| 33, |_, p| p - 1, |k, _| k - 1, |k, _| k + 1, |_, p| 2 * p + 7];
    let gpu: [Len; 12] = [
        |_, _| 0,
        |_, _| 1,
        |_, _| 2,
        |_, _| 1000,
        |_, p| p - 1,
        |_, p| p,
        |_, p| p + 1,
        |k, _| k - 1,
        |k, _| k,
        |k, _| k + 1,
        |k, _| 3 * k + 5,
        |_, _| 100_003,
    ];
    let emulated = sizes.emulated;
    let lens: &[Len] = if emulated { &small } else { &gpu };
    let shapes = [Shape::Random, Shape::FewDistinct, Shape::AllEqual, Shape::Sorted, Shape::Reversed];
    let mut checks = misuse(ctx, module)? + look_back(ctx, module)?;
    for len in lens {
        for (k, &shape) in shapes.iter().enumerate() {
            // Emulated: every shape once per size, the types and orders in turn.
            let orders: &[Order] = if emulated { &[[Order::Ascending, Order::Descending][k % 2]] } else { &[Order::Ascending, Order::Descending] };
            for &order in orders {
                let pick = if emulated { Some(k % 4) } else { None };
                if pick.is_none() || pick == Some(0) {
                    checks += check::<u32>(ctx, module, len(tile_len(4, 0), tile_len(4, 4)), shape, order, &mut rng)?;
                }
                if pick.is_none() || pick == Some(1) {
                    checks += check::<f32>(ctx, module, len(tile_len(4, 0), tile_len(4, 4)), shape, order, &mut rng)?;
                }
                if pick.is_none() || pick == Some(2) {
                    checks += check::<u64>(ctx, module, len(tile_len(8, 0), tile_len(8, 4)), shape, order, &mut rng)?;
                }
                if pick.is_none() || pick == Some(3) {
                    checks += check::<i32>(ctx, module, len(tile_len(4, 0), tile_len(4, 4)), shape, order, &mut rng)?;
                }
            }
        }
    }
    // Floats at the edges of the order, each set of zeros: sizes that end
    // mid-tile (two tiles and a bit, for the look-back) and one short tile.
    let (k4, p4, k8) = (tile_len(4, 0), tile_len(4, 4), tile_len(8, 0));
    checks += boundary::<f32>(ctx, module, &[33, k4 + 5, 2 * p4 + 7], &mut rng)?;
    checks += boundary::<f64>(ctx, module, &[k8 + 3], &mut rng)?;
    if !emulated {
        checks += boundary::<f32>(ctx, module, &[3 * k4 + 100, 100_003], &mut rng)?;
        checks += check::<u32>(ctx, module, (1 << 24) + 12345, Shape::Random, Order::Ascending, &mut rng)?;
        checks += check::<f32>(ctx, module, (1 << 22) + 3, Shape::Random, Order::Descending, &mut rng)?;
        checks += check::<u64>(ctx, module, (1 << 22) + 5, Shape::FewDistinct, Order::Ascending, &mut rng)?;
    }
    Ok(checks)
}

/// Misuse is refused before anything runs, with an error that says so.
fn misuse(ctx: &Arc<CudaContext>, module: &KernelModule) -> Result<usize, String> {
    use cuda_prims::PrimsError;
    let stream = ctx.default_stream();
    let keys = DeviceBuffer::from_host(&stream, &[3u32, 1, 2]).map_err(|e| e.to_string())?;
    let mut short = DeviceBuffer::<u32>::zeroed(&stream, 2).map_err(|e| e.to_string())?;
    match sort_keys(module, &stream, &keys, &mut short, Order::Ascending) {
        Err(PrimsError::LengthMismatch { what: "keys_out", expected: 3, found: 2 }) => {}
        other => return Err(format!("sort_keys into a short output: {other:?}")),
    }
    let values = DeviceBuffer::from_host(&stream, &[0u32; 2]).map_err(|e| e.to_string())?;
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 3).map_err(|e| e.to_string())?;
    match sort_pairs(module, &stream, &keys, &values, &mut out, &mut short, Order::Ascending) {
        Err(e @ PrimsError::LengthMismatch { what: "values_in", .. }) if e.to_string().contains("must have 3") => {}
        other => return Err(format!("sort_pairs with short values: {other:?}")),
    }
    let wide = DeviceBuffer::from_host(&stream, &[[0u64; 2]; 3]).map_err(|e| e.to_string())?;
    let mut wide_out = DeviceBuffer::from_host(&stream, &[[0u64; 2]; 3]).map_err(|e| e.to_string())?;
    match sort_pairs(module, &stream, &keys, &wide, &mut out, &mut wide_out, Order::Ascending) {
        Err(PrimsError::ValueTooWide { size: 16 }) => {}
        other => return Err(format!("sort_pairs with 16-byte values: {other:?}")),
    }
    Ok(3)
}

/// The look-back of one digit over long runs of tiles with only their own
/// counts published, in every window width: in a running sort most
/// look-backs end in their first window (in the emulator, always).
fn look_back(ctx: &Arc<CudaContext>, module: &KernelModule) -> Result<usize, String> {
    use cuda_prims::sort::{look_back_probe_run, status_word, SortTuning};
    let stream = ctx.default_stream();
    let mut rng = Rng::new(0x100C_BAC5);
    let mut checks = 0;
    for window in 1..=4 {
        let tuning = SortTuning { window, ..SortTuning::default() };
        for tiles in [1usize, 2, 3, 4, 5, 7, 9, 13] {
            // Inclusive tiles: 0 always; in the second half of the patterns
            // one more at a random place, so the look-back stops there.
            for pattern in 0..4 {
                let extra = if pattern >= 2 { Some((rng.next() as usize) % tiles) } else { None };
                let mut statuses = Vec::with_capacity(tiles);
                let mut want = 0u32;
                let mut stopped = false;
                let counts: Vec<u32> = (0..tiles).map(|_| (rng.next() % 5000) as u32).collect();
                for t in 0..tiles {
                    statuses.push(status_word(t == 0 || extra == Some(t), counts[t]));
                }
                for t in (0..tiles).rev() {
                    if !stopped {
                        want += counts[t];
                        stopped = t == 0 || extra == Some(t);
                    }
                }
                let got = look_back_probe_run(module, &stream, &statuses, tuning).map_err(|e| e.to_string())?;
                if got != want {
                    return Err(format!("look-back, window {window}, {tiles} tiles, inclusive also at {extra:?}: {got}, want {want}"));
                }
                checks += 1;
            }
        }
    }
    Ok(checks)
}
