//! Opening shared libraries at run time: the driver (`libcuda.so.1`) here,
//! and the CUDA libraries other crates load the same way (cuda-blas opens
//! cuBLAS with it), so that nothing links against them and a missing one
//! is an error at run time instead of a program that does not start.
//!
//! ```
//! // A library that is not there: the error is dlopen's own text.
//! // SAFETY: nothing is opened.
//! let err = unsafe { cuda_driver_sys::dl::open(c"liboxide-no-such-library.so", cuda_driver_sys::dl::RTLD_NOW) };
//! assert!(err.unwrap_err().contains("liboxide-no-such-library.so"));
//! ```

use std::ffi::{c_char, c_int, c_void, CStr};

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

/// Resolve every symbol when the library is opened.
pub const RTLD_NOW: c_int = 2;
/// Make the library's symbols available to libraries opened later (cuBLAS
/// finds the cuBLASLt it was built with this way).
pub const RTLD_GLOBAL: c_int = 0x100;

/// A library opened by [`open`]; never closed, so the functions looked up in
/// it stay valid for the rest of the process.
#[derive(Clone, Copy, Debug)]
pub struct Library(*mut c_void);

// SAFETY: a dlopen handle is a process-wide value; dlsym may be called on it
// from any thread.
unsafe impl Send for Library {}
// SAFETY: as above; the handle is never closed or mutated.
unsafe impl Sync for Library {}

/// `dlopen(name, flags)`, or `dlerror()`'s text.
///
/// # Safety
/// Opening a library runs its initialisers: `name` must be a library that
/// may be loaded into this process.
pub unsafe fn open(name: &CStr, flags: c_int) -> Result<Library, String> {
    // SAFETY: `name` is NUL-terminated; the caller vouches for the library.
    let lib = unsafe { dlopen(name.as_ptr(), flags) };
    if lib.is_null() {
        Err(last_error())
    } else {
        Ok(Library(lib))
    }
}

impl Library {
    /// The address of `symbol` in the library, or null when it has none.
    pub fn symbol(&self, symbol: &CStr) -> *mut c_void {
        // SAFETY: `self.0` is a live handle (never closed) and `symbol` is
        // NUL-terminated; dlsym only reads them.
        unsafe { dlsym(self.0, symbol.as_ptr()) }
    }
}

/// `dlerror()`'s text for the last failed call on this thread.
fn last_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string that stays
    // valid until the next dl* call on this thread; it is copied at once.
    unsafe {
        let msg = dlerror();
        if msg.is_null() {
            "unknown dlopen error".to_string()
        } else {
            CStr::from_ptr(msg).to_string_lossy().into_owned()
        }
    }
}
