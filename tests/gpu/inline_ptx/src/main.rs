//! GPU test: inline PTX (`cuda_device::ptx_asm!`) with every kind of
//! operand, against a CPU model of each instruction.
//!
//! Each thread runs a set of PTX blocks on its own inputs: `prmt` with a
//! run-time selector, `bfind` (unsigned and signed), `lop3` with immediate
//! lookup tables (`const` operands), `mov %laneid`, a predicate output
//! (`setp`) and a predicate input (`selp`), 64-bit operands (`mul.hi.u64`,
//! `mad.lo.u64`), 16-bit operands (`mul.wide.u16`), `f32`/`f64` (`fma.rn`,
//! `sqrt.rn`), an in-out operand, a load through a pointer operand
//! (`readonly`) and a store through one (default options: memory and side
//! effects), and a PTX block with registers of its own (`{{ … }}`).
//!
//! Prints `PASS: N results matched` (exit 0), or each mismatch and `FAIL`
//! (exit 1). Runs on the GPU and on the PTX VM (`cargo oxide run --emulate`);
//! host-code emulation (`--emulate=host`) cannot run PTX and fails the
//! launch (the program checks that message when OXIDE_EMULATE=host).

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, ptx_asm, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// How many results each thread writes.
const RESULTS: usize = 16;

#[kernel]
pub fn inline_ptx(a: &[u32], b: &[u32], wide: &[u64], mut out: DisjointSlice<[u64; RESULTS]>, mut stored: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if i >= a.len() {
        return;
    }
    let (x, y, w) = (a[i], b[i], wide[i]);
    let r = &mut [0u64; RESULTS];

    let permuted: u32;
    let found_u: u32;
    let found_s: u32;
    let xor3: u32;
    let majority: u32;
    let lane: u32;
    let less: bool;
    let selected: u32;
    let high: u64;
    let mad: u64;
    let widened: u32;
    let fused: f32;
    let root: f64;
    let mut acc = x;
    let loaded: u32;
    let own_regs: u32;
    // SAFETY: each block reads its operands (and, for the load, a[i], which
    // the slice holds) and writes its outputs; the store writes this
    // thread's own element of `stored`.
    unsafe {
        ptx_asm!("prmt.b32 {d}, {a}, {b}, {s};", d = out(u32) permuted, a = in(u32) x, b = in(u32) y, s = in(u32) y ^ x.rotate_left(7), options(pure, nomem));
        ptx_asm!("bfind.u32 {0}, {1};", out(u32) found_u, in(u32) x >> (y % 32), options(pure, nomem));
        ptx_asm!("bfind.s32 {0}, {1};", out(u32) found_s, in(i32) (x as i32) >> (y % 32), options(pure, nomem));
        ptx_asm!("lop3.b32 {d}, {a}, {b}, {c}, {lut};", d = out(u32) xor3, a = in(u32) x, b = in(u32) y, c = in(u32) w as u32, lut = const 0x96, options(pure, nomem));
        ptx_asm!("lop3.b32 {d}, {a}, {b}, {c}, {lut};", d = out(u32) majority, a = in(u32) x, b = in(u32) y, c = in(u32) (w >> 32) as u32, lut = const 0xE8u8, options(pure, nomem));
        ptx_asm!("mov.u32 {0}, %laneid;", out(u32) lane, options(pure, nomem));
        ptx_asm!("setp.lt.u32 {p}, {a}, {b};", p = out(bool) less, a = in(u32) x, b = in(u32) y, options(pure, nomem));
        ptx_asm!("selp.b32 {d}, {a}, {b}, {p};", d = out(u32) selected, a = in(u32) x, b = in(u32) y, p = in(bool) x % 3 == 0, options(pure, nomem));
        ptx_asm!("mul.hi.u64 {d}, {a}, {b};", d = out(u64) high, a = in(u64) w, b = in(u64) w.rotate_left(17) | 1, options(pure, nomem));
        ptx_asm!("mad.lo.u64 {d}, {a}, {b}, {c};", d = out(u64) mad, a = in(u64) w, b = in(u64) x as u64, c = in(u64) y as u64, options(pure, nomem));
        ptx_asm!("mul.wide.u16 {d}, {a}, {b};", d = out(u32) widened, a = in(u16) x as u16, b = in(u16) (y >> 16) as u16, options(pure, nomem));
        ptx_asm!("fma.rn.f32 {d}, {a}, {b}, {c};", d = out(f32) fused, a = in(f32) x as f32 / 7.0, b = in(f32) y as f32 / 3.0, c = in(f32) -(w as f32), options(pure, nomem));
        ptx_asm!("sqrt.rn.f64 {d}, {a};", d = out(f64) root, a = in(f64) w as f64, options(pure, nomem));
        ptx_asm!("add.u32 {acc}, {acc}, {y};", acc = inout(u32) acc, y = in(u32) y, options(pure, nomem));
        ptx_asm!("ld.u32 {v}, [{p}];", v = out(u32) loaded, p = in(*const u32) a.as_ptr().add(i), options(pure, readonly));
        ptx_asm!("{{ .reg .b32 t; .reg .pred q; and.b32 t, {x}, 1; setp.ne.u32 q, t, 0; @q not.b32 t, {x}; @!q mov.b32 t, {y}; mov.b32 {d}, t; }}",
                 d = out(u32) own_regs, x = in(u32) x, y = in(u32) y, options(pure, nomem));
        if let Some(slot) = stored.get_mut(idx) {
            let p: *mut u32 = slot;
            ptx_asm!("st.u32 [{p}], {v};", p = in(*mut u32) p, v = in(u32) x.wrapping_mul(y));
        }
    }
    r[0] = permuted as u64;
    r[1] = found_u as u64;
    r[2] = found_s as u64;
    r[3] = xor3 as u64;
    r[4] = majority as u64;
    r[5] = lane as u64;
    r[6] = less as u64;
    r[7] = selected as u64;
    r[8] = high;
    r[9] = mad;
    r[10] = widened as u64;
    r[11] = fused.to_bits() as u64;
    r[12] = root.to_bits();
    r[13] = acc as u64;
    r[14] = loaded as u64;
    r[15] = own_regs as u64;
    if let Some(slot) = out.get_mut(idx) {
        *slot = *r;
    }
}

