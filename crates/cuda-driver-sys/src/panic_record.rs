//! The record a panicking kernel leaves for the host, as bytes.
//!
//! A panicking GPU thread traps, which makes the launch fail with
//! `CUDA_ERROR_LAUNCH_FAILED` and leaves the context unusable: nothing can be
//! copied back from device memory afterwards. So the device linker's panic
//! code writes what happened into *host* memory instead: a pinned,
//! device-mapped [`RawPanicRecord`] whose device address every module finds
//! in its global [`RECORD_GLOBAL`]; the first panicking thread fills the
//! record and fences at system scope before it traps, setting the state last.
//! When a kernel-fault error comes back, the host [reads](read()) it.
//!
//! The layout is `compiler/include/oxide/PanicRecord.def` (docs/ABI.md §5),
//! which LowerPanics.cpp writes by; this crate's build script generates
//! [`layout`] and [`ValueKind`] from the same rows, and the struct below is
//! checked against them when this crate compiles. A message that formats
//! values arrives as a template and the values' bits and kinds; turning that
//! into text is the safe layer's (cuda-core's `DevicePanic`), not this
//! crate's. The CPU emulator [writes](write()) a record as the device would,
//! with a message it formatted already ([`RawPanicRecord::with_text`]).
//!
//! ```
//! use cuda_driver_sys::panic_record::{read, write, RawPanicRecord};
//!
//! let mut record = RawPanicRecord::empty();
//! // SAFETY: the record is live; nothing else writes it.
//! assert!(unsafe { read(&record) }.is_none(), "an empty record holds no panic");
//! let panic = RawPanicRecord::with_text("attempt to divide by zero", "src/main.rs", 7, 13, [3, 0, 0], [1, 0, 0]);
//! // SAFETY: as above.
//! unsafe { write(&mut record, &panic) };
//! let back = unsafe { read(&record) }.unwrap();
//! assert_eq!((back.message(), back.file(), back.line), ("attempt to divide by zero".to_string(), "src/main.rs".to_string(), 7));
//! assert_eq!(back.values().count(), 0, "plain text");
//! ```

use std::ffi::CStr;
use std::ptr;

// `RECORD_GLOBAL` (Abi.def), `mod layout` and `ValueKind` (PanicRecord.def).
include!(concat!(env!("OUT_DIR"), "/panic_record_abi.rs"));

/// Writes the line a panicking GPU thread prints (LowerPanics.cpp's
/// `vprintf` prefix, then the message on a line of its own), so that a panic
/// reads the same whether it came from the GPU, from cuda-core's record
/// reader or from the CPU emulator.
///
/// ```
/// let mut line = String::new();
/// cuda_driver_sys::panic_record::write_panic_line(&mut line, [1, 0, 0], [2, 0, 0], "src/main.rs", 3, 9, "boom").unwrap();
/// assert_eq!(line, "GPU thread (1, 0, 0) of block (2, 0, 0) panicked at src/main.rs:3:9:\nboom");
/// ```
pub fn write_panic_line(
    out: &mut impl std::fmt::Write,
    thread: [u32; 3],
    block: [u32; 3],
    file: &str,
    line: u32,
    column: u32,
    message: &str,
) -> std::fmt::Result {
    let ([tx, ty, tz], [bx, by, bz]) = (thread, block);
    write!(out, "GPU thread ({tx}, {ty}, {tz}) of block ({bx}, {by}, {bz}) panicked at {file}:{line}:{column}:\n{message}")
}

/// Bytes of the file and message texts, NUL terminator included.
pub const TEXT_CAPACITY: usize = layout::TEXT_CAPACITY;
/// Formatted values one record holds.
pub const MAX_VALUES: usize = layout::MAX_VALUES;
/// The state a complete record has (the device writes it last).
const STATE_COMPLETE: u32 = layout::STATE_COMPLETE as u32;

