//! CUDA Graphs from Rust: record a chain of kernels once, launch it many
//! times as one submission, build a graph node by node, and change its
//! kernels' arguments in place.
//!
//! * **capture**: eight `cuda_launch!`es on a capturing stream become a
//!   graph (nothing runs while it records); the graph is replayed 50 times.
//! * **explicit build**: a memset, then two kernels on two buffers that
//!   depend only on the memset (they may run at once), a kernel that joins
//!   them, a copy and a host node that counts the launches; replayed 20
//!   times.
//! * **update**: one kernel node gets new arguments in place
//!   (`set_kernel_params`, a typed launch, checked as one), then the whole
//!   captured chain is updated from a re-capture with other arguments.
//! * **conditional nodes**: a WHILE node repeats a decay step on every
//!   element until a kernel finds them all zero (it sets the loop's
//!   condition with `cuda_device::graph::set_condition`), then an IF node
//!   runs a report kernel only if the loop took more than a threshold of
//!   iterations. The graph is launched on two inputs, one that takes the
//!   IF branch and one that does not; the iteration counts and results are
//!   those of the same loop on the CPU.
//!
//! * **allocation node**: a temporary made on the capturing stream
//!   (`alloc_temp_zeroed`) is the graph's own memory: an allocation node,
//!   the kernels that use it, and a free node where it is dropped; a graph
//!   built node by node gets the same with `Graph::add_temp`. Both replayed
//!   on new input written before each launch.
//!
//! Every replay's result is compared with the same computation on the CPU.

use cuda_core::{CudaContext, CudaStream, DeviceBuffer, Graph, GraphError, LaunchConfig};
use cuda_device::graph::{self, ConditionHandle};
use cuda_device::{kernel, thread, DisjointSlice};
use cuda_host::{cuda_launch, load_kernel_module, KernelModule};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// `data[i] = data[i] * mul + add` (wrapping).
#[kernel]
pub fn step(mut data: DisjointSlice<u32>, mul: u32, add: u32) {
    if let Some(x) = data.get_mut(thread::index_1d()) {
        *x = x.wrapping_mul(mul).wrapping_add(add);
    }
}

/// `out[i] = a[i] ^ b[i].rotate_left(7)`.
#[kernel]
pub fn mix(a: &[u32], b: &[u32], mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    if let Some(x) = out.get_mut(idx) {
        *x = a[i] ^ b[i].rotate_left(7);
    }
}

/// One decay step: x ← x − x/4 − 1, stopping at 0.
#[kernel]
pub fn decay(mut data: DisjointSlice<u32>) {
    if let Some(x) = data.get_mut(thread::index_1d()) {
        *x = decay_cpu(*x);
    }
}

fn decay_cpu(x: u32) -> u32 {
    x.saturating_sub(x / 4 + 1)
}

/// The WHILE loop's test, launched as one block: counts the iteration and
/// keeps the loop going while an element is nonzero (and the count is below
/// MAX_ITERATIONS, a guard against a loop that never ends).
#[kernel]
pub fn any_left(data: &[u32], mut iterations: DisjointSlice<u32>, keep_going: ConditionHandle) {
    let mut any = false;
    let mut i = thread::threadIdx_x() as usize;
    while i < data.len() {
        any |= data[i] != 0;
        i += thread::blockDim_x() as usize;
    }
    let any = thread::sync_threads_or(any);
    // `iterations` has one element: thread 0 alone gets it.
    if let Some(n) = iterations.get_mut(thread::index_1d()) {
        *n += 1;
        // SAFETY: one thread of the launch sets the condition (the one that
        // owns `iterations[0]`); no other kernel of the graph sets it, and
        // this kernel runs only in the WHILE node's body of the graph the
        // handle was made for.
        unsafe { graph::set_condition(keep_going, (any && *n < MAX_ITERATIONS) as u32) };
    }
}

/// Decides the IF node: take it when the loop ran more than `threshold` times.
#[kernel]
pub fn decide(iterations: &[u32], threshold: u32, report: ConditionHandle) {
    // SAFETY: no other kernel of the graph sets `report`, and this one runs
    // as a node of the graph the handle was made for.
    unsafe { graph::set_condition_from_first_thread(report, (iterations[0] > threshold) as u32) };
}

/// The IF node's body: writes the iteration count into every element.
#[kernel]
pub fn report(iterations: &[u32], mut out: DisjointSlice<u32>) {
    if let Some(x) = out.get_mut(thread::index_1d()) {
        *x = iterations[0];
    }
}

