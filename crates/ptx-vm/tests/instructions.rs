//! One test per instruction family: hand-written PTX run by one thread,
//! results compared with values computed in Rust, at the edges (MIN, MAX,
//! -0.0, NaN payloads, subnormals, shifts by 0, width-1, width and more,
//! every rounding and saturation, division by zero, MIN / -1).

mod common;

use common::*;
use ptx_vm::Module;

/// Runs `body` in one thread. Input `k` is loaded into `%a{k}` (b64),
/// `%ai{k}` (b32), `%ah{k}` (b16), `%af{k}` (f32) and `%ad{k}` (f64);
/// the body writes `%o{k}` (b64) and `%oi{k}` (b32), returned as
/// `[o0..o7, oi0..oi7]`.
fn eval(body: &str, inputs: &[u64]) -> [u64; 16] {
    assert!(inputs.len() <= 8);
    let mut input = [0u64; 8];
    input[..inputs.len()].copy_from_slice(inputs);
    let mut load = String::new();
    for k in 0..8 {
        let off = 8 * k;
        load += &format!(
            "ld.global.u64 %a{k}, [%rdin+{off}]; ld.global.u32 %ai{k}, [%rdin+{off}]; ld.global.u16 %ah{k}, [%rdin+{off}]; \
             ld.global.f32 %af{k}, [%rdin+{off}]; ld.global.f64 %ad{k}, [%rdin+{off}]; mov.b64 %o{k}, 0; mov.b32 %oi{k}, 0;\n"
        );
    }
    let mut store = String::new();
    for k in 0..8 {
        store += &format!("st.global.u64 [%rdout+{}], %o{k}; cvt.u64.u32 %rdtmp, %oi{k}; st.global.u64 [%rdout+{}], %rdtmp;\n", 8 * k, 64 + 8 * k);
    }
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 pin, .param .u64 pout)\n{{\n\
         .reg .pred %p<16>;\n.reg .b16 %rs<16>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<32>;\n.reg .f32 %f<16>;\n.reg .f64 %fd<16>;\n\
         .reg .b64 %a<8>;\n.reg .b32 %ai<8>;\n.reg .b16 %ah<8>;\n.reg .f32 %af<8>;\n.reg .f64 %ad<8>;\n.reg .b64 %o<8>;\n.reg .b32 %oi<8>;\n\
         .reg .b64 %rdin, %rdout, %rdtmp;\n\
         ld.param.u64 %rdin, [pin];\nld.param.u64 %rdout, [pout];\n{load}{body}\n{store}ret;\n}}\n"
    );
    let module = Module::parse(&ptx).unwrap_or_else(|e| panic!("{e}\n{body}"));
    let mut out = [0u64; 16];
    let env = Env::new().with(&input).with(&out);
    run(
        &module,
        "k",
        dims((1, 1, 1), (1, 1, 1)),
        &Params::new()
            .value(input.as_ptr() as u64)
            .value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap_or_else(|e| panic!("{e}\n{body}"));
    out
}

fn f32b(x: f32) -> u64 {
    x.to_bits() as u64
}

fn f64b(x: f64) -> u64 {
    x.to_bits()
}

#[test]
fn add_sub_mul_wrap_at_every_width() {
    let edges = [
        0u64,
        1,
        0x7f,
        0x80,
        0xff,
        0x7fff,
        0x8000,
        0xffff,
        0x7fff_ffff,
        0x8000_0000,
        0xffff_ffff,
        i64::MAX as u64,
        i64::MIN as u64,
        u64::MAX,
    ];
    for &a in &edges {
        for &b in &edges {
            let r = eval(
                "add.s16 %rs1, %ah0, %ah1; cvt.u64.u16 %o0, %rs1;\
                 sub.s32 %oi0, %ai0, %ai1;\
                 mul.lo.s64 %o1, %a0, %a1;\
                 mul.hi.u32 %oi1, %ai0, %ai1; mul.hi.s32 %oi2, %ai0, %ai1;\
                 mul.hi.u64 %o2, %a0, %a1; mul.hi.s64 %o3, %a0, %a1;\
                 mul.wide.s32 %o4, %ai0, %ai1; mul.wide.u32 %o5, %ai0, %ai1;\
                 mul.wide.s16 %oi3, %ah0, %ah1;\
                 add.sat.s32 %oi4, %ai0, %ai1; sub.sat.s32 %oi5, %ai0, %ai1;\
                 mad.lo.s32 %oi6, %ai0, %ai1, %ai0; mad.hi.sat.s32 %oi7, %ai0, %ai1, %ai1;\
                 mad.wide.u32 %o6, %ai0, %ai1, %a1; sad.s32 %r1, %ai0, %ai1, 7; cvt.u64.u32 %o7, %r1;",
                &[a, b],
            );
            let (a32, b32) = (a as u32, b as u32);
            let (s32a, s32b) = (a32 as i32, b32 as i32);
            assert_eq!(
                r[0],
                (a as u16).wrapping_add(b as u16) as u64,
                "add.s16 {a:#x} {b:#x}"
            );
            assert_eq!(r[8], a32.wrapping_sub(b32) as u64, "sub.s32");
            assert_eq!(r[1], a.wrapping_mul(b), "mul.lo.s64");
            assert_eq!(r[9], ((a32 as u64 * b32 as u64) >> 32), "mul.hi.u32");
            assert_eq!(
                r[10],
                ((s32a as i64 * s32b as i64) >> 32) as u32 as u64,
                "mul.hi.s32"
            );
            assert_eq!(r[2], ((a as u128 * b as u128) >> 64) as u64, "mul.hi.u64");
            assert_eq!(
                r[3],
                ((a as i64 as i128 * b as i64 as i128) >> 64) as u64,
                "mul.hi.s64"
            );
            assert_eq!(r[4], (s32a as i64 * s32b as i64) as u64, "mul.wide.s32");
            assert_eq!(r[5], a32 as u64 * b32 as u64, "mul.wide.u32");
            assert_eq!(
                r[11],
                (a as i16 as i32 * b as i16 as i32) as u32 as u64,
                "mul.wide.s16"
            );
            assert_eq!(
                r[12],
                s32a.saturating_add(s32b) as u32 as u64,
                "add.sat.s32"
            );
            assert_eq!(
                r[13],
                s32a.saturating_sub(s32b) as u32 as u64,
                "sub.sat.s32"
            );
            assert_eq!(
                r[14],
                s32a.wrapping_mul(s32b).wrapping_add(s32a) as u32 as u64,
                "mad.lo.s32"
            );
            let hi = ((s32a as i64 * s32b as i64) >> 32) as i32;
            assert_eq!(
                r[15],
                (hi as i64 + s32b as i64).clamp(i32::MIN as i64, i32::MAX as i64) as i32 as u32
                    as u64,
                "mad.hi.sat.s32"
            );
            assert_eq!(
                r[6],
                (a32 as u64 * b32 as u64).wrapping_add(b),
                "mad.wide.u32"
            );
            assert_eq!(
                r[7],
                7u32.wrapping_add(s32a.abs_diff(s32b)) as u64,
                "sad.s32"
            );
        }
    }
}

#[test]
fn carry_chains_add_and_subtract_128_bit_values() {
    let vals = [
        0u128,
        1,
        u64::MAX as u128,
        1 << 64,
        u128::MAX,
        0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
        (1 << 127) + 5,
    ];
    for &x in &vals {
        for &y in &vals {
            let r = eval(
                "add.cc.u64 %o0, %a0, %a2; addc.u64 %o1, %a1, %a3;\
                 sub.cc.u64 %o2, %a0, %a2; subc.u64 %o3, %a1, %a3;\
                 add.cc.u32 %oi0, %ai0, %ai2; addc.cc.u32 %oi1, 0, 0; addc.u32 %oi2, 0, 0;\
                 mad.lo.cc.u32 %oi3, %ai0, %ai2, %ai1; madc.hi.u32 %oi4, %ai0, %ai2, 0;",
                &[x as u64, (x >> 64) as u64, y as u64, (y >> 64) as u64],
            );
            let sum = x.wrapping_add(y);
            let diff = x.wrapping_sub(y);
            assert_eq!(
                (r[0], r[1]),
                (sum as u64, (sum >> 64) as u64),
                "{x:#x} + {y:#x}"
            );
            assert_eq!(
                (r[2], r[3]),
                (diff as u64, (diff >> 64) as u64),
                "{x:#x} - {y:#x}"
            );
            let (lo, carry) = (x as u32).overflowing_add(y as u32);
            assert_eq!(r[8], lo as u64);
            assert_eq!(r[9], carry as u64, "addc.cc takes and clears the carry");
            assert_eq!(r[10], 0);
            let p = (x as u32 as u64) * (y as u32 as u64);
            let (lo, carry) = (p as u32).overflowing_add((x >> 64) as u32);
            assert_eq!(r[11], lo as u64, "mad.lo.cc");
            assert_eq!(
                r[12],
                ((p >> 32) as u32).wrapping_add(carry as u32) as u64,
                "madc.hi"
            );
        }
    }
}

