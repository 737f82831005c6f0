//! The fused attention forward pass of examples/attention (row
//! `attention_fwd`): TMA, mbarriers, wgmma for Q·Kᵀ and P·V, online softmax
//! in registers; and its backward pass (row `attention_bwd`: dQ, dK, dV
//! from dO, O and the log-sum-exp; head_dim 128, causal and not, seq 2048,
//! 4096, 8192; TFLOP/s from 2.5× the forward's count, five matrix products
//! to its two).
//!
//! Shapes of issue 22: heads·head_dim = 2048, batch·seq = 16384, head_dim
//! 128 and 64, causal and not, seq 2048, 4096, 8192. Each shape is checked
//! first (sampled rows against an f32 CPU reference, the bound of
//! examples/attention's program), then timed, then checked again on one
//! more launch into cleared outputs (the persistent kernels' work counter
//! must have been reset by every timed launch).
//!
//! The reference is PyTorch's `scaled_dot_product_attention` with its
//! fastest backend, measured by `benches/torch/attention.py` in the same
//! device call (the carried go.sh runs it first): that script writes one
//! line per shape, `hd causal seq batch heads backend ms`, into the file
//! named by `$OXIDE_TORCH_ATTENTION`, which this row reads (the backward's
//! lines are the same with `bwd` in front: torch's backward timed alone,
//! after one forward). Without the file the rows print oxide's TFLOP/s
//! alone (reference time = oxide's).
//!
//! `OXIDE_ATTN_FWD` (`attention::Tile::select`: `all`, or tile names such
//! as `m128s2,m192s3`) times the forward with those tiles instead of the
//! default one, where the head_dim has them; the rows' names then end in
//! the tile's name (`attention_fwd/64/4096/m192s3`), the default's too.
//! `OXIDE_ATTN_BWD` (`attention::DqSplit::select`: `all`, or kernel names
//! such as `columns,wide`) does the same for the backward's kernels
//! (`attention_bwd/128/4096/wide`).
//! `OXIDE_ATTN_GROUP` (`attention::Group::select`: `auto`, or numbers of
//! heads such as `1,8,16,32`; a bad entry fails the row rather than timing
//! the default) times both passes with the (batch, head)s interleaved in
//! those groups (`attention::launch_config`: `auto` is the default, sized
//! to the L2, and 1 is one head after the other); the rows' names then end
//! in the group (`attention_fwd/128c/2048/g16`, after the tile's or
//! kernel's name when that is chosen too) and their notes give the group's
//! size.

use crate::harness::{bf16_to_f32, de, random_bf16, Gpu, Row, Target};
use attention::{
    reference_gradient_row, reference_row, Attention, Backward, DqSplit, Gradients, Group, Shape, Tile, Variant, BWD_ENV, GROUP_ENV, TILE_ENV,
};
use cuda_core::DeviceBuffer;

/// The variable naming the torch script's results file.
pub const TORCH_RESULTS_ENV: &str = "OXIDE_TORCH_ATTENTION";

/// The target: at least torch's fastest backend.
const TORCH_TARGET: Target = Target::SpeedAtLeast(1.0);

/// torch's fastest time (ms) and backend for one shape, from the results
/// file: the forward's lines, or (`backward`) the backward's (`bwd` first).
fn torch_best(results: &str, shape: Shape, backward: bool) -> Option<(f64, String)> {
    let mut best: Option<(f64, String)> = None;
    for line in results.lines() {
        let mut f: Vec<&str> = line.split_whitespace().collect();
        if backward {
            if f.first() != Some(&"bwd") {
                continue;
            }
            f.remove(0);
        }
        if f.len() != 7 {
            continue;
        }
        let matches = f[0].parse() == Ok(shape.head_dim)
            && f[1].parse() == Ok(shape.causal as u32)
            && f[2].parse() == Ok(shape.seq)
            && f[3].parse::<u32>().ok().zip(f[4].parse::<u32>().ok()).map(|(b, h)| b * h) == Some(shape.batch_heads);
        if let (true, Ok(ms)) = (matches, f[6].parse::<f64>()) {
            if best.as_ref().is_none_or(|(b, _)| ms < *b) {
                best = Some((ms, f[5].to_string()));
            }
        }
    }
    best
}

