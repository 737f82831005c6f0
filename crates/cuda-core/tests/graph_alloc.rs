//! Allocation nodes through cuda-core: on the GPU where there is one, else
//! on the CPU emulator (device code). A temporary made on a capturing
//! stream (`CudaStream::alloc_temp_zeroed`) becomes an allocation node and
//! its drop a free node; every replay allocates, uses and frees it, with
//! the results checked against the CPU; and each way of using it outside
//! its capture is refused with an error naming it.

mod common {
    pub mod affine;
}

use cuda_core::{DeviceBuffer, Graph, GraphError};

use common::affine::{affine, setup};

const N: usize = 1000;

fn cpu(input: &[u32], mul: u32, add: u32) -> Vec<u32> {
    input.iter().map(|&x| x.wrapping_mul(mul).wrapping_add(add)).collect()
}

#[test]
fn a_captured_temporary_is_allocated_used_and_freed_by_every_replay() {
    let (_ctx, stream, f) = setup();
    let mut data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let mut counts = DeviceBuffer::<u32>::zeroed(&stream, 4).unwrap();
    let graph = stream
        .capture(|s| {
            // Work on a copy in graph-owned memory, then write it back.
            let mut scratch = s.alloc_temp_zeroed::<u32>(N)?;
            assert!(scratch.is_graph_owned());
            scratch.copy_from_device(s, &data)?;
            affine(&f, s, &scratch, 3, 1)?;
            data.copy_from_device(s, &scratch)?;
            drop(scratch); // its free node
            // A zeroed temporary is zero at every launch: 0 * 1 + 7.
            let counter = s.alloc_temp_zeroed::<u32>(4)?;
            affine(&f, s, &counter, 1, 7)?;
            counts.copy_from_device(s, &counter)
        })
        .unwrap();
    assert!(graph.kernel_nodes().unwrap().len() == 2);
    let exec = graph.instantiate().unwrap();
    for replay in 0..4u32 {
        // New input before each replay.
        let input: Vec<u32> = (0..N as u32).map(|i| i * 7 + replay).collect();
        data.copy_from_host(&stream, &input).unwrap();
        exec.launch(&stream).unwrap();
        assert_eq!(data.to_host_vec(&stream).unwrap(), cpu(&input, 3, 1), "replay {replay}");
        assert_eq!(counts.to_host_vec(&stream).unwrap(), vec![7; 4], "replay {replay}");
    }
}

#[test]
fn a_temporary_outside_a_capture_is_an_ordinary_buffer() {
    let (_ctx, stream, f) = setup();
    let input: Vec<u32> = (0..N as u32).collect();
    let mut scratch = stream.alloc_temp_zeroed::<u32>(N).unwrap();
    assert!(!scratch.is_graph_owned());
    scratch.copy_from_host(&stream, &input).unwrap();
    affine(&f, &stream, &scratch, 2, 3).unwrap();
    assert_eq!(scratch.to_host_vec(&stream).unwrap(), cpu(&input, 2, 3));
}

#[test]
fn a_temporary_alive_when_the_capture_ends_fails_it_and_is_refused_afterwards() {
    let (_ctx, stream, _f) = setup();
    let capture = stream.begin_capture().unwrap();
    // The stream outlives the capture here: the compiler cannot see the end.
    let mut kept = stream.alloc_temp_zeroed::<u32>(N).unwrap();
    let err = capture.end().unwrap_err();
    assert!(matches!(err, GraphError::TempNotFreed { buffers: 1 }), "{err}");
    assert!(err.to_string().contains("drop them inside the capture"), "{err}");
    let err = kept.memset(&stream, 1).unwrap_err();
    assert!(err.to_string().contains("used outside that capture"), "{err}");
    let err = kept.to_host_vec(&stream).unwrap_err();
    assert!(err.to_string().contains("used outside that capture"), "{err}");
    drop(kept); // frees nothing: the graph was destroyed
    // The stream works on.
    let data = DeviceBuffer::<u32>::zeroed(&stream, 4).unwrap();
    assert_eq!(data.to_host_vec(&stream).unwrap(), vec![0; 4]);
}

#[test]
fn a_forgotten_temporary_fails_the_capture() {
    let (_ctx, stream, _f) = setup();
    let err = stream
        .capture(|s| {
            std::mem::forget(s.alloc_temp_zeroed::<u32>(16)?);
            Ok::<_, cuda_core::DriverError>(())
        })
        .unwrap_err();
    assert!(matches!(err, GraphError::TempNotFreed { buffers: 1 }), "{err}");
}