#[test]
fn division_and_remainder_edges() {
    let body = "div.s32 %oi0, %ai0, %ai1; rem.s32 %oi1, %ai0, %ai1; div.u32 %oi2, %ai0, %ai1; rem.u32 %oi3, %ai0, %ai1;\
                div.s64 %o0, %a0, %a1; rem.s64 %o1, %a0, %a1; div.u64 %o2, %a0, %a1; rem.u64 %o3, %a0, %a1;\
                div.s16 %rs1, %ah0, %ah1; cvt.u64.u16 %o4, %rs1;";
    for (a, b) in [
        (7u64, 2u64),
        ((-7i64) as u64, 2),
        (7, (-2i64) as u64),
        (i32::MIN as u32 as u64, u32::MAX as u64),
        (i64::MIN as u64, u64::MAX),
        (12345, 0),
        (u64::MAX, 1),
    ] {
        let r = eval(body, &[a, b]);
        let (a32, b32) = (a as u32 as i32, b as u32 as i32);
        if b32 != 0 {
            assert_eq!(
                r[8],
                a32.wrapping_div(b32) as u32 as u64,
                "div.s32 {a32} {b32}"
            );
            assert_eq!(
                r[9],
                a32.wrapping_rem(b32) as u32 as u64,
                "rem.s32 {a32} {b32}"
            );
            assert_eq!(r[10], (a as u32 / b as u32) as u64);
            assert_eq!(r[11], (a as u32 % b as u32) as u64);
        }
        if b != 0 {
            assert_eq!(r[0], (a as i64).wrapping_div(b as i64) as u64, "div.s64");
            assert_eq!(r[1], (a as i64).wrapping_rem(b as i64) as u64, "rem.s64");
            assert_eq!(r[2], a / b);
            assert_eq!(r[3], a % b);
            assert_eq!(
                r[4],
                (a as i16).wrapping_div(b as i16) as u16 as u64,
                "div.s16"
            );
        } else {
            // Division by zero: the GPU's all-ones quotient, the dividend as remainder.
            assert_eq!((r[10], r[11]), (0xffff_ffff, a as u32 as u64));
            assert_eq!((r[2], r[3]), (u64::MAX, a));
            assert_eq!(
                r[8],
                u32::MAX as u64,
                "div.s32 by zero of a positive dividend"
            );
        }
    }
}

#[test]
fn min_max_abs_neg_at_the_extremes() {
    for (a, b) in [
        (0u64, u64::MAX),
        (i64::MIN as u64, i64::MAX as u64),
        (0x8000_0000, 0x7fff_ffff),
        (5, 5),
    ] {
        let r = eval(
            "min.s32 %oi0, %ai0, %ai1; max.s32 %oi1, %ai0, %ai1; min.u32 %oi2, %ai0, %ai1; max.u32 %oi3, %ai0, %ai1;\
             min.s64 %o0, %a0, %a1; max.u64 %o1, %a0, %a1; abs.s32 %oi4, %ai0; neg.s32 %oi5, %ai0; abs.s64 %o2, %a0; neg.s64 %o3, %a0;\
             min.s16 %rs1, %ah0, %ah1; cvt.u64.u16 %o4, %rs1; min.u16x2 %oi6, %ai0, %ai1; max.s16x2 %oi7, %ai0, %ai1;",
            &[a, b],
        );
        let (x, y) = (a as u32 as i32, b as u32 as i32);
        assert_eq!(r[8], x.min(y) as u32 as u64);
        assert_eq!(r[9], x.max(y) as u32 as u64);
        assert_eq!(r[10], (a as u32).min(b as u32) as u64);
        assert_eq!(r[11], (a as u32).max(b as u32) as u64);
        assert_eq!(r[0], (a as i64).min(b as i64) as u64);
        assert_eq!(r[1], a.max(b));
        assert_eq!(
            r[12],
            x.wrapping_abs() as u32 as u64,
            "abs.s32 of MIN is MIN"
        );
        assert_eq!(r[13], x.wrapping_neg() as u32 as u64);
        assert_eq!(r[2], (a as i64).wrapping_abs() as u64);
        assert_eq!(r[3], (a as i64).wrapping_neg() as u64);
        assert_eq!(r[4], (a as i16).min(b as i16) as u16 as u64);
        let lanes = |f: &dyn Fn(u16, u16) -> u16| {
            f(a as u16, b as u16) as u64 | (f((a >> 16) as u16, (b >> 16) as u16) as u64) << 16
        };
        assert_eq!(r[14], lanes(&|p, q| p.min(q)));
        assert_eq!(r[15], lanes(&|p, q| (p as i16).max(q as i16) as u16));
    }
}

/// `min/max.relu` (sm_80; the NVPTX backend picks `max.relu.s32` for a
/// maximum with 0 of a maximum): the result, or each half of a packed one,
/// clamped to 0 when negative.
#[test]
fn min_max_relu_clamp_negative_results_to_zero() {
    for (a, b) in [(0u64, u64::MAX), (0x8000_0000, 0x7fff_ffff), (0xfffb_0003, 0x0007_fff9), (5, 5), (u64::MAX, 0xffff_fffe)] {
        let r = eval(
            "min.relu.s32 %oi0, %ai0, %ai1; max.relu.s32 %oi1, %ai0, %ai1;\
             min.relu.s16x2 %oi2, %ai0, %ai1; max.relu.s16x2 %oi3, %ai0, %ai1;",
            &[a, b],
        );
        let (x, y) = (a as u32 as i32, b as u32 as i32);
        assert_eq!(r[8], x.min(y).max(0) as u64, "min.relu.s32 {x} {y}");
        assert_eq!(r[9], x.max(y).max(0) as u64, "max.relu.s32 {x} {y}");
        let lanes = |f: &dyn Fn(i16, i16) -> i16| {
            let lane = |k: u32| f((a >> k) as i16, (b >> k) as i16).max(0) as u16 as u64;
            lane(0) | lane(16) << 16
        };
        assert_eq!(r[10], lanes(&|p, q| p.min(q)), "min.relu.s16x2 {a:#x} {b:#x}");
        assert_eq!(r[11], lanes(&|p, q| p.max(q)), "max.relu.s16x2 {a:#x} {b:#x}");
    }
    // Only the signed 32-bit and packed 16-bit forms exist.
    let ptx = kernel_ptx("", "max.relu.u32 %r1, %r2, %r3;");
    let module = Module::parse(&ptx).unwrap();
    let e = run(&module, "k", dims((1, 1, 1), (1, 1, 1)), &Params::new(), &Env::new()).unwrap_err();
    assert!(e.to_string().contains("max.relu exists for .s32 and .s16x2 only"), "{e}");
}

#[test]
fn shifts_by_zero_width_minus_one_width_and_more() {
    for amount in [0u64, 1, 15, 16, 31, 32, 63, 64, 65, 1000, u32::MAX as u64] {
        for value in [1u64, 0x8000_0000_8000_8001, u64::MAX, 0x7fff_ffff_ffff_ffff] {
            let r = eval(
                "shl.b32 %oi0, %ai0, %ai1; shr.u32 %oi1, %ai0, %ai1; shr.s32 %oi2, %ai0, %ai1;\
                 shl.b64 %o0, %a0, %ai1; shr.u64 %o1, %a0, %ai1; shr.s64 %o2, %a0, %ai1;\
                 shl.b16 %rs1, %ah0, %ai1; cvt.u64.u16 %o3, %rs1; shr.s16 %rs2, %ah0, %ai1; cvt.u64.u16 %o4, %rs2;\
                 shf.l.wrap.b32 %oi3, %ai0, %ai2, %ai1; shf.r.clamp.b32 %oi4, %ai0, %ai2, %ai1; shf.l.clamp.b32 %oi5, %ai0, %ai2, %ai1;",
                &[value, amount, value.rotate_left(7)],
            );
            let n = amount as u32;
            let (v32, v16, hi32) = (value as u32, value as u16, value.rotate_left(7) as u32);
            assert_eq!(
                r[8],
                if n < 32 { (v32 << n) as u64 } else { 0 },
                "shl.b32 by {n}"
            );
            assert_eq!(
                r[9],
                if n < 32 { (v32 >> n) as u64 } else { 0 },
                "shr.u32 by {n}"
            );
            assert_eq!(
                r[10],
                ((v32 as i32) >> n.min(31)) as u32 as u64,
                "shr.s32 by {n}"
            );
            assert_eq!(r[0], if n < 64 { value << n } else { 0 }, "shl.b64 by {n}");
            assert_eq!(r[1], if n < 64 { value >> n } else { 0 }, "shr.u64 by {n}");
            assert_eq!(r[2], ((value as i64) >> n.min(63)) as u64, "shr.s64 by {n}");
            assert_eq!(
                r[3],
                if n < 16 { (v16 << n) as u64 } else { 0 },
                "shl.b16 by {n}"
            );
            assert_eq!(
                r[4],
                ((v16 as i16) >> n.min(15)) as u16 as u64,
                "shr.s16 by {n}"
            );
            let wide = (hi32 as u64) << 32 | v32 as u64;
            assert_eq!(
                r[11],
                ((wide << (n % 32)) >> 32) as u32 as u64,
                "shf.l.wrap by {n}"
            );
            assert_eq!(
                r[12],
                (wide >> n.min(32)) as u32 as u64,
                "shf.r.clamp by {n}"
            );
            assert_eq!(
                r[13],
                ((wide << n.min(32)) >> 32) as u32 as u64,
                "shf.l.clamp by {n}"
            );
        }
    }
}

