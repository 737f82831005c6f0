//! GPU test: `ldmatrix` / `stmatrix` (sm_90). One warp loads four 8x8
//! matrices of u16 from shared memory in every form (x1, x2, x4, each plain
//! and `.trans`); each lane's fragments are compared with the layout the PTX
//! ISA describes, computed on the CPU (`matrix::fragment_position`). Then the
//! x4 fragments are stored back with `stmatrix` (plain: the tile round-trips;
//! `.trans`: every matrix comes back transposed), x1 and x2 likewise.

use cuda_core::{CudaContext, DeviceBuffer, LaunchConfig};
use cuda_device::{kernel, matrix, shared, thread, warp, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module};
use std::process::ExitCode;

/// Four 8x8 matrices, matrix i at elements 64 i.., row r at 64 i + 8 r.
const TILE: usize = 256;
/// Fragments per lane: x1, x2 (2), x4 (4), and the same with .trans.
const FRAGS: usize = 14;
/// Stored tiles: x4 round trip, x4 transposed, x1 and x2 round trips.
const STORES: usize = 4;

#[kernel]
pub fn fragments(tile: &[u16], mut frags: DisjointSlice<u32>, mut stored: DisjointSlice<u16>) {
    shared! {
        static IN: [u16; TILE];
        static OUT: [u16; STORES * TILE];
    }
    let lane = warp::lane_id() as usize;
    for k in 0..TILE / 32 {
        // SAFETY: each lane writes its own elements; barrier before reads.
        unsafe { IN.write(k * 32 + lane, tile[k * 32 + lane]) };
    }
    for k in 0..STORES * TILE / 32 {
        // SAFETY: as above (the x1/x2 stores leave parts untouched: zero them).
        unsafe { OUT.write(k * 32 + lane, 0) };
    }
    thread::sync_threads();
    // Lane l gives row l % 8 of matrix l / 8 (x4), of matrix (l % 16) / 8 (x2),
    // of matrix 0 (x1): element 8 l, wrapped.
    let (row1, row2, row4) = ((lane % 8) * 8, (lane % 16) * 8, lane * 8);
    // SAFETY: IN was written before the barrier and is not written again.
    let f = unsafe {
        let a = matrix::load_x1(&IN, row1);
        let b = matrix::load_x2(&IN, row2);
        let c = matrix::load_x4(&IN, row4);
        let d = matrix::load_x1_trans(&IN, row1);
        let e = matrix::load_x2_trans(&IN, row2);
        let g = matrix::load_x4_trans(&IN, row4);
        [a, b[0], b[1], c[0], c[1], c[2], c[3], d, e[0], e[1], g[0], g[1], g[2], g[3]]
    };
    for (k, v) in f.iter().enumerate() {
        // SAFETY: lane `lane` alone writes its FRAGS entries.
        unsafe { *frags.get_unchecked_mut(lane * FRAGS + k) = *v };
    }
    // SAFETY: the four stores write disjoint quarters of OUT; read after the barrier.
    unsafe {
        matrix::store_x4(&OUT, row4, [f[3], f[4], f[5], f[6]]);
        matrix::store_x4_trans(&OUT, TILE + row4, [f[3], f[4], f[5], f[6]]);
        matrix::store_x1(&OUT, 2 * TILE + row1, f[0]);
        matrix::store_x2(&OUT, 3 * TILE + row2, [f[1], f[2]]);
    }
    thread::sync_threads();
    for k in 0..STORES * TILE / 32 {
        // SAFETY: each lane reads and writes distinct elements after the barrier.
        unsafe { *stored.get_unchecked_mut(k * 32 + lane) = OUT.read(k * 32 + lane) };
    }
}

/// Element (r, c) of matrix m of the tile.
fn at(tile: &[u16], m: usize, r: usize, c: usize) -> u16 {
    tile[m * 64 + r * 8 + c]
}

/// The fragment lane `lane` holds of matrix m, as the PTX ISA lays it out.
fn fragment(tile: &[u16], m: usize, lane: u32, trans: bool) -> u32 {
    let half = |h| {
        let (r, c) = matrix::fragment_position(lane, h);
        (if trans { at(tile, m, c, r) } else { at(tile, m, r, c) }) as u32
    };
    half(0) | half(1) << 16
}

fn run() -> Result<usize, Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let module = load_kernel_module(&ctx, "ldmatrix_stmatrix")?;
    let tile: Vec<u16> = (0..TILE as u16).map(|i| i.wrapping_mul(257) ^ 0x1234).collect();
    let dtile = DeviceBuffer::from_host(&stream, &tile)?;
    let mut dfrags = DeviceBuffer::<u32>::zeroed(&stream, 32 * FRAGS)?;
    let mut dstored = DeviceBuffer::<u16>::zeroed(&stream, STORES * TILE)?;
    let config = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    cuda_launch! {
        kernel: fragments, stream: stream, module: module, config: config,
        args: [slice(dtile), slice_mut(dfrags), slice_mut(dstored)]
    }?;
    let frags = dfrags.to_host_vec(&stream)?;
    let stored = dstored.to_host_vec(&stream)?;

    // (name, matrix, trans) per fragment slot.
    let slots = [
        ("x1", 0, false), ("x2[0]", 0, false), ("x2[1]", 1, false),
        ("x4[0]", 0, false), ("x4[1]", 1, false), ("x4[2]", 2, false), ("x4[3]", 3, false),
        ("x1.trans", 0, true), ("x2.trans[0]", 0, true), ("x2.trans[1]", 1, true),
        ("x4.trans[0]", 0, true), ("x4.trans[1]", 1, true), ("x4.trans[2]", 2, true), ("x4.trans[3]", 3, true),
    ];
    let mut failures = Vec::new();
    for (k, &(name, m, trans)) in slots.iter().enumerate() {
        if let Some(lane) = (0..32u32).find(|&l| frags[l as usize * FRAGS + k] != fragment(&tile, m, l, trans)) {
            failures.push(format!(
                "ldmatrix {name}: lane {lane}: GPU {:#010x} CPU {:#010x}",
                frags[lane as usize * FRAGS + k],
                fragment(&tile, m, lane, trans)
            ));
        }
    }
    let transposed: Vec<u16> = (0..TILE).map(|i| at(&tile, i / 64, i % 8, (i / 8) % 8)).collect();
    let mut want_x1 = vec![0u16; TILE];
    want_x1[..64].copy_from_slice(&tile[..64]);
    let mut want_x2 = vec![0u16; TILE];
    want_x2[..128].copy_from_slice(&tile[..128]);
    for (s, (name, want)) in [("x4", &tile), ("x4.trans", &transposed), ("x1", &want_x1), ("x2", &want_x2)].into_iter().enumerate() {
        let got = &stored[s * TILE..(s + 1) * TILE];
        if let Some(i) = (0..TILE).find(|&i| got[i] != want[i]) {
            failures.push(format!("stmatrix {name}: element {i}: GPU {:#06x} CPU {:#06x}", got[i], want[i]));
        }
    }
    if failures.is_empty() { Ok(slots.len() + STORES) } else { Err(failures.join("\n").into()) }
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("✓ SUCCESS: {n} ldmatrix/stmatrix forms matched the PTX ISA fragment layout computed on the CPU");
            ExitCode::SUCCESS
        }
        Err(e) => cuda_host::report_failure(&*e),
    }
}
