//! CUDA Graphs through cuda-core: on the GPU where there is one, else on the
//! CPU emulator (device code). Capture records instead of running, replays
//! run in order, explicit graphs honour their dependencies, parameters
//! update in place, and what a graph cannot replay breaks the capture with
//! an error naming it.

mod common {
    pub mod affine;
}

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use cuda_core::{DeviceBuffer, DriverError, Graph, GraphError};

use common::affine::{affine, setup, AFFINE_PTX};

const N: usize = 1000;

/// A context synchronisation breaks a capture in progress on any thread
/// (cuda-core's `graph` docs): the test that makes one runs alone, the
/// others beside each other (dropping their modules as they end, which
/// cuda-core puts off past the others' captures).
static CONTEXT_WIDE: RwLock<()> = RwLock::new(());

fn beside_others() -> RwLockReadGuard<'static, ()> {
    CONTEXT_WIDE.read().unwrap_or_else(|e| e.into_inner())
}

fn alone() -> RwLockWriteGuard<'static, ()> {
    CONTEXT_WIDE.write().unwrap_or_else(|e| e.into_inner())
}

fn all(v: &[u32], want: u32) {
    assert!(v.iter().all(|&x| x == want), "want {want} everywhere, got {:?}…", &v[..4]);
}

#[test]
fn capture_records_instead_of_running_and_replays_in_order() {
    let _order = beside_others();
    let (_ctx, stream, f) = setup();
    let data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    assert!(!stream.is_capturing());
    let graph = stream
        .capture(|s| {
            assert!(s.is_capturing());
            affine(&f, s, &data, 3, 1)?;
            affine(&f, s, &data, 2, 5)
        })
        .unwrap();
    assert!(!stream.is_capturing());
    all(&data.to_host_vec(&stream).unwrap(), 0); // nothing ran
    assert_eq!(graph.kernel_nodes().unwrap().len(), 2);
    let exec = graph.instantiate().unwrap();
    drop(graph); // the exec does not need it
    let mut want = 0u32;
    for _ in 0..5 {
        exec.launch(&stream).unwrap();
        want = (want * 3 + 1) * 2 + 5; // in order: 3x+1 first
    }
    all(&data.to_host_vec(&stream).unwrap(), want);
    assert_eq!(want, 6 * (6 * (6 * (6 * 7 + 7) + 7) + 7) + 7);
}

#[test]
fn event_nodes_record_when_the_graph_reaches_them() {
    let _order = beside_others();
    let (ctx, stream, f) = setup();
    let data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let (start, end) = (Arc::new(ctx.new_event().unwrap()), Arc::new(ctx.new_event().unwrap()));
    let mut g = Graph::new(&ctx).unwrap();
    let a = g.add_event_record(&[], &start).unwrap();
    let k = g.add_kernel(&[a], |s| affine(&f, s, &data, 1, 1)).unwrap();
    let w = g.add_event_wait(&[k], &start).unwrap();
    g.add_event_record(&[w], &end).unwrap();
    let exec = g.instantiate().unwrap();
    drop(g);
    exec.launch(&stream).unwrap();
    let ms = start.elapsed_ms(&end).unwrap(); // waits for `end`
    assert!(ms >= 0.0, "{ms}");
    all(&data.to_host_vec(&stream).unwrap(), 1);
}

#[test]
fn a_graph_keeps_the_modules_of_its_kernels_loaded() {
    let _order = beside_others();
    let (ctx, stream, _) = setup();
    let data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let exec = {
        // A module of its own, dropped (with its function) before the launches.
        let f = ctx.load_module_ptx(AFFINE_PTX).unwrap().function("affine").unwrap();
        let mut g = Graph::new(&ctx).unwrap();
        g.add_kernel(&[], |s| affine(&f, s, &data, 1, 2)).unwrap();
        let captured = stream.capture(|s| affine(&f, s, &data, 3, 0)).unwrap();
        g.add_child(&[], &captured).unwrap();
        g.instantiate().unwrap()
    };
    exec.launch(&stream).unwrap();
    let v = data.to_host_vec(&stream).unwrap();
    // The two nodes do not depend on each other: either order.
    assert!(v.iter().all(|&x| x == 2 || x == 6), "{:?}", &v[..4]);
}

