//! cuBLAS calls captured into CUDA graphs and replayed, checked against the
//! CPU reference: on the GPU where there is one (cuBLAS with the handle's
//! own workspace), else on the CPU emulator (the CPU reference as a host
//! node the graph replays).

use std::sync::{Arc, Once};

use cuda_blas::{gemm_reference, Blas, BlasError, BlasLt, Epilogue, Fp8Scales, GemmConfig};
use cuda_core::{CudaContext, CudaStream, DeviceBuffer, GraphError};
use cuda_device::half::{bf16, f8e4m3, f8e5m2};
use cuda_driver_sys::DriverApi;

/// A stream that can capture (not the legacy default stream).
fn stream() -> Arc<CudaStream> {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        if std::env::var_os("OXIDE_EMULATE").is_none() && !DriverApi::gpu_present() {
            // SAFETY (edition 2021: safe): set once, before cuda-core reads it.
            std::env::set_var("OXIDE_EMULATE", "1");
        }
    });
    CudaContext::new(0).unwrap().new_stream().unwrap()
}

/// Small integers, so that every sum is exact in f32.
fn ints(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7 + seed * 3) % 11) as f32 - 5.0).collect()
}

#[test]
fn a_captured_gemm_replays_and_reads_the_current_inputs() {
    let stream = stream();
    let blas = Blas::with_workspace(&stream).unwrap();
    let (m, n, k) = (5, 7, 3);
    let mut a = DeviceBuffer::from_host(&stream, &ints(m * k, 1)).unwrap();
    let b = DeviceBuffer::from_host(&stream, &ints(k * n, 2)).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, m * n).unwrap();
    // C += A·B at every launch.
    let cfg = GemmConfig::row_major(m, n, k).scale(1.0, 1.0);
    let graph = stream
        .capture(|_| blas.gemm(&cfg, a.as_slice(), b.as_slice(), c.as_slice_mut()))
        .unwrap();
    // Recorded, not run.
    assert_eq!(c.to_host_vec(&stream).unwrap(), vec![0.0; m * n]);
    let exec = graph.instantiate().unwrap();
    let mut want = vec![0.0f32; m * n];
    for _ in 0..3 {
        exec.launch(&stream).unwrap();
        gemm_reference(&cfg, &ints(m * k, 1), &ints(k * n, 2), &mut want).unwrap();
    }
    assert_eq!(c.to_host_vec(&stream).unwrap(), want);

    // A new A between launches: the next launch reads it.
    a.copy_from_host(&stream, &ints(m * k, 9)).unwrap();
    exec.launch(&stream).unwrap();
    gemm_reference(&cfg, &ints(m * k, 9), &ints(k * n, 2), &mut want).unwrap();
    assert_eq!(c.to_host_vec(&stream).unwrap(), want);

    // A launch after an operand is gone is refused, and C is untouched.
    drop(a);
    assert!(matches!(exec.launch(&stream), Err(GraphError::BufferDropped { buffers: 1 })));
    assert_eq!(c.to_host_vec(&stream).unwrap(), want);
}