/// PTX's `prmt.b32` (default mode): each result byte picks one of the eight
/// bytes of {b, a} by the low three bits of its selector nibble, and with the
/// nibble's bit 3 set, replicates that byte's sign bit instead.
fn prmt(a: u32, b: u32, s: u32) -> u32 {
    let bytes = ((b as u64) << 32 | a as u64).to_le_bytes();
    (0..4).fold(0, |acc, k| {
        let nibble = (s >> (4 * k)) & 0xf;
        let byte = bytes[(nibble & 7) as usize];
        let v = if nibble & 8 != 0 { if byte & 0x80 != 0 { 0xff } else { 0 } } else { byte };
        acc | (v as u32) << (8 * k)
    })
}

/// `bfind.u32`: the bit position of the most significant 1, or all ones.
fn bfind_u(x: u32) -> u32 {
    if x == 0 { u32::MAX } else { 31 - x.leading_zeros() }
}

/// `bfind.s32`: the most significant bit that differs from the sign, or all ones.
fn bfind_s(x: i32) -> u32 {
    bfind_u(if x < 0 { !x as u32 } else { x as u32 })
}

/// `lop3.b32`: each result bit is bit (a·4 + b·2 + c) of the table.
fn lop3(a: u32, b: u32, c: u32, lut: u8) -> u32 {
    (0..32).fold(0, |acc, bit| {
        let index = ((a >> bit) & 1) << 2 | ((b >> bit) & 1) << 1 | ((c >> bit) & 1);
        acc | (((lut >> index) & 1) as u32) << bit
    })
}