#[test]
fn a_temporary_swapped_out_of_its_scope_is_refused() {
    let (_ctx, stream, _f) = setup();
    let other = stream.context().new_stream().unwrap();
    // A buffer of another stream, which may be dropped during the capture.
    let mut escaped = DeviceBuffer::<u32>::zeroed(&other, 16).unwrap();
    other.synchronize().unwrap();
    let err = stream
        .capture(|s| {
            let mut scratch = s.alloc_temp_zeroed::<u32>(16)?;
            std::mem::swap(&mut *scratch, &mut escaped);
            Ok::<_, cuda_core::DriverError>(())
        })
        .unwrap_err();
    // The temporary's drop freed the swapped-in buffer on its own stream:
    // the emulator lets the capture run on to its end (TempNotFreed); an
    // H200's driver invalidates the capture at that free. Either way the
    // graph is destroyed and nothing runs.
    assert!(
        matches!(err, GraphError::TempNotFreed { buffers: 1 } | GraphError::CaptureInvalidated { .. }),
        "{err}"
    );
    let err = escaped.memset(&other, 0).unwrap_err();
    assert!(err.to_string().contains("used outside that capture"), "{err}");
}

#[test]
fn a_temporary_used_on_another_stream_during_the_capture_is_refused() {
    let (_ctx, stream, f) = setup();
    let other = stream.context().new_stream().unwrap();
    let mut elsewhere = DeviceBuffer::<u32>::zeroed(&other, N).unwrap();
    let mut data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let graph = stream
        .capture(|s| {
            let scratch = s.alloc_temp_zeroed::<u32>(N)?;
            let err = elsewhere.copy_from_device(&other, &scratch).unwrap_err();
            assert!(err.to_string().contains("used outside that capture"), "{err}");
            affine(&f, s, &scratch, 1, 5)?;
            data.copy_from_device(s, &scratch)
        })
        .unwrap();
    graph.instantiate().unwrap().launch(&stream).unwrap();
    assert_eq!(data.to_host_vec(&stream).unwrap(), vec![5; N]);
}

#[test]
fn a_temporary_in_a_node_of_another_graph_is_refused() {
    let (ctx, stream, _f) = setup();
    let mut g = Graph::new(&ctx).unwrap();
    let _ = stream
        .capture(|s| {
            let mut scratch = s.alloc_temp_zeroed::<u32>(16)?;
            let err = g.add_memset(&[], &mut scratch, 0).unwrap_err();
            assert!(matches!(err, GraphError::TempInGraph), "{err}");
            Ok::<_, cuda_core::DriverError>(())
        })
        .unwrap();
}

#[test]
fn a_graph_with_allocation_nodes_is_no_child_and_has_one_exec_at_a_time() {
    let (ctx, stream, f) = setup();
    let mut data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let graph = stream
        .capture(|s| {
            let scratch = s.alloc_temp_zeroed::<u32>(N)?;
            affine(&f, s, &scratch, 1, 2)?;
            data.copy_from_device(s, &scratch)
        })
        .unwrap();
    let mut parent = Graph::new(&ctx).unwrap();
    let err = parent.add_child(&[], &graph).unwrap_err();
    assert!(matches!(err, GraphError::AllocNodes { .. }), "{err}");
    let first = graph.instantiate().unwrap();
    let err = graph.instantiate().unwrap_err();
    assert!(matches!(err, GraphError::AllocNodes { .. }), "{err}");
    assert!(err.to_string().contains("drop it first"), "{err}");
    drop(first);
    let second = graph.instantiate().unwrap();
    second.launch(&stream).unwrap();
    second.launch(&stream).unwrap();
    assert_eq!(data.to_host_vec(&stream).unwrap(), vec![2; N]);
}

#[test]
fn an_ordinary_allocation_in_a_capture_stays_refused() {
    let (_ctx, stream, _f) = setup();
    let err = stream
        .capture(|s| {
            let _b = DeviceBuffer::<u32>::zeroed(s, 16)?;
            Ok::<_, cuda_core::DriverError>(())
        })
        .unwrap_err();
    assert!(matches!(err, GraphError::Closure(_) | GraphError::CaptureInvalidated { .. }), "{err}");
}

