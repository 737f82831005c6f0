//! attention: the fused attention forward pass of this package's library
//! (bf16, f32 accumulation, Hopper sm_90a; `src/lib.rs` describes the
//! kernel) checked against an f32 CPU reference, and timed.
//!
//! `attention` (no arguments) runs the check cases, each with both kernel
//! variants (P in registers, P through shared memory) and, with P in
//! registers, every tile shape of the head_dim (`attention::Tile`; at
//! head_dim 64: 128 or 192 query rows per block, 2 to 4 K/V stages):
//! head_dim 64 and 128, causal and not, seq 128, 256, 384 and 1024 (a
//! debug build: 128, 256 and 384),
//! batch·heads 1 and 3, every output
//! row against `attention::reference_row` (f32 on the CPU from the same bf16
//! inputs). The bound, per element: |o − ref| ≤ 2⁻⁷·max|V| + 2⁻⁷·|ref|:
//! O's final bf16 rounding is ≤ 2⁻⁹·|ref|; P is rounded to bf16 before P·V,
//! which moves each weight by ≤ 2⁻⁹ of itself and so the output by
//! ≤ 2⁻⁹·max|V| (the weights sum to the row sum, which is not rounded);
//! `ex2.approx` and f32 summation order add far less; twice those, with
//! margin. A dropped or doubled KV tile, a wrong mask or a swizzle mix-up
//! moves outputs by much more. The log-sum-exp: |lse − ref| ≤ 10⁻³·max(1, |ref|).
//! The default tile (and backward kernel) of a case with 3 (batch, head)s
//! also runs with the heads in groups of 2 (`attention::Group`), whose last
//! group is partial, and so does each persistent tile, which also runs
//! twice more, at once on its stream and on another one, into separate
//! outputs (its work counter must be 0 again after each launch, and the
//! second launch must wait for the first), then is captured into a CUDA
//! graph that is replayed twice.
//! Each case prints PASS/FAIL and, on failure, its first wrong entries.
//! The largest shape of each (head_dim, mask) also runs with keys that grow
//! along the sequence ([`Inputs::RisingKeys`]): their rows' maxima rise
//! tile after tile, so that O and the sums are rescaled in every step and
//! not only after the first tiles, and one late key scores far above all
//! others, so that a late rescaling runs with factors near 0.
//!
//! Each case then runs the backward pass ([`attention::Backward`], with each
//! split of dQ between the warpgroups that the head_dim has) on the
//! forward's O and log-sum-exp with a random dO and checks dQ, dK, dV,
//! every entry of every (batch, head), against `attention::reference_backward`
//! (f32 on the CPU: the softmax recomputed from Q and K, then the textbook
//! gradients). The bound, per entry: |g − ref| ≤ 2⁻⁷·(Σ|terms| + |ref|),
//! where Σ|terms| is the sum of the absolute values of the products the
//! entry adds up (`attention::Gradients::tolerance` explains it: P and dS
//! are rounded to bf16 before their products, D comes from the bf16 O, the
//! outputs are rounded to bf16). The persistent split runs twice more and
//! its last output is checked again (its work counter must be 0 after each
//! launch); a graph of its launch, and of the default split's, is replayed
//! twice and checked.
//!
//! `attention --bench [SEQ…]` times the bench shapes (heads·head_dim = 2048,
//! batch·seq = 16384; seq 512…16384 unless given) for head_dim 128 and 64,
//! causal and not, after checking 64 sampled rows of each against the CPU,
//! and prints TFLOP/s (4·b·h·s²·d per pass, half of it causal), with P in
//! registers for the tiles that `OXIDE_ATTN_FWD` names (`all`, or a comma
//! list such as `m128s2,m192s3`; unset: the default tile), each with the
//! head groups that `OXIDE_ATTN_GROUP` names (`auto`, or numbers of heads,
//! e.g. `1,8,16,auto`; unset: the default group; a bad entry is an
//! error); then the backward pass the same way (sampled rows of dQ, dK, dV checked against
//! `attention::reference_gradient_row`; TFLOP/s from 2.5× the forward's
//! count), with each of the head_dim's backward kernels ([`DqSplit`]), or
//! those `OXIDE_ATTN_BWD` names (`all`, or a comma list such as
//! `columns,wide`), each with the groups of `OXIDE_ATTN_GROUP`. `--bwd`
//! with `--bench` times the backward pass alone
//! (after a forward launch that makes its O and log-sum-exp). The checks
//! without `--bench` run every backward kernel.
//!
//! The exit status is non-zero when any check fails.