/// Checks `rows` sampled output rows of one launch against the CPU.
fn check(shape: Shape, q: &[u16], k: &[u16], v: &[u16], o: &[u32], lse: &[f32]) -> Result<(), String> {
    let f = |h: &[u16]| h.iter().map(|&x| bf16_to_f32(x)).collect::<Vec<f32>>();
    let (qf, kf, vf) = (f(q), f(k), f(v));
    let (s, d) = (shape.seq as usize, shape.head_dim as usize);
    let n = shape.rows();
    let rows = (0..31u64).map(|i| (i.wrapping_mul(2654435761) % n as u64) as usize).chain([n - 1]);
    for row in rows {
        let (want, want_lse) = reference_row(&qf, &kf, &vf, shape, row / s, row % s);
        for (c, &w) in want.iter().enumerate() {
            let idx = row * d + c;
            let got = bf16_to_f32((o[idx / 2] >> (16 * (idx % 2))) as u16);
            // |V| ≤ 1: P's bf16 rounding and O's, with margin (examples/attention).
            let tol = 1.0 / 128.0 + w.abs() / 128.0;
            let err = (got - w).abs();
            if err.is_nan() || err > tol {
                return Err(format!("{shape:?}: O[row {row}][col {c}] = {got}, expected {w}"));
            }
        }
        let err = (lse[row] - want_lse).abs();
        if err.is_nan() || err > 1e-3 * want_lse.abs().max(1.0) {
            return Err(format!("{shape:?}: LSE[row {row}] = {}, expected {want_lse}", lse[row]));
        }
    }
    Ok(())
}

/// torch's results file ($OXIDE_TORCH_ATTENTION), or None, said once for
/// `row`, whose figures then stand alone.
fn torch_results(row: &str) -> Option<String> {
    let torch = std::env::var_os(TORCH_RESULTS_ENV).and_then(|p| std::fs::read_to_string(p).ok());
    if torch.is_none() {
        eprintln!("{row}: no torch results (${TORCH_RESULTS_ENV}; benches/torch/attention.py writes them): oxide alone");
    }
    torch
}

/// The benchmarks' shape at `seq` and `head_dim`: batch·seq = 16384 and
/// heads·head_dim = 2048, as the issue and torch's script take them.
/// The shape in words for a row's note: head_dim, heads, batch, the mask.
fn describe(seq: u32, head_dim: u32, causal: bool) -> String {
    let batch = 16384 / seq;
    format!("hd {head_dim}, {} heads, batch {batch}{}", 2048 / head_dim, if causal { ", causal" } else { "" })
}

/// A row of oxide's time `ms` for `flops` against torch's fastest backend
/// (`torch`: its time and name; None without torch's results), in TFLOP/s;
/// `pass` follows the backend's name in the note (" backward").
fn torch_row(name: String, ms: f64, flops: f64, torch: Option<(f64, String)>, pass: &str, what: &str) -> Row {
    let tflops = |ms: f64| flops / (ms * 1e-3) / 1e12;
    match torch {
        Some((t_ref, backend)) => Row {
            name,
            oxide: ms,
            unit: "ms",
            reference: "torch".into(),
            reference_time: t_ref,
            target: TORCH_TARGET,
            note: format!("{:.1} TFLOP/s vs {:.1} (sdpa {backend}{pass}); {what}", tflops(ms), tflops(t_ref)),
        },
        None => Row {
            name,
            oxide: ms,
            unit: "ms",
            reference: "-".into(),
            reference_time: ms,
            target: Target::None,
            note: format!("{:.1} TFLOP/s; {what} (no torch results)", tflops(ms)),
        },
    }
}

fn bench_shape(seq: u32, head_dim: u32, causal: bool) -> Shape {
    Shape { batch_heads: (16384 / seq) * (2048 / head_dim), seq, head_dim, causal }
}

