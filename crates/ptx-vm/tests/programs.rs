//! End-to-end runs of real oxide PTX (`cargo oxide pipeline NAME`, kept in
//! tests/fixtures) on host buffers, checked against the same computation on
//! the CPU. Each kernel's signature and launch shape are those of its program
//! (examples/NAME or tests/gpu/NAME).

mod common;

use common::*;
use ptx_vm::{launch, Fault, LaunchDims, LaunchOptions, Module};

#[test]
fn vecadd_sums_every_element_with_both_entries() {
    vecadd_from("vecadd.ptx");
}

/// The same program built with `OXIDE_DEVICE_DEBUG=lines`: `.file`, `.loc`
/// and DWARF `.section`s are skipped.
#[test]
fn vecadd_with_device_line_tables_runs_the_same() {
    vecadd_from("vecadd_debug_lines.ptx");
}

fn vecadd_from(fixture_name: &str) {
    let module = Module::parse(&fixture(fixture_name)).unwrap();
    let n = 10_000;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| (i as f32).sqrt()).collect();
    for unchecked in [false, true] {
        let mut c = vec![f32::NAN; n];
        let env = Env::new().with(&a).with(&b).with(&c);
        let params = Params::new().slice(&a).slice(&b).slice_mut(&mut c);
        let k = kernel(&module, "vecadd", unchecked);
        let stats = run(
            &module,
            &k,
            dims(((n as u32).div_ceil(256), 1, 1), (256, 1, 1)),
            &params,
            &env,
        )
        .unwrap();
        for i in 0..n {
            assert_eq!(c[i].to_bits(), (a[i] + b[i]).to_bits(), "element {i} ({k})");
        }
        assert!(stats.instructions > n as u64 * 10);
    }
}

#[test]
fn vecadd_reports_a_short_buffer_as_a_device_panic() {
    // `a` is shorter than `c`: the bounds check panics, which prints the
    // panic message through vprintf and traps.
    let module = Module::parse(&fixture("vecadd.ptx")).unwrap();
    let a = vec![1.0f32; 100];
    let b = vec![2.0f32; 200];
    let mut c = vec![0.0f32; 200];
    let env = Env::new().with(&a).with(&b).with(&c);
    let params = Params::new().slice(&a).slice(&b).slice_mut(&mut c);
    let k = kernel(&module, "vecadd", false);
    let err = run(&module, &k, dims((1, 1, 1), (200, 1, 1)), &params, &env).unwrap_err();
    assert!(matches!(err, Fault::Trap { .. }), "{err}");
    let printed = env.printed.lock().unwrap();
    let (format, args) = &printed[0];
    // The file name (a module variable) and the message (copied into the
    // thread's local memory) both reach the embedder as host strings.
    let strings = env.strings.lock().unwrap();
    assert!(
        strings[0].ends_with("examples/vecadd/src/main.rs"),
        "{strings:?}"
    );
    assert!(format.contains("panicked at %s:%u:%u"), "{format}");
    assert!(
        format.contains("index out of bounds: the len is %llu but the index is %llu"),
        "{format}"
    );
    // threadIdx (3), blockIdx (3), file, line, column, then len and index.
    assert_eq!(
        args[0] as u32 as u64, args[10],
        "the thread index is the bad index"
    );
    assert_eq!(args[9], 100);
    assert!((100..200).contains(&args[10]));
    // The first elements were computed before the fault.
    assert_eq!(c[0], 3.0);
}