use attention::backward::bwd_kernel_name;
use attention::{
    check_shape, kernel_function, kernel_name, reference_backward, reference_gradient_row, reference_row, Attention, Backward, DqSplit, Gradients, Group, Shape, Tile, Variant, BWD_ENV,
};
use cuda_core::{CudaContext, DeviceBuffer};
use cuda_host::{load_kernel_module, KernelModule};
use std::cell::RefCell;
use std::collections::HashMap;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;

type BoxError = attention::Error;

/// bf16 bits of `x`, rounded to nearest even.
fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// The f32 value of bf16 bits.
fn from_bf16(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// Deterministic pseudo-random bf16 values in [-scale, scale) (xorshift64).
fn random_bf16(len: usize, seed: u64, scale: f32) -> Vec<u16> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            to_bf16(scale * ((state >> 40) as f32 / (1u64 << 23) as f32 - 1.0))
        })
        .collect()
}

/// One row of the forward's CPU reference: O's row and the log-sum-exp.
type ReferenceRow = Rc<(Vec<f32>, f32)>;

/// What a check case's inputs look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Inputs {
    /// Q uniform in [-3, 3), K, V and dO in [-1, 1): a row's maximum is
    /// mostly settled by its first KV tile.
    Uniform,
    /// As `Uniform`, then key j scaled by 1 + 6·j/seq and the key three
    /// before the last by 8 more: scores spread and maxima rise along the
    /// keys, so the online softmax raises a row's maximum late, often by
    /// little and at the spike by much.
    RisingKeys,
}

/// One problem's inputs on the host (bf16 bits and their f32 values) and
/// on the GPU.
struct Problem {
    shape: Shape,
    inputs: Inputs,
    qf: Vec<f32>,
    kf: Vec<f32>,
    vf: Vec<f32>,
    dof: Vec<f32>,
    q: DeviceBuffer<u16>,
    k: DeviceBuffer<u16>,
    v: DeviceBuffer<u16>,
    d_o: DeviceBuffer<u16>,
    /// The CPU reference's O row and log-sum-exp by global row, each
    /// computed once: every kernel, group and relaunch of a case checks
    /// against the same rows, and a debug build spends most of its time here.
    forward_reference: RefCell<HashMap<usize, ReferenceRow>>,
    /// The CPU reference's gradients by (batch, head), likewise.
    backward_reference: RefCell<HashMap<usize, Rc<Gradients>>>,
}