/// A row's name and description: `pass/{head_dim}[c]/{seq}`, then the
/// kernel variant's name where the run names variants, then the head
/// group's (its name, and the heads it gave) where the run names groups.
fn label(pass: &str, shape: Shape, variant: Option<String>, group: Option<(String, u32)>) -> (String, String) {
    let (seq, head_dim, causal) = (shape.seq, shape.head_dim, shape.causal);
    let mut name = format!("{pass}/{head_dim}{}/{seq}", if causal { "c" } else { "" });
    let mut what = describe(seq, head_dim, causal);
    if let Some(variant) = variant {
        name = format!("{name}/{variant}");
    }
    if let Some((group, heads)) = group {
        name = format!("{name}/{group}");
        what = format!("{what}, heads in groups of {heads}");
    }
    (name, what)
}

/// The `attention_fwd` rows.
pub fn attention_fwd(gpu: &Gpu) -> Result<Vec<Row>, String> {
    let s = &gpu.stream;
    let torch = torch_results("attention_fwd");
    // The tiles $OXIDE_ATTN_FWD names (the default without it).
    let tiled = std::env::var_os(TILE_ENV).is_some();
    let tiles = |head_dim: u32| if tiled { Tile::from_env(head_dim) } else { vec![Tile::default_for(head_dim)] };
    // The head groups $OXIDE_ATTN_GROUP names (the default without it).
    let grouped = std::env::var_os(GROUP_ENV).is_some();
    let groups = Group::from_env()?;
    let mut rows = Vec::new();
    for head_dim in [128u32, 64] {
        for causal in [false, true] {
            for seq in [2048u32, 4096, 8192] {
                let shape = bench_shape(seq, head_dim, causal);
                let n = shape.elements();
                let seed = (seq as u64) << 8 ^ head_dim as u64;
                // Q scaled ×3 so that the softmax is peaked.
                let q: Vec<u16> = random_bf16(n, seed).iter().map(|&x| crate::harness::f32_to_bf16(3.0 * bf16_to_f32(x))).collect();
                let (k, v) = (random_bf16(n, seed + 1), random_bf16(n, seed + 2));
                let (qd, kd, vd) = (
                    DeviceBuffer::from_host(s, &q).map_err(de)?,
                    DeviceBuffer::from_host(s, &k).map_err(de)?,
                    DeviceBuffer::from_host(s, &v).map_err(de)?,
                );
                let mut o = DeviceBuffer::<u32>::zeroed(s, n / 2).map_err(de)?;
                let mut lse = DeviceBuffer::<f32>::zeroed(s, shape.rows()).map_err(de)?;
                for &tile in &tiles(head_dim) {
                    for &group in &groups {
                        let mut attn =
                            Attention::with_kernel(Variant::RegisterP, tile, &gpu.oxide, s, &qd, &kd, &vd, shape).map_err(|e| e.to_string())?;
                        attn.set_group(group);
                        // Stale results from the previous kernel must not pass.
                        o.memset(s, 0xff).map_err(de)?;
                        lse.memset(s, 0xff).map_err(de)?;
                        attn.launch(&gpu.oxide, s, &mut o, &mut lse).map_err(|e| e.to_string())?;
                        check(shape, &q, &k, &v, &o.to_host_vec(s).map_err(de)?, &lse.to_host_vec(s).map_err(de)?)
                            .map_err(|e| format!("{} g{}: {e}", attn.kernel_name(), attn.group()))?;
                        let t = gpu.time_ms(3, 20, || attn.launch(&gpu.oxide, s, &mut o, &mut lse).map_err(|e| e.to_string()))?;
                        // And once more after the timed launches, into
                        // cleared outputs: a persistent kernel whose work
                        // counter were left wrong would time launches that
                        // do nothing.
                        o.memset(s, 0xff).map_err(de)?;
                        lse.memset(s, 0xff).map_err(de)?;
                        attn.launch(&gpu.oxide, s, &mut o, &mut lse).map_err(|e| e.to_string())?;
                        check(shape, &q, &k, &v, &o.to_host_vec(s).map_err(de)?, &lse.to_host_vec(s).map_err(de)?)
                            .map_err(|e| format!("{} g{} after the timed launches: {e}", attn.kernel_name(), attn.group()))?;
                        let (name, what) = label(
                            "attention_fwd",
                            shape,
                            tiled.then(|| tile.name()),
                            grouped.then(|| (group.name(), attn.group())),
                        );
                        let torch_ref = torch.as_deref().and_then(|r| torch_best(r, shape, false));
                        rows.push(torch_row(name, t, shape.flops(), torch_ref, "", &what));
                    }
                }
            }
        }
    }
    Ok(rows)
}

