//! prims_defaults: cuda-prims as a program gets it, without its `tuning`
//! feature. Each call runs its defaults' kernel and matches the CPU; and the
//! program's image holds no other instance of the tile kernels: one
//! `scan_tiles` per scan this program makes (element type, operator,
//! inclusive or not), one `select_tiles` per selection or partition
//! (element type, predicate or flags), one `radix_scatter` per sort (key
//! and value types), where a build with the feature holds every instance
//! the knobs can pick (examples/primitives checks those).

use cuda_core::{CudaContext, CudaStream, DeviceBuffer};
use cuda_host::{load_kernel_module, KernelModule};
use cuda_prims::op::{Element, Sum};
use cuda_prims::sort::{sort_keys, sort_pairs, Order, RadixKey};
use cuda_prims::{reduce, scan, select};
use std::process::ExitCode;

/// An element type of the checks: its values from an index, exact under
/// every sum the checks take (small integers, as floats too).
trait Value: Element + PartialEq + std::fmt::Debug {
    fn at(i: usize) -> Self;
    /// Whether the selections keep `self`.
    fn kept(self) -> bool;
}
impl Value for u32 {
    fn at(i: usize) -> Self {
        (i.wrapping_mul(2_654_435_761) >> 7) as u32 % 3
    }
    fn kept(self) -> bool {
        self != 1
    }
}
impl Value for f32 {
    fn at(i: usize) -> Self {
        u32::at(i) as f32
    }
    fn kept(self) -> bool {
        self < 1.5
    }
}
impl Value for u64 {
    fn at(i: usize) -> Self {
        // The high half too, so that a sum that dropped it shows.
        (u32::at(i) as u64) << 33 | u32::at(i + 1) as u64
    }
    fn kept(self) -> bool {
        self & 1 == 0
    }
}

/// The lengths checked: around and across several tiles of every kernel
/// (a tile is at most 8,192 elements under the defaults), and on a GPU a
/// large one that is no multiple of anything.
fn lengths(emulated: bool) -> Vec<usize> {
    let mut n = vec![1, 777, 20_011];
    if !emulated {
        n.push((1 << 22) + 13);
    }
    n
}

fn e(x: impl std::fmt::Display) -> String {
    x.to_string()
}

/// reduce, both scans, select_if, select_flagged and partition_if of `T`
/// against the CPU; the number of checks.
fn check_type<T: Value>(module: &KernelModule, stream: &CudaStream, emulated: bool) -> Result<usize, String> {
    let name = std::any::type_name::<T>();
    let mut checks = 0;
    for n in lengths(emulated) {
        let host: Vec<T> = (0..n).map(T::at).collect();
        let input = DeviceBuffer::from_host(stream, &host).map_err(e)?;

        let sum = reduce::reduce(module, stream, &input, Sum).map_err(|x| format!("reduce of {n} {name}: {x}"))?;
        let want = host.iter().fold(T::default(), |a, &b| T::add(a, b));
        if sum != want {
            return Err(format!("reduce of {n} {name}: {sum:?}, CPU {want:?}"));
        }
        checks += 1;

        let mut out = DeviceBuffer::<T>::zeroed(stream, n).map_err(e)?;
        for inclusive in [true, false] {
            if inclusive {
                scan::inclusive_scan(module, stream, &input, &mut out, Sum)
            } else {
                scan::exclusive_scan(module, stream, &input, &mut out, Sum)
            }
            .map_err(|x| format!("scan of {n} {name}: {x}"))?;
            let got = out.to_host_vec(stream).map_err(e)?;
            let mut running = T::default();
            for (i, &x) in host.iter().enumerate() {
                let before = running;
                running = T::add(running, x);
                let want = if inclusive { running } else { before };
                if got[i] != want {
                    return Err(format!("{} scan of {n} {name}: element {i} is {:?}, CPU {want:?}", if inclusive { "inclusive" } else { "exclusive" }, got[i]));
                }
            }
            checks += 1;
        }

        let kept: Vec<T> = host.iter().copied().filter(|x| x.kept()).collect();
        let count = select::select_if(module, stream, &input, &mut out, |x: T| x.kept()).map_err(|x| format!("select_if of {n} {name}: {x}"))?;
        let got = out.to_host_vec(stream).map_err(e)?;
        if count != kept.len() || got[..count] != kept[..] {
            return Err(format!("select_if of {n} {name}: {count} kept, CPU {}, or they differ", kept.len()));
        }
        checks += 1;

        let flags: Vec<u8> = host.iter().map(|x| x.kept() as u8).collect();
        let flags = DeviceBuffer::from_host(stream, &flags).map_err(e)?;
        let count = select::select_flagged(module, stream, &input, &flags, &mut out).map_err(|x| format!("select_flagged of {n} {name}: {x}"))?;
        let got = out.to_host_vec(stream).map_err(e)?;
        if count != kept.len() || got[..count] != kept[..] {
            return Err(format!("select_flagged of {n} {name}: {count} kept, CPU {}, or they differ", kept.len()));
        }
        checks += 1;

        // Kept elements in order first, the others after them in reverse.
        let mut want = kept.clone();
        want.extend(host.iter().rev().copied().filter(|x| !x.kept()));
        let count = select::partition_if(module, stream, &input, &mut out, |x: T| x.kept()).map_err(|x| format!("partition_if of {n} {name}: {x}"))?;
        let got = out.to_host_vec(stream).map_err(e)?;
        if count != kept.len() || got != want {
            return Err(format!("partition_if of {n} {name}: {count} kept, CPU {}, or the elements differ", kept.len()));
        }
        checks += 1;
    }
    Ok(checks)
}