impl Problem {
    fn new(ctx: &Arc<CudaContext>, shape: Shape, inputs: Inputs) -> Result<Problem, BoxError> {
        check_shape(shape)?;
        let stream = ctx.default_stream();
        let n = shape.elements();
        let seed = (shape.seq as u64) << 20 ^ (shape.batch_heads as u64) << 8 ^ shape.head_dim as u64;
        // Q scaled up so that the softmax is peaked (scores of a few units),
        // which exercises the running-max rescaling.
        let qh = random_bf16(n, 0x2545_f491_4f6c_dd1d ^ seed, 3.0);
        let mut kh = random_bf16(n, 0x9e37_79b9_7f4a_7c15 ^ seed, 1.0);
        if inputs == Inputs::RisingKeys {
            let (seq, d) = (shape.seq as usize, shape.head_dim as usize);
            for (r, row) in kh.chunks_mut(d).enumerate() {
                let j = r % seq;
                let spike = if j + 3 == seq { 8.0 } else { 1.0 };
                let factor = spike * (1.0 + 6.0 * j as f32 / seq as f32);
                for x in row {
                    *x = to_bf16(factor * from_bf16(*x));
                }
            }
        }
        let vh = random_bf16(n, 0xd1b5_4a32_d192_ed03 ^ seed, 1.0);
        let doh = random_bf16(n, 0x94d0_49bb_1331_11eb ^ seed, 1.0);
        let f = |h: &[u16]| h.iter().map(|&x| from_bf16(x)).collect::<Vec<f32>>();
        Ok(Problem {
            shape,
            inputs,
            qf: f(&qh),
            kf: f(&kh),
            vf: f(&vh),
            dof: f(&doh),
            q: DeviceBuffer::from_host(&stream, &qh)?,
            k: DeviceBuffer::from_host(&stream, &kh)?,
            v: DeviceBuffer::from_host(&stream, &vh)?,
            d_o: DeviceBuffer::from_host(&stream, &doh)?,
            forward_reference: RefCell::default(),
            backward_reference: RefCell::default(),
        })
    }

    /// The name a check of `kernel` with head groups of `group` prints:
    /// the kernel, the group, the shape and the inputs.
    fn label(&self, kernel: &str, group: u32) -> String {
        let Shape { batch_heads, seq, head_dim, causal } = self.shape;
        let mask = if causal { "causal" } else { "full" };
        let inputs = if self.inputs == Inputs::RisingKeys { " rising keys" } else { "" };
        format!("{kernel} g{group} hd {head_dim} {mask} seq {seq} bh {batch_heads}{inputs}")
    }

    /// `reference_row` of global row `row` (bh·seq + i), computed once.
    fn reference_row(&self, row: usize) -> ReferenceRow {
        let s = self.shape.seq as usize;
        let compute = || Rc::new(reference_row(&self.qf, &self.kf, &self.vf, self.shape, row / s, row % s));
        self.forward_reference.borrow_mut().entry(row).or_insert_with(compute).clone()
    }

    /// `reference_backward` of (batch, head) `bh`, computed once.
    fn reference_backward(&self, bh: usize) -> Rc<Gradients> {
        let compute = || Rc::new(reference_backward(&self.qf, &self.kf, &self.vf, &self.dof, self.shape, bh));
        self.backward_reference.borrow_mut().entry(bh).or_insert_with(compute).clone()
    }

    /// Compares rows `rows` (global row indices bh·seq + i) of the GPU's
    /// `o` and `lse` with the CPU reference; prints the first wrong entries.
    fn check(&self, label: &str, o: &[u32], lse: &[f32], rows: &[usize]) -> bool {
        let (s, d) = (self.shape.seq as usize, self.shape.head_dim as usize);
        let vmax = self.vf.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        let (mut bad, mut worst) = (0usize, 0.0f32);
        for &row in rows {
            let (bh, i) = (row / s, row % s);
            let reference = self.reference_row(row);
            let (want, want_lse) = (&reference.0, reference.1);
            for (c, &w) in want.iter().enumerate() {
                let idx = row * d + c;
                let word = o[idx / 2];
                let got = from_bf16(if idx % 2 == 0 { word as u16 } else { (word >> 16) as u16 });
                let tol = vmax / 128.0 + w.abs() / 128.0;
                let err = (got - w).abs();
                worst = worst.max(err / tol);
                if err.is_nan() || err > tol {
                    if bad < 5 {
                        println!("  {label}: O[bh {bh}][row {i}][col {c}] = {got}, expected {w} (tolerance {tol:.2e})");
                    }
                    bad += 1;
                }
            }
            let got = lse[row];
            let tol = 1e-3 * want_lse.abs().max(1.0);
            let err = (got - want_lse).abs();
            if err.is_nan() || err > tol {
                if bad < 5 {
                    println!("  {label}: LSE[bh {bh}][row {i}] = {got}, expected {want_lse}");
                }
                bad += 1;
            }
        }
        println!("  {label}: {} rows checked, {bad} wrong entries (worst O error/tolerance {worst:.3})", rows.len());
        bad == 0
    }
}

