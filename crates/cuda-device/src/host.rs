//! What an intrinsic stub does when host code calls it: ask the installed
//! emulator, or fail.

use core::sync::atomic::{AtomicPtr, Ordering};

use crate::emulation::Hooks;

/// The emulator's table, once one is installed (null before).
static HOOKS: AtomicPtr<Hooks> = AtomicPtr::new(core::ptr::null_mut());

/// The installed emulator's hooks, if any.
#[inline]
pub(crate) fn hooks() -> Option<&'static Hooks> {
    let table = HOOKS.load(Ordering::Acquire);
    // SAFETY: only `install` stores here, and only a `&'static Hooks`.
    unsafe { table.as_ref() }
}

/// Installs `table` for every later stub call of the process.
pub(crate) fn install(table: &'static Hooks) {
    HOOKS.store(table as *const Hooks as *mut Hooks, Ordering::Release);
}

/// Aborts: `intrinsic` only exists on the GPU (or in an emulated launch).
///
/// Stubs are `extern "C"`, so this panic cannot unwind out of them; the process
/// aborts after printing the message, which is what we want for a call that can
/// only be a mistake (a kernel called like a function instead of launched).
#[cold]
pub(crate) fn not_on_device(intrinsic: &str) -> ! {
    panic!(
        "oxide: the GPU intrinsic `{intrinsic}` was called on the host. \
         Kernels run on the GPU: launch them with `cuda_launch!` instead of calling them \
         (or run them on the CPU with `cargo oxide run --emulate` / OXIDE_EMULATE=1)."
    )
}

/// What a kernel's `ptx_asm!` does when its Rust runs on the host outside
/// an emulated launch (inside one, the emulator's `ptx_asm` hook fails the
/// launch instead): the PTX has no host code to run.
#[cold]
pub(crate) fn inline_ptx_on_host() -> ! {
    panic!(
        "oxide: a kernel ran inline PTX (`ptx_asm!`) as host code. Inline PTX runs only on the \
         GPU or on the PTX VM: run with `cargo oxide run --emulate=ptx` (or OXIDE_EMULATE=ptx), \
         not `--emulate=host`, or on a GPU."
    )
}

/// A stub the installed emulator has no implementation for: its `unmodelled`
/// hook fails the emulated thread (and so the launch) naming `intrinsic`.
#[cold]
pub(crate) fn unmodelled(hooks: &Hooks, intrinsic: &'static str) -> ! {
    match hooks.unmodelled {
        Some(fail) => fail(intrinsic),
        None => not_on_device(intrinsic),
    }
}

/// The host definition of a CUDA C++ device function that a kernel calls
/// (the device linker's host stub, HostStubs.cpp, calls this with
/// `"name (file.cu)"`): kernel bodies are host code too, but only the GPU and
/// the PTX emulator can run CUDA C++. It panics, so a host-emulated launch
/// fails with this message; `C-unwind` lets the panic leave through the stub.
#[doc(hidden)]
#[export_name = "__oxide_device_source_called_on_host"]
pub unsafe extern "C-unwind" fn device_source_called_on_host(name: *const u8, len: usize) -> ! {
    // SAFETY: the stub passes a UTF-8 string of `len` bytes in its read-only
    // data, which lives as long as the program.
    let name = unsafe { core::str::from_utf8_unchecked(core::slice::from_raw_parts(name, len)) };
    panic!(
        "oxide: `{name}` is CUDA C++ device code, which host code cannot run: a kernel that calls \
         it runs on a GPU or on the PTX emulator (`cargo oxide run --emulate=ptx`), not as host code \
         (--emulate=host)"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_stub_handler_has_the_abi_name() {
        // export_name wants a literal; Abi.def is the name's one home.
        assert_eq!(crate::abi::DEVICE_SOURCE_ON_HOST, "__oxide_device_source_called_on_host");
    }
}
