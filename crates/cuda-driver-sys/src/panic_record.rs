//! The record a panicking kernel leaves for the host, and [`DevicePanic`],
//! what it says.
//!
//! A panicking GPU thread traps, which makes the launch fail with
//! `CUDA_ERROR_LAUNCH_FAILED` and leaves the context unusable: nothing can be
//! copied back from device memory afterwards. So the device linker's panic
//! code writes what happened into *host* memory instead: a pinned,
//! device-mapped [`RawPanicRecord`] whose device address every module finds
//! in its global [`RECORD_GLOBAL`]; the first panicking thread fills the
//! record and fences at system scope before it traps, setting the state last.
//! When a kernel-fault error comes back, the host [reads](read()) it. (cuda-core
//! owns one record per context; the CPU emulator [writes](write()) it as the device
//! would.)
//!
//! The byte layout is shared with `compiler/lib/Legalize/LowerPanics.cpp` (docs/ABI.md §5).

use std::ffi::CStr;
use std::fmt;
use std::ptr;

// The device global that holds the record's device address (8 bytes;
// present in a module whose kernels can panic): `RECORD_GLOBAL`, spelled
// in Abi.def.
include!(concat!(env!("OUT_DIR"), "/panic_record_global.rs"));

/// Bytes of the file and message texts, NUL terminator included.
pub const TEXT_CAPACITY: usize = 256;
/// The state a complete record has (the device writes it last).
const STATE_COMPLETE: u32 = 2;

/// The record's bytes, as the device writes them. A zeroed record holds no
/// panic.
#[repr(C)]
pub struct RawPanicRecord {
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
    assert!(std::mem::offset_of!(RawPanicRecord, thread) == 16);
    assert!(std::mem::offset_of!(RawPanicRecord, block) == 28);
    assert!(std::mem::offset_of!(RawPanicRecord, ints) == 40);
    assert!(std::mem::offset_of!(RawPanicRecord, file) == 56);
    assert!(std::mem::offset_of!(RawPanicRecord, message) == 312);
};

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

/// The panic the record at `record` holds, if a complete one.
///
/// # Safety
/// `record` must point to a live [`RawPanicRecord`] (zeroed when made) that
/// no device writes any more, or whose writer sets the state last.
pub unsafe fn read(record: *const RawPanicRecord) -> Option<DevicePanic> {
    // SAFETY: the caller's contract. The state is read first and volatile:
    // the device sets it last, after a system-scope fence.
    let rec = unsafe {
        if ptr::read_volatile(ptr::addr_of!((*record).state)) != STATE_COMPLETE {
            return None;
        }
        ptr::read_volatile(record)
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

/// Fills the record at `record` with `panic`, as the device would (the CPU
/// emulator's panics take the GPU's path to the host). Texts longer than
/// the record holds are cut.
///
/// # Safety
/// `record` must point to a live, writable [`RawPanicRecord`].
pub unsafe fn write(record: *mut RawPanicRecord, panic: &DevicePanic) {
    let mut raw = RawPanicRecord {
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
        ptr::write_volatile(record, raw);
        ptr::write_volatile(ptr::addr_of_mut!((*record).state), STATE_COMPLETE);
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

    #[test]
    fn a_written_record_reads_back_and_a_zeroed_one_is_empty() {
        // SAFETY: an all-zero record is a valid, empty one.
        let mut record: Box<RawPanicRecord> = unsafe { Box::new(std::mem::zeroed()) };
        // SAFETY: the record is live.
        assert_eq!(unsafe { read(&*record) }, None);
        let p = DevicePanic {
            message: "x".repeat(300),
            file: "src/lib.rs".into(),
            line: 12,
            column: 5,
            thread: (31, 1, 0),
            block: (7, 0, 2),
        };
        // SAFETY: the record is live and writable.
        unsafe { write(&mut *record, &p) };
        // SAFETY: as above.
        let back = unsafe { read(&*record) }.unwrap();
        assert_eq!(back.message.len(), TEXT_CAPACITY - 1, "cut to the record's capacity");
        assert_eq!(DevicePanic { message: p.message[..TEXT_CAPACITY - 1].to_string(), ..p }, back);
    }
}