#[test]
fn reduce_sums_with_warp_shuffles_and_shared_memory() {
    let module = Module::parse(&fixture("reduce.ptx")).unwrap();
    let n = 1 << 16;
    let input: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let blocks = 64;
    let mut partial = vec![0.0f32; blocks];
    let mut total = vec![0.0f32; 1];
    let env = Env::new().with(&input).with(&partial).with(&total);
    let k = kernel(&module, "block_sum", false);
    run(
        &module,
        &k,
        dims((blocks as u32, 1, 1), (256, 1, 1)),
        &Params::new().slice(&input).slice_mut(&mut partial),
        &env,
    )
    .unwrap();
    run(
        &module,
        &k,
        dims((1, 1, 1), (256, 1, 1)),
        &Params::new().slice(&partial).slice_mut(&mut total),
        &env,
    )
    .unwrap();
    let expected: u64 = (0..n).map(|i| (i % 17) as u64).sum();
    assert_eq!(total[0], expected as f32);
    // The kernel declares .maxntid 256: a bigger block is refused.
    let err = run(
        &module,
        &k,
        dims((1, 1, 1), (512, 1, 1)),
        &Params::new().slice(&partial).slice_mut(&mut total),
        &env,
    )
    .unwrap_err();
    assert!(matches!(err, Fault::InvalidLaunch { .. }), "{err}");
}

#[test]
fn scan_matches_the_cpu_block_by_block() {
    const BLOCK: usize = 1024;
    let module = Module::parse(&fixture("scan.ptx")).unwrap();
    let n = (1 << 14) + 777;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let input: Vec<u32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u32
        })
        .collect();
    let mut out = vec![0u32; n];
    let env = Env::new().with(&input).with(&out);
    let k = kernel(&module, "block_scan", false);
    run(
        &module,
        &k,
        dims((n.div_ceil(BLOCK) as u32, 1, 1), (BLOCK as u32, 1, 1)),
        &Params::new().slice(&input).slice_mut(&mut out),
        &env,
    )
    .unwrap();
    let mut expected = Vec::with_capacity(n);
    for chunk in input.chunks(BLOCK) {
        let mut sum = 0u32;
        for &x in chunk {
            sum = sum.wrapping_add(x);
            expected.push(sum);
        }
    }
    assert_eq!(out, expected);
}

#[test]
fn histogram_counts_with_shared_and_global_atomics() {
    let module = Module::parse(&fixture("histogram.ptx")).unwrap();
    let n = 1 << 16;
    let data: Vec<u8> = (0..n as u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let mut hist = vec![0u32; 256];
    let env = Env::new().with(&data).with(&hist);
    let k = kernel(&module, "histogram", false);
    let options = LaunchOptions {
        workers: 2,
        ..Default::default()
    };
    let params = Params::new().slice(&data).slice_mut(&mut hist);
    launch(
        &module,
        &k,
        dims((8, 1, 1), (256, 1, 1)),
        &params.pointers(),
        &env,
        &options,
    )
    .unwrap();
    let mut expected = vec![0u32; 256];
    for &d in &data {
        expected[d as usize] += 1;
    }
    assert_eq!(hist, expected);
}

#[test]
fn transpose_moves_every_element_through_shared_tiles() {
    let module = Module::parse(&fixture("transpose.ptx")).unwrap();
    let (rows, cols) = (100usize, 70usize);
    let input: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    let mut out = vec![-1.0f32; rows * cols];
    let env = Env::new().with(&input).with(&out);
    let params = Params::new()
        .slice(&input)
        .value(rows)
        .value(cols)
        .slice_mut(&mut out);
    let k = kernel(&module, "transpose", false);
    run(
        &module,
        &k,
        dims(
            (cols.div_ceil(32) as u32, rows.div_ceil(32) as u32, 1),
            (32, 8, 1),
        ),
        &params,
        &env,
    )
    .unwrap();
    for r in 0..rows {
        for c in 0..cols {
            assert_eq!(out[c * rows + r], input[r * cols + c], "row {r} column {c}");
        }
    }
}

#[test]
fn sgemm_multiplies_through_shared_tiles() {
    let module = Module::parse(&fixture("sgemm_tiled.ptx")).unwrap();
    let (m, n, kk) = (70usize, 50usize, 40usize);
    // Small integers: every product and sum is exact in f32.
    let a: Vec<f32> = (0..m * kk).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let b: Vec<f32> = (0..kk * n).map(|i| ((i * 5) % 13) as f32 - 6.0).collect();
    let mut c = vec![f32::NAN; m * n];
    let env = Env::new().with(&a).with(&b).with(&c);
    // Dims { m, n, k }: three usizes.
    let params = Params::new()
        .value([m, n, kk])
        .slice(&a)
        .slice(&b)
        .slice_mut(&mut c);
    let k = kernel(&module, "sgemm", false);
    run(
        &module,
        &k,
        dims(
            (n.div_ceil(32) as u32, m.div_ceil(32) as u32, 1),
            (32, 8, 1),
        ),
        &params,
        &env,
    )
    .unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..kk).map(|p| a[i * kk + p] * b[p * n + j]).sum();
            assert_eq!(c[i * n + j], want, "C[{i}][{j}]");
        }
    }
}

