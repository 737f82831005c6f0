//! A cdylib with its own kernel: its code must find ITS embedded image, not
//! the image of the executable that loads it (docs/ABI.md §3: the
//! `__start_oxide_kernels` symbols resolve within each linked object).

use cuda_device::{kernel, thread, DisjointSlice};

/// Marks each element with 7.
#[kernel]
pub fn library_kernel(mut out: DisjointSlice<u32>) {
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = 7;
    }
}

/// The names of the images this library's code sees, `;`-separated, written
/// into `buf`; returns the length. The kernel's entry is referenced so the
/// device linker embeds it.
#[no_mangle]
pub extern "C" fn kernlib_images(buf: *mut u8, cap: usize) -> usize {
    let entry: unsafe fn(*const DisjointSlice<u32>) = __oxide_kernel_entry_library_kernel;
    std::hint::black_box(entry);
    let names: Vec<String> = cuda_host::embedded_modules()
        .iter()
        .map(|m| format!("{}:{}", m.name, m.kernels.len()))
        .collect();
    let text = names.join(";");
    let n = text.len().min(cap);
    // SAFETY: the caller passes a writable buffer of `cap` bytes.
    unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), buf, n) };
    n
}
