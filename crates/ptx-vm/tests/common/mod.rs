//! Helpers shared by the integration tests: an environment over host
//! buffers, kernel parameter packing, and launching hand-written PTX.
#![allow(dead_code, clippy::result_large_err)]

use std::ops::Range;
use std::sync::Mutex;

use ptx_vm::{launch, Environment, Fault, LaunchDims, LaunchOptions, LaunchStats, Module};

/// Device memory = the host buffers registered here; `printf` calls are
/// recorded: the format, each argument (4 or 8 bytes, as the conversion
/// says), and the text of each `%s` argument.
#[derive(Default)]
pub struct Env {
    pub regions: Vec<Range<u64>>,
    pub printed: Mutex<Vec<(String, Vec<u64>)>>,
    pub strings: Mutex<Vec<String>>,
    /// `cudaGraphSetConditional` calls: (handle, value).
    pub conditions: Mutex<Vec<(u64, u32)>>,
}

impl Env {
    pub fn new() -> Env {
        Env::default()
    }

    /// Makes `v`'s memory valid device memory.
    pub fn with<T>(mut self, v: &[T]) -> Env {
        self.regions.push(region(v));
        self
    }
}

impl Environment for Env {
    fn valid_regions(&self) -> Vec<Range<u64>> {
        self.regions.clone()
    }

    fn set_conditional(&self, handle: u64, value: u32) -> Result<(), String> {
        self.conditions.lock().unwrap().push((handle, value));
        Ok(())
    }

    fn printf(&self, format: &[u8], args: *const u8) {
        let text = String::from_utf8_lossy(format).into_owned();
        let mut values = Vec::new();
        let mut offset = 0usize;
        for (size, string) in argument_sizes(&text) {
            offset = offset.div_ceil(size) * size;
            // SAFETY: vprintf's contract: one argument per conversion, each
            // at its natural alignment.
            let v = unsafe {
                if size == 8 {
                    args.add(offset).cast::<u64>().read_unaligned()
                } else {
                    args.add(offset).cast::<u32>().read_unaligned() as u64
                }
            };
            if string && v != 0 {
                // SAFETY: the VM hands `%s` arguments as host pointers to
                // NUL-terminated strings, valid during the call.
                let s = unsafe { std::ffi::CStr::from_ptr(v as *const std::ffi::c_char) };
                self.strings
                    .lock()
                    .unwrap()
                    .push(s.to_string_lossy().into_owned());
            }
            values.push(v);
            offset += size;
        }
        self.printed.lock().unwrap().push((text, values));
    }
}

/// The size of each argument of a C format (8 for `ll` integers, doubles
/// and pointers, else 4) and whether it is a `%s` string.
fn argument_sizes(format: &str) -> Vec<(usize, bool)> {
    let b = format.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        if b.get(i) == Some(&b'%') {
            i += 1;
            continue;
        }
        let mut long = false;
        while let Some(&c) = b.get(i) {
            i += 1;
            match c {
                b'l' => long = true,
                b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' => {
                    out.push((if long { 8 } else { 4 }, false));
                    break;
                }
                b'f' | b'e' | b'E' | b'g' | b'G' | b'a' | b'p' => {
                    out.push((8, false));
                    break;
                }
                b's' => {
                    out.push((8, true));
                    break;
                }
                _ => {}
            }
        }
    }
    out
}

pub fn region<T>(v: &[T]) -> Range<u64> {
    let start = v.as_ptr() as u64;
    start..start + std::mem::size_of_val(v) as u64
}

/// Kernel parameters as byte blobs; `pointers()` is cuLaunchKernel's
/// `kernelParams`.
#[derive(Default)]
pub struct Params(Vec<Vec<u8>>);

impl Params {
    pub fn new() -> Params {
        Params::default()
    }

    /// A value's bytes.
    pub fn value<T: Copy>(mut self, v: T) -> Params {
        let p = &v as *const T as *const u8;
        // SAFETY: `v` is a plain value of `size_of::<T>()` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(p, std::mem::size_of::<T>()) }.to_vec();
        self.0.push(if bytes.is_empty() { vec![0] } else { bytes });
        self
    }

    /// A slice the kernel reads, as oxide passes `&[T]`: pointer, then
    /// length.
    pub fn slice<T>(self, v: &[T]) -> Params {
        self.value([v.as_ptr() as u64, v.len() as u64])
    }

    /// A slice the kernel writes (`&mut [T]`, `DisjointSlice<T>`): the
    /// pointer comes from a unique borrow, so writing through it is sound.
    pub fn slice_mut<T>(self, v: &mut [T]) -> Params {
        self.value([v.as_mut_ptr() as u64, v.len() as u64])
    }

    pub fn pointers(&self) -> Vec<*const u8> {
        self.0.iter().map(|b| b.as_ptr()).collect()
    }
}

pub fn dims(grid: (u32, u32, u32), block: (u32, u32, u32)) -> LaunchDims {
    LaunchDims {
        grid,
        block,
        dynamic_shared_bytes: 0,
    }
}

pub fn run(
    module: &Module,
    kernel: &str,
    dims: LaunchDims,
    params: &Params,
    env: &Env,
) -> Result<LaunchStats, Fault> {
    launch(
        module,
        kernel,
        dims,
        &params.pointers(),
        env,
        &LaunchOptions::default(),
    )
}

/// The PTX of a fixture under `tests/fixtures`.
pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The entry whose name contains `part` (and is not the `_unchecked` twin
/// unless asked for).
pub fn kernel(module: &Module, part: &str, unchecked: bool) -> String {
    module
        .kernels()
        .find(|k| k.contains(part) && k.ends_with("_unchecked") == unchecked)
        .unwrap_or_else(|| panic!("no kernel named like `{part}`"))
        .to_string()
}

/// A module with one kernel `k` whose body is `body`, over `.reg` sets big
/// enough for hand-written tests, taking `params` (PTX parameter list).
pub fn kernel_ptx(params: &str, body: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k({params})\n{{\n\
         .reg .pred %p<16>;\n.reg .b16 %rs<16>;\n.reg .b32 %r<64>;\n.reg .b64 %rd<64>;\n.reg .f32 %f<16>;\n.reg .f64 %fd<16>;\n{body}\n}}\n"
    )
}

/// The CUDA toolkit's ptxas, where the device linker looks for it
/// (`$OXIDE_CUDA_PATH`, `$CUDA_PATH`, `/usr/local/cuda`): the tests that
/// check the VM's facts against it skip, saying so, without one.
pub fn ptxas() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let roots = ["OXIDE_CUDA_PATH", "CUDA_PATH"].into_iter().filter_map(|v| std::env::var_os(v)).map(PathBuf::from);
    roots.chain([PathBuf::from("/usr/local/cuda")]).map(|r| r.join("bin/ptxas")).find(|p| p.is_file())
}