#[test]
fn bit_counting_fields_and_permutes() {
    for v in [
        0u64,
        1,
        0x8000_0000,
        0xffff_ffff,
        0x0f0f_0000_1234_5678,
        u64::MAX,
        1 << 63,
    ] {
        let r = eval(
            "popc.b32 %oi0, %ai0; popc.b64 %oi1, %a0; clz.b32 %oi2, %ai0; clz.b64 %oi3, %a0; brev.b32 %oi4, %ai0; brev.b64 %o0, %a0;\
             bfind.u32 %oi5, %ai0; bfind.s32 %oi6, %ai0; bfind.shiftamt.u64 %oi7, %a0; cnot.b32 %r1, %ai0; cvt.u64.u32 %o1, %r1;\
             not.b32 %r2, %ai0; cvt.u64.u32 %o2, %r2; bfind.s64 %r3, %a0; cvt.u64.u32 %o3, %r3;",
            &[v],
        );
        let v32 = v as u32;
        assert_eq!(r[8], v32.count_ones() as u64);
        assert_eq!(r[9], v.count_ones() as u64);
        assert_eq!(r[10], v32.leading_zeros() as u64);
        assert_eq!(r[11], v.leading_zeros() as u64);
        assert_eq!(r[12], v32.reverse_bits() as u64);
        assert_eq!(r[0], v.reverse_bits());
        assert_eq!(
            r[13],
            if v32 == 0 {
                0xffff_ffff
            } else {
                31 - v32.leading_zeros() as u64
            },
            "bfind.u32"
        );
        let s = v32 as i32;
        let nonsign = if s < 0 { !v32 } else { v32 };
        assert_eq!(
            r[14],
            if nonsign == 0 {
                0xffff_ffff
            } else {
                31 - nonsign.leading_zeros() as u64
            },
            "bfind.s32"
        );
        assert_eq!(
            r[15],
            if v == 0 {
                0xffff_ffff
            } else {
                v.leading_zeros() as u64
            },
            "bfind.shiftamt.u64"
        );
        assert_eq!(r[1], (v32 == 0) as u64);
        assert_eq!(r[2], !v32 as u64);
        let nonsign64 = if (v as i64) < 0 { !v } else { v };
        assert_eq!(
            r[3],
            if nonsign64 == 0 {
                0xffff_ffff
            } else {
                63 - nonsign64.leading_zeros() as u64
            },
            "bfind.s64"
        );
    }
    // bfe/bfi: positions and lengths past the width.
    for (pos, len) in [
        (0u64, 8u64),
        (4, 4),
        (28, 8),
        (31, 1),
        (32, 4),
        (0, 0),
        (200, 255),
        (16, 300),
    ] {
        let r = eval("bfe.u32 %oi0, %ai0, %ai1, %ai2; bfe.s32 %oi1, %ai0, %ai1, %ai2; bfi.b32 %oi2, %ai3, %ai0, %ai1, %ai2; bfe.s64 %o0, %a0, %ai1, %ai2;", &[0xF0F0_8765_4321_A5C3, pos, len, 0xABCD_EF01]);
        let a = 0xF0F0_8765_4321_A5C3u64;
        let (p, l) = ((pos & 0xff) as u32, (len & 0xff) as u32);
        let field = |bits: u32, signed: bool| {
            let a = a & if bits == 64 {
                u64::MAX
            } else {
                (1 << bits) - 1
            };
            let msb = bits - 1;
            let sbit = if !signed || l == 0 {
                0
            } else {
                (a >> (p + l - 1).min(msb)) & 1
            };
            (0..bits).fold(0u64, |d, i| {
                d | (if i < l && p + i <= msb {
                    (a >> (p + i)) & 1
                } else {
                    sbit
                }) << i
            })
        };
        assert_eq!(r[8], field(32, false), "bfe.u32 {pos} {len}");
        assert_eq!(r[9], field(32, true), "bfe.s32 {pos} {len}");
        assert_eq!(r[0], field(64, true), "bfe.s64 {pos} {len}");
        let mut f = a as u32;
        for i in 0..l {
            if p + i <= 31 {
                f = (f & !(1 << (p + i))) | (((0xABCD_EF01u32 >> i) & 1) << (p + i));
            }
        }
        assert_eq!(r[10], f as u64, "bfi.b32 {pos} {len}");
    }
    // prmt: the generic form with sign replication, and every mode.
    let r = eval(
        "prmt.b32 %oi0, %ai0, %ai1, 0x7531; prmt.b32 %oi1, %ai0, %ai1, 0xba98; prmt.b32.f4e %oi2, %ai0, %ai1, 2; prmt.b32.b4e %oi3, %ai0, %ai1, 1;\
         prmt.b32.rc8 %oi4, %ai0, %ai1, 3; prmt.b32.ecl %oi5, %ai0, %ai1, 2; prmt.b32.ecr %oi6, %ai0, %ai1, 2; prmt.b32.rc16 %oi7, %ai0, %ai1, 1;\
         lop3.b32 %r1, %ai0, %ai1, %ai2, 0x96; cvt.u64.u32 %o0, %r1; fns.b32 %r2, %ai0, 3, 2; cvt.u64.u32 %o1, %r2; fns.b32 %r3, %ai0, 3, -2; cvt.u64.u32 %o2, %r3;",
        &[0x8877_6655, 0x4433_2211, 0x0F0F_F0F0],
    );
    // bytes {b, a} = {44 33 22 11, 88 77 66 55}: a is bytes 0-3.
    assert_eq!(r[8], 0x4422_8866, "prmt generic");
    assert_eq!(
        r[9], 0xFF00_0000,
        "sign replication: only byte 3 (0x88) is negative"
    );
    assert_eq!(r[10], 0x2211_8877, "f4e");
    assert_eq!(r[11], 0x3344_5566, "b4e");
    assert_eq!(r[12], 0x8888_8888, "rc8");
    assert_eq!(r[13], 0x8877_7777, "ecl");
    assert_eq!(r[14], 0x7777_6655, "ecr");
    assert_eq!(r[15], 0x8877_8877, "rc16");
    assert_eq!(
        r[0],
        (0x8877_6655u32 ^ 0x4433_2211 ^ 0x0F0F_F0F0) as u64,
        "lop3 0x96 is a three-way xor"
    );
    // 0x88776655: set bits from 3 up: 4, 6, ... ; the second is 6.
    assert_eq!(r[1], 6);
    assert_eq!(
        r[2], 0,
        "fns downwards from 3: bits 2 and 0 set, the second is 0"
    );
}