/// tests/gpu/warp_shared: warp collectives, barrier reductions, static and
/// dynamic shared memory; `expected` is that program's CPU rule.
#[test]
fn warp_collectives_and_shared_memory_match_the_cpu() {
    const BLOCK: usize = 128;
    const BLOCKS: usize = 2;
    const OUTS: usize = 14;
    let input = |i: usize| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
    let module = Module::parse(&fixture("warp_shared.ptx")).unwrap();
    let n = BLOCK * BLOCKS;
    let data: Vec<u64> = (0..n).map(input).collect();
    let mut out = vec![0u64; n * OUTS];
    let env = Env::new().with(&data).with(&out);
    let k = kernel(&module, "collectives", false);
    let d = LaunchDims {
        grid: (BLOCKS as u32, 1, 1),
        block: (BLOCK as u32, 1, 1),
        dynamic_shared_bytes: (BLOCK * 8) as u32,
    };
    run(
        &module,
        &k,
        d,
        &Params::new().slice(&data).slice_mut(&mut out),
        &env,
    )
    .unwrap();
    for g in 0..n {
        let (t, lane) = (g % BLOCK, g % 32);
        let w = |l: usize| data[g - lane + l];
        let blk = &data[g - t..g - t + BLOCK];
        let v = data[g];
        let r = &out[g * OUTS..g * OUTS + OUTS];
        assert_eq!(r[0], w(31 - lane), "shfl_idx, thread {g}");
        assert_eq!(
            r[1],
            if lane >= 3 { w(lane - 3) } else { v },
            "shfl_up, thread {g}"
        );
        assert_eq!(
            r[2],
            if lane + 5 < 32 { w(lane + 5) } else { v },
            "shfl_down, thread {g}"
        );
        assert_eq!(
            r[3],
            (w(lane ^ 1) as f64 * 0.5).to_bits(),
            "shfl_xor f64, thread {g}"
        );
        assert_eq!(
            r[4],
            (0..32)
                .filter(|&l| w(l) % 3 == 0)
                .map(|l| 1u64 << l)
                .sum::<u64>(),
            "ballot, thread {g}"
        );
        assert_eq!(
            r[5],
            (0..32).any(|l| w(l) % 97 == 0) as u64 | ((0..32).all(|l| w(l) > 0) as u64) << 1,
            "any/all"
        );
        assert_eq!(
            r[6],
            (0..32)
                .filter(|&l| w(l) % 4 == v % 4)
                .map(|l| 1u64 << l)
                .sum::<u64>(),
            "match_any"
        );
        assert_eq!(
            r[7],
            (0..32)
                .map(|l| w(l) as u32 & 0xffff)
                .fold(0u32, u32::wrapping_add) as u64,
            "redux add"
        );
        assert_eq!(
            r[8],
            (0..32).map(|l| w(l) as u32).max().unwrap() as u64,
            "redux max"
        );
        assert_eq!(
            r[9],
            (0..32).map(|l| w(l) as u32 & 0xff).sum::<u32>() as u64,
            "warp sum"
        );
        assert_eq!(
            r[11],
            blk.iter().filter(|&&x| x % 2 == 0).count() as u64
                | (blk.iter().all(|&x| x < u64::MAX) as u64) << 32
                | (blk.iter().any(|&x| x % 1000 == 7) as u64) << 33,
            "bar.red popc/and/or"
        );
        assert_eq!(r[12], blk[BLOCK - 1 - t] as u32 as u64, "static shared");
        assert_eq!(r[13], blk[(t + 1) % BLOCK] ^ 0xabcd, "dynamic shared");
    }
    for w in 0..n / 32 {
        let elected = (0..32)
            .filter(|l| out[(w * 32 + l) * OUTS + 10] == 1)
            .count();
        assert_eq!(elected, 1, "elect.sync in warp {w}");
    }
}

