//! async_vecadd: vector additions as lazy `DeviceOperation`s.
//!
//! `a` is uploaded once and shared (`DeviceBox`) by eight additions
//! `c_k = a + b_k`. Each addition is one operation: upload `b_k` and
//! allocate `c_k` side by side (`zip`), launch the kernel through its typed
//! launcher (arguments checked at compile time), copy `c_k` back to pinned
//! host memory. The eight run together (`join_all`, spread over the four
//! streams of the pool) and are awaited on the crate's small executor; one
//! more runs with `.sync_on(&stream)`, and one more has its launch as an
//! operation of its own (`kernel_op!`). Every result is checked against the
//! CPU.

use cuda_async::{block_on, join_all, kernel_op, memory, AsyncError, DeviceBox, DeviceOperation, StreamPool};
use cuda_core::{CudaContext, LaunchConfig, PinnedHostBuffer};
use cuda_host::{cuda_module, load_kernel_module, KernelModule};
use std::process::ExitCode;
use std::sync::Arc;

#[cuda_module]
pub mod kernels {
    use cuda_device::{kernel, thread, DisjointSlice};

    /// `c[i] = a[i] + b[i]`, one thread per element.
    #[kernel]
    pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(elem) = c.get_mut(idx) {
            *elem = a[i] + b[i];
        }
    }
}

const N: usize = 1 << 20;
const ADDITIONS: usize = 8;

fn b_values(k: usize) -> Vec<f32> {
    (0..N).map(|i| ((i * (k + 3)) % 1000) as f32 * 0.25).collect()
}

/// `a + b` as one operation producing the result in pinned host memory.
fn add(
    module: &Arc<KernelModule>,
    a: &DeviceBox<f32>,
    b: Vec<f32>,
) -> impl DeviceOperation<Output = PinnedHostBuffer<f32>> {
    let (module, a) = (module.clone(), a.clone());
    memory::upload(b)
        .zip(memory::zeroed::<f32>(N))
        .then(move |stream, (b, mut c)| {
            kernels::launch::vecadd(&module, stream, LaunchConfig::for_num_elems(N as u32), &a, &b, &mut c)?;
            Ok(c)
        })
        .and_then(memory::to_host)
        .map(|(_device, host)| host)
}

/// [`add`] with the launch as an operation of its own: `kernel_op!` takes the
/// buffers it lends and hands them back as its output.
fn add_with_kernel_op(
    module: &Arc<KernelModule>,
    a: &DeviceBox<f32>,
    b: Vec<f32>,
) -> impl DeviceOperation<Output = PinnedHostBuffer<f32>> {
    let (module, a) = (module.clone(), a.clone());
    let config = LaunchConfig::for_num_elems(N as u32);
    memory::upload(b)
        .zip(memory::zeroed::<f32>(N))
        .and_then(move |(b, c)| kernel_op!(kernels::launch::vecadd(module, config, &a, &b, &mut c)))
        .and_then(|(_a, _b, c)| memory::to_host(c))
        .map(|(_device, host)| host)
}

fn check(k: usize, a: &[f32], got: &[f32]) -> Result<(), AsyncError> {
    let b = b_values(k);
    match (0..N).find(|&i| got[i] != a[i] + b[i]) {
        None => Ok(()),
        Some(i) => Err(AsyncError::host(format!(
            "addition {k}, element {i}: GPU {} vs CPU {}",
            got[i],
            a[i] + b[i]
        ))),
    }
}

fn run() -> Result<usize, AsyncError> {
    let ctx = CudaContext::new(0)?;
    let pool = StreamPool::new(&ctx, 4)?;
    let module = Arc::new(load_kernel_module(&ctx, "async_vecadd")?);

    let a_host: Vec<f32> = (0..N).map(|i| i as f32).collect();
    // Uploaded once, shared by every addition below.
    let a = DeviceBox::upload(a_host.clone()).sync_in(&pool)?;

    // Eight independent additions, concurrently, awaited.
    let ops: Vec<_> = (0..ADDITIONS).map(|k| add(&module, &a, b_values(k))).collect();
    let results = block_on(async { join_all(ops).schedule(&pool).await })?;
    for (k, host) in results.iter().enumerate() {
        check(k, &a_host, host)?;
    }

    // One more, blocking, on a stream of our choice.
    let stream = pool.streams()[2].clone();
    let host = add(&module, &a, b_values(ADDITIONS)).sync_on(&stream)?;
    check(ADDITIONS, &a_host, &host)?;

    // And one whose launch is a `kernel_op!`.
    let host = block_on(add_with_kernel_op(&module, &a, b_values(ADDITIONS + 1)).schedule(&pool))?;
    check(ADDITIONS + 1, &a_host, &host)?;
    Ok((ADDITIONS + 2) * N)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: {} async additions (one a kernel_op!), all {n} elements correct!", ADDITIONS + 2);
            ExitCode::SUCCESS
        }
        Err(e) => e.report(),
    }
}
