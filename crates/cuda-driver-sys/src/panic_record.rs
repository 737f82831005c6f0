//! Device panics the host can read after the kernel has died.
//!
//! A panicking GPU thread traps, which makes the launch fail with
//! `CUDA_ERROR_LAUNCH_FAILED` and leaves the context unusable: nothing can be
//! copied back from device memory afterwards. So the device linker's panic
//! code writes what happened into *host* memory instead: each context owns one
//! pinned, device-mapped [`PanicRecord`]; every module loaded on the context
//! gets its device address in the global `__oxide_panic_record`; the first
//! panicking thread fills the record and fences at system scope before it
//! traps. When a kernel-fault error comes back, the host reads the record and
//! the error carries a [`DevicePanic`].
//!
//! The byte layout is shared with `compiler/lib/LowerPanics.cpp` (docs/ABI.md §5).

use std::ffi::c_void;
use std::fmt;
use std::ptr;

use crate::driver::{self, cu, CUdeviceptr};
use crate::error::DriverError;

/// The device global that holds the record's device address.
pub(crate) const RECORD_GLOBAL: &std::ffi::CStr = c"__oxide_panic_record";

const TEXT_CAPACITY: usize = 256;
const STATE_COMPLETE: u32 = 2;

/// The record's bytes, as the device writes them.
#[repr(C)]
struct RawRecord {
    state: u32,
    line: u32,
    col: u32,
    num_ints: u32,
    thread: [u32; 3],
    block: [u32; 3],
    ints: [u64; 2],
    file: [u8; TEXT_CAPACITY],
    message: [u8; TEXT_CAPACITY],
}

// The offsets LowerPanics.cpp writes to.
const _: () = {
    assert!(std::mem::offset_of!(RawRecord, thread) == 16);
    assert!(std::mem::offset_of!(RawRecord, block) == 28);
    assert!(std::mem::offset_of!(RawRecord, ints) == 40);
    assert!(std::mem::offset_of!(RawRecord, file) == 56);
    assert!(std::mem::offset_of!(RawRecord, message) == 312);
};

/// A panic that happened on the GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevicePanic {
    /// The panic message (`index out of bounds: the len is 4 but the index is 7`).
    pub message: String,
    /// The Rust source file of the panic.
    pub file: String,
    /// Line in `file`.
    pub line: u32,
    /// Column in `file`.
    pub column: u32,
    /// `threadIdx` of the first thread that panicked.
    pub thread: (u32, u32, u32),
    /// `blockIdx` of that thread.
    pub block: (u32, u32, u32),
}

impl fmt::Display for DevicePanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, b) = (self.thread, self.block);
        write!(
            f,
            "GPU thread ({}, {}, {}) of block ({}, {}, {}) panicked at {}:{}:{}:\n{}",
            t.0, t.1, t.2, b.0, b.1, b.2, self.file, self.line, self.column, self.message
        )
    }
}

/// One context's pinned, device-mapped panic record.
#[derive(Debug)]
pub(crate) struct PanicRecord {
    host: *mut RawRecord,
    device: CUdeviceptr,
}

// SAFETY: the pointer is to pinned memory owned by this value; the host only
// reads it (volatile) after the device has finished with the context.
unsafe impl Send for PanicRecord {}
// SAFETY: see `Send`.
unsafe impl Sync for PanicRecord {}

impl PanicRecord {
    /// Allocates a zeroed record on the current context.
    pub(crate) fn allocate() -> Result<PanicRecord, DriverError> {
        const PORTABLE: u32 = 0x01;
        const DEVICEMAP: u32 = 0x02;
        let d = driver::driver()?;
        let mut host: *mut c_void = ptr::null_mut();
        let mut device: CUdeviceptr = 0;
        // SAFETY: out-pointers to locals; the size is the record's; the
        // allocation is zeroed before anyone reads it and freed in Drop.
        unsafe {
            cu!(d, cuMemHostAlloc(&mut host, std::mem::size_of::<RawRecord>(), PORTABLE | DEVICEMAP))?;
            ptr::write_bytes(host.cast::<u8>(), 0, std::mem::size_of::<RawRecord>());
            if let Err(e) = cu!(d, cuMemHostGetDevicePointer_v2(&mut device, host, 0)) {
                (d.cuMemFreeHost)(host);
                return Err(e);
            }
        }
        Ok(PanicRecord { host: host.cast(), device })
    }