#[test]
fn setp_set_selp_and_predicate_logic() {
    for (a, b) in [
        (0u64, 1u64),
        (u64::MAX, 1),
        (5, 5),
        (0x8000_0000, 0x7fff_ffff),
    ] {
        let r = eval(
            "setp.lt.s32 %p1|%p2, %ai0, %ai1; selp.u32 %oi0, 1, 0, %p1; selp.u32 %oi1, 1, 0, %p2;\
             setp.lo.u32 %p3, %ai0, %ai1; selp.u32 %oi2, 1, 0, %p3;\
             setp.ge.and.s64 %p4, %a0, %a1, %p3; selp.u32 %oi3, 1, 0, %p4;\
             setp.eq.or.u16 %p5, %ah0, %ah1, !%p1; selp.u32 %oi4, 1, 0, %p5;\
             set.gt.u32.s32 %oi5, %ai0, %ai1; set.ne.f32.u64 %r1, %a0, %a1; mov.b32 %oi6, %r1;\
             xor.pred %p6, %p1, %p3; not.pred %p7, %p6; selp.u32 %oi7, 1, 0, %p7;\
             slct.u32.s32 %r2, 10, 20, %ai0; cvt.u64.u32 %o0, %r2;",
            &[a, b],
        );
        let (x, y) = (a as u32 as i32, b as u32 as i32);
        assert_eq!(r[8], (x < y) as u64);
        assert_eq!(
            r[9],
            (x >= y) as u64,
            "the second predicate is the complement"
        );
        let lo = (a as u32) < (b as u32);
        assert_eq!(r[10], lo as u64);
        assert_eq!(r[11], ((a as i64 >= b as i64) && lo) as u64);
        assert_eq!(r[12], ((a as u16 == b as u16) || x >= y) as u64);
        assert_eq!(r[13], if x > y { 0xffff_ffff } else { 0 });
        assert_eq!(r[14], if a != b { 1.0f32.to_bits() as u64 } else { 0 });
        assert_eq!(r[15], !((x < y) ^ lo) as u64);
        assert_eq!(r[0], if x >= 0 { 10 } else { 20 });
    }
}

#[test]
fn float_arithmetic_rounds_in_every_mode() {
    // 1 + 2^-40 is not an f32: RN and RZ/RM give 1, RP the next float up.
    let tiny = 2f32.powi(-40);
    let r = eval(
        "add.rn.f32 %f1, %af0, %af1; mov.b32 %oi0, %f1; add.rz.f32 %f2, %af0, %af1; mov.b32 %oi1, %f2;\
         add.rm.f32 %f3, %af0, %af1; mov.b32 %oi2, %f3; add.rp.f32 %f4, %af0, %af1; mov.b32 %oi3, %f4;\
         sub.rz.f32 %f5, %af0, %af1; mov.b32 %oi4, %f5; sub.rp.f32 %f6, %af0, %af1; mov.b32 %oi5, %f6;\
         mul.rp.f32 %f7, %af0, %af1; mov.b32 %oi6, %f7; mul.rm.f32 %f8, %af0, %af1; mov.b32 %oi7, %f8;",
        &[f32b(1.0), f32b(tiny)],
    );
    let next_up = f32::from_bits(0x3F80_0001);
    let next_down = f32::from_bits(0x3F7F_FFFF);
    assert_eq!(r[8], f32b(1.0));
    assert_eq!(r[9], f32b(1.0));
    assert_eq!(r[10], f32b(1.0));
    assert_eq!(r[11], f32b(next_up));
    assert_eq!(r[12], f32b(next_down));
    assert_eq!(r[13], f32b(1.0));
    assert_eq!(r[14], f32b(tiny));
    assert_eq!(r[15], f32b(tiny));
    // 1/3 in f64 and its neighbours; fma in directed modes; overflow.
    let one_ulp = 1.0 + f64::EPSILON;
    let r = eval(
        "div.rn.f64 %o0, %ad0, %ad1; div.rz.f64 %o1, %ad0, %ad1; div.rp.f64 %o2, %ad0, %ad1;\
         fma.rz.f64 %o3, %ad2, %ad2, 0d0000000000000000; fma.rp.f64 %o4, %ad2, %ad2, 0d0000000000000000; mul.rz.f64 %o5, %ad3, %ad1;\
         sqrt.rp.f64 %o6, %ad1; sqrt.rn.f64 %o7, %ad1; mul.rn.f64 %fd1, %ad3, %ad1; mov.b64 %rd1, %fd1; mul.rm.f64 %fd2, %ad3, %ad1; mov.b64 %rd2, %fd2;\
         setp.eq.b64 %p1, %rd1, 0x7FF0000000000000; selp.u32 %oi0, 1, 0, %p1; setp.eq.b64 %p2, %rd2, 0x7FEFFFFFFFFFFFFF; selp.u32 %oi1, 1, 0, %p2;",
        &[f64b(1.0), f64b(3.0), f64b(one_ulp), f64b(f64::MAX)],
    );
    let third = 1.0f64 / 3.0;
    assert_eq!(r[0], f64b(third));
    assert_eq!(
        r[1],
        f64b(third),
        "1/3 rounds down to nearest, and so toward zero"
    );
    assert_eq!(r[2], f64b(third) + 1);
    // (1 + 2^-52)^2 = 1 + 2^-51 + 2^-104: toward zero drops the last term,
    // upward rounds it to the next float.
    assert_eq!(r[3], f64b(1.0 + 2.0 * f64::EPSILON));
    assert_eq!(r[4], f64b(1.0 + 2.0 * f64::EPSILON) + 1);
    assert_eq!(r[5], f64b(f64::MAX), "overflow toward zero stops at MAX");
    assert_eq!(r[7], f64b(3.0f64.sqrt()));
    assert_eq!(
        r[6],
        f64b(3.0f64.sqrt()) + 1,
        "sqrt(3) is inexact and rounds down to nearest"
    );
    assert_eq!(
        (r[8], r[9]),
        (1, 1),
        "MAX * 3 overflows to infinity to nearest, to MAX downward"
    );
}

#[test]
fn float_results_keep_or_canonicalise_nan_as_the_gpu_does() {
    let payload = 0x7FC0_1234u64;
    let neg_payload = 0xFFA0_0001u64;
    let r = eval(
        "add.f32 %f1, %af0, %af1; mov.b32 %oi0, %f1; neg.f32 %f2, %af0; mov.b32 %oi1, %f2; abs.f32 %f3, %af2; mov.b32 %oi2, %f3;\
         min.f32 %f4, %af0, %af1; mov.b32 %oi3, %f4; max.NaN.f32 %f5, %af0, %af1; mov.b32 %oi4, %f5;\
         copysign.f32 %f6, %af2, %af1; mov.b32 %oi5, %f6; mul.f32 %f7, %af3, %af1; mov.b32 %oi6, %f7;\
         min.f32 %f8, %af3, %af4; mov.b32 %oi7, %f8; max.f32 %f9, %af4, %af3; mov.b32 %r1, %f9; cvt.u64.u32 %o0, %r1;\
         min.f32 %f10, %af0, %af2; mov.b32 %r2, %f10; cvt.u64.u32 %o1, %r2;",
        &[payload, f32b(2.0), neg_payload, f32b(0.0), f32b(-0.0)],
    );
    assert_eq!(
        r[8], 0x7FFF_FFFF,
        "arithmetic on NaN returns the canonical NaN"
    );
    assert_eq!(
        r[9],
        payload ^ 0x8000_0000,
        "neg flips the sign of a NaN, payload kept"
    );
    assert_eq!(
        r[10],
        neg_payload & 0x7FFF_FFFF,
        "abs clears the sign, payload kept"
    );
    assert_eq!(r[11], f32b(2.0), "min with one NaN is the number");
    assert_eq!(r[12], 0x7FFF_FFFF, "max.NaN propagates the canonical NaN");
    assert_eq!(
        r[13],
        f32b(2.0) | 0x8000_0000,
        "copysign: b with the sign of a"
    );
    assert_eq!(r[14], f32b(0.0));
    assert_eq!(r[15], f32b(-0.0), "min(+0, -0) is -0");
    assert_eq!(r[0], f32b(0.0), "max(-0, +0) is +0");
    assert_eq!(r[1], 0x7FFF_FFFF, "min of two NaNs is the canonical NaN");
}

#[test]
fn ftz_sat_and_subnormals() {
    let sub = 0x0000_0001u64; // the smallest positive subnormal
    let r = eval(
        "add.f32 %f1, %af0, %af0; mov.b32 %oi0, %f1; add.ftz.f32 %f2, %af0, %af0; mov.b32 %oi1, %f2;\
         mul.ftz.f32 %f3, %af1, %af2; mov.b32 %oi2, %f3; add.sat.f32 %f4, %af1, %af1; mov.b32 %oi3, %f4;\
         add.sat.f32 %f5, %af3, %af3; mov.b32 %oi4, %f5; neg.ftz.f32 %f6, %af0; mov.b32 %oi5, %f6;\
         testp.subnormal.f32 %p1, %af0; selp.u32 %oi6, 1, 0, %p1; testp.normal.f32 %p2, %af1; selp.u32 %oi7, 1, 0, %p2;\
         setp.eq.ftz.f32 %p3, %af0, 0f00000000; selp.u64 %o0, 1, 0, %p3; setp.eq.f32 %p4, %af0, 0f00000000; selp.u64 %o1, 1, 0, %p4;\
         testp.notanumber.f64 %p5, %ad4; selp.u64 %o2, 1, 0, %p5; testp.infinite.f64 %p6, %ad5; selp.u64 %o3, 1, 0, %p6;",
        &[sub, f32b(0.75), f32b(2f32.powi(-126)), 0xFFC0_0000, f64b(f64::NAN), f64b(f64::NEG_INFINITY)],
    );
    assert_eq!(r[8], 2, "subnormals add normally");
    assert_eq!(r[9], 0, ".ftz flushes a subnormal input");
    assert_eq!(r[10], 0, ".ftz flushes a subnormal result");
    assert_eq!(r[11], f32b(1.0), ".sat clamps 1.5 to 1");
    assert_eq!(r[12], 0, ".sat turns NaN into +0");
    assert_eq!(r[13], 0x8000_0000, "neg.ftz of a subnormal is -0");
    assert_eq!(r[14], 1);
    assert_eq!(r[15], 1);
    // Only the .ftz comparison sees the subnormal as zero.
    assert_eq!((r[0], r[1]), (1, 0));
    assert_eq!(r[2], 1);
    assert_eq!(r[3], 1);
}