/// The record's bytes, as the device writes them. A zeroed record holds no
/// panic.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawPanicRecord {
    /// 0 while empty; complete once the writer has filled the rest.
    pub state: u32,
    /// The panic's source line.
    pub line: u32,
    /// The panic's source column.
    pub column: u32,
    /// 0: `message` is plain text; else a template over that many values.
    pub num_values: u32,
    /// `threadIdx` (x, y, z) of the panicking thread.
    pub thread: [u32; 3],
    /// `blockIdx` (x, y, z).
    pub block: [u32; 3],
    /// Each value's [`ValueKind`] code.
    pub kinds: [u8; MAX_VALUES],
    /// Each value's bits, zero-extended: low word, high word.
    pub values: [[u64; 2]; MAX_VALUES],
    /// The source file, NUL-terminated.
    pub file: [u8; TEXT_CAPACITY],
    /// The message (text, or a template over `values`), NUL-terminated.
    pub message: [u8; TEXT_CAPACITY],
}

// The layout LowerPanics.cpp writes (PanicRecord.def).
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(offset_of!(RawPanicRecord, state) == layout::STATE && layout::STATE_SIZE == 4);
    assert!(offset_of!(RawPanicRecord, line) == layout::LINE && layout::LINE_SIZE == 4);
    assert!(offset_of!(RawPanicRecord, column) == layout::COLUMN && layout::COLUMN_SIZE == 4);
    assert!(offset_of!(RawPanicRecord, num_values) == layout::NUM_VALUES && layout::NUM_VALUES_SIZE == 4);
    assert!(offset_of!(RawPanicRecord, thread) == layout::THREAD && layout::THREAD_SIZE == 12);
    assert!(offset_of!(RawPanicRecord, block) == layout::BLOCK && layout::BLOCK_SIZE == 12);
    assert!(offset_of!(RawPanicRecord, kinds) == layout::KINDS && layout::KINDS_SIZE == MAX_VALUES);
    assert!(offset_of!(RawPanicRecord, values) == layout::VALUES && layout::VALUES_SIZE == MAX_VALUES * layout::VALUE_BYTES);
    assert!(offset_of!(RawPanicRecord, file) == layout::FILE && layout::FILE_SIZE == TEXT_CAPACITY);
    assert!(offset_of!(RawPanicRecord, message) == layout::MESSAGE && layout::MESSAGE_SIZE == TEXT_CAPACITY);
    assert!(size_of::<RawPanicRecord>() == layout::SIZE);
};

impl RawPanicRecord {
    /// A record that holds no panic (all zero, as cuda-core allocates it).
    pub fn empty() -> RawPanicRecord {
        RawPanicRecord {
            state: 0,
            line: 0,
            column: 0,
            num_values: 0,
            thread: [0; 3],
            block: [0; 3],
            kinds: [0; MAX_VALUES],
            values: [[0; 2]; MAX_VALUES],
            file: [0; TEXT_CAPACITY],
            message: [0; TEXT_CAPACITY],
        }
    }

    /// A record whose message is plain text (no values), as the CPU
    /// emulator writes a panic Rust formatted already; texts longer than the
    /// record holds are cut. Its state is left empty: [`write()`] sets it last.
    pub fn with_text(message: &str, file: &str, line: u32, column: u32, thread: [u32; 3], block: [u32; 3]) -> RawPanicRecord {
        let mut raw = RawPanicRecord { line, column, thread, block, ..RawPanicRecord::empty() };
        let copy = |dst: &mut [u8; TEXT_CAPACITY], text: &str| {
            let n = text.len().min(TEXT_CAPACITY - 1);
            dst[..n].copy_from_slice(&text.as_bytes()[..n]);
        };
        copy(&mut raw.file, file);
        copy(&mut raw.message, message);
        raw
    }

    /// The source file.
    pub fn file(&self) -> String {
        text(&self.file)
    }

    /// The message: plain text, or the template the [`values`](Self::values) fill.
    pub fn message(&self) -> String {
        text(&self.message)
    }

    /// The recorded values in order, each with its kind (None for a code
    /// this crate does not know) and its bits, zero-extended.
    pub fn values(&self) -> impl Iterator<Item = (Option<ValueKind>, u128)> + '_ {
        let n = (self.num_values as usize).min(MAX_VALUES);
        (0..n).map(|i| (ValueKind::from_code(self.kinds[i]), self.values[i][0] as u128 | (self.values[i][1] as u128) << 64))
    }
}

