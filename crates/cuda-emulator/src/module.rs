//! Emulated modules and functions: what a loaded image keeps for the
//! executors.
//!
//! In device-code mode a module is its PTX, parsed and decoded once at load
//! by `ptx-vm` ([`Code::Program`]); its `.global` and `.const` variables
//! live in the VM module, and they are the module's globals: what
//! `cuModuleGetGlobal` answers, what `set_constant` writes and the device
//! code reads, the panic-record slot the device code's panics go through.
//!
//! In host-code mode the PTX is not parsed to run ([`Code::Unparsed`]): the
//! kernel's host code comes with each launch, and `#[constant]` statics are
//! the host statics themselves. The one global such a module answers is the
//! panic-record slot, through which the engine writes a panic into the
//! context's record. Its text is kept for one question, asked only when a
//! launch or a query needs the answer: how much static shared memory a GPU
//! gives a kernel.
//!
//! Each [`Function`] gets the GPU's shared memory limits: a block's static
//! and dynamic shared memory together within 48 KiB unless the kernel's
//! dynamic limit is raised, and no raise past the device's opt-in maximum
//! less the static part, the static part being what ptxas allocates to that
//! kernel (`ptx_vm::static_shared_per_kernel`), not the whole module's. A
//! launch that passes emulated is then not refused on the GPU for it.
//!
//! A binary image (cubin, fatbin) is kept as [`Code::Binary`]: the emulator
//! cannot run it in device-code mode, and says so at the launch. cuda-host
//! never hands one to the emulator (it loads the PTX).

use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};

use cuda_driver_sys::panic_record::RECORD_GLOBAL;

use crate::context::Context;
use crate::mode::Mode;

/// What a module runs.
pub(crate) enum Code {
    /// The PTX, parsed and decoded (device-code mode).
    Program(ptx_vm::Module),
    /// PTX, not parsed to run (host-code mode, where the kernels' host code
    /// runs): the text, and each kernel's static shared memory, measured from
    /// it when first needed ([`Function::static_shared`]).
    Unparsed { ptx: String, static_shared: OnceLock<HashMap<String, u32>> },
    /// A cubin or fatbin.
    Binary,
}

/// A loaded module.
pub(crate) struct Module {
    /// The context it was loaded in.
    pub(crate) context: &'static Context,
    pub(crate) code: Code,
    /// The panic-record slot of a module that is not a program (the
    /// program's own `__oxide_panic_record` serves otherwise).
    slot: Box<u64>,
    /// Boxed: a function's handle is its address, which must not move when
    /// the vector grows.
    #[allow(clippy::vec_box)]
    pub(crate) functions: Mutex<Vec<Box<Function>>>,
}

