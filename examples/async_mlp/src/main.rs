//! async_mlp: a 4-layer MLP forward pass over independent batches, each
//! batch a tokio task, overlapping on the GPU through cuda-async.
//!
//! Each layer is `y = relu(x·W + b)`: a GEMM kernel, then a bias/ReLU
//! kernel. The weights and biases are uploaded once (`DeviceBox`) and
//! shared by every batch. A batch is one `DeviceOperation`: four layers
//! and a copy of the result to pinned host memory, enqueued at once on the
//! stream the pool's round-robin policy gives it; the task sleeps until the
//! stream's host function wakes it.
//!
//! Sizes: a batch is 32 rows of 2048 features and every layer is
//! 2048 → 2048, so one batch's GEMM is 16 blocks of 256 threads (each
//! thread 16 rows of one column): 16 of the H200's 132 SMs busy, the rest
//! idle. That is the design point where
//! running batches concurrently on several streams should cost little more
//! than one batch.
//!
//! The program checks every batch against the CPU (two rows per batch,
//! through all four layers, computed with the same fused multiply-adds in
//! the same order, so the results must agree to the bit), then times one
//! batch alone, four batches as concurrent tasks, and four batches one
//! after another, and prints the ratios.
//!
//! Second phase: each batch's four layers are captured once into a CUDA
//! graph (`DeviceOperation::into_graph`; the graph owns the batch's
//! buffers) and replayed as concurrent tasks, one graph launch per forward
//! pass followed by the copy to pinned memory; the outputs are checked
//! against the CPU again (and must equal the first phase's to the bit), and
//! one batch is timed as a graph launch against the operation of eight
//! kernel launches.

use cuda_async::{value, AsyncError, DeviceBox, DeviceGraph, DeviceOperation, StreamPool};
use cuda_core::{CudaContext, CudaStream, DeviceBuffer, LaunchConfig, PinnedHostBuffer};
use cuda_host::{cuda_module, load_kernel_module, KernelModule};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[cuda_module]
pub mod kernels {
    use cuda_device::{kernel, thread, DisjointSlice};

    /// Rows of the output each GEMM thread computes.
    pub const ROWS: usize = 16;
    /// Threads per GEMM block (one output column each).
    pub const COLS: usize = 256;

    /// The shape of `y (m×n) = x (m×k) · w (k×n)`, all row-major.
    #[derive(Clone, Copy, Debug)]
    pub struct Shape {
        /// Rows of `x` and `y`.
        pub m: usize,
        /// Columns of `x`, rows of `w`.
        pub k: usize,
        /// Columns of `w` and `y`.
        pub n: usize,
    }

    /// `y = x · w`. Launch with `(COLS, 1, 1)` threads and
    /// `(ceil(n / COLS), m / ROWS, 1)` blocks; `m` must be a multiple of
    /// `ROWS`. Thread (column `c`, block row `r`) computes rows
    /// `r·ROWS .. r·ROWS + ROWS` of column `c`: for each `k` it reads one
    /// element of `w` (the warp reads 32 consecutive ones) and the `ROWS`
    /// elements of `x` its whole block shares.
    #[kernel]
    pub fn gemm(shape: Shape, x: &[f32], w: &[f32], mut y: DisjointSlice<f32>) {
        let Shape { m, k, n } = shape;
        // Uniform checks: every thread passes or every thread stops.
        assert!(m % ROWS == 0 && x.len() >= m * k && w.len() >= k * n && y.len() >= m * n);
        let col = thread::blockIdx_x() as usize * thread::blockDim_x() as usize
            + thread::threadIdx_x() as usize;
        let row0 = thread::blockIdx_y() as usize * ROWS;
        if col >= n || row0 >= m {
            return;
        }
        // Index arithmetic below cannot overflow (the assert bounds every
        // index by a slice length); wrapping operations keep debug builds'
        // overflow checks out of the inner loop.
        let mut acc = [0.0f32; ROWS];
        let x_base = row0.wrapping_mul(k);
        let mut w_at = col;
        for kk in 0..k {
            // SAFETY: kk < k and col < n, so kk·n + col < k·n <= w.len().
            let wv = unsafe { *w.get_unchecked(w_at) };
            let mut x_at = x_base.wrapping_add(kk);
            for sum in acc.iter_mut() {
                // SAFETY: x_at = (row0 + r)·k + kk with row0 + r < m (m is a
                // multiple of ROWS and row0 < m) and kk < k: below m·k <= x.len().
                let xv = unsafe { *x.get_unchecked(x_at) };
                *sum = xv.mul_add(wv, *sum);
                x_at = x_at.wrapping_add(k);
            }
            w_at = w_at.wrapping_add(n);
        }
        let mut y_at = row0.wrapping_mul(n).wrapping_add(col);
        for sum in acc {
            // SAFETY: y_at = (row0 + r)·n + col < m·n <= y.len(); element
            // (row, col) is this thread's alone: its block row owns the
            // rows, its x coordinate the column.
            unsafe { *y.get_unchecked_mut(y_at) = sum };
            y_at = y_at.wrapping_add(n);
        }
    }

