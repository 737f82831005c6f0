//! The one place that decides what runs this process's kernels: the GPU
//! (the NVIDIA driver, `libcuda.so.1`) or the CPU emulator in one of its
//! modes (`OXIDE_EMULATE`, read once). The decision is made when the driver
//! table is loaded, and everything above asks it through [`Backend`] (a
//! context's [`CudaContext::backend`](crate::CudaContext::backend)), never
//! the environment.

use std::sync::OnceLock;

use cuda_driver_sys::{DriverApi, LoadError};
use cuda_emulator::{Mode, ModeError};

/// What runs the kernels of this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The NVIDIA driver and a GPU.
    Gpu,
    /// The CPU emulator (`OXIDE_EMULATE`), running launches in this mode.
    Emulator(Mode),
}

impl Backend {
    /// Whether kernels run on the CPU emulator.
    pub fn is_emulated(self) -> bool {
        matches!(self, Backend::Emulator(_))
    }

    /// Whether launches run the PTX (or cubin) the device linker produced:
    /// on a GPU, and in the emulator's device-code mode. In host-code mode
    /// a launch runs the kernel's Rust code instead, so which PTX entry is
    /// launched makes no difference there.
    pub fn runs_device_code(self) -> bool {
        !matches!(self, Backend::Emulator(Mode::HostCode))
    }
}

/// Why no driver table could be had.
#[derive(Clone, Debug)]
pub(crate) enum LoadFailure {
    /// `OXIDE_EMULATE` names no mode.
    BadMode(ModeError),
    /// The NVIDIA driver could not be loaded.
    Driver(LoadError),
}

/// The loaded table and what it is.
pub(crate) struct Loaded {
    pub(crate) api: DriverApi,
    pub(crate) backend: Backend,
}

/// The backend `OXIDE_EMULATE` selects (read once; nothing is loaded).
pub(crate) fn selected() -> Result<Backend, &'static ModeError> {
    static SELECTED: OnceLock<Result<Backend, ModeError>> = OnceLock::new();
    SELECTED
        .get_or_init(|| Mode::from_env().map(|mode| mode.map_or(Backend::Gpu, Backend::Emulator)))
        .as_ref()
        .copied()
}

static LOADED: OnceLock<Result<Loaded, LoadFailure>> = OnceLock::new();

/// The driver table of the selected backend, loaded on first use.
pub(crate) fn load() -> &'static Result<Loaded, LoadFailure> {
    LOADED.get_or_init(|| match selected() {
        Err(e) => Err(LoadFailure::BadMode(e.clone())),
        Ok(Backend::Emulator(mode)) => Ok(Loaded { api: cuda_emulator::driver_api(mode), backend: Backend::Emulator(mode) }),
        Ok(Backend::Gpu) => DriverApi::load_libcuda()
            .map(|api| Loaded { api, backend: Backend::Gpu })
            .map_err(LoadFailure::Driver),
    })
}

/// The table if it has already been loaded successfully (never loads it).
pub(crate) fn loaded() -> Option<&'static Loaded> {
    LOADED.get().and_then(|r| r.as_ref().ok())
}