/// The bf16 element `idx` of a tensor stored as pairs in words, as f32.
fn element(words: &[u32], idx: usize) -> f32 {
    let word = words[idx / 2];
    from_bf16(if idx.is_multiple_of(2) { word as u16 } else { (word >> 16) as u16 })
}

/// Counts (and prints the first few of) the entries of the GPU's gradients
/// `dq`, `dk`, `dv` (words) outside the bound of the reference `g`, whose
/// entry `e` is the GPU's entry `offset + e`; tracks the worst
/// error/tolerance ratio.
fn compare_gradients(label: &str, got: [&[u32]; 3], g: &Gradients, offset: usize, head_dim: usize, bad: &mut usize, worst: &mut f32) {
    let want = [(&g.dq, &g.dq_abs), (&g.dk, &g.dk_abs), (&g.dv, &g.dv_abs)];
    for (t, (name, (values, abs))) in ["dQ", "dK", "dV"].iter().zip(want).enumerate() {
        for (e, (&w, &a)) in values.iter().zip(abs.iter()).enumerate() {
            let x = element(got[t], offset + e);
            let tol = Gradients::tolerance(w, a);
            let err = (x - w).abs();
            *worst = worst.max(err / tol);
            if err.is_nan() || err > tol {
                if *bad < 5 {
                    let row = (offset + e) / head_dim;
                    println!("  {label}: {name}[row {row}][col {}] = {x}, expected {w} (tolerance {tol:.2e})", (offset + e) % head_dim);
                }
                *bad += 1;
            }
        }
    }
}

/// Runs the backward pass of `p` with each split of dQ in `splits` (after
/// the forward, which makes O and the log-sum-exp) and
/// checks dQ, dK, dV: every entry against
/// `reference_backward`, or (`sampled`) 16 rows against
/// `reference_gradient_row` from the GPU's O and log-sum-exp; with `reps`,
/// times the backward pass alone.
fn run_backward(
    ctx: &Arc<CudaContext>,
    module: &KernelModule,
    p: &Problem,
    splits: &[DqSplit],
    groups: &[Group],
    sampled: bool,
    reps: usize,
) -> Result<bool, BoxError> {
    let mut ok = true;
    for &split in splits {
        for &group in groups {
            ok &= run_backward_split(ctx, module, p, split, group, sampled, reps)?;
        }
    }
    Ok(ok)
}