/// Checks 16 sampled rows of dQ, dK, dV (words) against the CPU, from the
/// GPU's O and log-sum-exp (examples/attention's bound).
#[allow(clippy::too_many_arguments)]
fn check_backward(shape: Shape, q: &[u16], k: &[u16], v: &[u16], d_o: &[u16], o: &[u32], lse: &[f32], grads: [&[u32]; 3]) -> Result<(), String> {
    let f = |h: &[u16]| h.iter().map(|&x| bf16_to_f32(x)).collect::<Vec<f32>>();
    let (qf, kf, vf, df) = (f(q), f(k), f(v), f(d_o));
    let word = |w: &[u32], idx: usize| bf16_to_f32((w[idx / 2] >> (16 * (idx % 2))) as u16);
    let of: Vec<f32> = (0..shape.elements()).map(|i| word(o, i)).collect();
    let (s, d) = (shape.seq as usize, shape.head_dim as usize);
    let n = shape.rows();
    let rows = (0..15u64).map(|i| (i.wrapping_mul(2654435761) % n as u64) as usize).chain([n - 1]);
    for row in rows {
        let g = reference_gradient_row(&qf, &kf, &vf, &df, &of, lse, shape, row / s, row % s);
        for (t, (name, want, abs)) in [("dQ", &g.dq, &g.dq_abs), ("dK", &g.dk, &g.dk_abs), ("dV", &g.dv, &g.dv_abs)].into_iter().enumerate() {
            for c in 0..d {
                let got = word(grads[t], row * d + c);
                let err = (got - want[c]).abs();
                if err.is_nan() || err > Gradients::tolerance(want[c], abs[c]) {
                    return Err(format!("{shape:?}: {name}[row {row}][col {c}] = {got}, expected {}", want[c]));
                }
            }
        }
    }
    Ok(())
}

