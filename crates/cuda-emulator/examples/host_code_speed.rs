//! How fast the host-code engine runs two kernels, against the same Rust
//! as plain loops on one core: a tiled GEMM (32×32 shared-memory tiles,
//! blocks of 32×8, as `examples/sgemm_tiled`), and a table lookup (a
//! 256-entry table staged in shared memory, one element per thread).
//!
//! `cargo run --release -p cuda-emulator --example host_code_speed [DIVISOR]`
//! runs 256³ and 8M elements, each side divided by DIVISOR (default 1);
//! `OXIDE_EMULATE_THREADS=1` for one worker.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::time::Instant;

use cuda_device::{shared, thread};
use cuda_emulator::{run, Grid, HostKernel};

const TILE: usize = 32;
const ROWS: usize = 8;

fn gemm(n: usize) {
    let a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..n * n).map(|i| (i % 5) as f32 - 2.0).collect();
    let c: Vec<AtomicU32> = (0..n * n).map(|_| AtomicU32::new(0)).collect();
    let body = || {
        shared! {
            static A_TILE: [f32; TILE * TILE];
            static B_TILE: [f32; TILE * TILE];
        }
        let (tx, ty) = (thread::threadIdx_x() as usize, thread::threadIdx_y() as usize);
        let (row0, col) = (thread::blockIdx_y() as usize * TILE, thread::blockIdx_x() as usize * TILE + tx);
        let mut acc = [0f32; TILE / ROWS];
        for k0 in (0..n).step_by(TILE) {
            for i in 0..TILE / ROWS {
                let r = ty + i * ROWS;
                // SAFETY: in bounds; each thread writes its own slots, and
                // the barriers separate the writes from the reads.
                unsafe {
                    A_TILE.write(r * TILE + tx, a[(row0 + r) * n + k0 + tx]);
                    B_TILE.write(r * TILE + tx, b[(k0 + r) * n + col]);
                }
            }
            thread::sync_threads();
            for kk in 0..TILE {
                // SAFETY: in bounds, written before the barrier.
                let bv = unsafe { B_TILE.read(kk * TILE + tx) };
                for (i, s) in acc.iter_mut().enumerate() {
                    // SAFETY: as above.
                    *s = unsafe { A_TILE.read((ty + i * ROWS) * TILE + kk) }.mul_add(bv, *s);
                }
            }
            thread::sync_threads();
        }
        for (i, s) in acc.iter().enumerate() {
            c[(row0 + ty + i * ROWS) * n + col].store(s.to_bits(), Relaxed);
        }
    };
    let blocks = (n / TILE) as u32;
    let grid = Grid { grid_dim: (blocks, blocks, 1), block_dim: (TILE as u32, ROWS as u32, 1), shared_mem_bytes: 0 };
    let start = Instant::now();
    run(grid, &HostKernel::from_fn(&body)).unwrap();
    let emulated = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut reference = vec![0f32; n * n];
    for i in 0..n {
        for k in 0..n {
            let av = a[i * n + k];
            for j in 0..n {
                reference[i * n + j] = av.mul_add(b[k * n + j], reference[i * n + j]);
            }
        }
    }
    let native = start.elapsed().as_secs_f64();
    assert!(c.iter().zip(&reference).all(|(x, &r)| f32::from_bits(x.load(Relaxed)) == r));
    println!("gemm {n}^3: emulated {emulated:.3} s, one core {native:.4} s, ratio {:.0}x", emulated / native);
}

fn lookup(len: usize) {
    let table: Vec<u32> = (0..256u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let input: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
    let out: Vec<AtomicU32> = (0..len).map(|_| AtomicU32::new(0)).collect();
    let body = || {
        shared! { static TABLE: [u32; 256]; }
        let t = thread::threadIdx_x() as usize;
        // SAFETY: 256 threads, one slot each; the barrier separates phases.
        unsafe { TABLE.write(t, table[t]) };
        thread::sync_threads();
        let i = thread::index_1d().get();
        // SAFETY: in bounds, written before the barrier.
        out[i].store(unsafe { TABLE.read(input[i] as usize) }, Relaxed);
    };
    let grid = Grid { grid_dim: ((len / 256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let start = Instant::now();
    run(grid, &HostKernel::from_fn(&body)).unwrap();
    let emulated = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let reference: Vec<u32> = input.iter().map(|&x| table[x as usize]).collect();
    let native = start.elapsed().as_secs_f64();
    assert!(out.iter().zip(&reference).all(|(x, &r)| x.load(Relaxed) == r));
    println!("lookup {len}: emulated {emulated:.3} s, one core {native:.4} s, ratio {:.0}x", emulated / native);
}

fn main() {
    let divisor: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    gemm(256 / divisor);
    lookup((8 << 20) / divisor / divisor);
}
