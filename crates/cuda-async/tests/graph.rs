//! Operations captured into CUDA graphs (`into_graph`) and replayed: the
//! replay does the operation's work again on the current contents of its
//! buffers, the graph owns the output, misuse fails with the call named.
//! On the GPU where there is one, else on the CPU emulator.

use std::sync::{Arc, Once};

use cuda_async::{block_on, join_all, launch, memory, value, AsyncError, DeviceGraph, DeviceOperation, StreamPool};
use cuda_core::{CudaContext, DeviceBuffer, GraphError};

/// GPU 0, or the CPU emulator without one.
fn ctx() -> Arc<CudaContext> {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        if std::env::var_os("OXIDE_EMULATE").is_none() && !cuda_driver_sys::DriverApi::gpu_present() {
            // SAFETY (edition 2021: safe): set once, before cuda-core is used again.
            std::env::set_var("OXIDE_EMULATE", "1");
        }
    });
    CudaContext::new(0).unwrap()
}

/// `dst = src`, then `src` filled with 9: a two-step operation.
fn copy_then_fill(src: DeviceBuffer<u32>, dst: DeviceBuffer<u32>) -> impl DeviceOperation<Output = (DeviceBuffer<u32>, DeviceBuffer<u32>)> {
    value((src, dst)).then(|s, (mut src, mut dst)| {
        dst.copy_from_device(s, &src)?;
        src.fill(s, 9)?;
        Ok((src, dst))
    })
}

#[test]
fn a_captured_operation_replays_on_the_current_inputs() {
    let ctx = ctx();
    let pool = StreamPool::new(&ctx, 2).unwrap();
    let stream = pool.streams()[0].clone();
    let src = DeviceBuffer::from_host(&stream, &[1u32, 2, 3, 4]).unwrap();
    let dst = DeviceBuffer::<u32>::zeroed(&stream, 4).unwrap();
    let mut graph = copy_then_fill(src, dst).into_graph(&stream).unwrap();
    // Recorded, not run.
    assert_eq!(graph.output().0.to_host_vec(&stream).unwrap(), [1, 2, 3, 4]);
    assert_eq!(graph.output().1.to_host_vec(&stream).unwrap(), [0; 4]);

    graph = graph.replay().sync_in(&pool).unwrap();
    assert_eq!(graph.output().1.to_host_vec(&stream).unwrap(), [1, 2, 3, 4]);
    assert_eq!(graph.output().0.to_host_vec(&stream).unwrap(), [9; 4]);
    // The second launch copies what the first left in `src`.
    graph = graph.replay().sync_on(&stream).unwrap();
    assert_eq!(graph.output().1.to_host_vec(&stream).unwrap(), [9; 4]);
    // New inputs between launches, through output_mut; awaited this time.
    graph.output_mut().0.copy_from_host(&stream, &[5, 6, 7, 8]).unwrap();
    let graph = block_on(async { graph.replay().await }).unwrap();
    assert_eq!(graph.output().1.to_host_vec(&stream).unwrap(), [5, 6, 7, 8]);
    // Launched directly, on another stream of the context: ordered after
    // the first stream's uses of the buffers.
    let other = ctx.new_stream().unwrap();
    graph.launch(&other).unwrap();
    assert_eq!(graph.output().1.to_host_vec(&stream).unwrap(), [9; 4]);
}

#[test]
fn the_graph_owns_the_output_and_refuses_a_dropped_buffer() {
    let ctx = ctx();
    let stream = ctx.new_stream().unwrap();
    let src = DeviceBuffer::from_host(&stream, &[3u32; 8]).unwrap();
    let dst = DeviceBuffer::<u32>::zeroed(&stream, 8).unwrap();
    let mut graph = copy_then_fill(src, dst).into_graph(&stream).unwrap();
    // Replacing a buffer the graph uses drops it: the next launch is refused.
    graph.output_mut().1 = DeviceBuffer::<u32>::zeroed(&stream, 8).unwrap();
    match graph.replay().sync_on(&stream) {
        Err(AsyncError::Graph(GraphError::BufferDropped { buffers: 1 })) => {}
        other => panic!("expected BufferDropped, got {other:?}"),
    }

    // Parted: the exec refuses to launch once the output is gone.
    let src = DeviceBuffer::from_host(&stream, &[3u32; 8]).unwrap();
    let dst = DeviceBuffer::<u32>::zeroed(&stream, 8).unwrap();
    let graph = copy_then_fill(src, dst).into_graph(&stream).unwrap();
    let (exec, (src, dst)) = graph.into_parts();
    exec.launch(&stream).unwrap();
    assert_eq!(dst.to_host_vec(&stream).unwrap(), [3; 8]);
    drop(src);
    assert!(matches!(exec.launch(&stream), Err(GraphError::BufferDropped { buffers: 1 })));
    drop(dst);
    assert!(matches!(exec.launch(&stream), Err(GraphError::BufferDropped { buffers: 2 })));
}

