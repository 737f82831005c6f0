//! Loading an embedded image as a CUDA module.

use crate::registry::{embedded_modules, find_constant, EmbeddedModule};
use cuda_device::{Constant, DeviceGlobal, GlobalData};
use crate::check::KernelLimits;
use crate::HostError;

/// `CUfunction_attribute` number of the dynamic shared memory limit.
pub(crate) const CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: i32 = 8;
use cuda_core::emulator::Mode as EmulationMode;
use cuda_core::{Backend, CudaContext, CudaFunction, CudaModule, LaunchConfig};
use std::sync::atomic::{AtomicU64, Ordering};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A kernel's function and its largest block, looked up once.
type LoadedFunction = (CudaFunction, u32);

/// `CUfunction_attribute` numbers of a kernel's compile-time cluster shape
/// (`#[kernel(cluster_dims(..))]`, PTX `.reqnctapercluster`); 0 without one.
const CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER: [i32; 3] = [11, 12, 13];

/// What a launch of a kernel's own entry needs: the function, the limits
/// the launch must respect, its compile-time cluster shape.
pub(crate) type LaunchFunction<'m> = (&'m CudaFunction, KernelLimits, Option<(u32, u32, u32)>);

/// A kernel's own entry as launches need it, looked up once.
struct KernelFunction {
    function: CudaFunction,
    /// Its largest block.
    max_threads: u32,
    /// Its compile-time cluster shape, if it has one.
    required_cluster: Option<(u32, u32, u32)>,
}

/// An embedded device image loaded on one context; launch its kernels with
/// [`cuda_launch!`](crate::cuda_launch).
pub struct KernelModule {
    image: &'static EmbeddedModule,
    module: Arc<CudaModule>,
    /// Per kernel of the image (same index): its function and largest block,
    /// looked up on first launch. Lock-free afterwards, so a launch borrows
    /// the function instead of cloning it.
    functions: Box<[OnceLock<KernelFunction>]>,
    /// The same for the kernels' unchecked entries (None: the kernel has
    /// none, or the loaded PTX lacks it).
    unchecked: Box<[OnceLock<Option<LoadedFunction>>]>,
    /// Launches that ran an unchecked entry.
    unchecked_launches: AtomicU64,
    /// CUDA C++ kernels launched through `extern_kernels!` launchers: the
    /// function and its PTX parameters' sizes, by name, looked up once.
    extern_functions: Mutex<HashMap<String, (CudaFunction, Vec<usize>)>>,
    /// Loaded from the image's cubin (not JIT-compiled from its PTX).
    precompiled: bool,
    /// On the CPU emulator, running the image's own PTX: the cubin the
    /// device linker assembled from it, whose register counts limit each
    /// kernel's block as the GPU would ([`crate::cubin`]).
    registers_from: Option<&'static [u8]>,
}

impl std::fmt::Debug for KernelModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelModule").field("name", &self.image.name).finish_non_exhaustive()
    }
}

/// Loads the device image named `name` (the crate name of the binary or
/// library whose kernels it holds) on `ctx`.
///
/// When the program carries exactly one image, any name that is not the name
/// of another image selects it, so a binary renamed by its package still
/// finds its kernels; the error lists the images otherwise.
///
/// On a GPU whose compute capability is the architecture the program was
/// built for, the module is the cubin the device linker assembled (no JIT
/// compilation at load); elsewhere, or if the driver refuses the cubin, the
/// driver compiles the PTX. [`KernelModule::is_precompiled`] tells which.
pub fn load_kernel_module(ctx: &Arc<CudaContext>, name: &str) -> Result<KernelModule, HostError> {
    let image = find_image(name)?;
    if let Some(module) = load_cubin(ctx, image) {
        return Ok(KernelModule::new(image, module, true));
    }
    let mut module = load_image_with_ptx(ctx, image, image.ptx())?;
    if ctx.backend().is_emulated() {
        module.registers_from = image.cubin.map(|c| c.bytes);
    }
    Ok(module)
}

/// The image's cubin loaded on `ctx`, where it suits the GPU.
fn load_cubin(ctx: &Arc<CudaContext>, image: &EmbeddedModule) -> Option<Arc<CudaModule>> {
    let cubin = image.cubin?;
    if ctx.backend().is_emulated() {
        return None; // the emulator keeps PTX (its device-code mode runs it)
    }
    let (major, minor) = ctx.compute_capability().ok()?;
    if major * 10 + minor != cubin.sm {
        return None;
    }
    ctx.load_module_image(cubin.bytes).ok()
}

