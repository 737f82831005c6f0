//! Measures the VM's speed on real oxide PTX: vecadd (tests/fixtures) over
//! 2^22 elements and the sgemm_tiled kernel on 256×256 matrices, with one
//! worker and with every core. Prints instructions per second.
//!
//! cargo run --release -p ptx-vm --example throughput
use ptx_vm::{launch, Environment, LaunchDims, LaunchOptions, Module};
use std::ops::Range;

struct Env(Vec<Range<u64>>);
impl Environment for Env {
    fn valid_regions(&self) -> Vec<Range<u64>> {
        self.0.clone()
    }
    fn printf(&self, _: &[u8], _: *const u8) {}
}

fn region<T>(v: &[T]) -> Range<u64> {
    v.as_ptr() as u64..v.as_ptr() as u64 + std::mem::size_of_val(v) as u64
}

fn fixture(name: &str) -> Module {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    Module::parse(&std::fs::read_to_string(path).expect("fixture")).expect("valid PTX")
}

fn report(what: &str, workers: usize, stats: ptx_vm::LaunchStats) {
    let secs = stats.elapsed.as_secs_f64();
    println!(
        "{what:<32} workers {workers}: {:>11} instructions in {:>7.3} s = {:>6.1} M instructions/s",
        stats.instructions,
        secs,
        stats.instructions as f64 / secs / 1e6
    );
}

fn main() {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let vecadd = fixture("vecadd.ptx");
    let n = 1usize << 22;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    let mut c = vec![0f32; n];
    let env = Env(vec![region(&a), region(&b), region(&c)]);
    let slices = [
        [a.as_ptr() as u64, n as u64],
        [b.as_ptr() as u64, n as u64],
        [c.as_mut_ptr() as u64, n as u64],
    ];
    let params: Vec<*const u8> = slices.iter().map(|s| s.as_ptr() as *const u8).collect();
    let kernel = vecadd
        .kernels()
        .find(|k| !k.ends_with("_unchecked"))
        .expect("vecadd")
        .to_string();
    for workers in [1, cores] {
        let dims = LaunchDims {
            grid: (n as u32 / 256, 1, 1),
            block: (256, 1, 1),
            dynamic_shared_bytes: 0,
        };
        let stats = launch(
            &vecadd,
            &kernel,
            dims,
            &params,
            &env,
            &LaunchOptions {
                workers,
                ..Default::default()
            },
        )
        .expect("vecadd runs");
        report("vecadd (2^22 elements)", workers, stats);
    }
    assert!(c.iter().enumerate().all(|(i, &x)| x == 3.0 * i as f32));

    let sgemm = fixture("sgemm_tiled.ptx");
    let s = 256usize;
    let a: Vec<f32> = (0..s * s).map(|i| (i % 7) as f32).collect();
    let b: Vec<f32> = (0..s * s).map(|i| (i % 5) as f32).collect();
    let mut c = vec![0f32; s * s];
    let env = Env(vec![region(&a), region(&b), region(&c)]);
    let d = [s as u64, s as u64, s as u64];
    let slices = [
        [a.as_ptr() as u64, (s * s) as u64],
        [b.as_ptr() as u64, (s * s) as u64],
        [c.as_mut_ptr() as u64, (s * s) as u64],
    ];
    let params: Vec<*const u8> = std::iter::once(d.as_ptr() as *const u8)
        .chain(slices.iter().map(|x| x.as_ptr() as *const u8))
        .collect();
    let kernel = sgemm
        .kernels()
        .find(|k| !k.ends_with("_unchecked"))
        .expect("sgemm")
        .to_string();
    for workers in [1, cores] {
        let dims = LaunchDims {
            grid: (s as u32 / 32, s as u32 / 32, 1),
            block: (32, 8, 1),
            dynamic_shared_bytes: 0,
        };
        let stats = launch(
            &sgemm,
            &kernel,
            dims,
            &params,
            &env,
            &LaunchOptions {
                workers,
                ..Default::default()
            },
        )
        .expect("sgemm runs");
        report("sgemm_tiled (256x256x256)", workers, stats);
    }
}
