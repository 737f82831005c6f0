//! The device images the oxide linker embedded in this executable.
//!
//! Each link that contains kernels adds one `ImageRecord` to the ELF section
//! `oxide_kernels` (docs/ABI.md §3; its name and the record's numbers come
//! from the device linker's table Abi.def, through build.rs). The static
//! linker defines `__start_oxide_kernels` and `__stop_oxide_kernels` around
//! that section in every executable and shared object, and those symbols
//! resolve within the object being linked, so the records found here are the
//! ones of the module that contains this code, also when it is a cdylib
//! loaded by another program.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use crate::abi::{IMAGE_KIND_CUBIN, IMAGE_KIND_PTX, IMAGE_MAGIC};

#[repr(C)]
struct ImageRecord {
    magic: u64,
    name_ptr: *const u8,
    name_len: u64,
    image_ptr: *const u8,
    image_len: u64,
    kernels_ptr: *const KernelRecord,
    n_kernels: u64,
    constants_ptr: *const ConstantRecord,
    n_constants: u64,
    image_kind: u32,
    reserved: u32,
}

#[repr(C)]
struct KernelRecord {
    name_ptr: *const u8,
    name_len: u64,
    host_ptr: *const i64,
    n_host: u64,
    n_params: u64,
    path_ptr: *const u8,
    path_len: u64,
    flags: u64,
    unchecked_name_ptr: *const u8,
    unchecked_name_len: u64,
    condition_ptr: *const u8,
    condition_len: u64,
    stack_bytes: u64,
}

// The record sizes of docs/ABI.md §3 (the placeholder is one ImageRecord).
const _: () = assert!(std::mem::size_of::<ImageRecord>() == 80);
const _: () = assert!(std::mem::size_of::<KernelRecord>() as u64 == crate::abi::KERNEL_RECORD_BYTES);
const _: () = assert!(std::mem::size_of::<ConstantRecord>() == 32);

#[repr(C)]
struct ConstantRecord {
    name_ptr: *const u8,
    name_len: u64,
    host_ptr: *const i64,
    size: u64,
}

/// A record that is never a real image (magic 0). It keeps the section present
/// in every program that links this crate, so the `__start_`/`__stop_` symbols
/// exist even when the program has no kernels.
#[repr(transparent)]
struct Placeholder(ImageRecord);
// SAFETY: the placeholder holds only null pointers and is never written.
unsafe impl Sync for Placeholder {}

#[used]
#[link_section = image_section!()]
static PLACEHOLDER: Placeholder = Placeholder(ImageRecord {
    magic: 0,
    name_ptr: std::ptr::null(),
    name_len: 0,
    image_ptr: std::ptr::null(),
    image_len: 0,
    kernels_ptr: std::ptr::null(),
    n_kernels: 0,
    constants_ptr: std::ptr::null(),
    n_constants: 0,
    image_kind: 0,
    reserved: 0,
});

// The bounds of the section, which the static linker defines.
extern "C" {
    #[link_name = concat!("__start_", image_section!())]
    static IMAGES_START: ImageRecord;
    #[link_name = concat!("__stop_", image_section!())]
    static IMAGES_STOP: ImageRecord;
}

/// One kernel of an embedded module.
#[derive(Debug, Clone)]
pub struct EmbeddedKernel {
    /// The `.entry` name in the PTX.
    pub ptx_name: &'static str,
    /// The kernel's Rust path (for messages).
    pub rust_path: &'static str,
    /// The number of parameters.
    pub num_params: usize,
    /// The kinds of thread index the kernel writes a `DisjointSlice`
    /// through (checked against launch shapes).
    pub thread_indices: crate::check::ThreadIndexKinds,
    /// The entry without the checks that a launch condition implies, if the
    /// device linker made one.
    pub unchecked: Option<UncheckedEntry>,
    /// The per-thread stack its entries may use through every call, which
    /// launches make sure the context has.
    pub stack: crate::StackNeed,
    host_addresses: Vec<usize>,
}

/// A kernel's second entry, launched where its condition holds.
#[derive(Debug, Clone)]
pub struct UncheckedEntry {
    /// The `.entry` name in the PTX.
    pub ptx_name: &'static str,
    /// When it may run in place of the kernel's own entry.
    pub condition: crate::LaunchCondition,
}

/// A `#[constant]` static of an embedded module.
#[derive(Debug, Clone)]
pub struct EmbeddedConstant {
    /// The `.const` variable's name in the PTX.
    pub ptx_name: &'static str,
    /// Its size in bytes.
    pub size: usize,
    host_address: Option<usize>,
}

