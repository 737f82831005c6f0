//! Emulated modules and functions: what a loaded image keeps for the
//! executors.
//!
//! A module keeps its PTX text (cuda-host loads the PTX, never the cubin,
//! when the kernels are emulated), which the device-code executor runs, and
//! its device globals by name. The host-code executor needs neither (the
//! kernel's host code comes with the launch, and `#[constant]` statics are
//! the host statics themselves); the one global every module answers is the
//! panic-record slot, through which a fault reaches the context's record.

use std::ffi::{c_void, CStr, CString};
use std::sync::atomic::AtomicI32;
use std::sync::{Arc, Mutex};

use cuda_driver_sys::panic_record::RECORD_GLOBAL;

use crate::context::Context;

/// One device global of a module: its bytes, 8-aligned.
pub(crate) struct Global {
    name: CString,
    storage: Box<[u64]>,
    size: usize,
}

impl Global {
    /// Its address (the emulated device address is the host address) and size.
    pub(crate) fn address_and_size(&self) -> (u64, usize) {
        (self.storage.as_ptr() as u64, self.size)
    }
}

/// A loaded module.
pub(crate) struct Module {
    /// The context it was loaded in.
    pub(crate) context: &'static Context,
    /// The PTX it was loaded from; None for a binary image (cubin, fatbin).
    pub(crate) ptx: Option<Arc<str>>,
    globals: Vec<Global>,
    pub(crate) functions: Mutex<Vec<Box<Function>>>,
}

/// A kernel looked up in a module.
pub(crate) struct Function {
    pub(crate) module: *const Module,
    /// Its PTX entry name.
    pub(crate) name: CString,
    pub(crate) max_dynamic_shared: AtomicI32,
}

impl Module {
    /// A module of `context` loaded from the image at `image`.
    ///
    /// # Safety
    /// `image` must point to a NUL-terminated PTX text or to a cubin/fatbin
    /// (what `cuModuleLoadDataEx` accepts).
    pub(crate) unsafe fn load(context: &'static Context, image: *const c_void) -> Module {
        // SAFETY: every image has at least 4 bytes (a PTX text longer than its
        // NUL, or a binary's magic number).
        let magic = unsafe { std::ptr::read_unaligned(image.cast::<[u8; 4]>()) };
        let binary = magic == *b"\x7fELF" || u32::from_le_bytes(magic) == 0xBA55_ED50;
        let ptx = (!binary).then(|| {
            // SAFETY: not a binary image, so a NUL-terminated text (caller).
            let text = unsafe { CStr::from_ptr(image.cast()) };
            Arc::from(text.to_string_lossy())
        });
        let slot = Global { name: RECORD_GLOBAL.to_owned(), storage: Box::new([0]), size: 8 };
        Module { context, ptx, globals: vec![slot], functions: Mutex::new(Vec::new()) }
    }

    /// The global `name`, if the module has one.
    pub(crate) fn global(&self, name: &CStr) -> Option<&Global> {
        self.globals.iter().find(|g| *g.name == *name)
    }

    /// The address of the context's panic record that cuda-core stored in
    /// the module's slot (0: none).
    pub(crate) fn panic_record(&self) -> u64 {
        self.global(RECORD_GLOBAL).map_or(0, |g| g.storage[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> &'static Context {
        // A context of its own: modules only remember theirs.
        crate::context::test_context()
    }

    #[test]
    fn a_module_keeps_its_ptx_and_answers_the_panic_slot() {
        let ptx = c".version 8.7\n.target sm_90\n.visible .entry k() { ret; }\n";
        // SAFETY: a NUL-terminated PTX text.
        let m = unsafe { Module::load(context(), ptx.as_ptr().cast()) };
        assert_eq!(m.ptx.as_deref(), Some(ptx.to_str().unwrap()));
        assert_eq!(m.panic_record(), 0);
        let (address, size) = m.global(RECORD_GLOBAL).unwrap().address_and_size();
        assert_eq!(size, 8);
        // SAFETY: the slot's own 8 bytes, as cuda-core writes them.
        unsafe { (address as *mut u64).write(0x1234) };
        assert_eq!(m.panic_record(), 0x1234);
        assert!(m.global(c"other").is_none());
    }

    #[test]
    fn a_binary_image_has_no_ptx() {
        let elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0";
        // SAFETY: a cubin's first bytes (only the magic number is read).
        let m = unsafe { Module::load(context(), elf.as_ptr().cast()) };
        assert!(m.ptx.is_none());
    }
}