/// Loads the device image named `name` as [`load_kernel_module`] does, but
/// from `ptx` instead of the PTX the device linker embedded: PTX that a tool
/// rewrote, or another build of the same kernels (the benchmarks use it to
/// time variants of the device linker's output without rebuilding).
///
/// A kernel that is missing fails at its first launch.
///
/// # Safety
/// The safe launches of the returned module trust `ptx` as they trust the
/// device linker's own output, checking nothing but the kernel's name: each
/// kernel of the image that `ptx` defines must have the same parameters and
/// keep the same promises as the one the device linker built (memory
/// touched only through its arguments, as its Rust signature allows, no
/// writes through `&[T]`, each thread's `DisjointSlice` element its own).
/// Any other PTX, launched through a safe call, can corrupt memory or race.
pub unsafe fn load_kernel_module_from_ptx(ctx: &Arc<CudaContext>, name: &str, ptx: &str) -> Result<KernelModule, HostError> {
    load_image_with_ptx(ctx, find_image(name)?, ptx)
}

fn load_image_with_ptx(ctx: &Arc<CudaContext>, image: &'static EmbeddedModule, ptx: &str) -> Result<KernelModule, HostError> {
    refuse_wrong_gpu(ctx, image, ptx)?;
    Ok(KernelModule::new(image, ctx.load_module_ptx(ptx)?, false))
}

mod targets {
    include!(concat!(env!("OUT_DIR"), "/targets.rs"));
}

/// The target a PTX text names on its `.target` line (`sm_100a`).
fn ptx_target(ptx: &str) -> Option<&str> {
    let line = ptx.lines().map(str::trim).find(|l| l.starts_with(".target"))?;
    line[".target".len()..].split(|c: char| c == ',' || c.is_whitespace()).find(|w| !w.is_empty())
}

/// Refuses PTX that the GPU cannot run, before the driver's JIT would fail
/// with a bare CUDA_ERROR_INVALID_PTX (or NO_BINARY_FOR_GPU): an
/// architecture-specific target on another GPU, a family one outside its
/// family, a target newer than the GPU. Targets the table lacks are left to
/// the driver; the emulator runs every target's PTX.
fn refuse_wrong_gpu(ctx: &Arc<CudaContext>, image: &EmbeddedModule, ptx: &str) -> Result<(), HostError> {
    if ctx.backend().is_emulated() {
        return Ok(());
    }
    let Some(target) = ptx_target(ptx) else { return Ok(()) };
    let Ok((major, minor)) = ctx.compute_capability() else { return Ok(()) };
    match targets::target_runs_on(target, major * 10 + minor) {
        Some(false) => Err(HostError::WrongGpu {
            module: image.name.to_string(),
            built_for: target.to_string(),
            gpu: (major, minor),
        }),
        _ => Ok(()),
    }
}

/// The embedded image named `name` (or the only one; see [`load_kernel_module`]).
fn find_image(name: &str) -> Result<&'static EmbeddedModule, HostError> {
    let images = embedded_modules();
    images
        .iter()
        .find(|m| m.name == name)
        .or_else(|| if images.len() == 1 { images.first() } else { None })
        .ok_or_else(|| match crate::registry::foreign_record_versions().first() {
            Some(version) if images.is_empty() => HostError::ImageVersionMismatch { found: version.clone() },
            _ => HostError::ModuleNotFound {
                name: name.to_string(),
                available: images.iter().map(|m| m.name.to_string()).collect(),
            },
        })
}

impl KernelModule {
    fn new(image: &'static EmbeddedModule, module: Arc<CudaModule>, precompiled: bool) -> KernelModule {
        let functions = image.kernels.iter().map(|_| OnceLock::new()).collect();
        let unchecked = image.kernels.iter().map(|_| OnceLock::new()).collect();
        KernelModule {
            image,
            module,
            functions,
            unchecked,
            unchecked_launches: AtomicU64::new(0),
            extern_functions: Mutex::new(HashMap::new()),
            precompiled,
            registers_from: None,
        }
    }