#[test]
fn an_explicit_allocation_node_is_used_by_its_nodes_and_freed_after_them() {
    let (ctx, stream, f) = setup();
    let mut input = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let start = g.add_empty(&[]).unwrap();
    let free = g
        .add_temp::<u32, GraphError>(&[start], N, |t| {
            assert_eq!(t.len(), N);
            let load = t.add_copy_from(&[], &input)?;
            let k = t.add_kernel(&[load], |s, scratch| affine(&f, s, scratch, 3, 1))?;
            t.add_copy_to(&[k], &mut out)?;
            Ok(())
        })
        .unwrap();
    g.add_empty(&[free]).unwrap();
    let exec = g.instantiate().unwrap();
    for replay in 0..3u32 {
        let host: Vec<u32> = (0..N as u32).map(|i| i * 5 + replay).collect();
        input.copy_from_host(&stream, &host).unwrap();
        exec.launch(&stream).unwrap();
        assert_eq!(out.to_host_vec(&stream).unwrap(), cpu(&host, 3, 1), "replay {replay}");
    }
    // The driver's rules for a graph with allocation nodes.
    let err = g.instantiate().unwrap_err();
    assert!(matches!(err, GraphError::AllocNodes { .. }), "{err}");
    let mut parent = Graph::new(&ctx).unwrap();
    assert!(matches!(parent.add_child(&[], &g), Err(GraphError::AllocNodes { .. })));
}

#[test]
fn explicit_allocation_node_misuse_is_refused() {
    let (ctx, stream, f) = setup();
    let mut g = Graph::new(&ctx).unwrap();
    // Swapped out of its kernel node's closure, the memory is refused.
    let mut escaped = DeviceBuffer::<u32>::zeroed(&stream, 16).unwrap();
    g.add_temp::<u32, GraphError>(&[], 16, |t| {
        t.add_kernel(&[], |s, scratch| {
            std::mem::swap(scratch, &mut escaped);
            affine(&f, s, scratch, 1, 1)
        })?;
        Ok(())
    })
    .unwrap();
    let err = escaped.memset(&stream, 0).unwrap_err();
    assert!(err.to_string().contains("used outside that capture"), "{err}");
    drop(escaped); // frees nothing: the graph's free node does
    // A copy of another length, and a failed fill, which leaves the graph
    // unlaunchable.
    let other = DeviceBuffer::<u32>::zeroed(&stream, 4).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let err = g.add_temp::<u32, GraphError>(&[], 16, |t| t.add_copy_from(&[], &other).map(drop)).unwrap_err();
    assert!(err.to_string().contains("the lengths must be equal"), "{err}");
    let err = g.instantiate().unwrap_err();
    assert!(matches!(err, GraphError::AllocNodes { .. }), "{err}");
    assert!(err.to_string().contains("has no free node"), "{err}");
    // An allocation node of no bytes.
    let mut g = Graph::new(&ctx).unwrap();
    let err = g.add_temp::<u32, GraphError>(&[], 0, |_| Ok(())).unwrap_err();
    assert!(err.to_string().contains("must be 1 to usize::MAX bytes"), "{err}");
}

#[test]
fn a_whole_graph_update_with_allocation_nodes_is_refused() {
    let (_ctx, stream, f) = setup();
    let mut data = DeviceBuffer::<u32>::zeroed(&stream, N).unwrap();
    let mut capture = |add: u32| {
        stream
            .capture(|s| {
                let scratch = s.alloc_temp_zeroed::<u32>(N)?;
                affine(&f, s, &scratch, 1, add)?;
                data.copy_from_device(s, &scratch)
            })
            .unwrap()
    };
    let (first, second) = (capture(1), capture(2));
    let mut exec = first.instantiate().unwrap();
    // The second graph's kernel would write its own allocation's address,
    // which the first graph's allocation node does not map.
    let err = exec.update(&second).unwrap_err();
    assert!(matches!(err, GraphError::AllocNodes { .. }), "{err}");
    assert!(err.to_string().contains("instantiate the new graph instead"), "{err}");
    let plain = stream.capture(|s| affine(&f, s, &data, 1, 0)).unwrap();
    let mut plain_exec = plain.instantiate().unwrap();
    assert!(matches!(plain_exec.update(&second), Err(GraphError::AllocNodes { .. })));
    exec.launch(&stream).unwrap();
    assert_eq!(data.to_host_vec(&stream).unwrap(), vec![1; N]);
}
