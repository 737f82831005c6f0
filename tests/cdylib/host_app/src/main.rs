//! Test (no GPU needed): an executable with its own kernel loads a cdylib
//! with another kernel; each must see only its own embedded image.
//! Usage: host_app PATH/TO/libkernlib.so — exits 0 when both lookups are right.

use cuda_device::{kernel, thread, DisjointSlice};
use std::ffi::{c_char, c_int, c_void, CString};
use std::process::ExitCode;

/// Marks each element with 1.
#[kernel]
pub fn app_kernel(mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = 1;
    }
}

extern "C" {
    fn dlopen(file: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
}

fn library_images(path: &str) -> Result<String, String> {
    let c_path = CString::new(path).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path; RTLD_NOW.
    let handle = unsafe { dlopen(c_path.as_ptr(), 2) };
    if handle.is_null() {
        return Err(format!("cannot load {path}"));
    }
    // SAFETY: the handle is live; the symbol name is a C string.
    let sym = unsafe { dlsym(handle, c"kernlib_images".as_ptr()) };
    if sym.is_null() {
        return Err("kernlib_images not found".into());
    }
    // SAFETY: kernlib_images has exactly this C signature.
    let images: extern "C" fn(*mut u8, usize) -> usize = unsafe { std::mem::transmute(sym) };
    let mut buf = vec![0u8; 256];
    let n = images(buf.as_mut_ptr(), buf.len());
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

fn main() -> ExitCode {
    let entry: unsafe fn(*const DisjointSlice<u32>) = __oxide_kernel_entry_app_kernel;
    std::hint::black_box(entry);
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: host_app PATH/TO/libkernlib.so");
        return ExitCode::FAILURE;
    };
    let own: Vec<String> =
        cuda_host::embedded_modules().iter().map(|m| format!("{}:{}", m.name, m.kernels.len())).collect();
    let library = match library_images(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("executable sees [{}], library sees [{library}]", own.join(";"));
    if own == ["host_app:1"] && library == "kernlib:1" {
        println!("✓ SUCCESS: the executable and the cdylib each find their own device image");
        ExitCode::SUCCESS
    } else {
        eprintln!("error: expected [host_app:1] and [kernlib:1]");
        ExitCode::FAILURE
    }
}
