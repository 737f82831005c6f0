//! typed_launch: `#[cuda_module]` writes `kernels::launch::<kernel>` functions
//! whose arguments are checked against the kernel's parameters; one
//! non-generic kernel, one generic kernel (instantiated by inference) and
//! one in a nested module (`kernels::rows::launch::..`), all checked against
//! the CPU.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_host::{cuda_module, load_kernel_module};
use std::process::ExitCode;

#[cuda_module]
pub mod kernels {
    use cuda_device::{kernel, thread, DisjointSlice};
    use std::ops::Add;

    /// `out[i] = input[i] * factor`.
    #[kernel]
    pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        if let Some(elem) = out.get_mut(idx) {
            *elem = input[idx.get()] * factor;
        }
    }

    /// `out[i] = a[i] + b[i]`, for any addable `Copy` element.
    #[kernel]
    pub fn add<T: Copy + Add<Output = T>>(a: &[T], b: &[T], mut out: DisjointSlice<T>) {
        let idx = thread::index_1d();
        if let Some(elem) = out.get_mut(idx) {
            let i = idx.get();
            *elem = a[i] + b[i];
        }
    }

    /// Kernels of a nested module get launchers in `rows::launch`.
    pub mod rows {
        use cuda_device::{kernel, thread, DisjointSlice};

        /// `out[i] = i / width`: the row of element i of a `width`-wide matrix.
        #[kernel]
        pub fn row_of(width: u32, mut out: DisjointSlice<u32>) {
            let idx = thread::index_1d();
            if let Some(elem) = out.get_mut(idx) {
                *elem = idx.get() as u32 / width;
            }
        }
    }
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    const N: usize = 4096;
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "typed_launch")?;
    let config = LaunchConfig::for_num_elems(N as u32);

    let floats: Vec<f32> = (0..N).map(|i| i as f32 / 7.0).collect();
    let f_in = DeviceBuffer::from_host(&stream, &floats)?;
    let mut f_out = DeviceBuffer::<f32>::zeroed(&stream, N)?;
    kernels::launch::scale(&module, &stream, config, &f_in, 2.5f32, &mut f_out)?;

    let a: Vec<i32> = (0..N as i32).map(|i| i - 2000).collect();
    let b: Vec<i32> = (0..N as i32).map(|i| 3 * i).collect();
    let a_dev = DeviceBuffer::from_host(&stream, &a)?;
    let b_dev = DeviceBuffer::from_host(&stream, &b)?;
    let mut sum = DeviceBuffer::<i32>::zeroed(&stream, N)?;
    // `add::<i32>`, inferred from the buffers.
    kernels::launch::add(&module, &stream, config, &a_dev, &b_dev, &mut sum)?;

    let mut rows = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    kernels::rows::launch::row_of(&module, &stream, config, 48u32, &mut rows)?;

    let f_gpu = f_out.to_host_vec(&stream)?;
    let rows_gpu = rows.to_host_vec(&stream)?;
    let sum_gpu = sum.to_host_vec(&stream)?;
    for i in 0..N {
        let want = floats[i] * 2.5;
        if f_gpu[i].to_bits() != want.to_bits() {
            return Err(format!("scale element {i}: GPU {} CPU {want}", f_gpu[i]).into());
        }
        if sum_gpu[i] != a[i] + b[i] {
            return Err(format!("add element {i}: GPU {} CPU {}", sum_gpu[i], a[i] + b[i]).into());
        }
        if rows_gpu[i] != i as u32 / 48 {
            return Err(format!("row_of element {i}: GPU {} CPU {}", rows_gpu[i], i / 48).into());
        }
    }
    Ok(3 * N)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: launch::scale, launch::add::<i32> and rows::launch::row_of matched the CPU ({n} elements)");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