#[test]
fn a_graph_launched_in_a_capture_is_refused_and_the_capture_goes_on() {
    let _order = beside_others();
    // The H200's driver answers cuGraphLaunch on a capturing stream with
    // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; cuda-core says so before the
    // call, so the capture stays usable, and the emulator refuses it too.
    let (_ctx, stream, f) = setup();
    let data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let inner = stream.capture(|s| affine(&f, s, &data, 2, 1)).unwrap().instantiate().unwrap();
    let outer = stream
        .capture(|s| {
            let refused = inner.launch(s).unwrap_err();
            assert!(matches!(refused, GraphError::LaunchIntoCapture), "{refused}");
            assert!(refused.to_string().contains("Graph::add_child"), "{refused}");
            affine(&f, s, &data, 1, 10).map_err(|e| e.to_string())
        })
        .unwrap();
    all(&data.to_host_vec(&stream).unwrap(), 0);
    outer.instantiate().unwrap().launch(&stream).unwrap();
    inner.launch(&stream).unwrap();
    all(&data.to_host_vec(&stream).unwrap(), 10 * 2 + 1); // 0 -> +10 -> 2x+1
}

#[test]
fn explicit_graph_runs_its_nodes_after_their_dependencies() {
    let _order = beside_others();
    let (ctx, stream, f) = setup();
    let mut data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let mut copy = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));

    let mut g = Graph::new(&ctx).unwrap();
    let clear = g.add_memset(&[], &mut data, 0).unwrap();
    let plus = g.add_kernel(&[clear], |s| affine(&f, s, &data, 1, 3)).unwrap();
    let times = g.add_kernel(&[plus], |s| affine(&f, s, &data, 5, 0)).unwrap();
    let snapshot = g.add_copy(&[times], &mut copy, &data).unwrap();
    let counted = calls.clone();
    let host = g.add_host(&[snapshot], move || {
        counted.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    // A child graph that adds 1 to the copy, after everything.
    let mut child = Graph::new(&ctx).unwrap();
    child.add_kernel(&[], |s| affine(&f, s, &copy, 1, 1)).unwrap();
    let join = g.add_empty(&[host]).unwrap();
    g.add_child(&[join], &child).unwrap();
    drop(child);

    let mut exec = g.instantiate().unwrap();
    for _ in 0..10 {
        exec.launch(&stream).unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 10, "the host node runs once per launch");
    all(&data.to_host_vec(&stream).unwrap(), 3 * 5); // cleared, +3, *5
    all(&copy.to_host_vec(&stream).unwrap(), 15 + 1);

    // New arguments for one kernel node, in place.
    exec.set_kernel_params(plus, |s| affine(&f, s, &data, 1, 4)).unwrap();
    exec.launch(&stream).unwrap();
    all(&data.to_host_vec(&stream).unwrap(), 4 * 5);

    // A node that is not a kernel, or of another graph, is refused.
    let e = exec.set_kernel_params(clear, |s| affine(&f, s, &data, 1, 4)).unwrap_err();
    assert!(matches!(e, GraphError::NotAKernelNode), "{e}");
    let other = Graph::new(&ctx).unwrap().add_empty(&[]).unwrap();
    assert!(matches!(g.add_empty(&[other]), Err(GraphError::ForeignNode)));

    // A kernel node records exactly one launch.
    let e = g
        .add_kernel(&[], |s| {
            affine(&f, s, &data, 1, 1)?;
            affine(&f, s, &data, 1, 1)
        })
        .unwrap_err();
    assert!(matches!(e, GraphError::NotOneKernel { nodes: 2 }), "{e}");
}

#[test]
fn update_takes_parameters_from_a_graph_of_the_same_shape_only() {
    let _order = beside_others();
    let (_ctx, stream, f) = setup();
    let data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let build = |mul, add| stream.capture(|s| affine(&f, s, &data, mul, add)).unwrap();
    let mut exec = build(1, 2).instantiate().unwrap();
    exec.launch(&stream).unwrap();
    all(&data.to_host_vec(&stream).unwrap(), 2);
    exec.update(&build(10, 0)).unwrap();
    exec.launch(&stream).unwrap();
    all(&data.to_host_vec(&stream).unwrap(), 20);

    let two = stream
        .capture(|s| {
            affine(&f, s, &data, 1, 1)?;
            affine(&f, s, &data, 1, 1)
        })
        .unwrap();
    let e = exec.update(&two).unwrap_err();
    assert!(matches!(e, GraphError::UpdateRefused { .. }), "{e}");
    assert!(e.to_string().contains("the nodes or their dependencies differ"), "{e}");
    exec.launch(&stream).unwrap(); // still the updated graph
    all(&data.to_host_vec(&stream).unwrap(), 200);
}

#[test]
fn a_sync_during_capture_invalidates_it_and_says_which() {
    let _order = alone();
    let (ctx, stream, f) = setup();
    let data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();

    let capture = stream.begin_capture().unwrap();
    affine(&f, &stream, &data, 1, 1).unwrap();
    let e = stream.synchronize().unwrap_err();
    assert!(e.to_string().contains("CudaStream::synchronize"), "{e}");
    let e = capture.end().unwrap_err();
    assert!(matches!(&e, GraphError::CaptureInvalidated { by } if by == "CudaStream::synchronize"), "{e}");
    assert!(e.to_string().starts_with("the stream capture was invalidated by CudaStream::synchronize"), "{e}");
    assert!(!stream.is_capturing());

    let capture = stream.begin_capture().unwrap();
    assert!(ctx.synchronize().is_err());
    let e = capture.end().unwrap_err();
    assert!(matches!(&e, GraphError::CaptureInvalidated { by } if by == "CudaContext::synchronize"), "{e}");

    // Host memory cannot be kept alive by a graph: a copy to the host breaks it.
    let e = stream.capture(|s| data.to_host_vec(s).map(drop)).unwrap_err();
    assert!(matches!(&e, GraphError::Closure(_)), "{e}");
    let capture = stream.begin_capture().unwrap();
    assert!(data.to_host_vec(&stream).is_err());
    let e = capture.end().unwrap_err();
    assert!(matches!(&e, GraphError::CaptureInvalidated { by } if by.contains("to_host")), "{e}");

    // The stream works normally afterwards, and nothing of the broken
    // captures ran.
    stream.synchronize().unwrap();
    all(&data.to_host_vec(&stream).unwrap(), 0);

    // The legacy default stream cannot capture.
    let e = ctx.default_stream().begin_capture().unwrap_err();
    assert!(matches!(e, GraphError::DefaultStream), "{e}");
    // Nor can a stream capture twice.
    let capture = stream.begin_capture().unwrap();
    assert!(matches!(stream.begin_capture(), Err(GraphError::AlreadyCapturing)));
    drop(capture); // ends it, destroying the graph
    assert!(!stream.is_capturing());
}

#[test]
fn a_graph_refuses_to_run_once_a_buffer_it_uses_is_dropped() {
    let _order = beside_others();
    let (ctx, stream, _f) = setup();
    let mut data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    g.add_memset(&[], &mut data, 7).unwrap();
    let exec = g.instantiate().unwrap();
    exec.launch(&stream).unwrap();
    all(&data.to_host_vec(&stream).unwrap(), 0x0707_0707);
    drop(data);
    let e = exec.launch(&stream).unwrap_err();
    assert!(matches!(e, GraphError::BufferDropped { buffers: 1 }), "{e}");

    // Captured uses are kept the same way (the memset's stream order notes it).
    let mut data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let exec = stream.capture(|s| data.memset(s, 1)).unwrap().instantiate().unwrap();
    exec.launch(&stream).unwrap();
    all(&data.to_host_vec(&stream).unwrap(), 0x0101_0101);
    drop(data);
    assert!(matches!(exec.launch(&stream), Err(GraphError::BufferDropped { buffers: 1 })));
}

#[test]
fn a_forked_stream_must_be_joined_before_the_capture_ends() {
    let _order = beside_others();
    let (ctx, stream, f) = setup();
    let side = ctx.new_stream().unwrap();
    let a = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let b = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();

    // Fork without a join: refused.
    let capture = stream.begin_capture().unwrap();
    let fork = ctx.new_event_without_timing().unwrap();
    fork.record(&stream).unwrap();
    side.wait(&fork).unwrap();
    affine(&f, &side, &b, 1, 1).unwrap();
    let e = capture.end().unwrap_err();
    assert!(matches!(e, GraphError::Unjoined), "{e}");
    assert!(e.to_string().contains("make the capturing stream wait on it"), "{e}");

    // Fork and join: both branches are in the graph.
    assert!(!side.is_capturing_in_driver().unwrap());
    let capture = stream.begin_capture().unwrap();
    assert!(stream.is_capturing_in_driver().unwrap());
    fork.record(&stream).unwrap();
    side.wait(&fork).unwrap();
    // The joined stream captures too, which only the driver knows.
    assert!(!side.is_capturing());
    assert!(side.is_capturing_in_driver().unwrap());
    affine(&f, &side, &b, 1, 2).unwrap();
    affine(&f, &stream, &a, 1, 3).unwrap();
    let join = ctx.new_event_without_timing().unwrap();
    join.record(&side).unwrap();
    stream.wait(&join).unwrap();
    let graph = capture.end().unwrap();
    assert!(!side.is_capturing_in_driver().unwrap() && !stream.is_capturing_in_driver().unwrap());
    assert_eq!(graph.kernel_nodes().unwrap().len(), 2);
    let exec = graph.instantiate().unwrap();
    exec.launch(&stream).unwrap();
    exec.launch(&stream).unwrap();
    all(&a.to_host_vec(&stream).unwrap(), 6);
    all(&b.to_host_vec(&stream).unwrap(), 4);
}

#[test]
fn a_replayable_host_function_becomes_a_host_node_of_a_capture() {
    let _order = beside_others();
    let (_ctx, stream, f) = setup();
    let p = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let graph = stream
        .capture(|s| {
            affine(&f, s, &p, 1, 1)?;
            s.launch_host_fn_replayable(move || {
                h.fetch_add(1, Ordering::SeqCst);
            })?;
            affine(&f, s, &p, 1, 1)
        })
        .unwrap();
    // Recorded, not run: neither the kernels nor the function.
    stream.synchronize().unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    all(&p.to_host_vec(&stream).unwrap(), 0);
    let exec = graph.instantiate().unwrap();
    drop(graph); // the exec keeps the function
    for _ in 0..3 {
        exec.launch(&stream).unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    all(&p.to_host_vec(&stream).unwrap(), 6);
    // Outside a capture it runs once, like launch_host_fn.
    let h = hits.clone();
    stream.launch_host_fn_replayable(move || {
        h.fetch_add(10, Ordering::SeqCst);
    }).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 13);
    // The one-shot kind still breaks a capture, naming the replayable one's alternative.
    let err = stream.capture(|s| s.launch_host_fn(|| ())).unwrap_err();
    assert!(err.to_string().contains("launch_host_fn"), "{err}");
}

/// Regression: a capture that recorded nothing (a one-rank in-place
/// all-reduce, a cuda-async value) failed to instantiate on an H200, the
/// driver refusing cuGraphGetNodes an array of room for no node.
#[test]
fn an_empty_capture_instantiates_and_replays() {
    let _order = beside_others();
    let (_ctx, stream, _f) = setup();
    let graph = stream.capture(|_| Ok::<(), DriverError>(())).unwrap();
    assert!(graph.kernel_nodes().unwrap().is_empty());
    let exec = graph.instantiate().unwrap();
    exec.launch(&stream).unwrap();
    exec.launch(&stream).unwrap();
    stream.synchronize().unwrap();
}