/// A kernel looked up in a module.
pub(crate) struct Function {
    pub(crate) module: *const Module,
    /// Its PTX entry name.
    pub(crate) name: CString,
    /// Bytes of static shared memory a GPU gives a block of it, measured
    /// when first asked ([`Function::static_shared`]).
    static_shared: OnceLock<u32>,
    /// Its dynamic shared memory limit
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`) once raised;
    /// [`UNRAISED`] until then ([`Function::max_dynamic_shared`]).
    raised_dynamic_shared: AtomicI32,
    /// The host code the kernel was last launched with (a graph node made
    /// through the driver table runs it in host-code mode).
    pub(crate) host_code: Mutex<Option<crate::engine::HostKernel>>,
}

/// [`Function::raised_dynamic_shared`] before any raise.
const UNRAISED: i32 = -1;

impl Function {
    /// The kernel `name` of `module`.
    pub(crate) fn new(module: *const Module, name: CString) -> Function {
        Function {
            module,
            name,
            static_shared: OnceLock::new(),
            raised_dynamic_shared: AtomicI32::new(UNRAISED),
            host_code: Mutex::new(None),
        }
    }

    fn module(&self) -> &Module {
        // SAFETY: a function's module outlives it.
        unsafe { &*self.module }
    }

    /// Bytes of static shared memory a GPU gives a block of this kernel. In
    /// host-code mode the first call measures the module's PTX (parsing it,
    /// once for the module), so launches without dynamic shared memory and
    /// programs that ask no attribute never pay for it.
    pub(crate) fn static_shared(&self) -> u32 {
        *self.static_shared.get_or_init(|| self.module().static_shared(&self.name))
    }

    /// [`static_shared`](Function::static_shared) where it costs nothing to
    /// know: always in device-code mode, in host-code mode once measured.
    pub(crate) fn static_shared_if_known(&self) -> Option<u32> {
        match self.static_shared.get() {
            Some(&known) => Some(known),
            None => matches!(self.module().code, Code::Program(_)).then(|| self.static_shared()),
        }
    }

    /// The dynamic shared memory limit: as raised, else what
    /// [`SHARED_PER_BLOCK`](crate::limits::SHARED_PER_BLOCK) leaves beside
    /// the static part.
    pub(crate) fn max_dynamic_shared(&self) -> u32 {
        match self.raised_dynamic_shared.load(Ordering::Relaxed) {
            UNRAISED => crate::limits::SHARED_PER_BLOCK.saturating_sub(self.static_shared()),
            raised => raised as u32,
        }
    }

    /// Sets the dynamic shared memory limit; false (nothing changed) past
    /// what the opt-in maximum leaves beside the static part, as the driver
    /// refuses it.
    pub(crate) fn raise_dynamic_shared(&self, bytes: u32) -> bool {
        let room = crate::limits::SHARED_PER_BLOCK_OPTIN.saturating_sub(self.static_shared());
        if bytes > room {
            return false;
        }
        self.raised_dynamic_shared.store(bytes as i32, Ordering::Relaxed);
        true
    }
}

impl Module {
    /// A module of `context` loaded from the image at `image` for launches
    /// in `mode`; in device-code mode its PTX is parsed now, and a text that
    /// does not parse is an error (its message is the JIT log's text).
    ///
    /// # Safety
    /// `image` must point to a NUL-terminated PTX text or to a cubin/fatbin
    /// (what `cuModuleLoadDataEx` accepts).
    pub(crate) unsafe fn load(context: &'static Context, image: *const c_void, mode: Mode) -> Result<Module, String> {
        // SAFETY: every image has at least 4 bytes (a PTX text longer than its
        // NUL, or a binary's magic number).
        let magic = unsafe { std::ptr::read_unaligned(image.cast::<[u8; 4]>()) };
        let binary = magic == *b"\x7fELF" || u32::from_le_bytes(magic) == 0xBA55_ED50;
        let code = if binary {
            Code::Binary
        } else {
            match mode {
                Mode::DeviceCode => {
                    // SAFETY: not a binary image, so a NUL-terminated text (caller).
                    let text = unsafe { CStr::from_ptr(image.cast()) }.to_string_lossy();
                    Code::Program(ptx_vm::Module::parse(&text).map_err(|e| e.to_string())?)
                }
                Mode::HostCode => {
                    // SAFETY: as above.
                    let ptx = unsafe { CStr::from_ptr(image.cast()) }.to_string_lossy().into_owned();
                    Code::Unparsed { ptx, static_shared: OnceLock::new() }
                }
            }
        };
        Ok(Module { context, code, slot: Box::new(0), functions: Mutex::new(Vec::new()) })
    }

    /// The global `name` (its address, which is the host address, and its
    /// size), if the module has one.
    pub(crate) fn global(&self, name: &CStr) -> Option<(u64, usize)> {
        match &self.code {
            Code::Program(program) => {
                let g = program.global(name.to_str().ok()?)?;
                Some((g.address, g.size))
            }
            Code::Unparsed { .. } | Code::Binary => {
                (name == RECORD_GLOBAL).then_some((&*self.slot as *const u64 as u64, std::mem::size_of::<u64>()))
            }
        }
    }

    /// Whether `name` is a kernel of the module; `None` where the module is
    /// not parsed (host-code mode, binary images) and so cannot tell.
    pub(crate) fn has_kernel(&self, name: &CStr) -> Option<bool> {
        match &self.code {
            Code::Program(program) => Some(name.to_str().is_ok_and(|n| program.kernel(n).is_some())),
            Code::Unparsed { .. } | Code::Binary => None,
        }
    }

    /// The PTX ISA version the text declares (`.version 8.7` is 87), as
    /// `CU_FUNC_ATTRIBUTE_PTX_VERSION` gives it; 0 for a binary image.
    pub(crate) fn ptx_version(&self) -> u32 {
        let text = match &self.code {
            Code::Program(program) => program.source(),
            Code::Unparsed { ptx, .. } => ptx.as_str(),
            Code::Binary => return 0,
        };
        let version = text.lines().find_map(|l| l.trim().strip_prefix(".version")).map(str::trim);
        let Some((major, minor)) = version.and_then(|v| v.split_once('.')) else { return 0 };
        let digits = |s: &str| s.trim().parse::<u32>().ok();
        match (digits(major), digits(minor)) {
            (Some(major), Some(minor)) => major * 10 + minor,
            _ => 0,
        }
    }

    /// Bytes of static shared memory a GPU gives a block of kernel `name`;
    /// 0 for a binary image, or PTX that does not parse (a launch of it
    /// fails anyway).
    pub(crate) fn static_shared(&self, name: &CStr) -> u32 {
        let Ok(name) = name.to_str() else { return 0 };
        match &self.code {
            Code::Program(program) => program.kernel_static_shared(name).unwrap_or(0),
            Code::Unparsed { ptx, static_shared } => {
                let sizes = static_shared.get_or_init(|| ptx_vm::static_shared_per_kernel(ptx).unwrap_or_default());
                sizes.get(name).copied().unwrap_or(0)
            }
            Code::Binary => 0,
        }
    }

    /// The most threads a block of kernel `name` may have (its `.maxntid` or
    /// `.reqntid`, else the device's 1024).
    pub(crate) fn max_threads_per_block(&self, name: &CStr) -> u32 {
        let Code::Program(program) = &self.code else { return 1024 };
        let Some(kernel) = name.to_str().ok().and_then(|n| program.kernel(n)) else { return 1024 };
        match kernel.reqntid.or(kernel.maxntid) {
            Some([x, y, z]) => x.saturating_mul(y).saturating_mul(z).min(1024),
            None => 1024,
        }
    }

    /// Kernel `name`'s compile-time cluster shape (`.reqnctapercluster`),
    /// [0, 0, 0] without one or where the module is not parsed.
    pub(crate) fn required_cluster(&self, name: &CStr) -> [u32; 3] {
        let Code::Program(program) = &self.code else { return [0; 3] };
        name.to_str().ok().and_then(|n| program.kernel(n)).and_then(|k| k.reqnctapercluster).unwrap_or([0; 3])
    }

    /// The address of the context's panic record that cuda-core stored in
    /// the module's slot (0: none, or no slot).
    pub(crate) fn panic_record(&self) -> u64 {
        match self.global(RECORD_GLOBAL) {
            // SAFETY: the slot's 8 bytes, owned by the module; cuda-core
            // writes them at load, before any launch.
            Some((address, 8)) => unsafe { std::ptr::read_volatile(address as *const u64) },
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> &'static Context {
        // A context of its own: modules only remember theirs.
        crate::context::test_context()
    }

    const PTX: &CStr = c".version 8.7\n.target sm_90\n.address_size 64\n.visible .entry k() { ret; }\n";

    #[test]
    fn host_code_does_not_parse_and_answers_the_panic_slot() {
        // SAFETY: a NUL-terminated PTX text.
        let m = unsafe { Module::load(context(), PTX.as_ptr().cast(), Mode::HostCode) }.unwrap();
        assert!(matches!(&m.code, Code::Unparsed { .. }));
        assert_eq!(m.panic_record(), 0);
        let (address, size) = m.global(RECORD_GLOBAL).unwrap();
        assert_eq!(size, 8);
        // SAFETY: the slot's own 8 bytes, as cuda-core writes them.
        unsafe { (address as *mut u64).write(0x1234) };
        assert_eq!(m.panic_record(), 0x1234);
        assert!(m.global(c"other").is_none());
        assert_eq!(m.has_kernel(c"anything"), None);
    }

    #[test]
    fn device_code_parses_once_and_its_globals_are_the_programs() {
        let ptx = c".version 8.7\n.target sm_90\n.address_size 64\n\
            .visible .global .align 8 .u64 __oxide_panic_record;\n\
            .visible .const .align 4 .u32 COEFF[4] = {1, 2, 3, 4};\n\
            .visible .entry k() .maxntid 64, 2, 1 { ret; }\n";
        // SAFETY: a NUL-terminated PTX text.
        let m = unsafe { Module::load(context(), ptx.as_ptr().cast(), Mode::DeviceCode) }.unwrap();
        let Code::Program(program) = &m.code else { panic!("not parsed") };
        let (address, size) = m.global(c"COEFF").unwrap();
        assert_eq!((address, size), (program.global("COEFF").unwrap().address, 16));
        // SAFETY: the variable's 16 bytes, initialised by the VM.
        assert_eq!(unsafe { *(address as *const [u32; 4]) }, [1, 2, 3, 4]);
        let (slot, 8) = m.global(RECORD_GLOBAL).unwrap() else { panic!("an 8-byte slot") };
        // SAFETY: the program's slot, 8 bytes.
        unsafe { (slot as *mut u64).write(0xABCD) };
        assert_eq!(m.panic_record(), 0xABCD);
        assert_eq!(m.has_kernel(c"k"), Some(true));
        assert_eq!(m.has_kernel(c"COEFF"), Some(false));
        assert_eq!(m.max_threads_per_block(c"k"), 128);
    }

    #[test]
    fn device_code_without_panics_has_no_slot() {
        // SAFETY: a NUL-terminated PTX text.
        let m = unsafe { Module::load(context(), PTX.as_ptr().cast(), Mode::DeviceCode) }.unwrap();
        assert!(m.global(RECORD_GLOBAL).is_none(), "as on the GPU: no panicking code, no slot");
        assert_eq!(m.panic_record(), 0);
    }

    #[test]
    fn ptx_that_does_not_parse_is_an_error_with_its_place() {
        let bad = c".version 8.7\n.target sm_90\n.address_size 64\n.visible .entry k() { ret; \n";
        // SAFETY: a NUL-terminated PTX text.
        let e = unsafe { Module::load(context(), bad.as_ptr().cast(), Mode::DeviceCode) }.err().unwrap();
        assert!(e.starts_with("PTX line "), "{e}");
    }

    #[test]
    fn a_binary_image_is_kept_as_such() {
        let elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0";
        for mode in [Mode::HostCode, Mode::DeviceCode] {
            // SAFETY: a cubin's first bytes (only the magic number is read).
            let m = unsafe { Module::load(context(), elf.as_ptr().cast(), mode) }.unwrap();
            assert!(matches!(m.code, Code::Binary));
        }
    }
}
