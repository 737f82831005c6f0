//! Conditional graph nodes (IF, IF/ELSE, WHILE, SWITCH) through cuda-core:
//! on the GPU where there is one, else on the CPU emulator (device code,
//! where ptx-vm answers `cudaGraphSetConditional`). A WHILE node repeats its
//! body until a kernel clears the condition, an IF node runs its body only
//! when the condition is nonzero (its ELSE body when it is zero), a SWITCH
//! node the body of the condition's value, defaults are assigned at each
//! launch, and misuse is refused with an error saying what to do.

mod common {
    pub mod affine;
}

use std::sync::Arc;

use cuda_core::{launch_kernel, CudaContext, CudaFunction, CudaStream, DeviceBuffer, DriverError, Graph, GraphError, LaunchConfig};

use common::affine::{affine, setup};

/// `countdown(p, handle)`: one thread decrements `p[0]`, counts the run in
/// `p[1]`, and sets the condition to whether `p[0]` is still nonzero.
const COUNTDOWN_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.extern .func cudaGraphSetConditional
(
    .param .b64 cudaGraphSetConditional_param_0,
    .param .b32 cudaGraphSetConditional_param_1
)
;

.visible .entry countdown(
    .param .u64 countdown_p,
    .param .u64 countdown_h
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<4>;

    ld.param.u64 %rd1, [countdown_p];
    ld.param.u64 %rd2, [countdown_h];
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    ld.global.u32 %r2, [%rd3];
    add.s32 %r2, %r2, -1;
    st.global.u32 [%rd3], %r2;
    ld.global.u32 %r3, [%rd3+4];
    add.s32 %r3, %r3, 1;
    st.global.u32 [%rd3+4], %r3;
    setp.ne.u32 %p2, %r2, 0;
    selp.u32 %r4, 1, 0, %p2;
    {
    .param .b64 param0;
    st.param.b64 [param0+0], %rd2;
    .param .b32 param1;
    st.param.b32 [param1+0], %r4;
    call.uni
    cudaGraphSetConditional,
    (
    param0,
    param1
    );
    }
DONE:
    ret;
}
"#;

fn countdown_kernel(ctx: &Arc<CudaContext>) -> CudaFunction {
    ctx.load_module_ptx(COUNTDOWN_PTX).unwrap().function("countdown").unwrap()
}

/// Queues `countdown(p, handle)` with one thread.
fn countdown(f: &CudaFunction, stream: &CudaStream, p: &DeviceBuffer<u32>, handle: u64) -> Result<(), DriverError> {
    let (mut ptr, mut h) = (p.device_ptr(), handle);
    let mut params = [(&mut ptr as *mut u64).cast(), (&mut h as *mut u64).cast()];
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: the kernel's two parameters; `p` outlives the graphs of these
    // tests, and `handle` is a condition of the graph the launch is a node of.
    unsafe { launch_kernel(f, one, stream, &mut params) }
}

#[test]
fn a_while_node_repeats_its_body_until_a_kernel_clears_the_condition() {
    let (ctx, stream, _) = setup();
    let f = countdown_kernel(&ctx);
    let start = DeviceBuffer::from_host(&stream, &[5u32, 0]).unwrap();
    let mut state = DeviceBuffer::<u32>::zeroed(&stream, 2).unwrap();

    let mut g = Graph::new(&ctx).unwrap();
    let keep_going = g.condition(Some(1)).unwrap();
    let load = g.add_copy(&[], &mut state, &start).unwrap();
    let (_, mut body) = g.add_conditional_while(&[load], &keep_going).unwrap();
    body.add_kernel(&[], |s| countdown(&f, s, &state, keep_going.handle().raw())).unwrap();
    drop(body);
    let exec = g.instantiate().unwrap();
    for _ in 0..3 {
        exec.launch(&stream).unwrap();
        // The default (1) is assigned at each launch: the loop runs again.
        assert_eq!(state.to_host_vec(&stream).unwrap(), [0, 5], "counted down from 5 in 5 runs");
    }
}

