//! The device-wide primitives inside cuda-async operations, and captured
//! into a graph and replayed.
//!
//! A device-wide call only queues work on the stream it is given, its
//! temporary storage included (allocated and freed on that stream), so
//! `cuda_async::launch` makes it an operation that chains with others. On a
//! capturing stream the temporary storage becomes the graph's own
//! (an allocation node, the call's kernels, a free node), so the calls are
//! captured once and replayed, each replay on the input written before it:
//! by a stream capture, and by a cuda-async operation's `into_graph`.

use crate::inputs::words;
use crate::Sizes;
use cuda_async::{launch, value, AsyncError, DeviceOperation};
use cuda_core::{CudaContext, DeviceBuffer};
use cuda_host::KernelModule;
use cuda_prims::op::Sum;
use cuda_prims::sort::{self, Order};
use cuda_prims::rle::{run_length_encode, run_length_encode_on_cpu};
use cuda_prims::{reduce, scan, select};
use std::sync::Arc;

/// Small values, so that no prefix sum of the sizes checked wraps.
fn values(n: usize, seed: u64) -> Vec<u32> {
    words(n, seed).into_iter().map(|w| (w % 16) as u32).collect()
}

fn prefix_sums(input: &[u32]) -> Vec<u32> {
    input.iter().scan(0u32, |acc, &x| { *acc += x; Some(*acc) }).collect()
}

