//! `vprintf` on the host: a C format string with its argument buffer,
//! printed through the C library's `snprintf` one conversion at a time (so
//! the output matches the GPU's printf conversion for conversion), and
//! written to stdout in one piece per call.
//!
//! Two callers, two buffer layouts:
//! - the host-code engine's `vprintf` hook gets what `cuda_device::printf`
//!   builds: one 8-byte slot per conversion (its conversions are all 64-bit
//!   integers and doubles), read as such ([`Layout::Slots`]);
//! - the device-code executor gets what the PTX passes to `vprintf`
//!   (through `ptx-vm`): CUDA's own layout, each argument at its natural size
//!   and alignment, 4 bytes for `%d %u %x %c` without `l`, 8 for `%ll…`,
//!   doubles and pointers; `%s` arguments are host pointers
//!   ([`Layout::Natural`]). The device linker's panic messages use `%u` and
//!   `%s` this way.

use std::ffi::{c_char, c_int, c_uint, CStr};
use std::io::Write;

extern "C" {
    fn snprintf(buf: *mut c_char, size: usize, format: *const c_char, ...) -> c_int;
}

/// How the arguments of one `vprintf` call are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// One 8-byte slot per conversion; integers print as 64-bit.
    Slots,
    /// CUDA's `vprintf`: natural size and alignment per conversion.
    Natural,
}

/// One argument, as read from the buffer.
#[derive(Clone, Copy, Debug)]
enum Arg {
    Int(c_uint),
    Long(u64),
    Double(f64),
    Text(*const c_char),
}

/// Formats one conversion `spec` (`%-8.3f`, NUL-terminated) with `arg`.
fn convert(spec: &[u8], arg: Arg) -> Vec<u8> {
    let mut buf = vec![0u8; 512];
    loop {
        let out = buf.as_mut_ptr().cast::<c_char>();
        let fmt = spec.as_ptr().cast::<c_char>();
        // SAFETY: `spec` is a NUL-terminated C format with exactly one
        // conversion, whose argument type matches what is passed for it
        // (`classify`); a text is a C string or null (glibc prints "(null)").
        let n = unsafe {
            match arg {
                Arg::Int(v) => snprintf(out, buf.len(), fmt, v),
                Arg::Long(v) => snprintf(out, buf.len(), fmt, v),
                Arg::Double(v) => snprintf(out, buf.len(), fmt, v),
                Arg::Text(p) => snprintf(out, buf.len(), fmt, p),
            }
        };
        let n = n.max(0) as usize;
        if n < buf.len() {
            buf.truncate(n);
            return buf;
        }
        buf.resize(n + 1, 0);
    }
}

/// What a conversion reads: bytes, and whether as a double or a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Int4,
    Int8,
    Double,
    Text,
    Pointer,
}

fn classify(conversion: u8, long: bool) -> Kind {
    match conversion {
        b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => Kind::Double,
        b's' => Kind::Text,
        b'p' => Kind::Pointer,
        _ if long => Kind::Int8,
        _ => Kind::Int4,
    }
}

/// Prints `format` (NUL-terminated) with the 8-byte argument slots at
/// `args` to stdout, in one write: the host-code engine's `vprintf` hook.
///
/// # Safety
/// `format` is NUL-terminated; `args` holds one 8-byte value per conversion.
pub(crate) unsafe fn print(format: *const u8, args: *const u8) -> i32 {
    // A hook's critical part: it takes stdout's lock (and the C library's).
    // SAFETY: the caller's contract.
    crate::engine::in_hook(|| {
        // SAFETY: the caller's contract.
        let text = unsafe { CStr::from_ptr(format.cast()) }.to_bytes();
        // SAFETY: the caller's contract.
        write_stdout(&unsafe { format_with(text, args, Layout::Slots) });
        0
    })
}

/// Prints `format` (without its NUL) with CUDA's `vprintf` argument buffer
/// at `args` to stdout, in one write: the device-code executor's `printf`.
///
/// # Safety
/// `args` holds one argument per conversion of `format` in
/// [`Layout::Natural`]; each `%s` argument is null or a C string.
pub(crate) unsafe fn print_vprintf(format: &[u8], args: *const u8) {
    // SAFETY: the caller's contract.
    write_stdout(&unsafe { format_with(format, args, Layout::Natural) });
}

fn write_stdout(out: &[u8]) {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = lock.write_all(out);
    let _ = lock.flush();
}