#[test]
fn an_if_node_runs_its_body_only_when_the_condition_is_nonzero() {
    let (ctx, stream, affine_fn) = setup();
    let f = countdown_kernel(&ctx);
    let data = DeviceBuffer::<u32>::zeroed(&stream, 1000).unwrap();
    let start = DeviceBuffer::from_host(&stream, &[2u32, 0]).unwrap();
    let mut state = DeviceBuffer::<u32>::zeroed(&stream, 2).unwrap();

    let mut g = Graph::new(&ctx).unwrap();
    // A default is assigned at every launch: the body runs.
    let go = g.condition(Some(1)).unwrap();
    let load = g.add_copy(&[], &mut state, &start).unwrap();
    let (_, mut then) = g.add_conditional_if(&[load], &go).unwrap();
    then.add_kernel(&[], |s| affine(&affine_fn, s, &data, 1, 10)).unwrap();
    drop(then);
    let exec = g.instantiate().unwrap();
    exec.launch(&stream).unwrap();
    assert!(data.to_host_vec(&stream).unwrap().iter().all(|&x| x == 10), "the IF body ran (default 1)");

    // Without a default no launch assigns one and the driver documents no
    // starting value: the graph runs, its body once or not at all. (An H200
    // usually starts at 0, but a run of the GPU suite with eight programs
    // at a time saw the body run: a test may not count on either.)
    let spare = DeviceBuffer::<u32>::zeroed(&stream, 1000).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let unset = g.condition(None).unwrap();
    let (_, mut then) = g.add_conditional_if(&[], &unset).unwrap();
    then.add_kernel(&[], |s| affine(&affine_fn, s, &spare, 1, 1000)).unwrap();
    drop(then);
    g.instantiate().unwrap().launch(&stream).unwrap();
    let after = spare.to_host_vec(&stream).unwrap();
    assert!(after.iter().all(|&x| x == 0) || after.iter().all(|&x| x == 1000), "the body ran on part of the data");

    // A kernel before the IF node decides it: from [2, 0] the countdown
    // leaves 1 and sets the condition to 1 (taken), from [1, 0] it leaves 0
    // and sets 0 (not taken).
    let mut start = start;
    let mut g = Graph::new(&ctx).unwrap();
    let go = g.condition(Some(1)).unwrap();
    let load = g.add_copy(&[], &mut state, &start).unwrap();
    let set = g.add_kernel(&[load], |s| countdown(&f, s, &state, go.handle().raw())).unwrap();
    let (_, mut then) = g.add_conditional_if(&[set], &go).unwrap();
    then.add_kernel(&[], |s| affine(&affine_fn, s, &data, 1, 100)).unwrap();
    drop(then);
    let exec = g.instantiate().unwrap();
    exec.launch(&stream).unwrap();
    assert!(data.to_host_vec(&stream).unwrap().iter().all(|&x| x == 110), "taken: the kernel set 1");
    start.copy_from_host(&stream, &[1, 0]).unwrap();
    exec.launch(&stream).unwrap();
    assert!(data.to_host_vec(&stream).unwrap().iter().all(|&x| x == 110), "not taken: the kernel set 0");
    assert_eq!(state.to_host_vec(&stream).unwrap(), [0, 1]);
}

#[test]
fn a_condition_of_another_graph_is_refused_with_what_to_do() {
    let (ctx, _stream, _) = setup();
    let mut a = Graph::new(&ctx).unwrap();
    let mut b = Graph::new(&ctx).unwrap();
    let of_a = a.condition(Some(0)).unwrap();
    let e = b.add_conditional_if(&[], &of_a).unwrap_err();
    assert!(matches!(e, GraphError::ForeignCondition), "{e}");
    assert!(e.to_string().contains("make it with `condition` on the graph (or body) the node is added to"), "{e}");

    // A body's own nodes take the body's conditions, not its graph's.
    let (_, mut body) = a.add_conditional_while(&[], &of_a).unwrap();
    let e = body.add_conditional_if(&[], &of_a).unwrap_err();
    assert!(matches!(e, GraphError::ForeignCondition), "{e}");
    let inner = body.condition(Some(0)).unwrap();
    body.add_conditional_if(&[], &inner).unwrap();
    drop(body);
    a.instantiate().unwrap();
}

