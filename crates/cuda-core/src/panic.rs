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
//! The byte layout is `compiler/include/oxide/PanicRecord.def`, which the
//! device linker's LowerPanics.cpp writes by and this module reads by
//! (docs/ABI.md §5); a message that formats values arrives as a template and
//! the values' bits, which [`crate::panic_message`] formats here.

use std::ffi::c_void;
use std::fmt;
use std::ptr;

use crate::driver::{self, cu, CUdeviceptr};
use crate::error::DriverError;

/// The device global that holds the record's device address (Abi.def's
/// PanicRecordGlobal).
pub(crate) const RECORD_GLOBAL: &std::ffi::CStr = crate::abi::PANIC_RECORD_GLOBAL_C;

use crate::panic_message::{render, RecordedValue};
use crate::panic_record as layout;
use crate::panic_record::ValueKind;

const TEXT_CAPACITY: usize = layout::TEXT_CAPACITY;
const MAX_VALUES: usize = layout::MAX_VALUES;
const STATE_COMPLETE: u32 = layout::STATE_COMPLETE as u32;

/// The record's bytes, as the device writes them (PanicRecord.def).
#[repr(C)]
struct RawRecord {
    state: u32,
    line: u32,
    col: u32,
    /// 0: `message` is plain text; else a template over that many values.
    num_values: u32,
    thread: [u32; 3],
    block: [u32; 3],
    kinds: [u8; MAX_VALUES],
    /// Each value's bits, zero-extended: low word, high word.
    values: [[u64; 2]; MAX_VALUES],
    file: [u8; TEXT_CAPACITY],
    message: [u8; TEXT_CAPACITY],
}

// The layout the device linker writes (PanicRecord.def).
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(offset_of!(RawRecord, state) == layout::STATE && layout::STATE_SIZE == 4);
    assert!(offset_of!(RawRecord, line) == layout::LINE && layout::LINE_SIZE == 4);
    assert!(offset_of!(RawRecord, col) == layout::COLUMN && layout::COLUMN_SIZE == 4);
    assert!(offset_of!(RawRecord, num_values) == layout::NUM_VALUES && layout::NUM_VALUES_SIZE == 4);
    assert!(offset_of!(RawRecord, thread) == layout::THREAD && layout::THREAD_SIZE == 12);
    assert!(offset_of!(RawRecord, block) == layout::BLOCK && layout::BLOCK_SIZE == 12);
    assert!(offset_of!(RawRecord, kinds) == layout::KINDS && layout::KINDS_SIZE == MAX_VALUES);
    assert!(offset_of!(RawRecord, values) == layout::VALUES && layout::VALUES_SIZE == MAX_VALUES * layout::VALUE_BYTES);
    assert!(offset_of!(RawRecord, file) == layout::FILE && layout::FILE_SIZE == TEXT_CAPACITY);
    assert!(offset_of!(RawRecord, message) == layout::MESSAGE && layout::MESSAGE_SIZE == TEXT_CAPACITY);
    assert!(size_of::<RawRecord>() == layout::SIZE);
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
        Some(DevicePanic {
            message: message_of(&rec),
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
    // The host formatted the message already: plain text, no values.
    let mut raw = RawRecord {
        state: 0,
        line: panic.line,
        col: panic.column,
        num_values: 0,
        thread: [panic.thread.0, panic.thread.1, panic.thread.2],
        block: [panic.block.0, panic.block.1, panic.block.2],
        kinds: [0; MAX_VALUES],
        values: [[0; 2]; MAX_VALUES],
        file: [0; TEXT_CAPACITY],
        message: [0; TEXT_CAPACITY],
    };
    let copy = |dst: &mut [u8; TEXT_CAPACITY], text: &str| {
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

/// The record's message: its text, or its template with its values
/// formatted (a value of a kind this reader does not know prints as `{..}`).
fn message_of(rec: &RawRecord) -> String {
    let message = text(&rec.message);
    let n = (rec.num_values as usize).min(MAX_VALUES);
    if n == 0 {
        return message;
    }
    let values: Vec<RecordedValue> = (0..n)
        .map(|i| RecordedValue {
            kind: ValueKind::from_code(rec.kinds[i]),
            bits: rec.values[i][0] as u128 | (rec.values[i][1] as u128) << 64,
        })
        .collect();
    render(&message, &values)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record as the device fills it.
    fn record(message: &str, values: &[(ValueKind, u128)]) -> RawRecord {
        let mut rec = RawRecord {
            state: STATE_COMPLETE,
            line: 1,
            col: 1,
            num_values: values.len() as u32,
            thread: [0; 3],
            block: [0; 3],
            kinds: [0; MAX_VALUES],
            values: [[0; 2]; MAX_VALUES],
            file: [0; TEXT_CAPACITY],
            message: [0; TEXT_CAPACITY],
        };
        rec.message[..message.len()].copy_from_slice(message.as_bytes());
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