#[test]
fn conversions_round_and_saturate_at_the_edges() {
    let cases: [(f32, [i64; 4]); 9] = [
        (0.5, [0, 0, 0, 1]),
        (-0.5, [0, 0, -1, 0]),
        (1.5, [2, 1, 1, 2]),
        (2.5, [2, 2, 2, 3]),
        (-2.5, [-2, -2, -3, -2]),
        (3e9, [i32::MAX as i64; 4]),
        (-3e9, [i32::MIN as i64; 4]),
        (f32::INFINITY, [i32::MAX as i64; 4]),
        (f32::NAN, [0; 4]),
    ];
    for (x, want) in cases {
        let r = eval(
            "cvt.rni.s32.f32 %oi0, %af0; cvt.rzi.s32.f32 %oi1, %af0; cvt.rmi.s32.f32 %oi2, %af0; cvt.rpi.s32.f32 %oi3, %af0;\
             cvt.rzi.u8.f32 %rs1, %af0; cvt.u64.u16 %o0, %rs1; cvt.rni.u32.f32 %oi4, %af0; cvt.rzi.s64.f32 %o1, %af0;\
             cvt.rni.f32.f32 %f1, %af0; mov.b32 %oi5, %f1; cvt.rmi.f32.f32 %f2, %af0; mov.b32 %oi6, %f2; cvt.sat.f32.f32 %f3, %af0; mov.b32 %oi7, %f3;",
            &[f32b(x)],
        );
        for (k, w) in want.iter().enumerate() {
            assert_eq!(r[8 + k], *w as i32 as u32 as u64, "cvt mode {k} of {x}");
        }
        assert_eq!(
            r[0], x as u8 as u64,
            "cvt.rzi.u8.f32 of {x} saturates like Rust's `as`"
        );
        assert_eq!(
            r[12],
            if x.is_nan() {
                0
            } else {
                x.round_ties_even().clamp(0.0, u32::MAX as f32) as u32 as u64
            },
            "cvt.rni.u32 of {x}"
        );
        // NaN to 64 bits is the sign bit alone on the GPU (Rust's `as` gives 0).
        let want_s64 = if x.is_nan() { 1 << 63 } else { x as i64 as u64 };
        assert_eq!(r[1], want_s64, "cvt.rzi.s64 of {x}");
        if !x.is_nan() {
            assert_eq!(r[13], f32b(x.round_ties_even()));
            assert_eq!(r[14], f32b(x.floor()));
        }
        assert_eq!(
            r[15],
            f32b(if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }),
            "cvt.sat of {x}"
        );
    }
    // Integer to float in every mode: 2^24 + 1 is not an f32.
    let v = (1u64 << 24) + 1;
    let r = eval(
        "cvt.rn.f32.u64 %f1, %a0; mov.b32 %oi0, %f1; cvt.rz.f32.u64 %f2, %a0; mov.b32 %oi1, %f2; cvt.rp.f32.u64 %f3, %a0; mov.b32 %oi2, %f3;\
         cvt.rm.f32.s64 %f4, %a1; mov.b32 %oi3, %f4; cvt.rn.f64.s32 %o0, %ai1; cvt.rn.f32.u64 %f5, %a2; mov.b32 %oi4, %f5;\
         cvt.rz.f32.f64 %f6, %ad3; mov.b32 %oi5, %f6; cvt.rp.f32.f64 %f7, %ad3; mov.b32 %oi6, %f7; cvt.f64.f32 %o1, %af4;\
         cvt.rn.f16.f32 %rs1, %af5; cvt.u64.u16 %o2, %rs1; cvt.rz.f16.f32 %rs2, %af5; cvt.u64.u16 %o3, %rs2; cvt.f32.f16 %f8, %rs1; mov.b32 %oi7, %f8;\
         cvt.rn.bf16.f32 %rs3, %af6; cvt.u64.u16 %o4, %rs3; cvt.rn.f16x2.f32 %r1, %af5, %af6; cvt.u64.u32 %o5, %r1;",
        &[v, (-(v as i64)) as u64, u64::MAX, f64b(1.0 / 3.0), f32b(1.0 / 3.0), f32b(65520.0), f32b(1.0 + 2f32.powi(-9))],
    );
    assert_eq!(r[8], f32b(16777216.0), "RN: the tie goes to even");
    assert_eq!(r[9], f32b(16777216.0));
    assert_eq!(r[10], f32b(16777218.0));
    assert_eq!(
        r[11],
        f32b(-16777218.0),
        "RM of a negative goes away from zero"
    );
    assert_eq!(r[0], f64b(-16777217.0));
    assert_eq!(r[12], f32b(18446744073709551616.0));
    // The f32 nearest to 1/3 is above it: toward zero is one ulp below.
    assert_eq!(r[13], 0x3EAA_AAAA);
    assert_eq!(r[14], 0x3EAA_AAAB);
    assert_eq!(r[1], f64b((1.0f32 / 3.0) as f64));
    assert_eq!(
        r[2], 0x7C00,
        "65520 overflows f16 to infinity when rounding to nearest"
    );
    assert_eq!(r[3], 0x7BFF, "and stops at 65504 toward zero");
    assert_eq!(r[15], f32b(f32::INFINITY));
    assert_eq!(
        r[4], 0x3F80,
        "bf16 of 1 + 2^-9 rounds to 1 (a quarter of its ulp)"
    );
    assert_eq!(
        r[5],
        0x7C00 << 16 | 0x3C02,
        "f16x2: a in the upper half; 1 + 2^-9 is exact in f16"
    );
    // Integer conversions: truncation, sign extension, saturation.
    let r = eval(
        "cvt.u8.u32 %rs1, %ai0; cvt.u64.u16 %o0, %rs1; cvt.s64.s8 %o1, %ah0; cvt.sat.s8.s32 %rs2, %ai0; cvt.u64.u16 %o2, %rs2;\
         cvt.sat.u16.s32 %rs3, %ai0; cvt.u64.u16 %o3, %rs3; cvt.s32.s16 %oi0, %ah0; cvt.u32.u64 %oi1, %a0; cvt.sat.u32.s64 %oi2, %a0;\
         cvt.sat.s32.u64 %oi3, %a0;",
        &[0xFFFF_FFFF_FFFF_FF80],
    );
    assert_eq!(r[0], 0x80);
    assert_eq!(r[1], (-128i64) as u64);
    assert_eq!(
        r[2], 0xFF80,
        "an s8 result is sign-extended to its 16-bit register"
    );
    assert_eq!(r[3], 0, "cvt.sat.u16 of -128");
    assert_eq!(r[8], 0xFFFF_FF80);
    assert_eq!(r[9], 0xFFFF_FF80);
    assert_eq!(r[10], 0, "cvt.sat.u32.s64 of -128");
    assert_eq!(
        r[11], 0x7FFF_FFFF,
        "cvt.sat.s32.u64 of a huge unsigned value"
    );
}