    /// The address kernels write to.
    pub(crate) fn device_address(&self) -> CUdeviceptr {
        self.device
    }

    /// The panic the device recorded, if one did.
    pub(crate) fn read(&self) -> Option<DevicePanic> {
        // SAFETY: `host` is our live allocation. The state is read first and
        // volatile: the device sets it last, after a system-scope fence.
        let rec = unsafe {
            if ptr::read_volatile(ptr::addr_of!((*self.host).state)) != STATE_COMPLETE {
                return None;
            }
            ptr::read_volatile(self.host)
        };
        let template = text(&rec.message);
        Some(DevicePanic {
            message: fill_integers(&template, &rec.ints[..(rec.num_ints as usize).min(2)]),
            file: text(&rec.file),
            line: rec.line,
            column: rec.col,
            thread: (rec.thread[0], rec.thread[1], rec.thread[2]),
            block: (rec.block[0], rec.block[1], rec.block[2]),
        })
    }
}

impl Drop for PanicRecord {
    fn drop(&mut self) {
        if let Some(d) = driver::loaded() {
            // SAFETY: allocated by cuMemHostAlloc in `allocate`, freed once.
            unsafe { (d.cuMemFreeHost)(self.host.cast()) };
        }
    }
}

/// Fills the record at host address `address` with `panic`, as the device
/// would (the CPU emulator's panics take the GPU's path to the host).
///
/// # Safety
/// `address` must be a record allocated by [`PanicRecord::allocate`].
pub(crate) unsafe fn write_record(address: u64, panic: &DevicePanic) {
    let rec = address as *mut RawRecord;
    let mut raw = RawRecord {
        state: 0,
        line: panic.line,
        col: panic.column,
        num_ints: 0,
        thread: [panic.thread.0, panic.thread.1, panic.thread.2],
        block: [panic.block.0, panic.block.1, panic.block.2],
        ints: [0; 2],
        file: [0; TEXT_CAPACITY],
        message: [0; TEXT_CAPACITY],
    };
    let copy = |dst: &mut [u8; TEXT_CAPACITY], text: &str| {
        // `%llu` in the text would be taken for a placeholder: escape none,
        // since no integers are passed, `fill_integers` leaves it as is.
        let n = text.len().min(TEXT_CAPACITY - 1);
        dst[..n].copy_from_slice(&text.as_bytes()[..n]);
    };
    copy(&mut raw.file, &panic.file);
    copy(&mut raw.message, &panic.message);
    // SAFETY: the caller's contract; the state is written last, like the device does.
    unsafe {
        ptr::write_volatile(rec, raw);
        ptr::write_volatile(ptr::addr_of_mut!((*rec).state), STATE_COMPLETE);
    }
}

/// The NUL-terminated text at the start of `bytes`.
fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Replaces each `%llu` of the message template with the next integer.
fn fill_integers(template: &str, ints: &[u64]) -> String {
    let mut out = String::new();
    let mut rest = template;
    let mut values = ints.iter();
    while let Some(pos) = rest.find("%llu") {
        out.push_str(&rest[..pos]);
        match values.next() {
            Some(v) => out.push_str(&v.to_string()),
            None => out.push_str("%llu"),
        }
        rest = &rest[pos + 4..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_fill_the_template_in_order() {
        assert_eq!(
            fill_integers("the len is %llu but the index is %llu", &[4, 7]),
            "the len is 4 but the index is 7"
        );
        assert_eq!(fill_integers("no numbers", &[]), "no numbers");
        assert_eq!(fill_integers("one %llu", &[]), "one %llu");
    }

    #[test]
    fn text_stops_at_nul() {
        assert_eq!(text(b"src/main.rs\0garbage"), "src/main.rs");
        assert_eq!(text(b"full"), "full");
    }

    #[test]
    fn display_reads_like_the_device_print() {
        let p = DevicePanic {
            message: "boom".into(),
            file: "src/main.rs".into(),
            line: 3,
            column: 9,
            thread: (1, 0, 0),
            block: (2, 0, 0),
        };
        assert_eq!(p.to_string(), "GPU thread (1, 0, 0) of block (2, 0, 0) panicked at src/main.rs:3:9:\nboom");
    }
}