    /// The largest block of `function` (PTX name `name`): the driver's
    /// answer, and on the emulator also what the kernel's registers allow on
    /// a GPU, so that an emulated launch is refused where the GPU's would be.
    fn max_block(&self, function: &CudaFunction, name: &str) -> Result<u32, HostError> {
        let driver = function.max_threads_per_block()?;
        let registers = self.registers_from.and_then(|cubin| crate::cubin::register_count(cubin, name));
        Ok(registers.map_or(driver, |r| driver.min(crate::cubin::max_threads_for_registers(r))))
    }

    /// Whether the module was loaded from the device linker's cubin (SASS
    /// for this GPU, no JIT at load) rather than compiled from PTX by the
    /// driver.
    pub fn is_precompiled(&self) -> bool {
        self.precompiled
    }

    /// The module's name.
    pub fn name(&self) -> &'static str {
        self.image.name
    }

    /// The embedded image (PTX and kernel list).
    pub fn image(&self) -> &'static EmbeddedModule {
        self.image
    }

    /// How many launches from this module ran a kernel's unchecked entry
    /// (the device linker's copy without the bounds checks that the launch
    /// condition implies; see [`crate::condition`]). A diagnostic: it tells
    /// whether the fast path is taken.
    pub fn unchecked_launches(&self) -> u64 {
        self.unchecked_launches.load(Ordering::Relaxed)
    }

    /// The loaded CUDA module.
    pub fn cuda_module(&self) -> &Arc<CudaModule> {
        &self.module
    }

    /// Replaces the value of a `#[constant]` static for the kernels launched
    /// from now on (ordered after the work already submitted).
    ///
    /// ```ignore
    /// #[constant]
    /// static COEFFS: Constant<[f32; 4]> = Constant::new([1.0, 0.0, 0.0, 0.0]);
    /// module.set_constant(&COEFFS, &[0.5, 0.25, 0.125, 0.0625])?;
    /// ```
    pub fn set_constant<T: Copy>(&self, constant: &'static Constant<T>, value: &T) -> Result<(), HostError> {
        let address = constant as *const Constant<T> as *const u8;
        if self.module.context().backend() == Backend::Emulator(EmulationMode::HostCode) {
            // Kernels run as host code read the host static itself. Launches
            // have finished when they return (emulated streams run work at once).
            self.module.context().synchronize()?;
            // SAFETY: `Constant<T>` is a transparent `UnsafeCell<T>`, so the
            // static lives in writable memory; no emulated kernel runs now,
            // and host code only reads it through `Deref` between launches.
            unsafe { std::ptr::write_volatile(constant.as_ptr(), *value) };
            return Ok(());
        }
        let name = self.named_static(address, HostError::ConstantNotEmbedded)?;
        // SAFETY: `value` is a live `T: Copy`; its bytes are exactly what the
        // kernels read through `Constant<T>` (repr(transparent) over T).
        let bytes = unsafe { std::slice::from_raw_parts(value as *const T as *const u8, std::mem::size_of::<T>()) };
        self.module.write_global(name, bytes)?;
        Ok(())
    }

    /// The PTX name of a static of this module that the host reaches by its
    /// address (a `#[constant]` or `#[device_global]`).
    fn named_static(&self, address: *const u8, missing: HostError) -> Result<&'static str, HostError> {
        let (image, entry) = find_constant(address).ok_or(missing)?;
        if !std::ptr::eq(image, self.image) {
            return Err(HostError::ConstantNotInModule {
                module: self.image.name.to_string(),
                found_in: image.name.to_string(),
            });
        }
        Ok(entry.ptx_name)
    }

    /// The value of a `#[device_global]` static that the kernels launched so
    /// far left (waits for them to finish).
    ///
    /// ```ignore
    /// #[device_global]
    /// static HITS: AtomicU32 = AtomicU32::new(0);
    /// let hits: u32 = module.read_global(&HITS)?.into_inner();
    /// ```
    pub fn read_global<T: GlobalData>(&self, global: &'static DeviceGlobal<T>) -> Result<T, HostError> {
        if self.module.context().backend() == Backend::Emulator(EmulationMode::HostCode) {
            // Kernels run as host code change the host static itself.
            self.module.context().synchronize()?;
            // SAFETY: no emulated kernel runs now (emulated streams run work
            // at once, and the context is idle); `T: GlobalData` has no drop
            // glue, so the bitwise copy leaves the static intact.
            return Ok(unsafe { std::ptr::read_volatile(global.as_mut_ptr()) });
        }
        let name = self.named_static(global.as_mut_ptr() as *const u8, HostError::GlobalNotEmbedded)?;
        let mut value = std::mem::MaybeUninit::<T>::uninit();
        // SAFETY: the slice is the `size_of::<T>()` bytes of `value`, written
        // whole by `read_global` (it checks the size) before they are read.
        let bytes = unsafe { std::slice::from_raw_parts_mut(value.as_mut_ptr() as *mut u8, std::mem::size_of::<T>()) };
        self.module.read_global(name, bytes)?;
        // SAFETY: the device global holds a `T` (the kernels only see it as
        // one), and `T: GlobalData` holds no pointers that would be device
        // addresses here.
        Ok(unsafe { value.assume_init() })
    }

    /// Replaces the value of a `#[device_global]` static for the kernels
    /// launched from now on (ordered after the work already submitted).
    ///
    /// ```ignore
    /// #[device_global]
    /// static LIMIT: u32 = 10;
    /// module.write_global(&LIMIT, 20)?;
    /// ```
    pub fn write_global<T: GlobalData>(&self, global: &'static DeviceGlobal<T>, value: T) -> Result<(), HostError> {
        if self.module.context().backend() == Backend::Emulator(EmulationMode::HostCode) {
            self.module.context().synchronize()?;
            // SAFETY: no emulated kernel runs now, and `DeviceGlobal<T>` is a
            // transparent `UnsafeCell<T>` (writable memory); `T: GlobalData`
            // has no drop glue, so overwriting the old value loses nothing.
            unsafe { std::ptr::write_volatile(global.as_mut_ptr(), value) };
            return Ok(());
        }
        let name = self.named_static(global.as_mut_ptr() as *const u8, HostError::GlobalNotEmbedded)?;
        // SAFETY: `value` is a live `T`; its bytes are exactly what the kernels
        // read through `DeviceGlobal<T>` (repr(transparent) over T).
        let bytes = unsafe { std::slice::from_raw_parts(&value as *const T as *const u8, std::mem::size_of::<T>()) };
        self.module.write_global(name, bytes)?;
        Ok(())
    }

    /// The function for the image's kernel number `index` and its largest
    /// block, looked up once.
    #[inline]
    fn function_and_max_block(&self, index: usize) -> Result<&KernelFunction, HostError> {
        match self.functions[index].get() {
            Some(found) => Ok(found),
            None => self.look_up_function(index),
        }
    }

    /// [`function_and_max_block`](Self::function_and_max_block) the first time.
    #[cold]
    fn look_up_function(&self, index: usize) -> Result<&KernelFunction, HostError> {
        let slot = &self.functions[index];
        let name = self.image.kernels[index].ptx_name;
        let function = self.module.function(name)?;
        let max_threads = self.max_block(&function, name)?;
        let [x, y, z] = CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER.map(|a| function.attribute(a).unwrap_or(0).max(0) as u32);
        let required_cluster = (x > 0).then_some((x, y.max(1), z.max(1)));
        // Two threads may both look it up; either answer is the same function.
        Ok(slot.get_or_init(|| KernelFunction { function, max_threads, required_cluster }))
    }

    /// The function, the limits a launch of it must respect, and its
    /// compile-time cluster shape (`#[kernel(cluster_dims(..))]`), if it has
    /// one: all looked up once, but for the dynamic shared memory limit,
    /// which is asked each time (set_max_dynamic_shared_memory changes it),
    /// and only when the launch asks for any.
    #[inline]
    pub(crate) fn function_with_limits(
        &self,
        index: usize,
        shared_mem_bytes: u32,
    ) -> Result<LaunchFunction<'_>, HostError> {
        let KernelFunction { function: f, max_threads, required_cluster } = self.function_and_max_block(index)?;
        let max_threads_per_block = *max_threads;
        let max_dynamic_shared_bytes = if shared_mem_bytes == 0 {
            0
        } else {
            f.attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?.max(0) as u32
        };
        Ok((f, KernelLimits { max_threads_per_block, max_dynamic_shared_bytes }, *required_cluster))
    }

    /// The image's kernel `name` that no `#[kernel]` made (a CUDA C++
    /// `__global__`), with the byte size of each of its parameters.
    pub(crate) fn extern_function(&self, name: &str) -> Result<(CudaFunction, Vec<usize>), HostError> {
        let mut known = self.extern_functions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = known.get(name) {
            return Ok(found.clone());
        }
        let not_found = || HostError::ExternKernelNotFound { kernel: name.to_string(), module: self.image.name.to_string() };
        let sizes = crate::extern_kernel::entry_param_sizes(self.image.ptx(), name).ok_or_else(not_found)?;
        let function = self.module.function(name).map_err(|_| not_found())?;
        known.insert(name.to_string(), (function.clone(), sizes.clone()));
        Ok((function, sizes))
    }

    /// Counts a launch of an unchecked entry.
    pub(crate) fn note_unchecked_launch(&self) {
        self.unchecked_launches.fetch_add(1, Ordering::Relaxed);
    }

    /// The unchecked entry of kernel `index`, ready for a launch of `config`
    /// that the kernel's own entry accepts with `limits`; None where there
    /// is none or it would not take this launch.
    ///
    /// A user may have raised the kernel's dynamic shared memory limit
    /// (`CudaFunction::set_max_dynamic_shared_memory` on its entry); the
    /// unchecked entry is given the same limit before it runs with more
    /// than its own.
    #[inline]
    pub(crate) fn unchecked_function(
        &self,
        index: usize,
        config: &LaunchConfig,
        limits: KernelLimits,
    ) -> Option<&CudaFunction> {
        let (f, max_threads) = match self.unchecked[index].get() {
            Some(found) => found,
            None => self.look_up_unchecked(index),
        }
        .as_ref()?;
        if config.threads_per_block() > u64::from(*max_threads) {
            return None;
        }
        if config.shared_mem_bytes > 0 {
            return Self::share_limit(f, config, limits);
        }
        Some(f)
    }

    /// [`unchecked_function`](Self::unchecked_function)'s entry, the first time.
    #[cold]
    #[inline(never)]
    fn look_up_unchecked(&self, index: usize) -> &Option<LoadedFunction> {
        self.unchecked[index].get_or_init(|| {
            let entry = self.image.kernels[index].unchecked.as_ref()?;
            let f = self.module.function(entry.ptx_name).ok()?;
            let max_threads = self.max_block(&f, entry.ptx_name).ok()?;
            Some((f, max_threads))
        })
    }

    /// The unchecked entry `f` for a launch with dynamic shared memory: given
    /// the kernel's own entry's limit where its own is lower.
    #[inline(never)]
    fn share_limit<'f>(f: &'f CudaFunction, config: &LaunchConfig, limits: KernelLimits) -> Option<&'f CudaFunction> {
        let own = f.attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).ok()?.max(0) as u32;
        if own < config.shared_mem_bytes {
            f.set_max_dynamic_shared_memory(limits.max_dynamic_shared_bytes).ok()?;
        }
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::{ptx_target, targets::target_runs_on};

    #[test]
    fn the_target_is_read_from_the_ptx_header() {
        assert_eq!(ptx_target("//\n.version 8.6\n.target sm_100a\n.address_size 64\n"), Some("sm_100a"));
        assert_eq!(ptx_target(".version 8.1\n  .target sm_90a, debug\n"), Some("sm_90a"));
        assert_eq!(ptx_target(".version 8.1\n.address_size 64\n"), None);
    }

    #[test]
    fn each_kind_of_target_runs_where_targets_def_says() {
        // Portable: this GPU and every newer one.
        assert_eq!(target_runs_on("sm_80", 80), Some(true));
        assert_eq!(target_runs_on("sm_80", 90), Some(true));
        assert_eq!(target_runs_on("sm_90", 80), Some(false));
        // Architecture-specific: this GPU only.
        assert_eq!(target_runs_on("sm_90a", 90), Some(true));
        assert_eq!(target_runs_on("sm_90a", 100), Some(false));
        assert_eq!(target_runs_on("sm_100a", 90), Some(false));
        // Family: the GPUs of the family, not older, not the next family.
        assert_eq!(target_runs_on("sm_100f", 100), Some(true));
        assert_eq!(target_runs_on("sm_100f", 103), Some(true));
        assert_eq!(target_runs_on("sm_100f", 90), Some(false));
        assert_eq!(target_runs_on("sm_100f", 110), Some(false));
        // Unknown names are left to the driver.
        assert_eq!(target_runs_on("sm_999", 90), None);
    }
}