#[test]
fn loads_extend_and_stores_truncate() {
    let r = eval(
        "st.global.u64 [%rdout+120], %a0; ld.global.s8 %rs1, [%rdout+120]; cvt.u64.u16 %o0, %rs1; ld.global.s8 %r1, [%rdout+120]; cvt.u64.u32 %o1, %r1;\
         ld.global.s16 %rd1, [%rdout+120]; mov.b64 %o2, %rd1; ld.global.u8 %r2, [%rdout+120]; cvt.u64.u32 %o3, %r2;\
         st.global.b8 [%rdout+120], %a1; ld.global.u64 %o4, [%rdout+120];\
         st.global.v2.u32 [%rdout+112], {%ai0, %ai1}; ld.global.v2.u32 {%r3, %r4}, [%rdout+112]; mov.b64 %o5, {%r4, %r3};\
         mov.b64 {%r5, %r6}, %a0; cvt.u64.u32 %o6, %r6; mov.b32 {%rs2, %rs3}, %ai0; cvt.u64.u16 %o7, %rs3;",
        &[0x1234_5678_9ABC_DEF0, 0x55],
    );
    assert_eq!(r[0], 0xFFF0, "ld.s8 sign-extends to the 16-bit register");
    assert_eq!(r[1], 0xFFFF_FFF0, "and to the 32-bit register");
    assert_eq!(r[2], 0xFFFF_FFFF_FFFF_DEF0);
    assert_eq!(r[3], 0xF0);
    assert_eq!(r[4], 0x1234_5678_9ABC_DE55, "st.b8 writes one byte");
    assert_eq!(
        r[5], 0x9ABC_DEF0_0000_0055,
        "v2 round trip, then packed high:low"
    );
    assert_eq!(r[6], 0x1234_5678);
    assert_eq!(r[7], 0x9ABC);
}

#[test]
fn nested_scopes_declare_their_own_registers() {
    // Inline asm as the device linker emits it: a scope with a register of
    // the same name as an outer one, and a 16-bit negation of an immediate.
    let r = eval(
        "{ .reg .b64 %t; shr.s64 %t, %a0, 63; xor.b64 %rd2, %a0, %t; sub.s64 %rd2, %rd2, %t; }\
         mov.b64 %o0, %rd2; { .reg .b64 %rd2; mov.b64 %rd2, 7; mov.b64 %o1, %rd2; } mov.b64 %o2, %rd2;\
         sub.u16 %rs2, 0, %ah0; cvt.u64.u16 %o3, %rs2;\
         { .reg .pred p; setp.eq.s64 p, %a0, 0; @!p bra SKIP; mov.b64 %o4, 1; SKIP: }\
         { .reg .pred p; setp.ne.s64 p, %a0, 0; @!p bra SKIP; mov.b64 %o5, 1; SKIP: }",
        &[(-5i64) as u64],
    );
    assert_eq!(r[0], 5, "abs through a scoped temporary");
    assert_eq!(r[1], 7);
    assert_eq!(r[2], 5, "the inner %rd2 did not clobber the outer one");
    assert_eq!(r[3], 5, "sub.u16 0 - (-5)");
    assert_eq!((r[4], r[5]), (0, 1), "each scope has its own label SKIP");
}