/// `format` with its conversions filled from `args`.
///
/// # Safety
/// `args` holds one argument per conversion, laid out as `layout` says;
/// with [`Layout::Natural`] each `%s` argument is null or a C string.
pub(crate) unsafe fn format_with(text: &[u8], args: *const u8, layout: Layout) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 32);
    let mut offset = 0usize;
    let mut i = 0;
    while i < text.len() {
        if text[i] != b'%' {
            out.push(text[i]);
            i += 1;
            continue;
        }
        if text.get(i + 1) == Some(&b'%') {
            out.push(b'%');
            i += 2;
            continue;
        }
        let start = i;
        i += 1;
        while i < text.len() && !text[i].is_ascii_alphabetic() {
            i += 1; // flags, width, precision
        }
        let mut long = false;
        while i < text.len() && matches!(text[i], b'l' | b'h' | b'z' | b'j' | b't' | b'L') {
            long |= matches!(text[i], b'l' | b'z' | b'j' | b't' | b'L');
            i += 1; // length modifiers
        }
        if i >= text.len() {
            out.extend_from_slice(&text[start..]);
            break;
        }
        let mut spec = text[start..=i].to_vec();
        let conversion = text[i];
        i += 1;
        let arg = match layout {
            Layout::Slots => {
                // SAFETY: slot `offset / 8` exists (caller's contract); it may be unaligned.
                let bits = unsafe { args.add(offset).cast::<u64>().read_unaligned() };
                offset += 8;
                match classify(conversion, true) {
                    Kind::Double => Arg::Double(f64::from_bits(bits)),
                    // cuda_device never passes texts as arguments: it prints them
                    // into the format itself.
                    Kind::Text => Arg::Text(c"".as_ptr()),
                    Kind::Int4 | Kind::Int8 | Kind::Pointer => {
                        if conversion != b'p' && conversion != b'c' {
                            // Every slot is 64-bit: print it as such.
                            spec.retain(|&c| !matches!(c, b'l' | b'h' | b'z' | b'j' | b't'));
                            let conv = spec.pop().expect("non-empty");
                            spec.extend_from_slice(b"ll");
                            spec.push(conv);
                        }
                        match conversion {
                            b'c' => Arg::Int(bits as c_uint),
                            _ => Arg::Long(bits),
                        }
                    }
                }
            }
            Layout::Natural => {
                let kind = classify(conversion, long);
                let size = if kind == Kind::Int4 { 4 } else { 8 };
                offset = offset.next_multiple_of(size);
                // SAFETY: the argument exists at its natural alignment (caller).
                let arg = unsafe {
                    let p = args.add(offset);
                    match kind {
                        Kind::Int4 => Arg::Int(p.cast::<u32>().read_unaligned()),
                        Kind::Int8 | Kind::Pointer => Arg::Long(p.cast::<u64>().read_unaligned()),
                        Kind::Double => Arg::Double(f64::from_bits(p.cast::<u64>().read_unaligned())),
                        Kind::Text => Arg::Text(p.cast::<u64>().read_unaligned() as usize as *const c_char),
                    }
                };
                offset += size;
                arg
            }
        };
        spec.push(0);
        out.extend_from_slice(&convert(&spec, arg));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_match_c() {
        assert_eq!(convert(b"%5lld\0", Arg::Long((-42i64) as u64)), b"  -42");
        assert_eq!(convert(b"%-6llu|\0", Arg::Long(7)), b"7     |");
        assert_eq!(convert(b"%.3f\0", Arg::Double(2.5)), b"2.500");
        assert_eq!(convert(b"%e\0", Arg::Double(1234.5)), b"1.234500e+03");
        assert_eq!(convert(b"%llx\0", Arg::Long(255)), b"ff");
        assert_eq!(convert(b"%u\0", Arg::Int(u32::MAX)), b"4294967295");
        assert_eq!(convert(b"%d\0", Arg::Int(-5i32 as u32)), b"-5");
        assert_eq!(convert(b"[%s]\0", Arg::Text(c"text".as_ptr())), b"[text]");
    }

    #[test]
    fn eight_byte_slots_print_every_integer_as_64_bits() {
        let args: [u64; 3] = [(-3i64) as u64, 2.5f64.to_bits(), u64::MAX];
        // SAFETY: three slots for three conversions.
        let out = unsafe { format_with(b"%d %.1f %u%%", args.as_ptr().cast(), Layout::Slots) };
        assert_eq!(out, b"-3 2.5 18446744073709551615%");
    }

    #[test]
    fn cuda_layout_aligns_each_argument_to_its_size() {
        // The device linker's panic line: `%u` (4 bytes), then `%s` (a pointer,
        // 8-aligned), then `%u`, then `%llu` (8-aligned).
        let file = c"src/main.rs";
        let mut buf = [0u8; 32];
        buf[0..4].copy_from_slice(&7u32.to_le_bytes());
        buf[8..16].copy_from_slice(&(file.as_ptr() as u64).to_le_bytes());
        buf[16..20].copy_from_slice(&12u32.to_le_bytes());
        buf[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        // SAFETY: the arguments of the four conversions, laid out as CUDA does.
        let out = unsafe { format_with(b"thread %u at %s:%u len %llu\n", buf.as_ptr(), Layout::Natural) };
        assert_eq!(out, b"thread 7 at src/main.rs:12 len 18446744073709551615\n");
    }
}