#[test]
fn cluster_histogram_uses_distributed_shared_memory() {
    const CLUSTER: usize = 4;
    const BINS: usize = CLUSTER * 1024;
    let module = Module::parse(&fixture("cluster_histogram.ptx")).unwrap();
    let n = 1 << 15;
    let data: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2654435761) >> 7 ^ (i % 13))
        .collect();
    let mut hist = vec![0u32; BINS];
    let env = Env::new().with(&data).with(&hist);
    let k = kernel(&module, "cluster_histogram", false);
    let options = LaunchOptions {
        cluster: Some((CLUSTER as u32, 1, 1)),
        ..Default::default()
    };
    let params = Params::new().slice(&data).slice_mut(&mut hist);
    launch(
        &module,
        &k,
        dims((8, 1, 1), (256, 1, 1)),
        &params.pointers(),
        &env,
        &options,
    )
    .unwrap();
    let mut expected = vec![0u32; BINS];
    for &v in &data {
        expected[v as usize % BINS] += 1;
    }
    assert_eq!(hist, expected);
}

/// tests/gpu/ldmatrix_stmatrix: every ldmatrix/stmatrix form against the
/// PTX ISA fragment layout.
#[test]
fn ldmatrix_and_stmatrix_follow_the_fragment_layout() {
    const TILE: usize = 256;
    const FRAGS: usize = 14;
    const STORES: usize = 4;
    let module = Module::parse(&fixture("ldmatrix_stmatrix.ptx")).unwrap();
    let tile: Vec<u16> = (0..TILE as u16)
        .map(|i| i.wrapping_mul(257) ^ 0x1234)
        .collect();
    let mut frags = vec![0u32; 32 * FRAGS];
    let mut stored = vec![0u16; STORES * TILE];
    let env = Env::new().with(&tile).with(&frags).with(&stored);
    let k = kernel(&module, "fragments", false);
    run(
        &module,
        &k,
        dims((1, 1, 1), (32, 1, 1)),
        &Params::new()
            .slice(&tile)
            .slice_mut(&mut frags)
            .slice_mut(&mut stored),
        &env,
    )
    .unwrap();
    let at = |m: usize, r: usize, c: usize| tile[m * 64 + r * 8 + c];
    // Lane `l` holds, in half `h`, element (l / 4, 2 (l % 4) + h).
    let fragment = |m: usize, lane: usize, trans: bool| {
        let half = |h: usize| {
            let (r, c) = (lane / 4, 2 * (lane % 4) + h);
            (if trans { at(m, c, r) } else { at(m, r, c) }) as u32
        };
        half(0) | half(1) << 16
    };
    let slots = [
        (0, false),
        (0, false),
        (1, false),
        (0, false),
        (1, false),
        (2, false),
        (3, false),
        (0, true),
        (0, true),
        (1, true),
        (0, true),
        (1, true),
        (2, true),
        (3, true),
    ];
    for (k, &(m, trans)) in slots.iter().enumerate() {
        for lane in 0..32 {
            assert_eq!(
                frags[lane * FRAGS + k],
                fragment(m, lane, trans),
                "ldmatrix slot {k}, lane {lane}"
            );
        }
    }
    let transposed: Vec<u16> = (0..TILE).map(|i| at(i / 64, i % 8, (i / 8) % 8)).collect();
    let mut want_x1 = vec![0u16; TILE];
    want_x1[..64].copy_from_slice(&tile[..64]);
    let mut want_x2 = vec![0u16; TILE];
    want_x2[..128].copy_from_slice(&tile[..128]);
    for (s, want) in [&tile, &transposed, &want_x1, &want_x2]
        .into_iter()
        .enumerate()
    {
        assert_eq!(
            &stored[s * TILE..(s + 1) * TILE],
            &want[..],
            "stmatrix store {s}"
        );
    }
}

