//! Graph memory nodes through the emulated driver's own table: what
//! `cuMemAllocAsync` and `cuMemFreeAsync` record in a capture (an allocation
//! node whose address every launch uses, a free node), that each launch
//! starts the memory over (uninitialised), and the driver's rules the safe
//! API relies on (a capture frees only its own allocations; no child graph
//! with memory nodes).

use std::ptr;

use cuda_driver_sys::{
    CUdeviceptr, CUgraph, CUgraphExec, CUgraphNode, CUstream, DriverApi, CU_GRAPH_NODE_TYPE_MEM_ALLOC,
    CU_GRAPH_NODE_TYPE_MEM_FREE, CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMSET, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
};
use cuda_emulator::Mode;

const SUCCESS: i32 = 0;
const INVALID_VALUE: i32 = 1;
const CAPTURE_INVALIDATED: i32 = 901;

fn driver() -> (DriverApi, CUstream) {
    let api = cuda_emulator::driver_api(Mode::HostCode);
    let (mut ctx, mut s) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: out-pointers to locals; device 0 exists; flags 0.
    unsafe {
        assert_eq!((api.cuInit)(0), SUCCESS);
        assert_eq!((api.cuDevicePrimaryCtxRetain)(&mut ctx, 0), SUCCESS);
        assert_eq!((api.cuCtxSetCurrent)(ctx), SUCCESS);
        assert_eq!((api.cuStreamCreate)(&mut s, 0), SUCCESS);
    }
    (api, s)
}

fn node_kinds(api: &DriverApi, g: CUgraph) -> Vec<i32> {
    let mut n = 0;
    // SAFETY: a live graph; a null array asks for the count.
    assert_eq!(unsafe { (api.cuGraphGetNodes)(g, ptr::null_mut(), &mut n) }, SUCCESS);
    let mut nodes: Vec<CUgraphNode> = vec![ptr::null_mut(); n];
    // SAFETY: room for `n` handles.
    assert_eq!(unsafe { (api.cuGraphGetNodes)(g, nodes.as_mut_ptr(), &mut n) }, SUCCESS);
    nodes
        .into_iter()
        .map(|node| {
            let mut kind = -1;
            // SAFETY: a node of the graph; out-pointer to a local.
            assert_eq!(unsafe { (api.cuGraphNodeGetType)(node, &mut kind) }, SUCCESS);
            kind
        })
        .collect()
}

/// Captures on `s`: an allocation of 64 bytes, a memset of its first 32
/// to 7, a copy of all 64 into `out`, and the free.
fn capture_scratch(api: &DriverApi, s: CUstream, out: CUdeviceptr) -> CUgraph {
    let mut p: CUdeviceptr = 0;
    let mut g: CUgraph = ptr::null_mut();
    // SAFETY: a live stream of the current context; out-pointers to locals;
    // the allocation is used only between its nodes, `out` is 64 bytes.
    unsafe {
        assert_eq!((api.cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), SUCCESS);
        assert_eq!((api.cuMemAllocAsync)(&mut p, 64, s), SUCCESS);
        assert_ne!(p, 0, "the address is handed out at capture");
        assert_eq!((api.cuMemsetD8Async)(p, 7, 32, s), SUCCESS);
        assert_eq!((api.cuMemcpyDtoDAsync_v2)(out, p, 64, s), SUCCESS);
        assert_eq!((api.cuMemFreeAsync)(p, s), SUCCESS);
        assert_eq!((api.cuStreamEndCapture)(s, &mut g), SUCCESS);
    }
    g
}