const N: usize = 1 << 14;
/// Elements of the conditional-node section (smaller: the loop runs dozens of times).
const M: usize = 4096;
const MAX_ITERATIONS: u32 = 1000;
/// The IF node runs its body when the loop took more iterations than this.
const THRESHOLD: u32 = 20;

/// The chain's (mul, add) pairs.
fn chain(salt: u32) -> Vec<(u32, u32)> {
    (0..8u32).map(|k| (2 * k + 3 + salt, k.wrapping_mul(0x9e37_79b9) ^ salt)).collect()
}

fn step_cpu(x: u32, (mul, add): (u32, u32)) -> u32 {
    x.wrapping_mul(mul).wrapping_add(add)
}

fn check(case: &str, got: &[u32], want: impl Fn(usize) -> u32) -> Result<(), String> {
    match (0..got.len()).find(|&i| got[i] != want(i)) {
        None => {
            println!("  {case}: {} elements right", got.len());
            Ok(())
        }
        Some(i) => Err(format!(
            "{case}: element {i} is {:#x}, the CPU gives {:#x} ({} of {} wrong)",
            got[i],
            want(i),
            (0..got.len()).filter(|&j| got[j] != want(j)).count(),
            got.len()
        )),
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.new_stream()?; // the legacy default stream cannot capture
    let module = load_kernel_module(&ctx, "graphs")?;
    let config = LaunchConfig::for_num_elems(N as u32);
    let initial: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();

    // 1. Capture a chain of eight kernels, replay it 50 times.
    let mut data = DeviceBuffer::from_host(&stream, &initial)?;
    let capture_chain = |data: &mut DeviceBuffer<u32>, salt: u32| {
        stream.capture(|s| {
            for (mul, add) in chain(salt) {
                cuda_launch! { kernel: step, stream: s, module: module, config: config,
                               args: [slice_mut(*data), mul, add] }?;
            }
            Ok::<_, cuda_host::HostError>(())
        })
    };
    let graph = capture_chain(&mut data, 0)?;
    check("after the capture (nothing ran)", &data.to_host_vec(&stream)?, |i| initial[i])?;
    println!("  captured {} kernel nodes", graph.kernel_nodes()?.len());
    let mut exec = graph.instantiate()?;
    const REPLAYS: usize = 50;
    for _ in 0..REPLAYS {
        exec.launch(&stream)?;
    }
    let mut cpu = initial.clone();
    for x in &mut cpu {
        for _ in 0..REPLAYS {
            *x = chain(0).into_iter().fold(*x, step_cpu);
        }
    }
    check("captured chain, 50 replays", &data.to_host_vec(&stream)?, |i| cpu[i])?;

    // 2. Build a graph node by node: a diamond with a copy and a host node.
    let mut a = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    let mut b = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    let mut mixed = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    let mut snapshot = DeviceBuffer::<u32>::zeroed(&stream, N)?;
    let launches = Arc::new(AtomicUsize::new(0));
    let mut g = Graph::new(&ctx)?;
    let clear = g.add_memset(&[], &mut a, 0)?;
    let clear_b = g.add_memset(&[], &mut b, 0x11)?;
    let left = g.add_kernel(&[clear], |s| {
        cuda_launch! { kernel: step, stream: s, module: module, config: config, args: [slice_mut(a), 1u32, 5u32] }
    })?;
    let right = g.add_kernel(&[clear_b], |s| {
        cuda_launch! { kernel: step, stream: s, module: module, config: config, args: [slice_mut(b), 3u32, 1u32] }
    })?;
    let join = g.add_kernel(&[left, right], |s| {
        cuda_launch! { kernel: mix, stream: s, module: module, config: config, args: [slice(a), slice(b), slice_mut(mixed)] }
    })?;
    let copied = g.add_copy(&[join], &mut snapshot, &mixed)?;
    let counter = launches.clone();
    g.add_host(&[copied], move || {
        counter.fetch_add(1, Ordering::SeqCst);
    })?;
    let mut built = g.instantiate()?;
    for _ in 0..20 {
        built.launch(&stream)?;
    }
    stream.synchronize()?;
    let (av, bv) = (5u32, 0x1111_1111u32.wrapping_mul(3).wrapping_add(1));
    check("explicit graph: the joined kernel", &mixed.to_host_vec(&stream)?, |_| av ^ bv.rotate_left(7))?;
    check("explicit graph: the copy after it", &snapshot.to_host_vec(&stream)?, |_| av ^ bv.rotate_left(7))?;
    let counted = launches.load(Ordering::SeqCst);
    if counted != 20 {
        return Err(format!("the host node ran {counted} times in 20 launches").into());
    }
    println!("  explicit graph: the host node ran once per launch (20)");

    // 3a. New arguments for one kernel node, in place.
    built.set_kernel_params(left, |s| {
        cuda_launch! { kernel: step, stream: s, module: module, config: config, args: [slice_mut(a), 7u32, 9u32] }
    })?;
    built.launch(&stream)?;
    check("after set_kernel_params on one node", &mixed.to_host_vec(&stream)?, |_| 9 ^ bv.rotate_left(7))?;

    // 3b. The whole chain updated from a re-capture with other arguments.
    exec.update(&capture_chain(&mut data, 17)?)?;
    let start = data.to_host_vec(&stream)?;
    for _ in 0..10 {
        exec.launch(&stream)?;
    }
    let want: Vec<u32> = start
        .iter()
        .map(|&x| (0..10).fold(x, |x, _| chain(17).into_iter().fold(x, step_cpu)))
        .collect();
    check("after a whole-graph update, 10 replays", &data.to_host_vec(&stream)?, |i| want[i])?;

    // 4. Conditional nodes: a WHILE loop driven by a kernel, then an IF.
    conditional_nodes(&ctx, &stream, &module)?;

    // 5. Temporary memory owned by the graph.
    allocation_node(&stream, &module)?;
    explicit_allocation_node(&ctx, &stream, &module)
}

/// The same in a graph built node by node: the allocation node, a copy of
/// the input into it, a kernel on it and a copy out, each after the
/// allocation, and the free node after them (`Graph::add_temp`).
fn explicit_allocation_node(ctx: &Arc<CudaContext>, stream: &CudaStream, module: &KernelModule) -> Result<(), Box<dyn std::error::Error>> {
    let config = LaunchConfig::for_num_elems(N as u32);
    let mut input = DeviceBuffer::<u32>::zeroed(stream, N)?;
    let mut out = DeviceBuffer::<u32>::zeroed(stream, N)?;
    let mut g = Graph::new(ctx)?;
    g.add_temp::<u32, GraphError>(&[], N, |t| {
        let load = t.add_copy_from(&[], &input)?;
        let k = t.add_kernel(&[load], |s, scratch| {
            cuda_launch! { kernel: step, stream: s, module: module, config: config,
                           args: [slice_mut(*scratch), 9u32, 4u32] }
        })?;
        t.add_copy_to(&[k], &mut out)?;
        Ok(())
    })?;
    let exec = g.instantiate()?;
    for replay in 0..3u32 {
        let host: Vec<u32> = (0..N as u32).map(|i| i.rotate_left(replay + 3) ^ 0x5bd1_e995).collect();
        input.copy_from_host(stream, &host)?;
        exec.launch(stream)?;
        let case = format!("explicit allocation node, replay {replay}");
        check(&case, &out.to_host_vec(stream)?, |i| step_cpu(host[i], (9, 4)))?;
    }
    Ok(())
}

/// A graph whose scratch buffer is an allocation node: every launch
/// allocates it (zeroed by a memset node), two kernels use it, and the free
/// node returns it. New input is written before each launch.
fn allocation_node(stream: &CudaStream, module: &KernelModule) -> Result<(), Box<dyn std::error::Error>> {
    let config = LaunchConfig::for_num_elems(N as u32);
    let mut input = DeviceBuffer::<u32>::zeroed(stream, N)?;
    let mut out = DeviceBuffer::<u32>::zeroed(stream, N)?;
    let graph = stream.capture(|s| {
        let mut scratch = s.alloc_temp_zeroed::<u32>(N)?; // allocation node (+ memset)
        cuda_launch! { kernel: step, stream: s, module: module, config: config,
                       args: [slice_mut(scratch), 1u32, 3u32] }?; // 0 * 1 + 3 if zeroed at this launch
        cuda_launch! { kernel: step, stream: s, module: module, config: config,
                       args: [slice_mut(input), 5u32, 1u32] }?;
        cuda_launch! { kernel: mix, stream: s, module: module, config: config,
                       args: [slice(input), slice(scratch), slice_mut(out)] }?;
        Ok::<_, cuda_host::HostError>(()) // `scratch` dropped here: the free node
    })?;
    let exec = graph.instantiate()?;
    for replay in 0..5u32 {
        let host: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(0x9e37_79b9) ^ replay).collect();
        input.copy_from_host(stream, &host)?;
        exec.launch(stream)?;
        let case = format!("allocation node, replay {replay}");
        check(&case, &out.to_host_vec(stream)?, |i| step_cpu(host[i], (5, 1)) ^ 3u32.rotate_left(7))?;
    }
    Ok(())
}

