//! The device-wide primitives inside cuda-async operations, and refused by a
//! graph capture.
//!
//! A device-wide call only queues work on the stream it is given, its
//! temporary storage included (allocated and freed on that stream), so
//! `cuda_async::launch` makes it an operation that chains with others. A
//! stream capture cannot record those allocations, so a call on a capturing
//! stream is refused with `PrimsError::Capturing` before it queues anything.

use crate::inputs::words;
use crate::Sizes;
use cuda_async::{launch, AsyncError, DeviceOperation};
use cuda_core::{CudaContext, DeviceBuffer};
use cuda_host::KernelModule;
use cuda_prims::op::Sum;
use cuda_prims::sort::{self, Order};
use cuda_prims::{reduce, scan};
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

    // 2. A capture refuses them, before anything is queued: their temporary
    // storage is a stream-ordered allocation, which a graph cannot record.
    // The stream is not broken by it: the same calls run after the capture.
    let mut scanned = DeviceBuffer::<u32>::zeroed(&stream, n).map_err(|x| e(&x))?;
    let mut total = DeviceBuffer::<u32>::zeroed(&stream, 1).map_err(|x| e(&x))?;
    let captured = stream.capture(|s| scan::exclusive_scan(module, s, &input, &mut scanned, Sum));
    match captured {
        Err(err) if err.to_string().contains("call it outside the capture") => checks += 1,
        Err(err) => return Err(format!("a scan in a capture was refused, but not by cuda-prims: {err}")),
        Ok(_) => return Err("a scan was captured into a graph, temporary storage and all".into()),
    }
    for round in 0..3u64 {
        let host = values(n, 50 + round);
        let input = DeviceBuffer::from_host(&stream, &host).map_err(|x| e(&x))?;
        scan::exclusive_scan(module, &stream, &input, &mut scanned, Sum).map_err(|x| e(&x))?;
        reduce::reduce_into(module, &stream, &input, &mut total, Sum).map_err(|x| e(&x))?;
        let inclusive = prefix_sums(&host);
        let mut want = vec![0u32; n];
        want[1..].copy_from_slice(&inclusive[..n - 1]);
        if scanned.to_host_vec(&stream).map_err(|x| e(&x))? != want {
            return Err(format!("round {round}: an exclusive scan of {n} u32 after a refused capture differs from the CPU"));
        }
        let sum = total.to_host_vec(&stream).map_err(|x| e(&x))?[0];
        if sum != inclusive[n - 1] {
            return Err(format!("round {round}: a reduction after a refused capture gives {sum}, the CPU {}", inclusive[n - 1]));
        }
        checks += 2;
    }
    Ok(checks)
}