#[allow(clippy::too_many_arguments)]
fn run_backward_split(
    ctx: &Arc<CudaContext>,
    module: &KernelModule,
    p: &Problem,
    split: DqSplit,
    group: Group,
    sampled: bool,
    reps: usize,
) -> Result<bool, BoxError> {
    let stream = ctx.default_stream();
    let shape = p.shape;
    let attn = Attention::new(module, &stream, &p.q, &p.k, &p.v, shape)?;
    let mut bwd = Backward::with_split(split, module, &stream, &p.q, &p.k, &p.v, &p.d_o, shape)?;
    bwd.set_group(group);
    let label = p.label(bwd_kernel_name(shape.head_dim, split), bwd.group());
    let words = shape.elements() / 2;
    let mut o = DeviceBuffer::<u32>::zeroed(&stream, words)?;
    let mut lse = DeviceBuffer::<f32>::zeroed(&stream, shape.rows())?;
    attn.launch(module, &stream, &mut o, &mut lse)?;
    // Filled with NaN bits so that an entry never written fails.
    let mut dq = DeviceBuffer::<u32>::zeroed(&stream, words)?;
    let mut dk = DeviceBuffer::<u32>::zeroed(&stream, words)?;
    let mut dv = DeviceBuffer::<u32>::zeroed(&stream, words)?;
    for t in [&mut dq, &mut dk, &mut dv] {
        t.memset(&stream, 0xff)?;
    }
    bwd.launch(module, &stream, &o, &lse, &mut dq, &mut dk, &mut dv)?;
    stream.synchronize()?;
    let (s, d) = (shape.seq as usize, shape.head_dim as usize);
    // O and the log-sum-exp for the sampled rows' reference (the full
    // check recomputes the forward).
    let (of, lh) = if sampled {
        let oh = o.to_host_vec(&stream)?;
        ((0..shape.elements()).map(|i| element(&oh, i)).collect(), lse.to_host_vec(&stream)?)
    } else {
        (Vec::new(), Vec::new())
    };
    // dQ, dK and dV (device buffers) against the reference: prints what was
    // checked, the wrong entries and the worst error over its tolerance, and
    // returns the number of wrong entries.
    let check = |label: &str, dq: &DeviceBuffer<u32>, dk: &DeviceBuffer<u32>, dv: &DeviceBuffer<u32>| -> Result<usize, BoxError> {
        let (dqh, dkh, dvh) = (dq.to_host_vec(&stream)?, dk.to_host_vec(&stream)?, dv.to_host_vec(&stream)?);
        let (mut bad, mut worst) = (0usize, 0.0f32);
        let checked = if sampled {
            let n = shape.rows();
            let mut rows: Vec<usize> = (0..15u64).map(|i| (i.wrapping_mul(2654435761) % n as u64) as usize).collect();
            rows.push(n - 1);
            for &row in &rows {
                let g = reference_gradient_row(&p.qf, &p.kf, &p.vf, &p.dof, &of, &lh, shape, row / s, row % s);
                compare_gradients(label, [&dqh, &dkh, &dvh], &g, row * d, d, &mut bad, &mut worst);
            }
            format!("{} rows", rows.len())
        } else {
            for bh in 0..shape.batch_heads as usize {
                let g = p.reference_backward(bh);
                compare_gradients(label, [&dqh, &dkh, &dvh], &g, bh * s * d, d, &mut bad, &mut worst);
            }
            "every entry".to_string()
        };
        println!("  {label}: {checked} checked, {bad} wrong entries (worst error/tolerance {worst:.3})");
        Ok(bad)
    };
    let mut bad = check(&label, &dq, &dk, &dv)?;
    if split == DqSplit::TmaPersistent {
        // The work counter is 0 again after a launch: launch twice more,
        // the second time into fresh outputs, and check that one.
        bwd.launch(module, &stream, &o, &lse, &mut dq, &mut dk, &mut dv)?;
        for t in [&mut dq, &mut dk, &mut dv] {
            t.memset(&stream, 0xff)?;
        }
        bwd.launch(module, &stream, &o, &lse, &mut dq, &mut dk, &mut dv)?;
        stream.synchronize()?;
        bad += check(&format!("{label}, launched twice more"), &dq, &dk, &dv)?;
    }
    if split == DqSplit::TmaPersistent || split == DqSplit::available(shape.head_dim)[0] {
        // Captured into a graph (the accumulator's memset and the three
        // kernels) and replayed twice, the second time into cleared outputs.
        // (On a stream of its own: the legacy default stream cannot capture.)
        let capturing = ctx.new_stream()?;
        let graph = capturing.capture(|s| bwd.launch(module, s, &o, &lse, &mut dq, &mut dk, &mut dv))?;
        let exec = graph.instantiate()?;
        exec.launch(&capturing)?;
        for t in [&mut dq, &mut dk, &mut dv] {
            t.memset(&capturing, 0xff)?;
        }
        exec.launch(&capturing)?;
        capturing.synchronize()?;
        bad += check(&format!("{label}, replayed from a graph"), &dq, &dk, &dv)?;
    }
    let ok = bad == 0;
    if reps > 0 {
        let ms = time_ms(ctx, reps, || bwd.launch(module, &stream, &o, &lse, &mut dq, &mut dk, &mut dv))?;
        let tflops = shape.backward_flops() / ms / 1e9;
        println!("  {label}: {ms:.3} ms, {tflops:.1} TFLOP/s");
        println!(
            "attention_bwd {split:?} group={} hd={} causal={} seq={} batch={} heads={} tflops={tflops:.1}",
            bwd.group(),
            shape.head_dim,
            shape.causal as u8,
            shape.seq,
            16384 / shape.seq,
            2048 / shape.head_dim
        );
    }
    println!("{} {label}", if ok { "PASS" } else { "FAIL" });
    Ok(ok)
}

