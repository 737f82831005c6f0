//! Loads PTX files and reports, for each kernel, whether the VM can run it.
//! Usage: cargo run -p ptx-vm --example parse_all -- FILE.ptx...
use ptx_vm::{launch, Environment, LaunchDims, LaunchOptions, Module};

struct NoMemory;
impl Environment for NoMemory {
    fn valid_regions(&self) -> Vec<std::ops::Range<u64>> {
        Vec::new()
    }
    fn printf(&self, _: &[u8], _: *const u8) {}
}

fn main() {
    for p in std::env::args().skip(1) {
        let s = std::fs::read_to_string(&p).unwrap();
        let t = std::time::Instant::now();
        let m = match Module::parse(&s) {
            Ok(m) => m,
            Err(e) => {
                println!("{p}: {e}");
                continue;
            }
        };
        let kernels: Vec<String> = m.kernels().map(|s| s.to_string()).collect();
        println!(
            "{p}: {} kernels, loaded in {:?}",
            kernels.len(),
            t.elapsed()
        );
        for k in kernels {
            // A launch with zero-filled parameters: the reachability check
            // runs before anything else; report only Unsupported.
            let n = m.kernel_params(&k).unwrap();
            let bufs: Vec<Vec<u8>> = n.iter().map(|l| vec![0u8; l.size]).collect();
            let ptrs: Vec<*const u8> = bufs.iter().map(|b| b.as_ptr()).collect();
            let dims = LaunchDims {
                grid: (1, 1, 1),
                block: (1, 1, 1),
                dynamic_shared_bytes: 0,
            };
            let opts = LaunchOptions {
                timeout: std::time::Duration::from_millis(200),
                ..Default::default()
            };
            if let Err(e @ ptx_vm::Fault::Unsupported { .. }) =
                launch(&m, &k, dims, &ptrs, &NoMemory, &opts)
            {
                println!("  {e}");
            }
        }
    }
}
