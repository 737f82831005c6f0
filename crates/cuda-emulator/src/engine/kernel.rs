//! What the host-code engine runs and reports: [`HostKernel`], [`Grid`],
//! [`Fault`] and [`HostPanic`].

use std::ffi::c_void;

use cuda_driver_sys::panic_record::RawPanicRecord;

/// Host code of a kernel: what one emulated thread calls.
///
/// `call(data, params)` runs the kernel for the calling emulated thread;
/// `params` is the launch's `kernelParams` array (one pointer per parameter,
/// to the argument's bytes). `cuda-host` builds one from the kernel's entry
/// wrapper; tests build one from a closure with [`HostKernel::from_fn`].
#[derive(Clone, Copy, Debug)]
pub struct HostKernel {
    pub(super) data: *const (),
    pub(super) call: unsafe fn(*const (), *const *mut c_void),
    name: &'static str,
    /// The bytes of each parameter, where the launcher knows them (a
    /// captured launch copies its arguments by these).
    param_sizes: Option<&'static [usize]>,
}

// SAFETY: `data` is a function pointer or a `Sync` closure (see the constructors).
unsafe impl Send for HostKernel {}
// SAFETY: see `Send`.
unsafe impl Sync for HostKernel {}

impl HostKernel {
    /// A kernel whose host code is `call(data, params)`.
    ///
    /// # Safety
    /// `call` must be safe to run from many OS threads at once with `data`
    /// and the `params` of any launch this kernel is used for, and `data`
    /// must stay valid while launches of it run.
    pub unsafe fn new(data: *const (), call: unsafe fn(*const (), *const *mut c_void)) -> Self {
        HostKernel { data, call, name: "", param_sizes: None }
    }

    /// The same kernel, named `name` (its Rust path) in traces and errors.
    pub fn named(self, name: &'static str) -> Self {
        HostKernel { name, ..self }
    }

    /// The same kernel, whose parameters have `sizes` bytes each (the
    /// launcher's argument types): what a launch captured into a graph
    /// copies, when the module's PTX is not parsed (host-code mode).
    pub fn with_param_sizes(self, sizes: &'static [usize]) -> Self {
        HostKernel { param_sizes: Some(sizes), ..self }
    }

    /// The sizes given with [`with_param_sizes`](Self::with_param_sizes)
    /// (None if none were given).
    pub fn param_sizes(&self) -> Option<&'static [usize]> {
        self.param_sizes
    }

    /// The name given with [`named`](Self::named) ("" if none).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// A kernel whose body is the closure `f` (it ignores the launch's
    /// parameters; it reads its coordinates through `cuda_device::thread`).
    pub fn from_fn<F: Fn() + Sync>(f: &F) -> Self {
        unsafe fn call<F: Fn()>(data: *const (), _: *const *mut c_void) {
            // SAFETY: `data` is the `&F` given to `from_fn`.
            unsafe { (*data.cast::<F>())() }
        }
        HostKernel { data: (f as *const F).cast(), call: call::<F>, name: "", param_sizes: None }
    }
}

/// A launch to emulate.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    /// Blocks in x, y, z.
    pub grid_dim: (u32, u32, u32),
    /// Threads per block in x, y, z.
    pub block_dim: (u32, u32, u32),
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

/// Why an emulated launch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A thread panicked (bounds check, overflow, `unwrap`, `panic!`): the
    /// error a GPU launch reports too.
    Panic(HostPanic),
    /// The emulator found what the GPU would not forgive (barrier divergence,
    /// a shared-memory race, an out-of-bounds shared access, a warp
    /// collective some lane never joins, a trap), or a block that stopped
    /// making progress (a spin the host-code engine cannot switch out of).
    Emulator(String),
    /// A thread accessed a guard page of a device allocation (running off
    /// its end through a raw pointer): `CUDA_ERROR_ILLEGAL_ADDRESS` on a GPU.
    /// The message names the thread, the address and the allocation.
    IllegalAddress(String),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Panic(p) => write!(f, "{p}"),
            Fault::Emulator(m) | Fault::IllegalAddress(m) => f.write_str(m),
        }
    }
}

/// A panic of an emulated thread's kernel code, its message formatted by
/// Rust already. The launch writes it into the context's panic record as a
/// plain-text record ([`HostPanic::record`]), which cuda-core reads as it
/// reads a GPU's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPanic {
    /// The panic message.
    pub message: String,
    /// The Rust source file of the panic.
    pub file: String,
    /// Line in `file`.
    pub line: u32,
    /// Column in `file`.
    pub column: u32,
    /// `threadIdx` of the panicking thread.
    pub thread: (u32, u32, u32),
    /// `blockIdx` of that thread.
    pub block: (u32, u32, u32),
}

impl HostPanic {
    /// The record a GPU thread would leave for this panic: plain text, no
    /// values (texts longer than the record holds are cut).
    pub fn record(&self) -> RawPanicRecord {
        let (t, b) = (self.thread, self.block);
        RawPanicRecord::with_text(&self.message, &self.file, self.line, self.column, [t.0, t.1, t.2], [b.0, b.1, b.2])
    }
}

/// The line the device's panic code prints (LowerPanics.cpp), which
/// cuda-core's `DevicePanic` displays too.
impl std::fmt::Display for HostPanic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (t, b) = (self.thread, self.block);
        cuda_driver_sys::panic_record::write_panic_line(f, [t.0, t.1, t.2], [b.0, b.1, b.2], &self.file, self.line, self.column, &self.message)
    }
}