/// The `attention_bwd` rows: the backward pass timed alone (the forward
/// that makes O and the log-sum-exp runs once before).
pub fn attention_bwd(gpu: &Gpu) -> Result<Vec<Row>, String> {
    let s = &gpu.stream;
    let torch = torch_results("attention_bwd");
    // The kernels $OXIDE_ATTN_BWD names (the default without it).
    let chosen = std::env::var_os(BWD_ENV).is_some();
    let mut rows = Vec::new();
    let head_dim = 128u32;
    let splits = if chosen { DqSplit::from_env(head_dim) } else { vec![DqSplit::available(head_dim)[0]] };
    // The head groups $OXIDE_ATTN_GROUP names (the default without it).
    let grouped = std::env::var_os(GROUP_ENV).is_some();
    let groups = Group::from_env()?;
    for causal in [false, true] {
        for seq in [2048u32, 4096, 8192] {
            let shape = bench_shape(seq, head_dim, causal);
            let n = shape.elements();
            let seed = (seq as u64) << 8 ^ head_dim as u64 ^ 0xb0;
            // Q scaled ×3 so that the softmax is peaked.
            let q: Vec<u16> = random_bf16(n, seed).iter().map(|&x| crate::harness::f32_to_bf16(3.0 * bf16_to_f32(x))).collect();
            let (k, v, d_o) = (random_bf16(n, seed + 1), random_bf16(n, seed + 2), random_bf16(n, seed + 3));
            let up = |h: &[u16]| DeviceBuffer::from_host(s, h).map_err(de);
            let (qd, kd, vd, dod) = (up(&q)?, up(&k)?, up(&v)?, up(&d_o)?);
            let zeroed = || DeviceBuffer::<u32>::zeroed(s, n / 2).map_err(de);
            let (mut o, mut dq, mut dk, mut dv) = (zeroed()?, zeroed()?, zeroed()?, zeroed()?);
            let mut lse = DeviceBuffer::<f32>::zeroed(s, shape.rows()).map_err(de)?;
            let attn = Attention::new(&gpu.oxide, s, &qd, &kd, &vd, shape).map_err(|e| e.to_string())?;
            attn.launch(&gpu.oxide, s, &mut o, &mut lse).map_err(|e| e.to_string())?;
            let host = |b: &DeviceBuffer<u32>| b.to_host_vec(s).map_err(de);
            let oh = host(&o)?;
            let lseh = lse.to_host_vec(s).map_err(de)?;
            for &split in &splits {
                for &group in &groups {
                    let mut bwd = Backward::with_split(split, &gpu.oxide, s, &qd, &kd, &vd, &dod, shape).map_err(|e| e.to_string())?;
                    bwd.set_group(group);
                    // Stale results from the previous kernel must not pass.
                    for t in [&mut dq, &mut dk, &mut dv] {
                        t.memset(s, 0xff).map_err(de)?;
                    }
                    bwd.launch(&gpu.oxide, s, &o, &lse, &mut dq, &mut dk, &mut dv).map_err(|e| e.to_string())?;
                    let (dqh, dkh, dvh) = (host(&dq)?, host(&dk)?, host(&dv)?);
                    check_backward(shape, &q, &k, &v, &d_o, &oh, &lseh, [&dqh, &dkh, &dvh])
                        .map_err(|e| format!("{} g{}: {e}", split.name(), bwd.group()))?;
                    let t = gpu.time_ms(3, 20, || bwd.launch(&gpu.oxide, s, &o, &lse, &mut dq, &mut dk, &mut dv).map_err(|e| e.to_string()))?;
                    // And once more after the timed launches (as the
                    // forward's rows).
                    for t in [&mut dq, &mut dk, &mut dv] {
                        t.memset(s, 0xff).map_err(de)?;
                    }
                    bwd.launch(&gpu.oxide, s, &o, &lse, &mut dq, &mut dk, &mut dv).map_err(|e| e.to_string())?;
                    let (dqh, dkh, dvh) = (host(&dq)?, host(&dk)?, host(&dv)?);
                    check_backward(shape, &q, &k, &v, &d_o, &oh, &lseh, [&dqh, &dkh, &dvh])
                        .map_err(|e| format!("{} g{} after the timed launches: {e}", split.name(), bwd.group()))?;
                    let (name, what) = label(
                        "attention_bwd",
                        shape,
                        chosen.then(|| split.name().to_string()),
                        grouped.then(|| (group.name(), bwd.group())),
                    );
                    let torch_ref = torch.as_deref().and_then(|r| torch_best(r, shape, true));
                    rows.push(torch_row(name, t, shape.backward_flops(), torch_ref, " backward", &what));
                }
            }
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_results_pick_the_fastest_backend_of_the_shape() {
        let results = "# hd causal seq batch heads backend ms\n\
                       128 0 4096 4 16 flash 2.5\n\
                       128 0 4096 4 16 cudnn 1.9\n\
                       128 1 4096 4 16 cudnn 1.2\n\
                       64 0 4096 4 32 cudnn 0.9\n\
                       bwd 128 0 4096 4 16 flash 6.1\n\
                       bwd 128 0 4096 4 16 cudnn 5.2\n\
                       garbage line\n";
        let shape = Shape { batch_heads: 64, seq: 4096, head_dim: 128, causal: false };
        assert_eq!(torch_best(results, shape, false), Some((1.9, "cudnn".to_string())));
        assert_eq!(torch_best(results, Shape { causal: true, ..shape }, false), Some((1.2, "cudnn".to_string())));
        assert_eq!(torch_best(results, Shape { seq: 2048, ..shape }, false), None);
        // The backward's lines, and only those, for the backward.
        assert_eq!(torch_best(results, shape, true), Some((5.2, "cudnn".to_string())));
        assert_eq!(torch_best(results, Shape { causal: true, ..shape }, true), None);
    }
}