#[test]
fn atomics_on_global_and_shared_memory() {
    let ptx = kernel_ptx(
        ".param .u64 p",
        ".shared .align 8 .b8 sh[64];\n\
         ld.param.u64 %rd1, [p];\n\
         atom.global.add.u32 %r1, [%rd1], 5; st.global.u32 [%rd1+4], %r1;\n\
         atom.global.cas.b32 %r2, [%rd1], 5, 9; atom.global.cas.b32 %r3, [%rd1], 5, 11; st.global.u32 [%rd1+8], %r2; st.global.u32 [%rd1+12], %r3;\n\
         atom.global.inc.u32 %r4, [%rd1+16], 3; atom.global.inc.u32 %r4, [%rd1+16], 3; atom.global.inc.u32 %r4, [%rd1+16], 3; atom.global.inc.u32 %r4, [%rd1+16], 3;\n\
         atom.global.dec.u32 %r5, [%rd1+20], 3;\n\
         atom.global.min.s32 %r6, [%rd1+24], -7; atom.global.max.u64 %rd2, [%rd1+32], 100;\n\
         atom.acq_rel.gpu.global.add.f32 %f1, [%rd1+40], 0f3FC00000; atom.global.add.f64 %fd1, [%rd1+48], 0d3FF8000000000000;\n\
         mov.u32 %r7, sh; atom.shared.exch.b32 %r8, [%r7], 42; atom.shared.add.u32 %r9, [%r7], 1; ld.shared.u32 %r10, [%r7]; st.global.u32 [%rd1+56], %r10;\n\
         mov.u64 %rd4, sh; cvta.shared.u64 %rd3, %rd4; atom.add.u32 %r11, [%rd3], 100; ld.shared.u32 %r12, [sh]; st.global.u32 [%rd1+60], %r12;\n\
         ret;",
    );
    let module = Module::parse(&ptx).unwrap();
    // 64 bytes, 8-aligned: u32 words 0..16, the f64 at word 12.
    let mut buf = [0u64; 8];
    let word = |buf: &[u64; 8], i: usize| (buf[i / 2] >> (32 * (i % 2))) as u32;
    let set = |buf: &mut [u64; 8], i: usize, v: u32| {
        let shift = 32 * (i % 2);
        buf[i / 2] = (buf[i / 2] & !(0xffff_ffffu64 << shift)) | (v as u64) << shift;
    };
    set(&mut buf, 4, 2); // inc wraps at 3
    set(&mut buf, 6, 5);
    set(&mut buf, 10, 1.0f32.to_bits());
    buf[6] = 2.0f64.to_bits();
    let env = Env::new().with(&buf);
    run(
        &module,
        "k",
        dims((1, 1, 1), (1, 1, 1)),
        &Params::new().value(buf.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    assert_eq!(word(&buf, 1), 0, "atom.add returns the old value");
    assert_eq!(
        (word(&buf, 2), word(&buf, 3), word(&buf, 0)),
        (5, 9, 9),
        "cas succeeds once"
    );
    assert_eq!(word(&buf, 4), 2, "inc with bound 3: 2, 3, 0, 1, 2");
    assert_eq!(word(&buf, 5), 3, "dec of 0 wraps to the bound");
    assert_eq!(word(&buf, 6) as i32, -7);
    assert_eq!(word(&buf, 8), 100);
    assert_eq!(f32::from_bits(word(&buf, 10)), 2.5);
    assert_eq!(f64::from_bits(buf[6]), 3.5);
    assert_eq!(word(&buf, 14), 43);
    assert_eq!(word(&buf, 15), 143, "a generic atomic on a shared address");
}

#[test]
fn special_registers_of_a_2d_launch() {
    let ptx = kernel_ptx(
        ".param .u64 p",
        "ld.param.u64 %rd1, [p];\n\
         mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y; mov.u32 %r3, %ntid.x; mad.lo.u32 %r4, %r2, %r3, %r1;\n\
         mov.u32 %r5, %ctaid.x; mov.u32 %r6, %nctaid.x; mov.u32 %r7, %ntid.y; mul.lo.u32 %r8, %r3, %r7; mad.lo.u32 %r9, %r5, %r8, %r4;\n\
         mul.wide.u32 %rd2, %r9, 32; add.s64 %rd3, %rd1, %rd2;\n\
         mov.u32 %r10, %laneid; mov.u32 %r11, %warpid; mov.u32 %r12, %lanemask_lt; mov.u32 %r13, %lanemask_ge;\n\
         mov.u32 %r14, %nctaid.y; mov.u32 %r15, %cluster_nctarank; mov.u32 %r16, %dynamic_smem_size; mov.u32 %r17, %ctaid.y;\n\
         st.global.v4.u32 [%rd3], {%r10, %r11, %r12, %r13}; st.global.v4.u32 [%rd3+16], {%r14, %r15, %r16, %r17};\n\
         ret;",
    );
    let module = Module::parse(&ptx).unwrap();
    let (bx, by, gx, gy) = (8u32, 6u32, 2u32, 3u32);
    let n = (bx * by * gx * gy) as usize;
    let mut out = vec![0u32; n * 8];
    let env = Env::new().with(&out);
    let d = ptx_vm::LaunchDims {
        grid: (gx, gy, 1),
        block: (bx, by, 1),
        dynamic_shared_bytes: 64,
    };
    run(
        &module,
        "k",
        d,
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    // Only blocks with ctaid.y = 0 write distinct rows: check those of block (1, 0) and (0, 0).
    for cx in 0..gx {
        for linear in 0..bx * by {
            let i = (cx * bx * by + linear) as usize;
            let row = &out[i * 8..i * 8 + 8];
            let lane = linear % 32;
            assert_eq!(row[0], lane);
            assert_eq!(row[1], linear / 32);
            assert_eq!(row[2], (1u32 << lane) - 1);
            assert_eq!(row[3], !((1u32 << lane) - 1));
            assert_eq!(row[4], gy);
            assert_eq!(
                row[5], 1,
                "a launch without clusters has clusters of one block"
            );
            assert_eq!(row[6], 64);
        }
    }
}

#[test]
fn calls_pass_parameters_and_results() {
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n\
        .func (.param .b64 ret) twice_plus(.param .b64 x, .param .align 8 .b8 pair[16])\n{\n\
        .reg .b64 %rd<6>;\n.local .align 8 .b8 depot[16];\n\
        ld.param.b64 %rd1, [x]; ld.param.b64 %rd2, [pair]; ld.param.b64 %rd3, [pair+8];\n\
        mov.u64 %rd4, depot; st.local.b64 [%rd4], %rd1; ld.local.b64 %rd5, [depot];\n\
        add.s64 %rd5, %rd5, %rd5; add.s64 %rd5, %rd5, %rd2; sub.s64 %rd5, %rd5, %rd3;\n\
        st.param.b64 [ret], %rd5; ret;\n}\n\
        .visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<8>;\n\
        ld.param.u64 %rd1, [p];\n\
        { .param .b64 param0; .param .align 8 .b8 param1[16]; .param .b64 retval0;\n\
        st.param.b64 [param0], 20; st.param.b64 [param1], 5; st.param.b64 [param1+8], 3;\n\
        call.uni (retval0), twice_plus, (param0, param1);\n\
        ld.param.b64 %rd2, [retval0]; }\n\
        st.global.u64 [%rd1], %rd2; ret;\n}\n";
    let module = Module::parse(ptx).unwrap();
    let mut out = [0u64; 1];
    let env = Env::new().with(&out);
    run(
        &module,
        "k",
        dims((1, 1, 1), (1, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    assert_eq!(out[0], 42);
}

#[test]
fn global_initialisers_and_the_embedders_view_of_them() {
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n\
        .global .align 4 .u32 table[4] = {10, 20, 30, 40};\n\
        .global .align 8 .u64 ptrs[2] = {generic(table)+8, table};\n\
        .const .align 4 .f32 scale = 0f40000000;\n\
        .visible .global .align 8 .u64 record;\n\
        .visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<8>;\n.reg .b32 %r<8>;\n.reg .f32 %f<4>;\n\
        ld.param.u64 %rd1, [p];\n\
        ld.global.u64 %rd2, [ptrs]; ld.u32 %r1, [%rd2]; ld.const.f32 %f1, [scale]; cvt.rzi.u32.f32 %r2, %f1;\n\
        mul.lo.u32 %r3, %r1, %r2; st.global.u32 [%rd1], %r3;\n\
        ld.global.u64 %rd3, [record]; st.u32 [%rd3], %r3; ret;\n}\n";
    let module = Module::parse(ptx).unwrap();
    let mut out = [0u32; 1];
    let mut record = [0u32; 1];
    // The embedder writes a pointer into the module's variable.
    let g = module.global("record").unwrap();
    assert_eq!(g.size, 8);
    unsafe { (g.address as *mut u64).write(record.as_mut_ptr() as u64) };
    assert_eq!(module.global("table").map(|t| t.size), Some(16));
    assert!(module.global("nonexistent").is_none());
    let env = Env::new().with(&out).with(&record);
    run(
        &module,
        "k",
        dims((1, 1, 1), (1, 1, 1)),
        &Params::new().value(out.as_mut_ptr() as u64),
        &env,
    )
    .unwrap();
    assert_eq!(out[0], 60, "table[2] * 2.0");
    assert_eq!(record[0], 60);
    let t = module.global("table").unwrap();
    assert_eq!(unsafe { *(t.address as *const u32).add(3) }, 40);
}

#[test]
fn approximate_functions_are_within_their_documented_error() {
    for x in [0.5f32, 1.0, 2.0, 10.0, -3.25, 100.0] {
        let r = eval(
            "ex2.approx.f32 %f1, %af0; mov.b32 %oi0, %f1; lg2.approx.f32 %f2, %af1; mov.b32 %oi1, %f2; sin.approx.f32 %f3, %af0; mov.b32 %oi2, %f3;\
             cos.approx.f32 %f4, %af0; mov.b32 %oi3, %f4; rcp.approx.ftz.f32 %f5, %af0; mov.b32 %oi4, %f5; rsqrt.approx.f32 %f6, %af1; mov.b32 %oi5, %f6;\
             tanh.approx.f32 %f7, %af0; mov.b32 %oi6, %f7; div.approx.f32 %f8, %af1, %af0; mov.b32 %oi7, %f8; rcp.rn.f64 %o0, %ad2; sqrt.approx.f32 %f9, %af1; mov.b32 %r1, %f9; cvt.u64.u32 %o1, %r1;",
            &[f32b(x), f32b(x.abs()), f64b(x as f64)],
        );
        let close = |got: u64, want: f32, rel: f32| {
            let g = f32::from_bits(got as u32);
            assert!(
                (g - want).abs() <= rel * want.abs().max(1e-6),
                "{g} vs {want} for {x}"
            );
        };
        close(r[8], x.exp2(), 2e-7);
        close(r[9], x.abs().log2(), 2e-7);
        close(r[10], x.sin(), 1e-6);
        close(r[11], x.cos(), 1e-6);
        close(r[12], 1.0 / x, 1e-7);
        close(r[13], 1.0 / x.abs().sqrt(), 2e-7);
        close(r[14], x.tanh(), 1e-6);
        close(r[15], x.abs() / x, 2e-7);
        assert_eq!(r[0], f64b(1.0 / x as f64), "rcp.rn.f64 is exact");
        close(r[1], x.abs().sqrt(), 2e-7);
    }
}

#[test]
fn conversions_of_extremes_subnormals_and_nan() {
    let r = eval(
        "cvt.rn.f32.f64 %f1, %ad0; mov.b32 %oi0, %f1; cvt.rz.f32.f64 %f2, %ad1; mov.b32 %oi1, %f2; cvt.rn.f32.f64 %f3, %ad1; mov.b32 %oi2, %f3;\
         cvt.rzi.u64.f64 %o0, %ad2; cvt.rzi.u64.f64 %o1, %ad3; cvt.rzi.s64.f64 %o2, %ad4; cvt.rzi.s64.f64 %o3, %ad5;\
         cvt.rni.s64.f64 %o4, %ad6; cvt.f64.f32 %o5, %af7; cvt.rzi.s8.f32 %r1, %af7; cvt.u64.u32 %o6, %r1;",
        &[f64b(1e-320), f64b(f64::MAX), f64b(-1.0), f64b(18446744073709551616.0), f64b(-9223372036854775808.0), f64b(9223372036854775808.0), f64b(-2.5), 0x7FC0_1234],
    );
    assert_eq!(r[8], 0, "an f64 subnormal rounds to +0 in f32");
    assert_eq!(
        r[9],
        f32b(f32::MAX),
        "f64::MAX toward zero stops at f32::MAX"
    );
    assert_eq!(r[10], f32b(f32::INFINITY));
    assert_eq!(
        r[0], 0,
        "a negative value to an unsigned integer saturates at 0"
    );
    assert_eq!(r[1], u64::MAX, "2^64 saturates");
    assert_eq!(r[2], i64::MIN as u64);
    assert_eq!(r[3], i64::MAX as u64, "2^63 saturates to i64::MAX");
    assert_eq!(r[4], (-2i64) as u64, "-2.5 to nearest even");
    assert_eq!(
        r[5], 0x7FF8_0246_8000_0000,
        "cvt.f64.f32 of a NaN keeps its sign and fraction (the H200 does)"
    );
    assert_eq!(r[6], 0, "cvt.rzi.s8 of a NaN is 0");
    // f16 subnormals: 2^-24 is the smallest; 2^-25 is the tie below it.
    let r = eval(
        "cvt.rn.f16.f32 %rs1, %af0; cvt.u64.u16 %o0, %rs1; cvt.rn.f16.f32 %rs2, %af1; cvt.u64.u16 %o1, %rs2;\
         cvt.rp.f16.f32 %rs3, %af1; cvt.u64.u16 %o2, %rs3; cvt.rn.f16.f32 %rs4, %af2; cvt.u64.u16 %o3, %rs4;\
         cvt.rzi.s8.f32 %rs5, %af3; cvt.u64.u16 %o4, %rs5; cvt.rni.u16.f16 %rs6, %rs4; cvt.u64.u16 %o5, %rs6;\
         cvt.rn.bf16.f32 %rs7, %af4; cvt.u64.u16 %o6, %rs7; cvt.ftz.f32.f32 %f1, %af5; mov.b32 %oi0, %f1;",
        &[f32b(2f32.powi(-24)), f32b(2f32.powi(-25)), f32b(2.5), f32b(-200.0), 0x7FC0_0001, 0x8000_0003],
    );
    assert_eq!(r[0], 0x0001);
    assert_eq!(r[1], 0x0000, "the tie rounds to even (zero)");
    assert_eq!(r[2], 0x0001, "upward gives the smallest subnormal");
    assert_eq!(r[3], 0x4100, "2.5 in f16");
    assert_eq!(
        r[4], 0xFF80,
        "-200 saturates to -128, sign-extended to the register"
    );
    assert_eq!(r[5], 2, "2.5 (f16) to nearest even");
    assert_eq!(r[6], 0x7FFF, "a NaN becomes bf16's canonical NaN");
    assert_eq!(r[8], 0x8000_0000, ".ftz flushes a subnormal source to -0");
}

#[test]
fn cvta_of_an_address_outside_the_window_is_an_error() {
    // A window's own addresses round-trip, offset 0 (its first variable)
    // included.
    let r = eval(
        "cvta.local.u64 %rd1, %a0; cvta.to.local.u64 %o0, %rd1;\
         cvta.shared.u64 %rd2, %a1; cvta.to.shared.u64 %o1, %rd2;",
        &[0, 24],
    );
    assert_eq!((r[0], r[1]), (0, 24));
    // NVPTX's backend once moved a null generic pointer into the local window
    // and out again (core's float formatting, where a phi joins a stack buffer
    // with null): undefined in PTX, and on the GPU the pointer came back
    // non-null and the read through it faulted. The VM says so at the
    // conversion.
    for space in ["local", "shared"] {
        let ptx = kernel_ptx("", &format!("mov.b64 %rd1, 0; cvta.to.{space}.u64 %rd2, %rd1; ret;"));
        let module = Module::parse(&ptx).unwrap();
        let e = run(&module, "k", dims((1, 1, 1), (1, 1, 1)), &Params::new(), &Env::new()).unwrap_err();
        assert!(e.to_string().contains(&format!("cvta.to.{space} of 0x0, which is not a {space} address")), "{e}");
    }
}

/// What the H200 gives for NaNs in float-to-float `cvt` (measured with
/// CUDA C++ inline PTX on sm_90): from f64 and to f64 the sign and leading
/// fraction bits are kept and the quiet bit set; bf16 to f32 is a shift;
/// f32 to f16/bf16 and f16 to f32 give the canonical NaN. ptx-vm used to
/// give the canonical NaN everywhere, so `f64 as f32` of a NaN differed
/// from the GPU (and from the CPU) under the emulator.
#[test]
fn nan_conversions_match_the_h200() {
    let r = eval(
        "cvt.rn.f32.f64 %f1, %ad0; mov.b32 %oi0, %f1; cvt.rn.f16.f64 %rs1, %ad1; cvt.u64.u16 %o0, %rs1;\
         cvt.rn.bf16.f64 %rs2, %ad1; cvt.u64.u16 %o1, %rs2; cvt.rn.f16.f64 %rs3, %ad2; cvt.u64.u16 %o2, %rs3;\
         cvt.f64.f16 %o3, %rs3; cvt.rn.f16.f32 %rs4, %af3; cvt.u64.u16 %o4, %rs4; cvt.f32.f16 %f2, %rs4; mov.b32 %oi1, %f2;\
         cvt.rn.bf16.f32 %rs5, %af3; cvt.u64.u16 %o5, %rs5; mov.b16 %rs6, 0x7fc1; cvt.f32.bf16 %f3, %rs6; mov.b32 %oi2, %f3;",
        &[0x7ff0_0001_0000_0000, 0x7ff4_0000_0000_0000, 0xfff8_0400_0000_0000, 0x7fa0_0000],
    );
    assert_eq!(r[8], 0x7fc0_0008, "f64 → f32: fraction truncated, quieted");
    assert_eq!(r[0], 0x7f00, "f64 → f16: fraction truncated, quieted");
    assert_eq!(r[1], 0x7fe0, "f64 → bf16");
    assert_eq!(r[2], 0xfe01, "f64 → f16 keeps the sign");
    assert_eq!(r[3], 0xfff8_0400_0000_0000, "f16 → f64: fraction widened, quieted");
    assert_eq!(r[4], 0x7fff, "f32 → f16: the canonical NaN");
    assert_eq!(r[9], 0x7fff_ffff, "f16 → f32: the canonical NaN");
    assert_eq!(r[5], 0x7fff, "f32 → bf16: the canonical NaN");
    assert_eq!(r[10], 0x7fc1_0000, "bf16 → f32: every bit kept");
}

#[test]
fn cvt_fp8_pairs() {
    // f32 pairs (a high, b low), an f16x2, and back to f16x2.
    let r = eval(
        "cvt.rn.satfinite.e4m3x2.f32 %rs1, %af0, %af1; cvt.u64.u16 %o0, %rs1;\
         cvt.rn.satfinite.e5m2x2.f32 %rs2, %af2, %af3; cvt.u64.u16 %o1, %rs2;\
         cvt.rn.satfinite.e4m3x2.f16x2 %rs3, %ai4; cvt.u64.u16 %o2, %rs3;\
         cvt.rn.satfinite.e5m2x2.f16x2 %rs4, %ai4; cvt.u64.u16 %o3, %rs4;\
         cvt.rn.f16x2.e4m3x2 %oi0, %ah5; cvt.rn.f16x2.e5m2x2 %oi1, %ah6;",
        &[
            f32b(-1e9),          // E4M3 hi: saturates to -448 (0xfe)
            f32b(1.0625),        // E4M3 lo: a tie, to even 1.0 (0x38)
            f32b(f32::NAN),      // E5M2 hi: NaN, 0x7f
            f32b(f32::INFINITY), // E5M2 lo: saturates to 57344 (0x7b)
            0xfc00_3c00,         // f16x2 (lo 1.0, hi -inf)
            0x7f01,              // E4M3 (lo 2^-9, hi NaN)
            0xfc7b,              // E5M2 (lo 57344, hi -inf)
        ],
    );
    assert_eq!(r[0], 0xfe38);
    assert_eq!(r[1], 0x7f7b);
    assert_eq!(r[2], 0xfe38, "E4M3 of (1.0, -inf)");
    assert_eq!(r[3], 0xfb3c, "E5M2 of (1.0, -inf)");
    assert_eq!(r[8], 0x7fff_1800, "E4M3 NaN widens to the canonical f16 NaN");
    assert_eq!(r[9], 0xfc00_7b00, "E5M2 widens by a shift");
}

#[test]
fn cvt_fp8_forms_ptx_lacks_are_refused() {
    for form in [
        "cvt.rn.e4m3x2.f32 %rs1, %f1, %f2;",
        "cvt.rz.satfinite.e4m3x2.f32 %rs1, %f1, %f2;",
        "cvt.rn.satfinite.e5m2x2.f64 %rs1, %fd1, %fd2;",
        "cvt.rn.f32.e4m3x2 %f1, %rs1;",
    ] {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n\
             .reg .b16 %rs<4>;\n.reg .f32 %f<4>;\n.reg .f64 %fd<4>;\n{form}\nret;\n}}\n"
        );
        let m = Module::parse(&ptx).unwrap();
        let err = run(&m, "k", dims((1, 1, 1), (1, 1, 1)), &Params::new(), &Env::new()).unwrap_err();
        assert!(err.to_string().contains("FP8"), "{form}: {err}");
    }
}

#[test]
fn bulk_prefetch_to_l2_is_a_hint_and_bulk_copies_stay_refused() {
    // `cache::prefetch_l2_bulk` as the device linker emits it: the request
    // only for a global address, which changes no value; the thread goes on.
    let r = eval(
        "{ .reg .pred p; .reg .u64 g; isspacep.global p, %rdin; @p cvta.to.global.u64 g, %rdin; \
         @p cp.async.bulk.prefetch.L2.global [g], 64; selp.u64 %o1, 1, 0, p; }\
         ld.global.u64 %o0, [%rdin];",
        &[0x1234_5678_9abc_def0],
    );
    assert_eq!(r[0], 0x1234_5678_9abc_def0);
    assert_eq!(r[1], 1, "the input is in global memory");
    // The copies and the tensor prefetch are still refused (TMA).
    for form in [
        "cp.async.bulk.prefetch.tensor.1d.L2.global.tile [%rd1, {%r1}];",
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];",
    ] {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n\
             .reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n{form}\nret;\n}}\n"
        );
        let err = Module::parse(&ptx)
            .map_err(|e| e.to_string())
            .and_then(|m| run(&m, "k", dims((1, 1, 1), (1, 1, 1)), &Params::new(), &Env::new()).map_err(|e| e.to_string()))
            .unwrap_err();
        assert!(err.contains("not implemented") || err.contains("TMA"), "{form}: {err}");
    }
}