#[test]
fn a_captured_allocation_is_a_node_whose_memory_each_launch_starts_over() {
    let (api, s) = driver();
    let mut out: CUdeviceptr = 0;
    // SAFETY: out-pointer to a local.
    assert_eq!(unsafe { (api.cuMemAlloc_v2)(&mut out, 64) }, SUCCESS);
    let g = capture_scratch(&api, s, out);
    assert_eq!(
        node_kinds(&api, g),
        [CU_GRAPH_NODE_TYPE_MEM_ALLOC, CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEM_FREE]
    );
    let mut exec: CUgraphExec = ptr::null_mut();
    // SAFETY: a live graph; out-pointer to a local.
    assert_eq!(unsafe { (api.cuGraphInstantiateWithFlags)(&mut exec, g, 0) }, SUCCESS);
    for _ in 0..2 {
        let mut host = [0u8; 64];
        // SAFETY: a live exec and stream; `host` and `out` are 64 bytes.
        unsafe {
            assert_eq!((api.cuMemsetD8Async)(out, 0, 64, s), SUCCESS);
            assert_eq!((api.cuGraphLaunch)(exec, s), SUCCESS);
            assert_eq!((api.cuMemcpyDtoHAsync_v2)(host.as_mut_ptr().cast(), out, 64, s), SUCCESS);
            assert_eq!((api.cuStreamSynchronize)(s), SUCCESS);
        }
        // What the memset wrote, and the uninitialised pattern the
        // allocation node leaves in the rest at every launch.
        assert!(host[..32].iter().all(|&b| b == 7), "{host:?}");
        assert!(host[32..].iter().all(|&b| b == 0xA5), "{host:?}");
    }
    // SAFETY: made above, destroyed once.
    unsafe {
        assert_eq!((api.cuGraphExecDestroy)(exec), SUCCESS);
        assert_eq!((api.cuGraphDestroy)(g), SUCCESS);
        assert_eq!((api.cuMemFree_v2)(out), SUCCESS);
    }
}

#[test]
fn a_capture_frees_only_its_own_allocations_and_a_child_has_no_memory_nodes() {
    let (api, s) = driver();
    let mut out: CUdeviceptr = 0;
    let mut g: CUgraph = ptr::null_mut();
    // SAFETY: as above; `out` is memory of no capture.
    unsafe {
        assert_eq!((api.cuMemAlloc_v2)(&mut out, 64), SUCCESS);
        assert_eq!((api.cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), SUCCESS);
        assert_ne!((api.cuMemFreeAsync)(out, s), SUCCESS, "a free of memory the capture did not allocate");
        assert_eq!((api.cuStreamEndCapture)(s, &mut g), CAPTURE_INVALIDATED);
    }
    let child = capture_scratch(&api, s, out);
    let (mut parent, mut node): (CUgraph, CUgraphNode) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: live graphs; out-pointers to locals.
    unsafe {
        assert_eq!((api.cuGraphCreate)(&mut parent, 0), SUCCESS);
        assert_eq!((api.cuGraphAddChildGraphNode)(&mut node, parent, ptr::null(), 0, child), INVALID_VALUE);
        assert_eq!((api.cuGraphDestroy)(parent), SUCCESS);
        assert_eq!((api.cuGraphDestroy)(child), SUCCESS);
        assert_eq!((api.cuMemFree_v2)(out), SUCCESS);
    }
}

#[test]
fn explicit_memory_nodes_free_their_own_allocation_once() {
    let (api, _s) = driver();
    let mut g: CUgraph = ptr::null_mut();
    let (mut alloc, mut free): (CUgraphNode, CUgraphNode) = (ptr::null_mut(), ptr::null_mut());
    let mut params = cuda_driver_sys::CUDA_MEM_ALLOC_NODE_PARAMS::on_device(0, 256);
    // SAFETY: a live graph; out-pointers to locals; `params` asks for 256 bytes.
    unsafe {
        assert_eq!((api.cuGraphCreate)(&mut g, 0), SUCCESS);
        assert_eq!((api.cuGraphAddMemAllocNode)(&mut alloc, g, ptr::null(), 0, &mut params), SUCCESS);
        assert_ne!(params.dptr, 0, "the address is handed out with the node");
        assert_eq!((api.cuGraphAddMemFreeNode)(&mut free, g, &alloc, 1, params.dptr + 8), INVALID_VALUE, "not an allocation");
        assert_eq!((api.cuGraphAddMemFreeNode)(&mut free, g, &alloc, 1, params.dptr), SUCCESS);
        assert_eq!((api.cuGraphAddMemFreeNode)(&mut free, g, &alloc, 1, params.dptr), INVALID_VALUE, "freed twice");
    }
    assert_eq!(node_kinds(&api, g), [CU_GRAPH_NODE_TYPE_MEM_ALLOC, CU_GRAPH_NODE_TYPE_MEM_FREE]);
    let mut empty = cuda_driver_sys::CUDA_MEM_ALLOC_NODE_PARAMS::on_device(0, 0);
    // SAFETY: as above.
    unsafe {
        assert_eq!((api.cuGraphAddMemAllocNode)(&mut alloc, g, ptr::null(), 0, &mut empty), INVALID_VALUE, "no bytes");
        assert_eq!((api.cuGraphDestroy)(g), SUCCESS);
    }
}