/// A device image embedded by the oxide linker.
#[derive(Debug)]
pub struct EmbeddedModule {
    /// The module name: the crate name of the binary or library it was linked into.
    pub name: &'static str,
    /// The PTX text, NUL-terminated (the driver wants a C string).
    pub ptx_with_nul: &'static [u8],
    /// The kernels the image contains.
    pub kernels: Vec<EmbeddedKernel>,
    /// The constant-memory statics the image contains.
    pub constants: Vec<EmbeddedConstant>,
    /// The same kernels assembled for one GPU architecture, if the device
    /// linker had ptxas (and no device debug info was asked for).
    pub cubin: Option<EmbeddedCubin>,
}

/// The device linker's cubin of a module: SASS for one architecture.
#[derive(Debug, Clone, Copy)]
pub struct EmbeddedCubin {
    /// The architecture's SM number: 90 for sm_90 and sm_90a. It loads only
    /// on a GPU of that compute capability (9.0).
    pub sm: u32,
    /// The ELF image.
    pub bytes: &'static [u8],
}

impl EmbeddedModule {
    /// The PTX text.
    pub fn ptx(&self) -> &'static str {
        let text = &self.ptx_with_nul[..self.ptx_with_nul.len() - 1];
        std::str::from_utf8(text).unwrap_or("")
    }
}

/// Every module embedded in the executable or shared object containing this code.
pub fn embedded_modules() -> &'static [EmbeddedModule] {
    static MODULES: OnceLock<Vec<EmbeddedModule>> = OnceLock::new();
    MODULES.get_or_init(read_records)
}

/// A kernel found by its entry wrapper: the image, the kernel, and its
/// index in the image's kernel list (what `KernelModule` caches by).
#[derive(Clone, Copy)]
pub(crate) struct FoundKernel {
    pub image: &'static EmbeddedModule,
    pub kernel: &'static EmbeddedKernel,
    pub index: usize,
}

/// The module and kernel whose host entry wrapper lives at `entry`: a binary
/// search in an index of every host address, built on first use (launches
/// ask this every time; a program may hold hundreds of kernel instances).
#[inline]
pub(crate) fn find_kernel(entry: *const c_void) -> Option<FoundKernel> {
    let addr = entry as usize;
    // A launch of an entry launched lately (most launches) reads its slot
    // and compares one address; the search is out of line.
    let slot = &RECENT[(addr >> 4) % RECENT.len()];
    // SAFETY: a slot is null or points into BY_ADDRESS's vector, which is
    // never changed or dropped once made.
    match unsafe { slot.load(Ordering::Acquire).as_ref() } {
        Some(&(a, found)) if a == addr => Some(found),
        _ => search_kernel(addr, slot),
    }
}

/// Every host address of a kernel entry wrapper, sorted, with its kernel.
static BY_ADDRESS: OnceLock<Vec<(usize, FoundKernel)>> = OnceLock::new();

/// The entries launched lately, by address: each slot null or an entry of
/// `BY_ADDRESS`, written whole, so it is right or names another entry.
static RECENT: [AtomicPtr<(usize, FoundKernel)>; 64] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 64];

/// [`find_kernel`] of an entry not in its `slot`: a binary search, which
/// then fills the slot.
#[cold]
#[inline(never)]
fn search_kernel(addr: usize, slot: &AtomicPtr<(usize, FoundKernel)>) -> Option<FoundKernel> {
    let index = BY_ADDRESS.get_or_init(|| {
        let mut all = Vec::new();
        for image in embedded_modules() {
            for (k, kernel) in image.kernels.iter().enumerate() {
                all.extend(kernel.host_addresses.iter().map(|&a| (a, FoundKernel { image, kernel, index: k })));
            }
        }
        all.sort_unstable_by_key(|&(a, _)| a);
        all
    });
    let at = index.binary_search_by_key(&addr, |&(a, _)| a).ok()?;
    // Only ever read through (find_kernel), never written.
    slot.store(std::ptr::from_ref(&index[at]).cast_mut(), Ordering::Release);
    Some(index[at].1)
}

/// The module and constant whose host static lives at `address`.
pub(crate) fn find_constant(address: *const u8) -> Option<(&'static EmbeddedModule, &'static EmbeddedConstant)> {
    let addr = address as usize;
    embedded_modules().iter().find_map(|m| {
        m.constants.iter().find(|c| c.host_address == Some(addr)).map(|c| (m, c))
    })
}

/// The address a patched slot points to (docs/ABI.md §3), if it was patched.
///
/// # Safety
/// `slot` must point to a slot of a kernel table written by oxide-link.
unsafe fn slot_target(slot: *const i64) -> Option<usize> {
    let delta = std::ptr::read_volatile(slot);
    (delta != 0 && delta != i64::MAX).then(|| (slot as usize).wrapping_add(delta as usize))
}

/// # Safety
/// `ptr` must point to `len` readable bytes that live for the whole program.
unsafe fn static_bytes(ptr: *const u8, len: u64) -> &'static [u8] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    std::slice::from_raw_parts(ptr, len as usize)
}

