//! Conditional graph nodes through the emulated driver's own table: what
//! `cuGraphConditionalHandleCreate` and `cuGraphAddNode` accept and refuse
//! (the driver's rules the safe API relies on), and that a body holding a
//! node the driver forbids there fails the instantiation.

use std::ptr;

use cuda_driver_sys::{
    CUgraph, CUgraphExec, CUgraphNode, CUgraphNodeParams, DriverApi, CUDA_HOST_NODE_PARAMS, CU_GRAPH_COND_TYPE_IF,
    CU_GRAPH_COND_TYPE_SWITCH, CU_GRAPH_COND_TYPE_WHILE, CU_GRAPH_NODE_TYPE_CONDITIONAL,
};
use cuda_emulator::Mode;

const SUCCESS: i32 = 0;
const INVALID_VALUE: i32 = 1;
const NOT_SUPPORTED: i32 = 801;

fn graph(api: &DriverApi) -> CUgraph {
    let mut g = ptr::null_mut();
    // SAFETY: out-pointer to a local; flags 0.
    assert_eq!(unsafe { (api.cuGraphCreate)(&mut g, 0) }, SUCCESS);
    g
}

fn condition(api: &DriverApi, g: CUgraph, flags: u32) -> Result<u64, i32> {
    let mut h = 0;
    // SAFETY: a live graph; out-pointer to a local.
    match unsafe { (api.cuGraphConditionalHandleCreate)(&mut h, g, ptr::null_mut(), 1, flags) } {
        SUCCESS => Ok(h),
        code => Err(code),
    }
}

/// Adds a conditional node; its body, or the driver's code.
fn conditional(api: &DriverApi, g: CUgraph, handle: u64, kind: u32, size: u32) -> Result<CUgraph, i32> {
    let mut params = CUgraphNodeParams::conditional(handle, kind, size, ptr::null_mut());
    let mut node: CUgraphNode = ptr::null_mut();
    // SAFETY: a live graph, no dependencies; the driver sets ph_graph_out.
    match unsafe { (api.cuGraphAddNode)(&mut node, g, ptr::null(), 0, &mut params) } {
        SUCCESS => {
            let mut kind = -1;
            // SAFETY: the node just made.
            assert_eq!(unsafe { (api.cuGraphNodeGetType)(node, &mut kind) }, SUCCESS);
            assert_eq!(kind, CU_GRAPH_NODE_TYPE_CONDITIONAL);
            assert!(!params.conditional.ph_graph_out.is_null(), "the driver hands out the body array");
            // SAFETY: the driver's array of `size` (1) bodies, alive with the node.
            Ok(unsafe { *params.conditional.ph_graph_out })
        }
        code => Err(code),
    }
}

unsafe extern "C" fn nothing(_: *mut std::ffi::c_void) {}

#[test]
fn conditional_nodes_follow_the_drivers_rules() {
    let api = cuda_emulator::driver_api(Mode::HostCode);
    let (a, b) = (graph(&api), graph(&api));
    assert_eq!(condition(&api, a, 2), Err(INVALID_VALUE), "flags other than ASSIGN_DEFAULT");
    let h = condition(&api, a, 1).unwrap();
    assert_ne!(h, 0);
    assert_eq!(conditional(&api, b, h, CU_GRAPH_COND_TYPE_IF, 1), Err(INVALID_VALUE), "a handle of another graph");
    assert_eq!(conditional(&api, a, h, 7, 1), Err(NOT_SUPPORTED), "no such kind");
    // The driver's sizes: IF 1 or 2 (an ELSE body), WHILE 1, SWITCH 1 or more.
    assert!(conditional(&api, a, h, CU_GRAPH_COND_TYPE_IF, 2).is_ok(), "an IF with an ELSE body");
    assert!(conditional(&api, a, h, CU_GRAPH_COND_TYPE_SWITCH, 5).is_ok(), "a SWITCH of five cases");
    assert_eq!(conditional(&api, a, h, CU_GRAPH_COND_TYPE_IF, 3), Err(INVALID_VALUE), "an IF of three bodies");
    assert_eq!(conditional(&api, a, h, CU_GRAPH_COND_TYPE_WHILE, 2), Err(INVALID_VALUE), "a WHILE of two bodies");
    assert_eq!(conditional(&api, a, h, CU_GRAPH_COND_TYPE_SWITCH, 0), Err(INVALID_VALUE), "a SWITCH of no case");
    assert_eq!(conditional(&api, a, 0, CU_GRAPH_COND_TYPE_IF, 1), Err(INVALID_VALUE), "no handle");

    // A body with a host node cannot be instantiated.
    let body = conditional(&api, a, h, CU_GRAPH_COND_TYPE_WHILE, 1).unwrap();
    let mut exec: CUgraphExec = ptr::null_mut();
    // SAFETY: a live graph; out-pointer to a local.
    assert_eq!(unsafe { (api.cuGraphInstantiateWithFlags)(&mut exec, a, 0) }, SUCCESS, "an empty body is fine");
    // SAFETY: made above, destroyed once.
    assert_eq!(unsafe { (api.cuGraphExecDestroy)(exec) }, SUCCESS);
    let host = CUDA_HOST_NODE_PARAMS { func: nothing, user_data: ptr::null_mut() };
    let mut node = ptr::null_mut();
    // SAFETY: the body is a live graph the node owns.
    assert_eq!(unsafe { (api.cuGraphAddHostNode)(&mut node, body, ptr::null(), 0, &host) }, SUCCESS);
    // SAFETY: as above.
    assert_eq!(unsafe { (api.cuGraphInstantiateWithFlags)(&mut exec, a, 0) }, INVALID_VALUE);
    for g in [a, b] {
        // SAFETY: made above, destroyed once (the body goes with its node).
        assert_eq!(unsafe { (api.cuGraphDestroy)(g) }, SUCCESS);
    }
}

/// A condition that no conditional node reads, made for the graph or for a
/// body of it, fails the instantiation (an H200 answers
/// CUDA_ERROR_INVALID_VALUE; the driver's reason is
/// CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED).
#[test]
fn an_unused_condition_fails_the_instantiation() {
    let api = cuda_emulator::driver_api(Mode::HostCode);
    let g = graph(&api);
    let instantiate = |g: CUgraph| {
        let mut exec: CUgraphExec = ptr::null_mut();
        // SAFETY: a live graph; out-pointer to a local.
        let code = unsafe { (api.cuGraphInstantiateWithFlags)(&mut exec, g, 0) };
        if code == SUCCESS {
            // SAFETY: made above, destroyed once.
            assert_eq!(unsafe { (api.cuGraphExecDestroy)(exec) }, SUCCESS);
        }
        code
    };
    let h = condition(&api, g, 0).unwrap();
    assert_eq!(instantiate(g), INVALID_VALUE, "a condition no node reads");
    let body = conditional(&api, g, h, CU_GRAPH_COND_TYPE_IF, 1).unwrap();
    assert_eq!(instantiate(g), SUCCESS, "read by an IF node");
    let inner = condition(&api, body, 0).unwrap();
    assert_eq!(instantiate(g), INVALID_VALUE, "a condition of the body no node reads");
    conditional(&api, body, inner, CU_GRAPH_COND_TYPE_WHILE, 1).unwrap();
    assert_eq!(instantiate(g), SUCCESS, "read by a WHILE node in the body");
    // SAFETY: made above, destroyed once (the bodies go with their nodes).
    assert_eq!(unsafe { (api.cuGraphDestroy)(g) }, SUCCESS);
}
