//! Nothing of a graph outlives its owner, on any path: the CPU emulator
//! counts the graphs and instantiated graphs it holds, and every way a graph
//! is made, fails or is dropped brings the count back. (One test in this
//! binary, so that no other test's graphs are counted; emulator only.)

use cuda_core::{launch_kernel, launch_kernel_cluster, CudaFunction, CudaStream, DeviceBuffer, DriverError, Graph, GraphError, LaunchConfig};

const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry inc(.param .u64 inc_p)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [inc_p];
    cvta.to.global.u64 %rd2, %rd1;
    ld.global.u32 %r1, [%rd2];
    add.s32 %r2, %r1, 1;
    st.global.u32 [%rd2], %r2;
    ret;
}
"#;

fn inc(f: &CudaFunction, s: &CudaStream, p: &DeviceBuffer<u32>) -> Result<(), DriverError> {
    let mut ptr = p.device_ptr();
    let mut params = [(&mut ptr as *mut u64).cast()];
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: one u64 parameter; `p` outlives every graph of this test.
    unsafe { launch_kernel(f, one, s, &mut params) }
}

#[test]
fn graphs_and_execs_are_destroyed_on_every_path() {
    if std::env::var("OXIDE_EMULATE").is_ok_and(|v| v == "0") {
        return;
    }
    // SAFETY (edition 2021: safe): the only test of its binary, before
    // cuda-core reads the variable.
    std::env::set_var("OXIDE_EMULATE", "ptx");
    let ctx = cuda_core::CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let f = ctx.load_module_ptx(PTX).unwrap().function("inc").unwrap();
    let p = DeviceBuffer::<u32>::zeroed(&stream, 1).unwrap();
    let live = cuda_emulator::live_graph_objects;
    assert_eq!(live(), (0, 0));

    // Made, instantiated, launched, dropped.
    let graph = stream.capture(|s| inc(&f, s, &p)).unwrap();
    let mut exec = graph.instantiate().unwrap();
    assert_eq!(live(), (1, 1));
    exec.launch(&stream).unwrap();
    // An update from a graph of another shape fails and keeps nothing.
    let two = stream.capture(|s| inc(&f, s, &p).and_then(|()| inc(&f, s, &p))).unwrap();
    assert!(matches!(exec.update(&two), Err(GraphError::UpdateRefused { .. })));
    drop(two);
    // New parameters through a scratch capture, which is destroyed.
    let node = graph.kernel_nodes().unwrap()[0];
    exec.set_kernel_params(node, |s| inc(&f, s, &p)).unwrap();
    assert_eq!(live(), (1, 1));
    drop(graph);
    assert_eq!(live(), (1, 1), "the exec keeps the graph whose nodes name its nodes");
    drop(exec);
    assert_eq!(live(), (0, 0));

    // Broken captures, a failing closure, a guard dropped without `end`.
    let capture = stream.begin_capture().unwrap();
    inc(&f, &stream, &p).unwrap();
    let _ = stream.synchronize();
    assert!(matches!(capture.end(), Err(GraphError::CaptureInvalidated { .. })));
    let e = stream.capture(|s| inc(&f, s, &p).and_then(|()| Err(DriverError::from_code(1, "test")))).unwrap_err();
    assert!(matches!(e, GraphError::Closure(_)), "{e}");
    let capture = stream.begin_capture().unwrap();
    inc(&f, &stream, &p).unwrap();
    drop(capture);
    assert_eq!(live(), (0, 0));

    // A buffer of the capturing stream dropped during the capture breaks it
    // and is freed when it ends (the pool's use goes back).
    let pool = ctx.memory_pool().unwrap();
    stream.synchronize().unwrap();
    let used = pool.used_bytes().unwrap();
    let doomed = DeviceBuffer::<u32>::zeroed(&stream, 1 << 16).unwrap();
    assert!(pool.used_bytes().unwrap() > used);
    let capture = stream.begin_capture().unwrap();
    drop(doomed);
    let e = capture.end().unwrap_err();
    assert!(e.to_string().contains("dropping a DeviceBuffer allocated on the capturing stream"), "{e}");
    stream.synchronize().unwrap();
    assert_eq!(pool.used_bytes().unwrap(), used, "the dropped buffer was freed after the capture");
    assert_eq!(live(), (0, 0));

    // Temporaries: a graph with allocation nodes and its exec go with their
    // owners, and a capture that ends with one alive is destroyed. Graph
    // memory is not the pool's.
    stream.synchronize().unwrap();
    let used = pool.used_bytes().unwrap();
    let graph = stream
        .capture(|s| {
            let scratch = s.alloc_temp_zeroed::<u32>(1 << 16)?;
            inc(&f, s, &scratch)
        })
        .unwrap();
    let exec = graph.instantiate().unwrap();
    assert_eq!(live(), (1, 1));
    exec.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(pool.used_bytes().unwrap(), used, "graph memory is not the pool's");
    drop((graph, exec));
    let capture = stream.begin_capture().unwrap();
    let kept = stream.alloc_temp_zeroed::<u32>(16).unwrap();
    assert!(matches!(capture.end(), Err(GraphError::TempNotFreed { buffers: 1 })));
    drop(kept);
    assert_eq!(live(), (0, 0));

    // Explicit graphs, kernel nodes that record too much or a cluster launch.
    let mut g = Graph::new(&ctx).unwrap();
    let a = g.add_kernel(&[], |s| inc(&f, s, &p)).unwrap();
    let e = g.add_kernel(&[a], |s| inc(&f, s, &p).and_then(|()| inc(&f, s, &p))).unwrap_err();
    assert!(matches!(e, GraphError::NotOneKernel { nodes: 2 }), "{e}");
    let cluster = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 }.with_cluster((1, 1, 1));
    let e = g
        .add_kernel(&[a], |s| {
            let mut ptr = p.device_ptr();
            // SAFETY: as in `inc`.
            unsafe { launch_kernel_cluster(&f, &cluster, s, &mut [(&mut ptr as *mut u64).cast()]) }
        })
        .unwrap_err();
    assert!(e.to_string().contains("a cluster or cooperative launch in Graph::add_kernel"), "{e}");
    let mut child = Graph::new(&ctx).unwrap();
    child.add_empty(&[]).unwrap();
    g.add_child(&[a], &child).unwrap();
    assert_eq!(live(), (2, 0));
    let exec = g.instantiate().unwrap();
    drop((g, child));
    assert_eq!(live(), (1, 1));
    exec.launch(&stream).unwrap();
    drop(exec);
    assert_eq!(live(), (0, 0));
    // inc ran twice: one launch of the captured graph, one of the explicit.
    assert_eq!(p.to_host_vec(&stream).unwrap(), [2]);
}