#[test]
fn a_captured_strided_batch_and_an_lt_epilogue_replay() {
    let stream = stream();
    let blas = Blas::with_workspace(&stream).unwrap();
    let lt = BlasLt::new(&stream).unwrap();
    let (m, n, k, count) = (4, 3, 6, 2);
    let a_host = ints(m * k * count, 3);
    let b_host = ints(k * n * count, 4);
    let bias_host = ints(n, 5);
    let a = DeviceBuffer::from_host(&stream, &a_host).unwrap();
    let b = DeviceBuffer::from_host(&stream, &b_host).unwrap();
    let bias = DeviceBuffer::from_host(&stream, &bias_host).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, m * n * count).unwrap();
    let mut d = DeviceBuffer::<f32>::zeroed(&stream, m * n).unwrap();
    let cfg = GemmConfig::row_major(m, n, k);
    let batch = cuda_blas::StridedBatch::packed(&cfg, count).unwrap();
    let graph = stream
        .capture(|_| {
            blas.gemm_strided_batched(&cfg, &batch, a.as_slice(), b.as_slice(), c.as_slice_mut())?;
            lt.matmul(&cfg, Epilogue::BiasRelu(bias.as_slice()), a.as_slice(), b.as_slice(), d.as_slice_mut())
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    exec.launch(&stream).unwrap();
    exec.launch(&stream).unwrap();
    let mut want = vec![0.0f32; m * n * count];
    cuda_blas::gemm_reference_batched(&cfg, &batch, &a_host, &b_host, &mut want).unwrap();
    assert_eq!(c.to_host_vec(&stream).unwrap(), want);
    // The epilogue: relu(A0·B0 + bias[column]) (row-major: one bias per column of C).
    let got = d.to_host_vec(&stream).unwrap();
    for i in 0..m {
        for j in 0..n {
            let t = want[i * n + j] + bias_host[j];
            assert_eq!(got[i * n + j], t.max(0.0), "({i}, {j})");
        }
    }
}

#[test]
fn a_captured_fp8_matmul_reads_the_current_scales_at_each_launch() {
    let stream = stream();
    let lt = BlasLt::new(&stream).unwrap();
    let (m, n, k) = (16, 32, 48);
    // Small integers: exact in both FP8 formats, every sum exact in f32.
    let a_host: Vec<f32> = ints(m * k, 6).iter().map(|x| x.clamp(-4.0, 4.0)).collect();
    let b_host: Vec<f32> = ints(n * k, 7).iter().map(|x| x.clamp(-4.0, 4.0)).collect();
    let bias_host = ints(n, 8);
    let a = DeviceBuffer::from_host(&stream, &a_host.iter().map(|&x| f8e4m3::from_f32(x)).collect::<Vec<_>>()).unwrap();
    let b = DeviceBuffer::from_host(&stream, &b_host.iter().map(|&x| f8e5m2::from_f32(x)).collect::<Vec<_>>()).unwrap();
    let bias = DeviceBuffer::from_host(&stream, &bias_host.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>()).unwrap();
    let mut scale_a = DeviceBuffer::from_host(&stream, &[1.0f32]).unwrap();
    let scale_b = DeviceBuffer::from_host(&stream, &[0.5f32]).unwrap();
    let mut d = DeviceBuffer::<f32>::zeroed(&stream, m * n).unwrap();
    // Row-major TN: A is m×k, B is stored n×k.
    let cfg = GemmConfig::row_major(m, n, k).transpose_b();
    let graph = stream
        .capture(|_| {
            let scales = Fp8Scales::new(&scale_a, &scale_b);
            lt.matmul_fp8(&cfg, scales, Epilogue::BiasRelu(bias.as_slice()), a.as_slice(), b.as_slice(), d.as_slice_mut())
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    for sa in [1.0f32, 4.0] {
        scale_a.copy_from_host(&stream, &[sa]).unwrap();
        exec.launch(&stream).unwrap();
        let got = d.to_host_vec(&stream).unwrap();
        for i in 0..m {
            for j in 0..n {
                let dot: f32 = (0..k).map(|p| a_host[i * k + p] * b_host[j * k + p]).sum();
                let want = (sa * 0.5 * dot + bias_host[j]).max(0.0);
                assert_eq!(got[i * n + j], want, "scale {sa}: ({i}, {j})");
            }
        }
    }
}

#[test]
fn a_plain_host_function_still_breaks_a_capture() {
    // The one-shot `launch_host_fn` cannot be replayed; the replayable one can.
    let stream = stream();
    let err = stream.capture(|s| s.launch_host_fn(|| ())).unwrap_err();
    assert!(err.to_string().contains("launch_host_fn"), "{err}");
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let h = hits.clone();
    let graph = stream
        .capture(|s| s.launch_host_fn_replayable(move || {
            h.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }))
        .unwrap();
    assert_eq!(hits.load(std::sync::atomic::Ordering::Relaxed), 0);
    let exec = graph.instantiate().unwrap();
    for _ in 0..4 {
        exec.launch(&stream).unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(hits.load(std::sync::atomic::Ordering::Relaxed), 4);
    drop(exec);
    drop(graph);
    // Outside a capture it runs once.
    let h = hits.clone();
    stream.launch_host_fn_replayable(move || {
        h.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(hits.load(std::sync::atomic::Ordering::Relaxed), 5);
}

#[test]
fn a_handle_without_workspace_is_refused_in_a_capture_on_the_gpu() {
    let stream = stream();
    let blas = Blas::new(&stream).unwrap();
    assert_eq!(blas.workspace_bytes(), None);
    let a = DeviceBuffer::from_host(&stream, &[1.0f32; 4]).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&stream, 4).unwrap();
    let cfg = GemmConfig::row_major(2, 2, 2);
    let got = stream.capture(|_| blas.gemm(&cfg, a.as_slice(), a.as_slice(), c.as_slice_mut()));
    if blas.is_emulated() {
        // The CPU reference needs no workspace.
        let exec = got.unwrap().instantiate().unwrap();
        exec.launch(&stream).unwrap();
        assert_eq!(c.to_host_vec(&stream).unwrap(), [2.0; 4]);
    } else {
        let err = got.unwrap_err();
        let GraphError::Closure(inner) = &err else { panic!("{err}") };
        let inner = inner.downcast_ref::<BlasError>().expect("a BlasError");
        assert!(matches!(inner, BlasError::CaptureNeedsWorkspace { call: "cublasGemmEx" }), "{inner}");
        assert!(err.to_string().contains("Blas::with_workspace"), "{err}");
        // With a workspace the same capture works.
        blas.set_workspace(DeviceBuffer::<u8>::zeroed(&stream, 4 << 20).unwrap()).unwrap();
        assert_eq!(blas.workspace_bytes(), Some(4 << 20));
        let exec = stream.capture(|_| blas.gemm(&cfg, a.as_slice(), a.as_slice(), c.as_slice_mut())).unwrap().instantiate().unwrap();
        exec.launch(&stream).unwrap();
        assert_eq!(c.to_host_vec(&stream).unwrap(), [2.0; 4]);
    }
}

#[test]
fn set_stream_moves_the_work_and_refuses_another_context() {
    let stream = stream();
    let other = stream.context().new_stream().unwrap();
    let mut blas = Blas::with_workspace(&stream).unwrap();
    blas.set_stream(&other).unwrap();
    assert!(Arc::ptr_eq(blas.stream(), &other));
    let a = DeviceBuffer::from_host(&other, &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut c = DeviceBuffer::<f32>::zeroed(&other, 4).unwrap();
    blas.gemm(&GemmConfig::row_major(2, 2, 2), a.as_slice(), a.as_slice(), c.as_slice_mut()).unwrap();
    assert_eq!(c.to_host_vec(&other).unwrap(), [7.0, 10.0, 15.0, 22.0]);
}

#[test]
fn gemm_operations_chain_capture_and_replay_in_a_pool() {
    use cuda_async::{value, DeviceBox, DeviceOperation, StreamPool};
    use cuda_blas::ops;
    let stream = stream();
    let pool = StreamPool::new(stream.context(), 2).unwrap();
    let s0 = pool.streams()[0].clone();
    let blas = ops::BlasOps::new();
    let (m, n, k) = (4, 5, 6);
    let w = DeviceBox::from_host(&s0, &ints(k * n, 7)).unwrap();
    let x = DeviceBuffer::from_host(&s0, &ints(m * k, 8)).unwrap();
    let y = DeviceBuffer::<f32>::zeroed(&s0, m * n).unwrap();
    let z = DeviceBuffer::<f32>::zeroed(&s0, m * n).unwrap();
    let cfg = GemmConfig::row_major(m, n, k);
    // y = x·w, then z = y·I (n×n identity) plus z: two chained GEMMs.
    let mut eye = vec![0.0f32; n * n];
    for i in 0..n {
        eye[i * n + i] = 1.0;
    }
    let eye = DeviceBox::from_host(&s0, &eye).unwrap();
    let op = |x, y, z| {
        let (blas, w, eye) = (blas.clone(), w.clone(), eye.clone());
        ops::gemm(&blas, cfg, x, w, y).and_then(move |(x, _w, y)| {
            ops::gemm(&blas, GemmConfig::row_major(m, n, n).scale(1.0, 1.0), y, eye, z)
                .map(move |(y, _eye, z)| (x, y, z))
        })
    };
    // As an operation: runs once.
    let (x, y, z) = op(x, y, z).sync_on(&s0).unwrap();
    let mut want_y = vec![0.0f32; m * n];
    gemm_reference(&cfg, &ints(m * k, 8), &ints(k * n, 7), &mut want_y).unwrap();
    assert_eq!(y.to_host_vec(&s0).unwrap(), want_y);
    assert_eq!(z.to_host_vec(&s0).unwrap(), want_y);

    // Captured on the pool: a stream without a handle is refused, naming the fix.
    let fresh = ops::BlasOps::new();
    let err = ops::gemm(&fresh, cfg, DeviceBox::from_host(&s0, &[0.0f32; 24]).unwrap(), w.clone(),
                        DeviceBuffer::<f32>::zeroed(&s0, m * n).unwrap())
        .into_graph(&s0)
        .unwrap_err();
    assert!(err.to_string().contains("BlasOps::prepare"), "{err}");

    for s in pool.streams() {
        blas.prepare(s).unwrap();
    }
    let graph = op(x, y, z).into_graph_in(&pool).unwrap();
    let before = blas.handles();
    // Three replays: z accumulates y each time.
    let graph = value(()).and_then(|_| graph.replay()).and_then(|g| g.replay()).and_then(|g| g.replay()).sync_in(&pool).unwrap();
    assert_eq!(blas.handles(), before, "replays make no handles");
    let (_, y, z) = graph.output();
    assert_eq!(y.to_host_vec(&s0).unwrap(), want_y);
    let want_z: Vec<f32> = want_y.iter().map(|v| v * 4.0).collect();
    assert_eq!(z.to_host_vec(&s0).unwrap(), want_z);
}