#[test]
fn tma_kernels_are_refused_before_running() {
    let module = Module::parse(&fixture("tma_copy.ptx")).unwrap();
    let k = module.kernels().next().unwrap().to_string();
    let nparams = module.kernel_params(&k).unwrap();
    let blobs: Vec<Vec<u8>> = nparams.iter().map(|p| vec![0u8; p.size]).collect();
    let ptrs: Vec<*const u8> = blobs.iter().map(|b| b.as_ptr()).collect();
    let env = Env::new();
    let err = launch(
        &module,
        &k,
        dims((1, 1, 1), (32, 1, 1)),
        &ptrs,
        &env,
        &LaunchOptions::default(),
    )
    .unwrap_err();
    match &err {
        Fault::Unsupported { kernel, at, .. } => {
            assert_eq!(kernel, &k);
            assert!(
                at.instruction.starts_with("cp.async.bulk.tensor.2d"),
                "{}",
                at.instruction
            );
        }
        other => panic!("expected Unsupported, got {other}"),
    }
    assert!(err.to_string().contains("does not implement"), "{err}");
}

/// Every kernel of every fixture is runnable (nothing unsupported reachable)
/// except the documented Hopper ones (TMA).
#[test]
fn every_fixture_kernel_is_runnable_but_tma() {
    let dir = format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("ptx") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let module = Module::parse(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for k in module.kernels() {
            let blobs: Vec<Vec<u8>> = module
                .kernel_params(k)
                .unwrap()
                .iter()
                .map(|p| vec![0u8; p.size])
                .collect();
            let ptrs: Vec<*const u8> = blobs.iter().map(|b| b.as_ptr()).collect();
            // Zero-filled parameters: the kernel faults quickly, or runs;
            // only an Unsupported verdict matters here.
            let options = LaunchOptions {
                timeout: std::time::Duration::from_secs(5),
                cluster: name.contains("cluster").then_some((1, 1, 1)),
                ..Default::default()
            };
            let result = launch(
                &module,
                k,
                dims((1, 1, 1), (32, 1, 1)),
                &ptrs,
                &Env::new(),
                &options,
            );
            let unsupported = matches!(result, Err(Fault::Unsupported { .. }));
            assert_eq!(
                unsupported,
                name == "tma_copy.ptx",
                "{name} / {k}: {result:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 18, "only {checked} kernels");
}

/// tests/gpu/cp_async_stencil: cp.async with zero fill, double buffered
/// with commit/wait groups, and 8- and 16-byte copies.
#[test]
fn cp_async_stencil_and_wide_copies() {
    const TILE: usize = 256;
    const BLOCKS: usize = 16;
    const N: usize = TILE * BLOCKS * 5 - 37;
    let module = Module::parse(&fixture("cp_async_stencil.ptx")).unwrap();
    let x: Vec<f32> = (0..N)
        .map(|i| ((i * 7919) % 1000) as f32 * 0.125 - 40.0)
        .collect();
    let mut y = vec![f32::NAN; N];
    let env = Env::new().with(&x).with(&y);
    let k = kernel(&module, "entry_stencil", false);
    run(
        &module,
        &k,
        dims((BLOCKS as u32, 1, 1), (TILE as u32, 1, 1)),
        &Params::new().slice(&x).slice_mut(&mut y),
        &env,
    )
    .unwrap();
    let at = |i: isize| {
        if i < 0 || i as usize >= x.len() {
            0.0
        } else {
            x[i as usize]
        }
    };
    for (i, &got) in y.iter().enumerate() {
        let want = 0.25 * at(i as isize - 1) + 0.5 * at(i as isize) + 0.25 * at(i as isize + 1);
        assert_eq!(got, want, "element {i}");
    }

    let n = 1000;
    let a: Vec<[u32; 2]> = (0..1024u32)
        .map(|i| {
            if i < n as u32 {
                [i, i ^ 0x5555]
            } else {
                [0; 2]
            }
        })
        .collect();
    let b: Vec<[f32; 4]> = (0..n)
        .map(|i| [i as f32, -(i as f32), 0.5, i as f32 * 0.25])
        .collect();
    let mut oa = vec![[0u32; 2]; n];
    let mut ob = vec![[-1.0f32; 4]; 1024];
    let env = Env::new().with(&a).with(&b).with(&oa).with(&ob);
    let k = kernel(&module, "entry_wide_copies", false);
    let params = Params::new()
        .slice(&a)
        .slice(&b)
        .slice_mut(&mut oa)
        .slice_mut(&mut ob);
    run(
        &module,
        &k,
        dims(((n as u32).div_ceil(128), 1, 1), (128, 1, 1)),
        &params,
        &env,
    )
    .unwrap();
    for i in 0..1024 {
        if i < n {
            assert_eq!(oa[i], [a[i][0] * 2, a[i][1] * 2], "element {i}");
            assert_eq!(ob[i], b[i].map(|v| v * 2.0), "element {i}");
        } else {
            assert_eq!(
                ob[i], [0.0; 4],
                "element {i}: copied as zeros past the end of b"
            );
        }
    }
}

/// examples/constant_poly: a `#[constant]` static is a `.const` variable the
/// module owns; the embedder sets it through `Module::global`.
#[test]
fn constant_memory_initialised_then_set_by_the_host() {
    const DEGREE: usize = 8;
    let horner =
        |c: &[f32; DEGREE], x: f32| c.iter().rev().fold(0.0f32, |acc, &k| acc.mul_add(x, k));
    let module = Module::parse(&fixture("constant_poly.ptx")).unwrap();
    let n = 4096;
    let xs: Vec<f32> = (0..n).map(|i| (i as f32 / n as f32) * 4.0 - 2.0).collect();
    let k = kernel(&module, "polynomial", false);
    // COEFFS, by its PTX name (the kernel table names it for the host).
    let coeffs = module
        .global("_ZN13constant_poly6COEFFS17hedbb621fe74973d0E")
        .expect("the .const variable");
    assert_eq!(coeffs.size, 4 * DEGREE);
    let initial = [
        1.0, -0.5, 0.25, -0.125, 0.0625, -0.03125, 0.015625, -0.0078125,
    ];
    let updated = [0.5, 1.5, -2.0, 0.75, 0.0, 0.125, -0.25, 1.0];
    for (round, want) in [initial, updated].iter().enumerate() {
        if round == 1 {
            // SAFETY: the variable is 32 bytes of f32 owned by the module; no
            // launch is running.
            unsafe {
                std::ptr::copy_nonoverlapping(updated.as_ptr(), coeffs.address as *mut f32, DEGREE)
            };
        }
        let mut out = vec![0f32; n];
        let env = Env::new().with(&xs).with(&out);
        run(
            &module,
            &k,
            dims((n as u32 / 256, 1, 1), (256, 1, 1)),
            &Params::new().slice(&xs).slice_mut(&mut out),
            &env,
        )
        .unwrap();
        for (i, &x) in xs.iter().enumerate() {
            assert_eq!(
                out[i].to_bits(),
                horner(want, x).to_bits(),
                "round {round}, x = {x}"
            );
        }
    }
}