/// A copy of the record at `record`, if it holds a complete panic.
///
/// # Safety
/// `record` must point to a live [`RawPanicRecord`] (zeroed when made) that
/// no device writes any more, or whose writer sets the state last.
pub unsafe fn read(record: *const RawPanicRecord) -> Option<RawPanicRecord> {
    // SAFETY: the caller's contract. The state is read first and volatile:
    // the device sets it last, after a system-scope fence.
    unsafe {
        if ptr::read_volatile(ptr::addr_of!((*record).state)) != STATE_COMPLETE {
            return None;
        }
        Some(ptr::read_volatile(record))
    }
}

/// Fills the record at `record` with `panic` and marks it complete, the
/// state last, as the device does (the CPU emulator's panics take the GPU's
/// path to the host).
///
/// # Safety
/// `record` must point to a live, writable [`RawPanicRecord`].
pub unsafe fn write(record: *mut RawPanicRecord, panic: &RawPanicRecord) {
    // SAFETY: the caller's contract; the state is written last, like the device does.
    unsafe {
        ptr::write_volatile(record, RawPanicRecord { state: 0, ..*panic });
        ptr::write_volatile(ptr::addr_of_mut!((*record).state), STATE_COMPLETE);
    }
}

/// The NUL-terminated text at the start of `bytes`.
fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_stops_at_nul() {
        assert_eq!(text(b"src/main.rs\0garbage"), "src/main.rs");
        assert_eq!(text(b"full"), "full");
    }

    #[test]
    fn a_written_record_reads_back_and_an_empty_one_holds_nothing() {
        let mut record = Box::new(RawPanicRecord::empty());
        // SAFETY: the record is live.
        assert!(unsafe { read(&*record) }.is_none());
        let long = "x".repeat(300);
        let panic = RawPanicRecord::with_text(&long, "src/lib.rs", 12, 5, [31, 1, 0], [7, 0, 2]);
        // SAFETY: the record is live and writable.
        unsafe { write(&mut *record, &panic) };
        // SAFETY: as above.
        let back = unsafe { read(&*record) }.unwrap();
        assert_eq!(back.message(), long[..TEXT_CAPACITY - 1], "cut to the record's capacity");
        assert_eq!((back.file().as_str(), back.line, back.column), ("src/lib.rs", 12, 5));
        assert_eq!((back.thread, back.block), ([31, 1, 0], [7, 0, 2]));
        assert_eq!(back.num_values, 0);
        assert_eq!(back.values().count(), 0);
    }

    #[test]
    fn values_come_back_with_their_kinds_and_all_128_bits() {
        let mut rec = RawPanicRecord::with_text("{0} {1} {2}", "f.rs", 1, 1, [0; 3], [0; 3]);
        rec.num_values = 3;
        rec.kinds[..3].copy_from_slice(&[ValueKind::I128 as u8, ValueKind::Char as u8, 200]);
        let min = i128::MIN as u128;
        rec.values[0] = [min as u64, (min >> 64) as u64];
        rec.values[1] = ['q' as u64, 0];
        rec.values[2] = [9, 0];
        let values: Vec<_> = rec.values().collect();
        assert_eq!(values, [(Some(ValueKind::I128), min), (Some(ValueKind::Char), 'q' as u128), (None, 9)]);
    }

    #[test]
    fn a_count_past_the_capacity_reads_only_the_slots_there_are() {
        let rec = RawPanicRecord { num_values: u32::MAX, ..RawPanicRecord::empty() };
        assert_eq!(rec.values().count(), MAX_VALUES);
    }

    #[test]
    fn every_kind_code_round_trips() {
        for code in 0..=u8::MAX {
            if let Some(kind) = ValueKind::from_code(code) {
                assert_eq!(kind as u8, code);
            }
        }
        assert_eq!(ValueKind::from_code(0), None, "0 is no value");
    }
}
