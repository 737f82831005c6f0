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
//! The record's bytes are the raw layer's (`cuda_driver_sys::panic_record`,
//! generated from `compiler/include/oxide/PanicRecord.def`, docs/ABI.md §5);
//! a message that formats values arrives as a template and the values' bits,
//! which [`crate::panic_message`] formats here.

use std::ffi::c_void;
use std::fmt;
use std::ptr;

use cuda_driver_sys::panic_record::{self, RawPanicRecord};

use crate::driver::{self, cu, CUdeviceptr};
use crate::error::DriverError;
use crate::panic_message::{render, RecordedValue};

/// A panic that happened on the GPU (or in an emulated kernel).
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

impl DevicePanic {
    /// What a complete record says, its values formatted into its template.
    pub(crate) fn from_record(rec: &RawPanicRecord) -> DevicePanic {
        DevicePanic {
            message: message_of(rec),
            file: rec.file(),
            line: rec.line,
            column: rec.column,
            thread: (rec.thread[0], rec.thread[1], rec.thread[2]),
            block: (rec.block[0], rec.block[1], rec.block[2]),
        }
    }
}

impl fmt::Display for DevicePanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, b) = (self.thread, self.block);
        panic_record::write_panic_line(f, [t.0, t.1, t.2], [b.0, b.1, b.2], &self.file, self.line, self.column, &self.message)
    }
}

/// One context's pinned, device-mapped panic record.
#[derive(Debug)]
pub(crate) struct PanicRecord {
    host: *mut RawPanicRecord,
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
        let size = std::mem::size_of::<RawPanicRecord>();
        // SAFETY: out-pointers to locals; the size is the record's; the
        // allocation is zeroed before anyone reads it and freed in Drop.
        unsafe {
            cu!(d, cuMemHostAlloc(&mut host, size, PORTABLE | DEVICEMAP))?;
            ptr::write_bytes(host.cast::<u8>(), 0, size);
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
        // SAFETY: `host` is our live, zeroed-at-allocation record; the device
        // sets its state last.
        unsafe { panic_record::read(self.host) }.map(|rec| DevicePanic::from_record(&rec))
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

/// The record's message: its text, or its template with its values
/// formatted (a value of a kind this reader does not know prints as `{..}`).
fn message_of(rec: &RawPanicRecord) -> String {
    let message = rec.message();
    if rec.num_values == 0 {
        return message;
    }
    let values: Vec<RecordedValue> = rec.values().map(|(kind, bits)| RecordedValue { kind, bits }).collect();
    render(&message, &values)
}

#[cfg(test)]
mod tests {
    use cuda_driver_sys::panic_record::ValueKind;

    use super::*;

    /// A record as the device fills it.
    fn record(message: &str, values: &[(ValueKind, u128)]) -> RawPanicRecord {
        let mut rec = RawPanicRecord::with_text(message, "src/main.rs", 1, 1, [0; 3], [0; 3]);
        rec.num_values = values.len() as u32;
        for (i, &(kind, bits)) in values.iter().enumerate() {
            rec.kinds[i] = kind as u8;
            rec.values[i] = [bits as u64, (bits >> 64) as u64];
        }
        rec
    }
    #[test]
    fn values_fill_the_template() {
        let rec = record(
            "index out of bounds: the len is {0} but the index is {1}",
            &[(ValueKind::U64, 4), (ValueKind::U64, 7)],
        );
        assert_eq!(message_of(&rec), "index out of bounds: the len is 4 but the index is 7");
        let rec = record(
            "{0} > {1:#x}, {2:.2} {3} {4:?} {5}",
            &[
                (ValueKind::I32, (-5i32) as u32 as u128),
                (ValueKind::U8, 255),
                (ValueKind::F32, 1.5f32.to_bits() as u128),
                (ValueKind::Bool, 1),
                (ValueKind::Char, 'q' as u128),
                (ValueKind::I128, i128::MIN as u128),
            ],
        );
        assert_eq!(message_of(&rec), format!("-5 > 0xff, 1.50 true 'q' {}", i128::MIN));
    }

    #[test]
    fn without_values_the_message_is_text() {
        // Braces and `%` are the text's own (the CPU emulator writes the
        // message Rust formatted, an `expect` passes its string).
        assert_eq!(message_of(&record("{0} {} 100%", &[])), "{0} {} 100%");
    }

    #[test]
    fn a_record_becomes_the_panic_it_holds() {
        let mut rec = record("{0:>4}|", &[(ValueKind::U16, 7)]);
        rec.thread = [3, 2, 1];
        rec.block = [9, 0, 0];
        rec.line = 40;
        rec.column = 5;
        let p = DevicePanic::from_record(&rec);
        assert_eq!(
            p,
            DevicePanic {
                message: "   7|".into(),
                file: "src/main.rs".into(),
                line: 40,
                column: 5,
                thread: (3, 2, 1),
                block: (9, 0, 0)
            }
        );
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