#[test]
fn a_body_refuses_host_and_event_nodes_through_child_graphs() {
    let (ctx, _stream, _) = setup();
    let mut g = Graph::new(&ctx).unwrap();
    let c = g.condition(Some(0)).unwrap();
    let mut child = Graph::new(&ctx).unwrap();
    child.add_host(&[], || {}).unwrap();
    let (node, mut body) = g.add_conditional_if(&[], &c).unwrap();
    let e = body.add_child(&[], &child).unwrap_err();
    assert!(matches!(e, GraphError::NotInBody { what: "a child graph with host nodes" }), "{e}");
    assert!(e.to_string().contains("put it outside the conditional node"), "{e}");
    // Nodes of the body and of its graph do not mix.
    let e = body.add_empty(&[node]).unwrap_err();
    assert!(matches!(e, GraphError::ForeignNode), "{e}");
}

#[test]
fn the_graph_keeps_track_of_what_its_bodies_use() {
    let (ctx, stream, affine_fn) = setup();
    let data = DeviceBuffer::<u32>::zeroed(&stream, 1000).unwrap();
    let mut only_in_body = DeviceBuffer::<u32>::zeroed(&stream, 1000).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let go = g.condition(Some(1)).unwrap();
    let (_, mut then) = g.add_conditional_if(&[], &go).unwrap();
    // (A raw launch's pointers are the caller's concern; a memset's buffer
    // is tracked, as a typed launch's are.)
    let k = then.add_kernel(&[], |s| affine(&affine_fn, s, &data, 1, 1)).unwrap();
    then.add_memset(&[k], &mut only_in_body, 0x01).unwrap();
    drop(then);
    // The module of the body's kernel stays loaded with the graph.
    drop(affine_fn);
    let exec = g.instantiate().unwrap();
    exec.launch(&stream).unwrap();
    assert!(data.to_host_vec(&stream).unwrap().iter().all(|&x| x == 1));
    assert!(only_in_body.to_host_vec(&stream).unwrap().iter().all(|&x| x == 0x0101_0101));
    // A buffer only the body uses, dropped: the launch is refused.
    drop(only_in_body);
    let e = exec.launch(&stream).unwrap_err();
    assert!(matches!(e, GraphError::BufferDropped { buffers: 1 }), "{e}");
}

/// `pick(p, handle)`: one thread sets the condition to `p[0]`.
const PICK_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.extern .func cudaGraphSetConditional
(
    .param .b64 cudaGraphSetConditional_param_0,
    .param .b32 cudaGraphSetConditional_param_1
)
;

.visible .entry pick(
    .param .u64 pick_p,
    .param .u64 pick_h
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;

    ld.param.u64 %rd1, [pick_p];
    ld.param.u64 %rd2, [pick_h];
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    ld.global.u32 %r2, [%rd3];
    {
    .param .b64 param0;
    st.param.b64 [param0+0], %rd2;
    .param .b32 param1;
    st.param.b32 [param1+0], %r2;
    call.uni
    cudaGraphSetConditional,
    (
    param0,
    param1
    );
    }
DONE:
    ret;
}
"#;

/// Queues `pick(p, handle)` with one thread.
fn pick(f: &CudaFunction, stream: &CudaStream, p: &DeviceBuffer<u32>, handle: u64) -> Result<(), DriverError> {
    let (mut ptr, mut h) = (p.device_ptr(), handle);
    let mut params = [(&mut ptr as *mut u64).cast(), (&mut h as *mut u64).cast()];
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: the kernel's two parameters; `p` outlives the graphs of these
    // tests, and `handle` is a condition of the graph the launch is a node of.
    unsafe { launch_kernel(f, one, stream, &mut params) }
}