/// The checks of this group.
pub fn run(ctx: &Arc<CudaContext>, module: &KernelModule, sizes: Sizes) -> Result<usize, String> {
    let n = if sizes.emulated { 3 * 4096 + 17 } else { (1 << 22) + 777 };
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let stream = ctx.new_stream().map_err(|x| e(&x))?;
    let mut checks = 0;

    // 1. One operation: an inclusive scan, then a descending sort of its
    // result, each step queued on the stream the operation runs on.
    let host = values(n, 41);
    let input = DeviceBuffer::from_host(&stream, &host).map_err(|x| e(&x))?;
    let chain = launch(|s| {
        let mut scanned = DeviceBuffer::<u32>::zeroed(s, n)?;
        scan::inclusive_scan(module, s, &input, &mut scanned, Sum).map_err(AsyncError::host)?;
        Ok(scanned)
    })
    .and_then(|scanned| {
        launch(move |s| {
            let mut sorted = DeviceBuffer::<u32>::zeroed(s, n)?;
            sort::sort_keys(module, s, &scanned, &mut sorted, Order::Descending).map_err(AsyncError::host)?;
            Ok(sorted)
        })
    });
    let sorted = chain.sync_on(&stream).map_err(|x| format!("scan then sort as one operation: {x}"))?;
    let mut want = prefix_sums(&host);
    want.sort_unstable_by(|a, b| b.cmp(a));
    if sorted.to_host_vec(&stream).map_err(|x| e(&x))? != want {
        return Err(format!("scan then sort of {n} u32 as one cuda-async operation differs from the CPU"));
    }
    checks += 1;

    // 2. A scan, a reduction, a sort, a selection and a run-length encoding
    // captured into one graph (their temporary storage as allocation and
    // free nodes), replayed on new input written before each replay; every
    // replay checked against the CPU.
    let mut input = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
    let mut scanned = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
    let mut total = DeviceBuffer::<u32>::zeroed(&stream, 1).map_err(|x| e(&x))?;
    let mut sorted = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
    let mut selected = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
    let mut count = DeviceBuffer::<u64>::zeroed(&stream, 1).map_err(|x| e(&x))?;
    let mut unique = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
    let mut lengths = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
    let mut runs = DeviceBuffer::<u32>::zeroed(&stream, 1).map_err(|x| e(&x))?;
    let graph = stream
        .capture(|s| {
            scan::exclusive_scan(module, s, &input, &mut scanned, Sum)?;
            reduce::reduce_into(module, s, &input, &mut total, Sum)?;
            sort::sort_keys(module, s, &input, &mut sorted, Order::Descending)?;
            select::select_if_into(module, s, &input, &mut selected, &mut count, |x: u32| x < 5)?;
            run_length_encode(module, s, &input, &mut unique, &mut lengths, &mut runs)
        })
        .map_err(|x| format!("capturing a scan, a reduction, a sort, a selection and a run-length encoding: {x}"))?;
    let exec = graph.instantiate().map_err(|x| e(&x))?;
    for replay in 0..3u64 {
        let host = values(n, 50 + replay);
        input.copy_from_host(&stream, &host).map_err(|x| e(&x))?;
        exec.launch(&stream).map_err(|x| e(&x))?;
        let inclusive = prefix_sums(&host);
        let mut want = vec![0u32; n];
        want[1..].copy_from_slice(&inclusive[..n - 1]);
        if scanned.to_host_vec(&stream).map_err(|x| e(&x))? != want {
            return Err(format!("replay {replay}: a captured exclusive scan of {n} u32 differs from the CPU"));
        }
        let sum = total.to_host_vec(&stream).map_err(|x| e(&x))?[0];
        if sum != inclusive[n - 1] {
            return Err(format!("replay {replay}: a captured reduction gives {sum}, the CPU {}", inclusive[n - 1]));
        }
        let mut want = host.clone();
        want.sort_unstable_by(|a, b| b.cmp(a));
        if sorted.to_host_vec(&stream).map_err(|x| e(&x))? != want {
            return Err(format!("replay {replay}: a captured descending sort of {n} u32 differs from the CPU"));
        }
        let want: Vec<u32> = host.iter().copied().filter(|&x| x < 5).collect();
        let kept = count.to_host_vec(&stream).map_err(|x| e(&x))?[0] as usize;
        if kept != want.len() || selected.to_host_vec(&stream).map_err(|x| e(&x))?[..kept] != want[..] {
            return Err(format!("replay {replay}: a captured selection kept {kept} of {n}, the CPU {}", want.len()));
        }
        let (want_unique, want_lengths) = run_length_encode_on_cpu(&host);
        let r = runs.to_host_vec(&stream).map_err(|x| e(&x))?[0] as usize;
        let (got_unique, got_lengths) = (unique.to_host_vec(&stream).map_err(|x| e(&x))?, lengths.to_host_vec(&stream).map_err(|x| e(&x))?);
        if r != want_unique.len() || got_unique[..r] != want_unique[..] || got_lengths[..r] != want_lengths[..] {
            return Err(format!("replay {replay}: a captured run-length encoding found {r} runs, the CPU {}", want_unique.len()));
        }
        checks += 5;
    }

    // 3. A cuda-async operation whose step scans and sorts, captured with
    // `into_graph` (the graph owns the buffers it hands on, and the calls'
    // scratch as allocation nodes) and replayed on new input.
    let buffers = (0..3).map(|_| DeviceBuffer::<u32>::zeroed(&stream, n)).collect::<Result<Vec<_>, _>>().map_err(|x| e(&x))?;
    let [input, scanned, sorted]: [DeviceBuffer<u32>; 3] = buffers.try_into().map_err(|_| "three buffers".to_string())?;
    let op = value((input, scanned, sorted)).then(move |s, (input, mut scanned, mut sorted)| {
        scan::inclusive_scan(module, s, &input, &mut scanned, Sum).map_err(AsyncError::host)?;
        sort::sort_keys(module, s, &scanned, &mut sorted, Order::Descending).map_err(AsyncError::host)?;
        Ok((input, scanned, sorted))
    });
    let mut graph = op.into_graph(&stream).map_err(|x| format!("a cuda-async scan and sort into a graph: {x}"))?;
    for replay in 0..2u64 {
        let host = values(n, 70 + replay);
        graph.output_mut().0.copy_from_host(&stream, &host).map_err(|x| e(&x))?;
        graph = graph.replay().sync_on(&stream).map_err(|x| e(&x))?;
        let (_, scanned, sorted) = graph.output();
        let mut want = prefix_sums(&host);
        if scanned.to_host_vec(&stream).map_err(|x| e(&x))? != want {
            return Err(format!("replay {replay}: a scan in a cuda-async graph differs from the CPU"));
        }
        want.sort_unstable_by(|a, b| b.cmp(a));
        if sorted.to_host_vec(&stream).map_err(|x| e(&x))? != want {
            return Err(format!("replay {replay}: a sort in a cuda-async graph differs from the CPU"));
        }
        checks += 2;
    }
    Ok(checks)
}