    /// `y[i] = max(y[i] + bias[i mod n], 0)`, one thread per element.
    #[kernel]
    pub fn bias_relu(n: usize, bias: &[f32], mut y: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(v) = y.get_mut(idx) {
            let t = *v + bias[i % n];
            *v = if t > 0.0 { t } else { 0.0 };
        }
    }
}

use kernels::{Shape, COLS, ROWS};

const LAYERS: usize = 4;
const FEATURES: usize = 2048;
const BATCH_ROWS: usize = 32;
/// Batches of the correctness pass, all in flight at once.
const BATCHES: usize = 8;
/// Streams of the pool.
const STREAMS: usize = 4;
/// Repetitions of each timing (the median is reported).
const REPEATS: usize = 15;

/// The network, shared by every batch.
struct Net {
    module: KernelModule,
    weights: Vec<DeviceBox<f32>>,
    biases: Vec<DeviceBox<f32>>,
}

/// One batch's buffers: its input, two activation buffers (layers
/// alternate between them) and the pinned host copy of the output.
struct Batch {
    index: usize,
    input: DeviceBuffer<f32>,
    act: [DeviceBuffer<f32>; 2],
    output: PinnedHostBuffer<f32>,
}

/// Deterministic values in [-scale, scale) (xorshift64).
fn random(len: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn weights_host(layer: usize) -> Vec<f32> {
    // Scaled so that activations stay of order one through the layers.
    random(FEATURES * FEATURES, 100 + layer as u64, (3.0 / FEATURES as f32).sqrt() * 1.4)
}

fn bias_host(layer: usize) -> Vec<f32> {
    random(FEATURES, 200 + layer as u64, 0.1)
}

fn input_host(batch: usize) -> Vec<f32> {
    random(BATCH_ROWS * FEATURES, 1 + batch as u64, 1.0)
}

/// The step that runs layer `l` of `net` on a batch: GEMM then bias/ReLU,
/// launched through the typed launchers (arguments checked at compile time).
fn layer(
    net: &Arc<Net>,
    l: usize,
) -> impl FnOnce(&Arc<CudaStream>, Batch) -> Result<Batch, AsyncError> + Send + 'static {
    let net = net.clone();
    move |stream, mut b| {
        let shape = Shape { m: BATCH_ROWS, k: FEATURES, n: FEATURES };
        let gemm_cfg = LaunchConfig {
            grid_dim: (FEATURES.div_ceil(COLS) as u32, (BATCH_ROWS / ROWS) as u32, 1),
            block_dim: (COLS as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        // Layer 0 reads the input; then the activations alternate.
        let [a0, a1] = &mut b.act;
        let (src, dst) = match l {
            0 => (&b.input, a0),
            l if l % 2 == 1 => (&*a0, a1),
            _ => (&*a1, a0),
        };
        kernels::launch::gemm(&net.module, stream, gemm_cfg, shape, src, &net.weights[l], &mut *dst)?;
        let cfg = LaunchConfig::for_num_elems((BATCH_ROWS * FEATURES) as u32);
        kernels::launch::bias_relu(&net.module, stream, cfg, FEATURES, &net.biases[l], dst)?;
        Ok(b)
    }
}

/// Index of the activation buffer holding the last layer's output.
const OUT: usize = (LAYERS - 1) % 2;

/// The four layers of one batch, on the device only (what a graph records).
fn layers(net: &Arc<Net>, batch: Batch) -> impl DeviceOperation<Output = Batch> {
    value(batch).then(layer(net, 0)).then(layer(net, 1)).then(layer(net, 2)).then(layer(net, 3))
}

/// Copies the last layer's output to the batch's pinned host buffer.
fn read_back(stream: &Arc<CudaStream>, mut b: Batch) -> Result<Batch, AsyncError> {
    b.act[OUT].copy_to_host_async(stream, &mut b.output)?;
    Ok(b)
}

/// The forward pass of one batch as one operation.
fn forward(net: &Arc<Net>, batch: Batch) -> impl DeviceOperation<Output = Batch> {
    layers(net, batch).then(read_back)
}

/// The forward pass of a batch captured as a graph, replayed: eight
/// kernels in one submission, then the copy to the host (a copy to host
/// memory is not recorded in a graph: it runs after the replay).
fn forward_graph(graph: DeviceGraph<Batch>) -> impl DeviceOperation<Output = DeviceGraph<Batch>> {
    graph.replay().then(|stream, mut g| {
        let b = g.output_mut();
        b.act[OUT].copy_to_host_async(stream, &mut b.output)?;
        Ok(g)
    })
}

/// The CPU forward pass of one row, with the GPU's operations in its order.
fn cpu_row(input: &[f32], weights: &[Vec<f32>], biases: &[Vec<f32>]) -> Vec<f32> {
    let mut h = input.to_vec();
    for l in 0..LAYERS {
        let mut out = vec![0.0f32; FEATURES];
        for (kk, &x) in h.iter().enumerate() {
            let w = &weights[l][kk * FEATURES..(kk + 1) * FEATURES];
            for (o, &wv) in out.iter_mut().zip(w) {
                *o = x.mul_add(wv, *o);
            }
        }
        for (o, &b) in out.iter_mut().zip(&biases[l]) {
            let t = *o + b;
            *o = if t > 0.0 { t } else { 0.0 };
        }
        h = out;
    }
    h
}

fn check(batch: &Batch, weights: &[Vec<f32>], biases: &[Vec<f32>]) -> Result<(), AsyncError> {
    let input = input_host(batch.index);
    for row in [0, (5 + 9 * batch.index) % BATCH_ROWS] {
        let want = cpu_row(&input[row * FEATURES..(row + 1) * FEATURES], weights, biases);
        let got = &batch.output[row * FEATURES..(row + 1) * FEATURES];
        if let Some(c) = (0..FEATURES).find(|&c| got[c].to_bits() != want[c].to_bits()) {
            return Err(AsyncError::host(format!(
                "batch {}, row {row}, column {c}: GPU {} vs CPU {}",
                batch.index, got[c], want[c]
            )));
        }
    }
    Ok(())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn run() -> Result<(), AsyncError> {
    let ctx = CudaContext::new(0)?;
    let pool = StreamPool::new(&ctx, STREAMS)?;
    let module = load_kernel_module(&ctx, "async_mlp")?;

    // Uploaded once; every batch shares them.
    let weights: Vec<Vec<f32>> = (0..LAYERS).map(weights_host).collect();
    let biases: Vec<Vec<f32>> = (0..LAYERS).map(bias_host).collect();
    let uploads = cuda_async::join_all(weights.iter().map(|w| DeviceBox::upload(w.clone())))
        .zip(cuda_async::join_all(biases.iter().map(|b| DeviceBox::upload(b.clone()))));
    let (w_dev, b_dev) = uploads.sync_in(&pool)?;
    let net = Arc::new(Net { module, weights: w_dev, biases: b_dev });

    let stream = &pool.streams()[0];
    let mut batches = (0..BATCHES)
        .map(|index| {
            Ok(Batch {
                index,
                input: DeviceBuffer::from_host(stream, &input_host(index))?,
                act: [
                    DeviceBuffer::zeroed(stream, BATCH_ROWS * FEATURES)?,
                    DeviceBuffer::zeroed(stream, BATCH_ROWS * FEATURES)?,
                ],
                output: PinnedHostBuffer::zeroed(&ctx, BATCH_ROWS * FEATURES)?,
            })
        })
        .collect::<Result<Vec<_>, AsyncError>>()?;
    stream.synchronize()?;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(STREAMS)
        .build()
        .map_err(AsyncError::host)?;

    // Every batch as its own task, all in flight at once.
    let run_concurrent = |batches: Vec<Batch>| -> Result<Vec<Batch>, AsyncError> {
        rt.block_on(async {
            let tasks: Vec<_> = batches
                .into_iter()
                .map(|b| {
                    let (net, pool) = (net.clone(), pool.clone());
                    tokio::spawn(async move { forward(&net, b).schedule(&pool).await })
                })
                .collect();
            let mut done = Vec::with_capacity(tasks.len());
            for t in tasks {
                done.push(t.await.map_err(AsyncError::host)??);
            }
            Ok(done)
        })
    };
    // The same batches one after another in one task.
    let run_serial = |batches: Vec<Batch>| -> Result<Vec<Batch>, AsyncError> {
        rt.block_on(async {
            let mut done = Vec::with_capacity(batches.len());
            for b in batches {
                done.push(forward(&net, b).schedule(&pool).await?);
            }
            Ok(done)
        })
    };

    // Correctness: all batches concurrently (this also warms up: module
    // functions, first launches).
    batches = run_concurrent(batches)?;
    for b in &batches {
        check(b, &weights, &biases)?;
    }
    let reference: Vec<Vec<f32>> = batches.iter().map(|b| b.output.to_vec()).collect();
    println!("{BATCHES} batches ({BATCH_ROWS}×{FEATURES}, {LAYERS} layers, {STREAMS} streams) match the CPU");

    let mut timed: Vec<Batch> = batches.drain(..4).collect();
    let (mut one, mut conc, mut serial) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..REPEATS {
        let first = timed.remove(0);
        let t = Instant::now();
        let mut back = run_serial(vec![first])?;
        one.push(t.elapsed());
        timed.insert(0, back.remove(0));

        let t = Instant::now();
        timed = run_concurrent(timed)?;
        conc.push(t.elapsed());

        let t = Instant::now();
        timed = run_serial(timed)?;
        serial.push(t.elapsed());
    }
    // The timed runs computed the same outputs as the checked pass.
    for b in &timed {
        if b.output[..] != reference[b.index][..] {
            return Err(AsyncError::host(format!("batch {}: a timed run's output differs from the checked one", b.index)));
        }
    }
    // The fixed cost of one operation: schedule an empty one (a host
    // function and nothing else) and wait for the wake-up.
    let mut trip = Vec::new();
    for _ in 0..51 {
        let t = Instant::now();
        rt.block_on(async { value(()).schedule(&pool).await })?;
        trip.push(t.elapsed());
    }
    let (one, conc, serial) = (median(one), median(conc), median(serial));
    println!(
        "an empty operation's round trip (enqueue, host function, wake-up): {:.1} µs (median of 51)",
        median(trip).as_secs_f64() * 1e6
    );
    println!(
        "1 batch: {:.3} ms   4 concurrent: {:.3} ms   4 serial: {:.3} ms   (median of {REPEATS})",
        ms(one),
        ms(conc),
        ms(serial)
    );
    println!(
        "4 concurrent / 1 batch = {:.2}× (published design ≈ 1.3×, aim ≤ 1.15×); 4 concurrent / 4 serial = {:.2}",
        conc.as_secs_f64() / one.as_secs_f64(),
        conc.as_secs_f64() / serial.as_secs_f64()
    );

    // Second phase: each batch's four layers captured once into a CUDA
    // graph (on its own stream of the pool), then replayed as concurrent
    // tasks: one graph launch per forward pass. The graphs own the batches.
    let mut all: Vec<Batch> = timed.into_iter().chain(batches).collect();
    all.sort_by_key(|b| b.index);
    for b in all.iter_mut() {
        b.output.fill(0.0); // the replays must write every output again
    }
    let mut graphs = all
        .into_iter()
        .enumerate()
        .map(|(i, b)| layers(&net, b).into_graph(&pool.streams()[i % STREAMS]))
        .collect::<Result<Vec<_>, AsyncError>>()?;
    let replay_all = |graphs: Vec<DeviceGraph<Batch>>| -> Result<Vec<DeviceGraph<Batch>>, AsyncError> {
        rt.block_on(async {
            let tasks: Vec<_> = graphs
                .into_iter()
                .map(|g| {
                    let pool = pool.clone();
                    tokio::spawn(async move { forward_graph(g).schedule(&pool).await })
                })
                .collect();
            let mut done = Vec::with_capacity(tasks.len());
            for t in tasks {
                done.push(t.await.map_err(AsyncError::host)??);
            }
            Ok(done)
        })
    };
    graphs = replay_all(graphs)?;
    for g in &graphs {
        check(g.output(), &weights, &biases)?;
        if g.output().output[..] != reference[g.output().index][..] {
            return Err(AsyncError::host(format!("batch {}: the graph's output differs from the operation's", g.output().index)));
        }
    }
    println!("{BATCHES} batches replayed as one graph launch each match the CPU");
    // One batch alone: as a graph launch, then (the graph parted from its
    // batch) as the operation of eight launches.
    let mut g = graphs.remove(0);
    let mut graph_one = Vec::new();
    for _ in 0..REPEATS {
        let t = Instant::now();
        g = rt.block_on(async { forward_graph(g).schedule(&pool).await })?;
        graph_one.push(t.elapsed());
    }
    if g.output().output[..] != reference[g.output().index][..] {
        return Err(AsyncError::host("a timed graph replay's output differs from the checked one"));
    }
    let (exec, mut b) = g.into_parts();
    drop(exec);
    let mut op_one = Vec::new();
    for _ in 0..REPEATS {
        let t = Instant::now();
        b = rt.block_on(async { forward(&net, b).schedule(&pool).await })?;
        op_one.push(t.elapsed());
    }
    if b.output[..] != reference[b.index][..] {
        return Err(AsyncError::host(format!("batch {}: a timed run's output differs from the checked one", b.index)));
    }
    println!(
        "1 batch as a graph launch: {:.3} ms   as an operation (8 launches): {:.3} ms   (median of {REPEATS})",
        ms(median(graph_one)),
        ms(median(op_one))
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("✓ SUCCESS: async MLP forward passes correct");
            ExitCode::SUCCESS
        }
        Err(e) => e.report(),
    }
}