/// The other versions of the record format found in the section ("OXEDIM02"
/// and the like): a binary whose images were written by a different
/// oxide-link than this cuda-host understands. Scans every 8-byte word, as
/// records of another version may have another size.
pub(crate) fn foreign_record_versions() -> Vec<String> {
    const FAMILY_MASK: u64 = 0x0000_FFFF_FFFF_FFFF;
    let (start, stop) =
        (std::ptr::addr_of!(IMAGES_START), std::ptr::addr_of!(IMAGES_STOP));
    let words = (stop as usize - start as usize) / 8;
    let base = start as *const u64;
    let mut found = Vec::new();
    for i in 0..words {
        // SAFETY: i < words: inside the section, which is 8-byte aligned.
        let word = unsafe { std::ptr::read(base.add(i)) };
        if word & FAMILY_MASK == IMAGE_MAGIC & FAMILY_MASK && word != IMAGE_MAGIC {
            let text = String::from_utf8_lossy(&word.to_le_bytes()).into_owned();
            if !found.contains(&text) {
                found.push(text);
            }
        }
    }
    found
}

fn read_records() -> Vec<EmbeddedModule> {
    std::hint::black_box(&PLACEHOLDER);
    // SAFETY: the linker places the section's records contiguously between
    // the two symbols; every record is an ImageRecord written by oxide-link or
    // the placeholder above (8-byte aligned, 80 bytes each).
    let (start, stop) =
        (std::ptr::addr_of!(IMAGES_START), std::ptr::addr_of!(IMAGES_STOP));
    let count = (stop as usize - start as usize) / std::mem::size_of::<ImageRecord>();
    let mut modules = Vec::new();
    let mut cubins = Vec::new();
    for i in 0..count {
        // SAFETY: i < count, inside the section (see above).
        let record = unsafe { &*start.add(i) };
        if record.magic != IMAGE_MAGIC {
            continue;
        }
        // SAFETY: the strings, image and arrays a real record points to are
        // constants of the same linked object, alive for the whole program.
        match record.image_kind {
            IMAGE_KIND_PTX => modules.push(unsafe { read_image(record) }),
            IMAGE_KIND_CUBIN => unsafe {
                let name = std::str::from_utf8(static_bytes(record.name_ptr, record.name_len)).unwrap_or("?");
                let bytes = static_bytes(record.image_ptr, record.image_len);
                cubins.push((name, EmbeddedCubin { sm: record.reserved, bytes }));
            },
            _ => {}
        }
    }
    for (name, cubin) in cubins {
        if let Some(module) = modules.iter_mut().find(|m| m.name == name && m.cubin.is_none()) {
            module.cubin = Some(cubin);
        }
    }
    modules
}

/// # Safety
/// `record` must be an image record written by oxide-link.
unsafe fn read_image(record: &ImageRecord) -> EmbeddedModule {
    let name = std::str::from_utf8(static_bytes(record.name_ptr, record.name_len)).unwrap_or("?");
    let ptx_with_nul = static_bytes(record.image_ptr, record.image_len + 1);
    let kernels = (0..record.n_kernels as usize)
        .map(|k| {
            let rec = &*record.kernels_ptr.add(k);
            let ptx_name = std::str::from_utf8(static_bytes(rec.name_ptr, rec.name_len)).unwrap_or("?");
            // Each slot holds the distance from itself to one host copy of the
            // entry wrapper, written after the link; 0 means unused.
            let host_addresses =
                (0..rec.n_host as usize).filter_map(|s| slot_target(rec.host_ptr.add(s))).collect();
            let unchecked_name = std::str::from_utf8(static_bytes(rec.unchecked_name_ptr, rec.unchecked_name_len));
            let condition = std::str::from_utf8(static_bytes(rec.condition_ptr, rec.condition_len));
            // A program this cuda-host cannot read only costs the speed-up.
            let unchecked = match (unchecked_name, condition) {
                (Ok(name), Ok(program)) if !name.is_empty() => {
                    program.parse().ok().map(|condition| UncheckedEntry { ptx_name: name, condition })
                }
                _ => None,
            };
            EmbeddedKernel {
                ptx_name,
                unchecked,
                rust_path: std::str::from_utf8(static_bytes(rec.path_ptr, rec.path_len)).unwrap_or(ptx_name),
                num_params: rec.n_params as usize,
                thread_indices: crate::check::ThreadIndexKinds(rec.flags),
                stack: crate::StackNeed::from_record(rec.stack_bytes),
                host_addresses,
            }
        })
        .collect();
    let constants = (0..record.n_constants as usize)
        .map(|c| {
            let rec = &*record.constants_ptr.add(c);
            EmbeddedConstant {
                ptx_name: std::str::from_utf8(static_bytes(rec.name_ptr, rec.name_len)).unwrap_or("?"),
                size: rec.size as usize,
                host_address: slot_target(rec.host_ptr),
            }
        })
        .collect();
    EmbeddedModule { name, ptx_with_nul, kernels, constants, cubin: None }
}
