//! Not an error: inline PTX and unrolling hints in a kernel, which `cargo
//! oxide inspect` shows in the PTX: the template with the comment naming its
//! Rust line, and `.pragma "nounroll"` for a loop kept rolled.
use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, ptx_asm, thread, unroll, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};

#[kernel]
pub fn hinted(data: &[u32], mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let x = data[idx.get()];
    let mut acc = 0u32;
    #[unroll(1)]
    for k in 0..4u32 {
        acc = acc.rotate_left(3) ^ (x >> k);
    }
    unroll!(full, for k in 0..4usize {
        acc = acc.wrapping_add(data[k]);
    });
    let picked: u32;
    // SAFETY: reads its operands, writes its output.
    unsafe { ptx_asm!("lop3.b32 {d}, {a}, {b}, {c}, 0x96;", d = out(u32) picked, a = in(u32) x, b = in(u32) acc, c = in(u32) 7, options(pure, nomem)) };
    if let Some(o) = out.get_mut(idx) {
        *o = picked;
    }
}

fn main() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let data = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let module = load_kernel_module(&ctx, "reject_case").unwrap();
    cuda_launch! {
        kernel: hinted, stream: stream, module: module,
        config: LaunchConfig::for_num_elems(64),
        args: [slice(data), slice_mut(out)]
    }
    .unwrap();
}

//~ PTX .pragma "nounroll";
//~ PTX // ptx_asm! at src/main.rs:22:14
//~ PTX , 0x96;