/// The WHILE loop on the CPU: (iterations, the data afterwards). The body
/// runs once before the first test (the condition's default is 1).
fn decay_loop_cpu(input: &[u32]) -> (u32, Vec<u32>) {
    let mut data = input.to_vec();
    let mut n = 0;
    loop {
        data.iter_mut().for_each(|x| *x = decay_cpu(*x));
        n += 1;
        if !data.iter().any(|&x| x != 0) || n >= MAX_ITERATIONS {
            return (n, data);
        }
    }
}

fn conditional_nodes(ctx: &std::sync::Arc<CudaContext>, stream: &CudaStream, module: &KernelModule) -> Result<(), Box<dyn std::error::Error>> {
    let config = LaunchConfig::for_num_elems(M as u32);
    let one_block = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let one_thread = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    let mut input = DeviceBuffer::<u32>::zeroed(stream, M)?;
    let mut work = DeviceBuffer::<u32>::zeroed(stream, M)?;
    let mut iterations = DeviceBuffer::<u32>::zeroed(stream, 1)?;
    let mut out = DeviceBuffer::<u32>::zeroed(stream, M)?;

    let mut g = Graph::new(ctx)?;
    // Both conditions start from their default at every launch.
    let keep_going = g.condition(Some(1))?;
    let take_if = g.condition(Some(0))?;
    let load = g.add_copy(&[], &mut work, &input)?;
    let zero = g.add_memset(&[], &mut iterations, 0)?;
    let clear = g.add_memset(&[], &mut out, 0)?;
    let (lp, mut body) = g.add_conditional_while(&[load, zero], &keep_going)?;
    let stepped = body.add_kernel(&[], |s| {
        cuda_launch! { kernel: decay, stream: s, module: module, config: config, args: [slice_mut(work)] }
    })?;
    body.add_kernel(&[stepped], |s| {
        cuda_launch! { kernel: any_left, stream: s, module: module, config: one_block,
                       args: [slice(work), slice_mut(iterations), keep_going.handle()] }
    })?;
    drop(body);
    let decided = g.add_kernel(&[lp, clear], |s| {
        cuda_launch! { kernel: decide, stream: s, module: module, config: one_thread,
                       args: [slice(iterations), THRESHOLD, take_if.handle()] }
    })?;
    let (_, mut then) = g.add_conditional_if(&[decided], &take_if)?;
    then.add_kernel(&[], |s| {
        cuda_launch! { kernel: report, stream: s, module: module, config: config, args: [slice(iterations), slice_mut(out)] }
    })?;
    drop(then);
    let exec = g.instantiate()?;

    // A wide input takes many iterations (the IF runs), a narrow one few.
    let wide: Vec<u32> = (0..M as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let narrow: Vec<u32> = (0..M as u32).map(|i| i % 50).collect();
    for (name, host) in [("wide input", &wide), ("narrow input", &narrow)] {
        input.copy_from_host(stream, host)?;
        exec.launch(stream)?;
        let (n, after) = decay_loop_cpu(host);
        let got = iterations.to_host_vec(stream)?[0];
        if got != n {
            return Err(format!("{name}: the WHILE node ran its body {got} times, the CPU loop {n}").into());
        }
        check(&format!("{name}: WHILE ran {n} iterations, the data"), &work.to_host_vec(stream)?, |i| after[i])?;
        let taken = n > THRESHOLD;
        check(
            &format!("{name}: IF {} (threshold {THRESHOLD})", if taken { "taken" } else { "not taken" }),
            &out.to_host_vec(stream)?,
            |_| if taken { n } else { 0 },
        )?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("PASS");
            println!("✓ SUCCESS: captured, built, updated, replayed, conditional and allocation-node graphs match the CPU");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("FAIL");
            cuda_host::report_failure(&*e)
        }
    }
}