#[test]
fn an_if_else_node_runs_its_else_body_when_the_condition_is_zero() {
    let (ctx, stream, affine_fn) = setup();
    let f = ctx.load_module_ptx(PICK_PTX).unwrap().function("pick").unwrap();
    let data = DeviceBuffer::<u32>::zeroed(&stream, 1000).unwrap();
    let mut choice = DeviceBuffer::<u32>::zeroed(&stream, 1).unwrap();

    let mut g = Graph::new(&ctx).unwrap();
    let go = g.condition(Some(0)).unwrap();
    let set = g.add_kernel(&[], |s| pick(&f, s, &choice, go.handle().raw())).unwrap();
    let (_, mut bodies) = g.add_conditional_if_else(&[set], &go).unwrap();
    assert_eq!(bodies.len(), 2);
    bodies.body(0).unwrap().add_kernel(&[], |s| affine(&affine_fn, s, &data, 1, 100)).unwrap();
    bodies.body(1).unwrap().add_kernel(&[], |s| affine(&affine_fn, s, &data, 1, 1)).unwrap();
    let e = bodies.body(2).unwrap_err();
    assert!(matches!(e, GraphError::NoSuchBody { index: 2, bodies: 2 }), "{e}");
    assert!(e.to_string().contains("bodies 0 (IF) and 1 (ELSE)"), "{e}");
    drop(bodies);
    let exec = g.instantiate().unwrap();
    let mut want = 0;
    for pick_value in [1u32, 0, 0, 7, 0] {
        choice.copy_from_host(&stream, &[pick_value]).unwrap();
        exec.launch(&stream).unwrap();
        want += if pick_value != 0 { 100 } else { 1 };
        let got = data.to_host_vec(&stream).unwrap();
        assert!(got.iter().all(|&x| x == want), "condition {pick_value}: want {want}, got {}", got[0]);
    }
}

#[test]
fn a_switch_node_runs_the_body_of_the_conditions_value_and_none_past_the_last() {
    let (ctx, stream, affine_fn) = setup();
    let f = ctx.load_module_ptx(PICK_PTX).unwrap().function("pick").unwrap();
    let data = DeviceBuffer::<u32>::zeroed(&stream, 1000).unwrap();
    let mut choice = DeviceBuffer::<u32>::zeroed(&stream, 1).unwrap();

    let mut g = Graph::new(&ctx).unwrap();
    let unused = g.condition(Some(0)).unwrap();
    let e = g.add_conditional_switch(&[], &unused, 0).unwrap_err();
    assert!(matches!(e, GraphError::NoSuchBody { bodies: 0, .. }), "{e}");
    // A condition no node reads fails the driver's instantiation (seen on
    // an H200: CUDA_ERROR_INVALID_VALUE); cuda-core refuses it first.
    let e = g.instantiate().unwrap_err();
    assert!(matches!(e, GraphError::UnusedCondition { conditions: 1 }), "{e}");
    assert!(e.to_string().contains("read by no conditional node"), "{e}");

    let mut g = Graph::new(&ctx).unwrap();
    let which = g.condition(None).unwrap();
    let set = g.add_kernel(&[], |s| pick(&f, s, &choice, which.handle().raw())).unwrap();
    let (_, mut cases) = g.add_conditional_switch(&[set], &which, 3).unwrap();
    for (case, add) in [1u32, 10, 100].into_iter().enumerate() {
        // A body taken twice is the same body: its nodes stay valid.
        let first = cases.body(case).unwrap().add_empty(&[]).unwrap();
        cases.body(case).unwrap().add_kernel(&[first], |s| affine(&affine_fn, s, &data, 1, add)).unwrap();
    }
    drop(cases);
    let exec = g.instantiate().unwrap();
    let mut want = 0;
    for value in [2u32, 0, 1, 3, 2, 1000] {
        choice.copy_from_host(&stream, &[value]).unwrap();
        exec.launch(&stream).unwrap();
        want += [1, 10, 100].get(value as usize).copied().unwrap_or(0);
        let got = data.to_host_vec(&stream).unwrap();
        assert!(got.iter().all(|&x| x == want), "condition {value}: want {want}, got {}", got[0]);
    }
}
