//! Data-parallel training of a small MLP written with oxide kernels
//! (forward, backward, SGD), its gradients all-reduced by NCCL
//! (`cuda-nccl`) at every step.
//!
//! The model is `y = W2·relu(W1·x + b1) + b2` (8 inputs, 16 hidden units,
//! one output), trained by full-batch gradient descent on a fixed batch of
//! 96 samples with a mean squared error. With N ranks each rank holds 96/N
//! samples, computes the gradient of its share (scaled by 1/96), and one
//! `all_reduce(Sum)` of the packed gradient gives every rank the full
//! batch's gradient, so every rank takes the same SGD step. The initial
//! weights come from rank 0 by `broadcast`.
//!
//! The program trains twice: on one rank, then on N ranks, and checks that
//! the two loss curves agree within the bound of reordering f32 sums (the
//! N-rank gradient adds per-rank partial sums), that both agree with the
//! same training in f64 on the CPU, and that the loss fell.
//!
//! ```text
//! cargo oxide run data_parallel                  # every GPU here (emulated: 4 ranks)
//! cargo oxide run data_parallel -- --ranks 2     # N must divide 96
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use cuda_core::{CudaContext, CudaStream, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use cuda_nccl::{Communicator, ReduceOp, UniqueId};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Inputs per sample.
const D: usize = 8;
/// Hidden units.
const H: usize = 16;
/// Where each tensor starts in the packed parameters (and gradients).
const W1: usize = 0;
const B1: usize = W1 + H * D;
const W2: usize = B1 + H;
const B2: usize = W2 + H;
/// The number of parameters.
const P: usize = B2 + 1;
/// The global batch.
const BATCH: usize = 96;
const STEPS: usize = 60;
const LR: f32 = 0.2;

/// `h[s·H + j] = relu(b1[j] + Σ_d W1[j, d]·x[s, d])`, one thread per (s, j).
#[kernel]
pub fn hidden(x: &[f32], p: &[f32], mut h: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let k = idx.get();
    if let Some(out) = h.get_mut(idx) {
        let (s, j) = (k / H, k % H);
        let mut a = p[B1 + j];
        for d in 0..D {
            a += p[W1 + j * D + d] * x[s * D + d];
        }
        *out = if a > 0.0 { a } else { 0.0 };
    }
}

/// `err[s] = b2 + Σ_j W2[j]·h[s, j] − y[s]`, one thread per sample.
#[kernel]
pub fn output(h: &[f32], p: &[f32], y: &[f32], mut err: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let s = idx.get();
    if let Some(e) = err.get_mut(idx) {
        let mut o = p[B2];
        for j in 0..H {
            o += p[W2 + j] * h[s * H + j];
        }
        *e = o - y[s];
    }
}

/// `g[k] = scale · Σ_s ∂(err_s²/2)/∂p[k]` over this rank's `samples`, one
/// thread per parameter (backpropagation through the two layers).
#[kernel]
pub fn gradient(x: &[f32], h: &[f32], err: &[f32], p: &[f32], samples: u32, scale: f32, mut g: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let k = idx.get();
    if let Some(out) = g.get_mut(idx) {
        let mut acc = 0.0f32;
        for s in 0..samples as usize {
            let e = err[s] * scale;
            if k < B1 {
                let (j, d) = (k / D, k % D);
                if h[s * H + j] > 0.0 {
                    acc += e * p[W2 + j] * x[s * D + d];
                }
            } else if k < W2 {
                let j = k - B1;
                if h[s * H + j] > 0.0 {
                    acc += e * p[W2 + j];
                }
            } else if k < B2 {
                acc += e * h[s * H + (k - W2)];
            } else {
                acc += e;
            }
        }
        *out = acc;
    }
}

/// `p[k] −= lr · g[k]`.
#[kernel]
pub fn sgd(g: &[f32], lr: f32, mut p: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let k = idx.get();
    if let Some(w) = p.get_mut(idx) {
        *w -= lr * g[k];
    }
}

/// Sample `i` of the data set: its inputs and target.
fn sample(i: usize) -> ([f32; D], f32) {
    let x: [f32; D] = std::array::from_fn(|d| (0.37 * i as f32 + 1.3 * d as f32).sin());
    let y = x.iter().enumerate().map(|(d, v)| v * (d + 1) as f32 / D as f32).sum::<f32>().sin();
    (x, y)
}

/// The initial parameters (rank 0's; the others get them by broadcast).
fn initial() -> Vec<f32> {
    (0..P)
        .map(|k| {
            let v = 0.5 * (k as f32 * 1.7 + 0.3).sin();
            match k {
                _ if k < B1 => v / (D as f32).sqrt(),
                _ if k < W2 => 0.0,
                _ if k < B2 => v / (H as f32).sqrt(),
                _ => 0.0,
            }
        })
        .collect()
}

/// Trains on this rank's share of the batch; returns the loss before
/// every step (the global batch's, all-reduced) and the final parameters.
fn train(comm: &Communicator, ctx: &Arc<CudaContext>) -> Result<(Vec<f64>, Vec<f32>), Error> {
    let stream: Arc<CudaStream> = ctx.new_stream()?;
    let module = load_kernel_module(ctx, "data_parallel")?;
    let (rank, n) = (comm.rank(), comm.size());
    let m = BATCH / n;
    let (xs, ys): (Vec<[f32; D]>, Vec<f32>) = (rank * m..(rank + 1) * m).map(sample).unzip();
    let x = DeviceBuffer::from_host(&stream, &xs.concat())?;
    let y = DeviceBuffer::from_host(&stream, &ys)?;
    let mut p = DeviceBuffer::from_host(&stream, &if rank == 0 { initial() } else { vec![0.0; P] })?;
    comm.broadcast_in_place(p.as_slice_mut(), 0, &stream)?;
    let mut h = DeviceBuffer::<f32>::zeroed(&stream, m * H)?;
    let mut err = DeviceBuffer::<f32>::zeroed(&stream, m)?;
    let mut g = DeviceBuffer::<f32>::zeroed(&stream, P)?;
    let mut loss = DeviceBuffer::<f64>::zeroed(&stream, 1)?;
    let mut curve = Vec::with_capacity(STEPS);
    for _ in 0..STEPS {
        cuda_launch! { kernel: hidden, stream: stream, module: module, config: LaunchConfig::for_num_elems((m * H) as u32),
                       args: [slice(x), slice(p), slice_mut(h)] }?;
        cuda_launch! { kernel: output, stream: stream, module: module, config: LaunchConfig::for_num_elems(m as u32),
                       args: [slice(h), slice(p), slice(y), slice_mut(err)] }?;
        cuda_launch! { kernel: gradient, stream: stream, module: module, config: LaunchConfig::for_num_elems(P as u32),
                       args: [slice(x), slice(h), slice(err), slice(p), m as u32, 1.0f32 / BATCH as f32, slice_mut(g)] }?;
        // The full batch's gradient on every rank.
        comm.all_reduce_in_place(g.as_slice_mut(), ReduceOp::Sum, &stream)?;
        cuda_launch! { kernel: sgd, stream: stream, module: module, config: LaunchConfig::for_num_elems(P as u32),
                       args: [slice(g), LR, slice_mut(p)] }?;
        // The loss of this step's forward pass, over the whole batch.
        let local: f64 = err.to_host_vec(&stream)?.iter().map(|&e| (e as f64) * (e as f64)).sum();
        loss.copy_from_host(&stream, &[local])?;
        comm.all_reduce_in_place(loss.as_slice_mut(), ReduceOp::Sum, &stream)?;
        comm.wait(&stream)?;
        curve.push(loss.to_host_vec(&stream)?[0] / (2.0 * BATCH as f64));
    }
    Ok((curve, p.to_host_vec(&stream)?))
}

/// The same training in f64 on the CPU: the loss before every step.
fn cpu_curve() -> Vec<f64> {
    let data: Vec<([f32; D], f32)> = (0..BATCH).map(sample).collect();
    let mut p: Vec<f64> = initial().iter().map(|&v| v as f64).collect();
    let mut curve = Vec::new();
    for _ in 0..STEPS {
        let mut g = vec![0.0f64; P];
        let mut loss = 0.0;
        for (x, y) in &data {
            let h: Vec<f64> = (0..H)
                .map(|j| (p[B1 + j] + (0..D).map(|d| p[W1 + j * D + d] * x[d] as f64).sum::<f64>()).max(0.0))
                .collect();
            let e = p[B2] + (0..H).map(|j| p[W2 + j] * h[j]).sum::<f64>() - *y as f64;
            loss += e * e;
            let e = e / BATCH as f64;
            for j in 0..H {
                if h[j] > 0.0 {
                    for d in 0..D {
                        g[W1 + j * D + d] += e * p[W2 + j] * x[d] as f64;
                    }
                    g[B1 + j] += e * p[W2 + j];
                }
                g[W2 + j] += e * h[j];
            }
            g[B2] += e;
        }
        curve.push(loss / (2.0 * BATCH as f64));
        for k in 0..P {
            p[k] -= LR as f64 * g[k];
        }
    }
    curve
}

/// Runs `n` ranks, one thread each; every rank's curve and parameters.
fn run_world(n: usize, emulated: bool) -> Result<Vec<(Vec<f64>, Vec<f32>)>, Error> {
    let device = |rank: usize| if emulated { 0 } else { rank };
    let id = UniqueId::new(&CudaContext::new(0)?)?;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|rank| {
                s.spawn(move || -> Result<(Vec<f64>, Vec<f32>), Error> {
                    let ctx = CudaContext::new(device(rank))?;
                    let comm = Communicator::init_rank(&ctx, &id, rank, n)?;
                    train(&comm, &ctx).map_err(|e| format!("rank {rank}: {e}").into())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a rank panicked".into()))).collect()
    })
}

fn run() -> Result<String, Error> {
    let mut ranks = None;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--ranks" => ranks = Some(it.next().and_then(|v| v.parse().ok()).ok_or("--ranks takes a number")?),
            other => return Err(format!("unknown argument `{other}` (data_parallel [--ranks N])").into()),
        }
    }
    let ctx0 = CudaContext::new(0)?;
    let emulated = ctx0.backend().is_emulated();
    let n: usize = match ranks {
        Some(n) => n,
        None if emulated => 4,
        None => CudaContext::device_count()?,
    };
    if n == 0 || BATCH % n != 0 {
        return Err(format!("--ranks {n}: the rank count must divide the batch of {BATCH}").into());
    }
    println!("data_parallel: MLP {D}-{H}-1, batch {BATCH}, {STEPS} steps, 1 rank then {n} rank(s) on {}",
             if emulated { "the CPU emulator" } else { "the GPU(s)" });

    let single = run_world(1, emulated)?.remove(0);
    let many = run_world(n, emulated)?;
    let cpu = cpu_curve();

    // Every rank took the same steps: identical parameters.
    for (r, (_, p)) in many.iter().enumerate() {
        if p != &many[0].1 {
            return Err(format!("rank {r}'s parameters differ from rank 0's: the ranks fell out of step").into());
        }
    }
    // One rank vs N ranks: only the order of the f32 gradient sums
    // differs (partial sums per rank, then the all-reduce). Each step's
    // gradient moves by a few ulps of Σ|terms|; over these steps the loss
    // moves by far less than this bound.
    let (curve1, curve_n) = (&single.0, &many[0].0);
    for step in 0..STEPS {
        let (a, b, c) = (curve1[step], curve_n[step], cpu[step]);
        if (a - b).abs() > 1e-4 * a.abs() + 1e-7 {
            return Err(format!("step {step}: 1 rank's loss {a} and {n} ranks' {b} differ by more than f32 reordering").into());
        }
        if (a - c).abs() > 1e-3 * c.abs() + 1e-6 {
            return Err(format!("step {step}: the GPU's loss {a} is not the CPU's {c} (f64)").into());
        }
        if step % 10 == 0 || step == STEPS - 1 {
            println!("  step {step:>3}: loss 1 rank {a:.6}  {n} ranks {b:.6}  CPU f64 {c:.6}");
        }
    }
    let (first, last) = (curve1[0], curve1[STEPS - 1]);
    if !(last < 0.5 * first) {
        return Err(format!("training did not learn: loss {first} → {last}").into());
    }
    Ok(format!("loss {first:.4} → {last:.4}; the {n}-rank curve equals the 1-rank curve within f32 reordering"))
}

fn main() -> ExitCode {
    match run() {
        Ok(summary) => {
            println!("PASS");
            println!("✓ SUCCESS: data_parallel: {summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("FAIL");
            cuda_host::report_failure(&*e)
        }
    }
}
