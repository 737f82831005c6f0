//! GPU test: every integer operation with a wrap or sign edge, for every
//! integer type, at the boundary values, against the same Rust on the CPU.
//!
//! Each (type, operation, a, b) is one thread of a generic kernel. The
//! result is checked as bits and through the consumers that exposed ptxas's
//! mistakes at the minimum (issue 16: a 16-bit negation kept as +32768 in a
//! 32-bit register, `abs(MIN) < 0` folded to false): a signed compare, an
//! arithmetic shift, a widening cast, a division and a float conversion of
//! the result, all inside the same device function.
//!
//! Prints one line per type, then `N results matched` (exit 0) or every
//! mismatching operation with its first failing input (exit 1).

mod edge;
mod ops;

use cuda_core::{CudaContext, CudaStream, DeviceBuffer, DeviceRepr, LaunchConfig};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module, KernelModule};
use edge::Edge;
use std::process::ExitCode;

/// One thread per (operation, pair of values): two result lanes each.
#[kernel]
pub fn edges<T: Edge + Copy + 'static>(ops: &[u32], a: &[T], b: &[T], mut out: DisjointSlice<[u128; 2]>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(slot) = out.get_mut(idx) {
        *slot = ops::evaluate(ops[i], a[i], b[i]);
    }
}

/// The inputs of one type: every operation over every ordered pair of its
/// boundary values.
fn cases<T: Edge>() -> (Vec<u32>, Vec<T>, Vec<T>) {
    let values = T::boundary_values();
    let (mut o, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
    for op in 0..ops::COUNT {
        for &x in &values {
            for &y in &values {
                o.push(op);
                a.push(x);
                b.push(y);
            }
        }
    }
    (o, a, b)
}

struct Mismatch {
    op: u32,
    a: String,
    b: String,
    gpu: [u128; 2],
    cpu: [u128; 2],
    count: usize,
}

fn check_type<T: Edge + DeviceRepr + Copy + 'static>(
    stream: &std::sync::Arc<CudaStream>,
    module: &KernelModule,
) -> Result<(usize, Vec<Mismatch>), Box<dyn std::error::Error>> {
    let (o, a, b) = cases::<T>();
    let n = o.len();
    let ops_dev = DeviceBuffer::from_host(stream, &o)?;
    let a_dev = DeviceBuffer::from_host(stream, &a)?;
    let b_dev = DeviceBuffer::from_host(stream, &b)?;
    let mut out = DeviceBuffer::<[u128; 2]>::zeroed(stream, n)?;
    cuda_launch! {
        kernel: edges::<T>, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(n as u32),
        args: [slice(ops_dev), slice(a_dev), slice(b_dev), slice_mut(out)]
    }?;
    let gpu = out.to_host_vec(stream)?;
    let mut mismatches: Vec<Mismatch> = Vec::new();
    for i in 0..n {
        let cpu = ops::evaluate(o[i], a[i], b[i]);
        if gpu[i] != cpu {
            match mismatches.iter_mut().find(|m| m.op == o[i]) {
                Some(m) => m.count += 1,
                None => mismatches.push(Mismatch {
                    op: o[i],
                    a: format!("{:?}", a[i]),
                    b: format!("{:?}", b[i]),
                    gpu: gpu[i],
                    cpu,
                    count: 1,
                }),
            }
        }
    }
    Ok((n, mismatches))
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "int_edges")?;
    let mut total = 0;
    let mut failed = false;
    macro_rules! each_type {
        ($($t:ty),*) => {$(
            let (n, mismatches) = check_type::<$t>(&stream, &module)?;
            total += n;
            if mismatches.is_empty() {
                println!("ok    {:<5} {n} results", stringify!($t));
            }
            for m in &mismatches {
                failed = true;
                println!(
                    "FAIL  {:<5} {} ({} inputs): first a={} b={}: GPU {:#x?} CPU {:#x?}",
                    stringify!($t), ops::name(m.op), m.count, m.a, m.b, m.gpu, m.cpu
                );
            }
        )*};
    }
    each_type!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);
    if !failed {
        println!("✓ SUCCESS: {total} integer results matched the CPU");
    }
    Ok(!failed)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => cuda_host::report_failure(&*e),
    }
}