fn expected(i: usize, x: u32, y: u32, w: u64) -> [u64; RESULTS] {
    let own = if x & 1 != 0 { !x } else { y };
    [
        prmt(x, y, y ^ x.rotate_left(7)) as u64,
        bfind_u(x >> (y % 32)) as u64,
        bfind_s((x as i32) >> (y % 32)) as u64,
        lop3(x, y, w as u32, 0x96) as u64,
        lop3(x, y, (w >> 32) as u32, 0xE8) as u64,
        (i % 32) as u64,
        (x < y) as u64,
        (if x % 3 == 0 { x } else { y }) as u64,
        ((w as u128 * (w.rotate_left(17) | 1) as u128) >> 64) as u64,
        w.wrapping_mul(x as u64).wrapping_add(y as u64),
        ((x as u16 as u32) * ((y >> 16) as u16 as u32)) as u64,
        (x as f32 / 7.0).mul_add(y as f32 / 3.0, -(w as f32)).to_bits() as u64,
        (w as f64).sqrt().to_bits(),
        x.wrapping_add(y) as u64,
        x as u64,
        own as u64,
    ]
}

const NAMES: [&str; RESULTS] = [
    "prmt", "bfind.u32", "bfind.s32", "lop3 0x96", "lop3 0xE8", "%laneid", "setp (predicate out)", "selp (predicate in)",
    "mul.hi.u64", "mad.lo.u64", "mul.wide.u16", "fma.rn.f32", "sqrt.rn.f64", "inout add", "ld via pointer", "own registers",
];

/// Deterministic inputs with edge values mixed in.
fn inputs(n: usize) -> (Vec<u32>, Vec<u32>, Vec<u64>) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let edges = [0u32, 1, 2, 0x7fff_ffff, 0x8000_0000, u32::MAX, 0x80, 0xff];
    let mut a = Vec::new();
    let mut b = Vec::new();
    let mut w = Vec::new();
    for i in 0..n {
        let (r1, r2, r3) = (next(), next(), next());
        a.push(if i < edges.len() { edges[i] } else { r1 as u32 });
        b.push(if i >= 8 && i < 16 { edges[i - 8] } else { (r2 >> 32) as u32 });
        w.push(if i == 16 { 0 } else if i == 17 { u64::MAX } else { r3 });
    }
    (a, b, w)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            // Host-code emulation cannot run PTX: the launch fails, saying so.
            let message = e.to_string();
            if std::env::var("OXIDE_EMULATE").is_ok_and(|m| m == "host") && message.contains("ptx_asm!") {
                println!("PASS: host-code emulation refused the inline PTX: {message}");
                return ExitCode::SUCCESS;
            }
            println!("FAIL: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "inline_ptx")?;
    let n = 1000;
    let (a, b, w) = inputs(n);
    let a_dev = DeviceBuffer::from_host(&stream, &a)?;
    let b_dev = DeviceBuffer::from_host(&stream, &b)?;
    let w_dev = DeviceBuffer::from_host(&stream, &w)?;
    let mut out = DeviceBuffer::<[u64; RESULTS]>::zeroed(&stream, n)?;
    let mut stored = DeviceBuffer::<u32>::zeroed(&stream, n)?;
    cuda_launch! {
        kernel: inline_ptx, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(n as u32),
        args: [slice(a_dev), slice(b_dev), slice(w_dev), slice_mut(out), slice_mut(stored)]
    }?;
    let gpu = out.to_host_vec(&stream)?;
    let gpu_stored = stored.to_host_vec(&stream)?;
    let mut bad = 0;
    for i in 0..n {
        let want = expected(i, a[i], b[i], w[i]);
        for k in 0..RESULTS {
            if gpu[i][k] != want[k] {
                bad += 1;
                if bad <= 20 {
                    println!("mismatch: {} thread {i} (a={:#x} b={:#x} w={:#x}): gpu {:#x}, cpu {:#x}", NAMES[k], a[i], b[i], w[i], gpu[i][k], want[k]);
                }
            }
        }
        if gpu_stored[i] != a[i].wrapping_mul(b[i]) {
            bad += 1;
            if bad <= 20 {
                println!("mismatch: st via pointer thread {i}: gpu {:#x}, cpu {:#x}", gpu_stored[i], a[i].wrapping_mul(b[i]));
            }
        }
    }
    let total = n * (RESULTS + 1);
    if bad == 0 {
        println!("PASS: {total} results matched ({n} threads, {} PTX blocks each)", RESULTS + 1);
        Ok(true)
    } else {
        println!("FAIL: {bad} of {total} results differ");
        Ok(false)
    }
}