/// Times `launch` (milliseconds per call, the median of `reps` after warm-up).
fn time_ms(ctx: &Arc<CudaContext>, reps: usize, mut launch: impl FnMut() -> Result<(), BoxError>) -> Result<f64, BoxError> {
    let stream = ctx.default_stream();
    launch()?;
    launch()?;
    stream.synchronize()?;
    let mut times = Vec::new();
    for _ in 0..reps {
        let start = ctx.new_event()?;
        let end = ctx.new_event()?;
        start.record(&stream)?;
        launch()?;
        end.record(&stream)?;
        end.synchronize()?;
        times.push(start.elapsed_ms(&end)? as f64);
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Ok(times[times.len() / 2])
}

/// Runs `shape` once with each forward kernel (unless `backward_only`):
/// each variant, and with P in registers each tile the head_dim has
/// (`from_env`: only those $OXIDE_ATTN_FWD names, [`Tile::from_env`], each
/// with the groups $OXIDE_ATTN_GROUP names, [`Group::from_env`]; else the
/// default group, and groups of 2 for the default tile of 3 heads);
/// then the backward pass with each split of dQ the head_dim has
/// (`from_env` and $OXIDE_ATTN_BWD set: only those it names,
/// [`DqSplit::from_env`]; `from_env`: each with the groups
/// $OXIDE_ATTN_GROUP names; else the default group, and groups of 2 for the
/// default split of 3 heads); checks every row, or sampled ones; with
/// `reps`, times them.
#[allow(clippy::too_many_arguments)]
fn run_case(ctx: &Arc<CudaContext>, module: &KernelModule, shape: Shape, inputs: Inputs, sampled: bool, reps: usize, backward_only: bool, from_env: bool) -> Result<bool, BoxError> {
    let p = Problem::new(ctx, shape, inputs)?;
    let mut ok = true;
    if !backward_only {
        for variant in Variant::ALL {
            let tiles = match variant {
                Variant::RegisterP if from_env => Tile::from_env(shape.head_dim),
                _ => Tile::available(shape.head_dim, variant).to_vec(),
            };
            for tile in tiles {
                let groups = if from_env {
                    Group::from_env()?
                } else if variant == Variant::RegisterP && (tile == Tile::default_for(shape.head_dim) || tile.persistent) && shape.batch_heads == 3 {
                    // A partial last group: its blocks (a persistent
                    // kernel's work items) past the last head must leave
                    // without disturbing the others.
                    vec![Group::Auto, Group::Heads(2)]
                } else {
                    vec![Group::Auto]
                };
                for group in groups {
                    ok &= run_variant(ctx, module, &p, variant, tile, group, sampled, reps)?;
                }
            }
        }
    }
    // Without a correct forward (its O and log-sum-exp) the backward's
    // failures would say nothing new.
    if ok {
        let splits = if from_env && std::env::var_os(BWD_ENV).is_some() {
            DqSplit::from_env(shape.head_dim)
        } else {
            DqSplit::available(shape.head_dim).to_vec()
        };
        if from_env {
            ok &= run_backward(ctx, module, &p, &splits, &Group::from_env()?, sampled, reps)?;
        } else {
            ok &= run_backward(ctx, module, &p, &splits, &[Group::Auto], sampled, reps)?;
            // A partial last group (of the default kernel), as for the forward.
            if shape.batch_heads == 3 {
                ok &= run_backward(ctx, module, &p, &splits[..1], &[Group::Heads(2)], sampled, reps)?;
            }
        }
    }
    Ok(ok)
}

#[allow(clippy::too_many_arguments)]
fn run_variant(
    ctx: &Arc<CudaContext>,
    module: &KernelModule,
    p: &Problem,
    variant: Variant,
    tile: Tile,
    group: Group,
    sampled: bool,
    reps: usize,
) -> Result<bool, BoxError> {
    let stream = ctx.default_stream();
    let shape = p.shape;
    let mut attn = Attention::with_kernel(variant, tile, module, &stream, &p.q, &p.k, &p.v, shape)?;
    attn.set_group(group);
    let label = p.label(attn.kernel_name(), attn.group());
    // Filled with NaN bits so that an entry never written fails.
    let mut o = DeviceBuffer::<u32>::zeroed(&stream, shape.elements() / 2)?;
    let mut lse = DeviceBuffer::<f32>::zeroed(&stream, shape.rows())?;
    o.memset(&stream, 0xff)?;
    lse.memset(&stream, 0xff)?;
    attn.launch(module, &stream, &mut o, &mut lse)?;
    stream.synchronize()?;
    let (oh, lh) = (o.to_host_vec(&stream)?, lse.to_host_vec(&stream)?);
    let rows: Vec<usize> = if sampled {
        // 64 rows spread over every (batch, head) and position, the last
        // row (the longest causal one) among them.
        let n = shape.rows();
        let mut r: Vec<usize> = (0..63u64).map(|i| (i.wrapping_mul(2654435761) % n as u64) as usize).collect();
        r.push(n - 1);
        r
    } else {
        (0..shape.rows()).collect()
    };
    let mut ok = p.check(&label, &oh, &lh, &rows);
    if tile.persistent {
        // The work counter is 0 again after a launch, and a launch on
        // another stream waits for the last one: launch again on this
        // stream and, right behind it, on a new one into buffers of its
        // own (nothing else orders the two), and check both outputs.
        let other = ctx.new_stream_non_blocking()?;
        let mut o2 = DeviceBuffer::<u32>::zeroed(&other, shape.elements() / 2)?;
        let mut lse2 = DeviceBuffer::<f32>::zeroed(&other, shape.rows())?;
        o2.memset(&other, 0xff)?;
        lse2.memset(&other, 0xff)?;
        o.memset(&stream, 0xff)?;
        lse.memset(&stream, 0xff)?;
        other.synchronize()?;
        attn.launch(module, &stream, &mut o, &mut lse)?;
        attn.launch(module, &other, &mut o2, &mut lse2)?;
        stream.synchronize()?;
        other.synchronize()?;
        let (oh, lh) = (o.to_host_vec(&stream)?, lse.to_host_vec(&stream)?);
        ok &= p.check(&format!("{label}, launched again"), &oh, &lh, &rows);
        let (oh, lh) = (o2.to_host_vec(&other)?, lse2.to_host_vec(&other)?);
        ok &= p.check(&format!("{label}, then on another stream"), &oh, &lh, &rows);
        // Captured into a graph (on a stream of its own: the legacy default
        // stream cannot capture) and replayed twice, the second time into
        // cleared outputs: a replay runs the launch as recorded, so the
        // counter must be 0 again after each replay as after a launch.
        let capturing = ctx.new_stream()?;
        let graph = capturing.capture(|s| attn.launch(module, s, &mut o, &mut lse))?;
        let exec = graph.instantiate()?;
        exec.launch(&capturing)?;
        o.memset(&capturing, 0xff)?;
        lse.memset(&capturing, 0xff)?;
        exec.launch(&capturing)?;
        capturing.synchronize()?;
        let (oh, lh) = (o.to_host_vec(&stream)?, lse.to_host_vec(&stream)?);
        ok &= p.check(&format!("{label}, replayed from a graph"), &oh, &lh, &rows);
    }
    if reps > 0 {
        let ms = time_ms(ctx, reps, || attn.launch(module, &stream, &mut o, &mut lse))?;
        println!("  {label}: {ms:.3} ms, {:.1} TFLOP/s", shape.flops() / ms / 1e9);
        println!(
            "attention_fwd {:?} tile={} group={} hd={} causal={} seq={} batch={} heads={} tflops={:.1}",
            variant,
            tile.name(),
            attn.group(),
            shape.head_dim,
            shape.causal as u8,
            shape.seq,
            16384 / shape.seq,
            2048 / shape.head_dim,
            shape.flops() / ms / 1e9
        );
    }
    println!("{} {label}", if ok { "PASS" } else { "FAIL" });
    Ok(ok)
}

fn main() -> ExitCode {
    let ctx = match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no GPU: {e}");
            return ExitCode::from(2);
        }
    };
    match ctx.compute_capability() {
        Ok((9, _)) => {}
        other => {
            eprintln!("attention needs a Hopper GPU (sm_90a), found {other:?}");
            return ExitCode::from(2);
        }
    }
    let module = match load_kernel_module(&ctx, "attention") {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    for hd in [64, 128] {
        for variant in Variant::ALL {
            for &tile in Tile::available(hd, variant) {
                let Some(name) = kernel_name(hd, variant, tile) else { continue };
                if let Ok(a) = kernel_function(&module, name).and_then(|f| Ok(f.attributes()?)) {
                    println!("{name}: {} registers, {} bytes local memory per thread", a.num_regs, a.local_bytes_per_thread);
                }
            }
        }
        for &split in DqSplit::available(hd) {
            let name = bwd_kernel_name(hd, split);
            if let Ok(a) = kernel_function(&module, name).and_then(|f| Ok(f.attributes()?)) {
                println!("{name}: {} registers, {} bytes local memory per thread", a.num_regs, a.local_bytes_per_thread);
            }
        }
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench");
    let backward_only = args.iter().any(|a| a == "--bwd");
    let mut cases = Vec::new();
    if bench {
        let mut seqs: Vec<u32> = args.iter().filter_map(|s| s.parse().ok()).collect();
        if seqs.is_empty() {
            seqs = vec![512, 1024, 2048, 4096, 8192, 16384];
        }
        for hd in [128, 64] {
            for causal in [false, true] {
                for &seq in &seqs {
                    cases.push((Shape { batch_heads: (16384 / seq) * (2048 / hd), seq, head_dim: hd, causal }, Inputs::Uniform, true, 10));
                }
            }
        }
    } else {
        // A debug build (the GPU suite's) checks the small shapes only: its
        // CPU reference is many times slower.
        // 384 is a whole number of 192-row blocks; the others end in a
        // ragged one.
        let sizes: &[(u32, u32)] =
            if cfg!(debug_assertions) { &[(128, 1), (256, 3), (384, 2)] } else { &[(128, 1), (256, 3), (384, 2), (1024, 1), (1024, 3)] };
        for hd in [64, 128] {
            for causal in [false, true] {
                for &(seq, bh) in sizes {
                    cases.push((Shape { batch_heads: bh, seq, head_dim: hd, causal }, Inputs::Uniform, false, 0));
                }
                let &(seq, bh) = sizes.last().expect("sizes is not empty");
                cases.push((Shape { batch_heads: bh, seq, head_dim: hd, causal }, Inputs::RisingKeys, false, 0));
            }
        }
    }
    let mut failed = 0;
    for (shape, inputs, sampled, reps) in cases {
        match run_case(&ctx, &module, shape, inputs, sampled, reps, backward_only, bench) {
            Ok(true) => {}
            Ok(false) => failed += 1,
            Err(e) => {
                println!("FAIL {shape:?}: error: {e}");
                failed += 1;
                // A kernel fault poisons the context: stop here.
                if ctx.default_stream().synchronize().is_err() {
                    break;
                }
            }
        }
    }
    if failed == 0 {
        println!("✓ SUCCESS: attention matches the CPU reference");
        ExitCode::SUCCESS
    } else {
        println!("✗ FAILED: {failed} case(s)");
        ExitCode::FAILURE
    }
}