#[test]
fn a_dropped_replay_future_keeps_the_buffers_until_the_launch_is_done() {
    let ctx = ctx();
    let stream = ctx.new_stream().unwrap();
    let src = DeviceBuffer::from_host(&stream, &[1u32; 1024]).unwrap();
    let dst = DeviceBuffer::<u32>::zeroed(&stream, 1024).unwrap();
    let graph = copy_then_fill(src, dst).into_graph(&stream).unwrap();
    let mut fut = Box::pin(graph.replay().schedule_on(&stream));
    // One poll enqueues the launch; then the future (and the graph) is dropped.
    let waker = std::task::Waker::noop();
    let _ = std::future::Future::poll(fut.as_mut(), &mut std::task::Context::from_waker(waker));
    drop(fut);
    stream.synchronize().unwrap();
    cuda_async::release_finished();
}

#[test]
fn what_a_graph_cannot_replay_fails_the_capture_with_the_call_named() {
    let ctx = ctx();
    let stream = ctx.new_stream().unwrap();
    // An allocation on the capturing stream: the call is refused (and so
    // the step and the capture fail), naming itself.
    let err = memory::zeroed::<u32>(16).into_graph(&stream).unwrap_err();
    assert!(err.to_string().contains("DeviceBuffer::zeroed is not allowed while a stream captures a graph"), "{err}");
    // A copy to host memory.
    let buf = DeviceBuffer::<u32>::zeroed(&stream, 16).unwrap();
    let err = memory::to_host(buf).into_graph(&stream).unwrap_err();
    assert!(err.to_string().contains("while a stream captures a graph"), "{err}");
    assert!(!stream.is_capturing());
    // The legacy default stream cannot capture.
    let err = value(1).into_graph(&ctx.default_stream()).unwrap_err();
    assert!(matches!(err, AsyncError::Graph(GraphError::DefaultStream)), "{err}");
    // A failing step: its own error, and the stream can capture again.
    let err = launch(|_| -> Result<(), AsyncError> { Err(AsyncError::host("the step failed")) })
        .into_graph(&stream)
        .unwrap_err();
    assert!(matches!(err, AsyncError::Host(_)), "{err:?}");
    assert_eq!(err.to_string(), "the step failed");
    assert!(!stream.is_capturing());
    let g: DeviceGraph<i32> = value(7).into_graph(&stream).unwrap();
    assert_eq!(*g.replay().sync_on(&stream).unwrap().output(), 7);
}

#[test]
fn forks_in_a_pool_become_branches_of_the_graph() {
    let ctx = ctx();
    let pool = StreamPool::new(&ctx, 3).unwrap();
    let stream = pool.streams()[0].clone();
    let pairs: Vec<_> = (0..3u32)
        .map(|i| {
            let src = DeviceBuffer::from_host(&stream, &[i + 1; 64]).unwrap();
            let dst = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
            copy_then_fill(src, dst)
        })
        .collect();
    let extra_src = DeviceBuffer::from_host(&stream, &[40u32; 64]).unwrap();
    let extra_dst = DeviceBuffer::<u32>::zeroed(&stream, 64).unwrap();
    let op = join_all(pairs).zip(copy_then_fill(extra_src, extra_dst));
    let graph = op.into_graph_in(&pool).unwrap();
    let graph = graph.replay().sync_in(&pool).unwrap();
    let (outs, extra) = graph.output();
    for (i, (src, dst)) in outs.iter().enumerate() {
        assert_eq!(dst.to_host_vec(&stream).unwrap(), vec![i as u32 + 1; 64]);
        assert_eq!(src.to_host_vec(&stream).unwrap(), vec![9; 64]);
    }
    assert_eq!(extra.1.to_host_vec(&stream).unwrap(), vec![40; 64]);
    let graph = graph.replay().sync_in(&pool).unwrap();
    assert!(graph.output().0.iter().all(|(_, d)| d.to_host_vec(&stream).unwrap() == vec![9; 64]));
}