/// sort_keys of `K` both ways, against the CPU's stable sort by the same
/// order.
fn check_sort<K: RadixKey + cuda_core::DeviceRepr + Value>(
    module: &KernelModule,
    stream: &CudaStream,
    emulated: bool,
    less: fn(&K, &K) -> std::cmp::Ordering,
) -> Result<usize, String> {
    let name = std::any::type_name::<K>();
    let mut checks = 0;
    for n in lengths(emulated) {
        let host: Vec<K> = (0..n).map(|i| K::at(i.wrapping_mul(7919) ^ (i >> 3))).collect();
        let input = DeviceBuffer::from_host(stream, &host).map_err(e)?;
        let mut out = DeviceBuffer::<K>::zeroed(stream, n).map_err(e)?;
        for order in [Order::Ascending, Order::Descending] {
            sort_keys(module, stream, &input, &mut out, order).map_err(|x| format!("sort_keys of {n} {name}: {x}"))?;
            let mut want = host.clone();
            want.sort_by(less);
            if order == Order::Descending {
                want.reverse();
            }
            if out.to_host_vec(stream).map_err(e)? != want {
                return Err(format!("sort_keys ({order:?}) of {n} {name} differs from the CPU's"));
            }
            checks += 1;
        }
    }
    Ok(checks)
}

/// sort_pairs of u32 keys with their indices as values: ascending, stable
/// (equal keys keep their order), as the CPU's stable sort.
fn check_pairs(module: &KernelModule, stream: &CudaStream, emulated: bool) -> Result<usize, String> {
    let mut checks = 0;
    for n in lengths(emulated) {
        let keys: Vec<u32> = (0..n).map(|i| u32::at(i) * 1000 + (i % 7) as u32).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        let keys_in = DeviceBuffer::from_host(stream, &keys).map_err(e)?;
        let values_in = DeviceBuffer::from_host(stream, &values).map_err(e)?;
        let mut keys_out = DeviceBuffer::<u32>::zeroed(stream, n).map_err(e)?;
        let mut values_out = DeviceBuffer::<u32>::zeroed(stream, n).map_err(e)?;
        sort_pairs(module, stream, &keys_in, &values_in, &mut keys_out, &mut values_out, Order::Ascending)
            .map_err(|x| format!("sort_pairs of {n}: {x}"))?;
        let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
        want.sort_by_key(|&(k, _)| k);
        let got: Vec<(u32, u32)> =
            keys_out.to_host_vec(stream).map_err(e)?.into_iter().zip(values_out.to_host_vec(stream).map_err(e)?).collect();
        if got != want {
            return Err(format!("sort_pairs of {n} u32 → u32 differs from the CPU's stable sort"));
        }
        checks += 1;
    }
    Ok(checks)
}

/// The image's instances of the tile kernel `kernel` (its entries, without
/// the unchecked twins the device linker may add).
fn instances(module: &KernelModule, kernel: &str) -> usize {
    let entry = format!("__oxide_kernel_entry_{kernel}");
    module.image().kernels.iter().filter(|k| k.ptx_name.contains(&entry)).count()
}

/// Each tile kernel's instances: as many as this program's distinct calls.
fn check_instances(module: &KernelModule) -> Result<usize, String> {
    // (u32, f32, u64) × (inclusive, exclusive), all sums.
    let scans = 3 * 2;
    // (u32, f32, u64) × (select_if's closure, select_flagged, partition_if's closure).
    let selections = 3 * 3;
    // sort_keys of u32, f32, u64; sort_pairs of u32 → u32.
    let sorts = 4;
    for (kernel, want) in [("scan_tiles", scans), ("select_tiles", selections), ("radix_scatter", sorts)] {
        let got = instances(module, kernel);
        if got != want {
            return Err(format!(
                "{got} instances of `{kernel}` in the image, where this program's calls run {want}: \
                 a build without cuda-prims' `tuning` feature compiles only the defaults' instances"
            ));
        }
    }
    Ok(3)
}

fn main() -> ExitCode {
    let ctx = match CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(e) => return cuda_host::report_failure(&e),
    };
    let module = match load_kernel_module(&ctx, "prims_defaults") {
        Ok(module) => module,
        Err(e) => return cuda_host::report_failure(&e),
    };
    let stream = ctx.default_stream();
    let emulated = ctx.backend().is_emulated();
    let groups: [(&str, Box<dyn Fn() -> Result<usize, String>>); 8] = [
        ("u32: reduce, scans, select, partition", Box::new(|| check_type::<u32>(&module, &stream, emulated))),
        ("f32", Box::new(|| check_type::<f32>(&module, &stream, emulated))),
        ("u64", Box::new(|| check_type::<u64>(&module, &stream, emulated))),
        ("sort_keys u32", Box::new(|| check_sort::<u32>(&module, &stream, emulated, |a, b| a.cmp(b)))),
        ("sort_keys f32", Box::new(|| check_sort::<f32>(&module, &stream, emulated, |a, b| a.total_cmp(b)))),
        ("sort_keys u64", Box::new(|| check_sort::<u64>(&module, &stream, emulated, |a, b| a.cmp(b)))),
        ("sort_pairs u32 → u32", Box::new(|| check_pairs(&module, &stream, emulated))),
        ("kernel instances in the image", Box::new(|| check_instances(&module))),
    ];
    let mut failed = 0;
    for (name, run) in &groups {
        match run() {
            Ok(checks) => println!("PASS {name}: {checks} checks"),
            Err(why) => {
                println!("FAIL {name}: {why}");
                failed += 1;
            }
        }
    }
    if failed == 0 {
        println!("✓ SUCCESS: cuda-prims without its `tuning` feature matched the CPU and compiled only the defaults' kernels");
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
