//! `vprintf` on the host: the C format string `cuda_device::printf` builds,
//! with its buffer of 8-byte arguments, printed through the C library's
//! `snprintf` one conversion at a time (so the output matches the GPU's
//! printf conversion for conversion).

use std::ffi::{c_char, c_int, CStr};
use std::io::Write;

extern "C" {
    fn snprintf(buf: *mut c_char, size: usize, format: *const c_char, ...) -> c_int;
}

/// Formats one conversion `spec` (`%-8.3f`, NUL-terminated) with `bits`.
fn convert(spec: &[u8], bits: u64) -> Vec<u8> {
    let conversion = spec[spec.len() - 2];
    let mut buf = vec![0u8; 512];
    loop {
        // SAFETY: `spec` is a NUL-terminated C format with exactly one
        // conversion, whose argument type matches what is passed for it.
        let n = unsafe {
            let out = buf.as_mut_ptr().cast::<c_char>();
            let fmt = spec.as_ptr().cast::<c_char>();
            match conversion {
                b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => snprintf(out, buf.len(), fmt, f64::from_bits(bits)),
                b's' => snprintf(out, buf.len(), fmt, c"".as_ptr()),
                b'c' => snprintf(out, buf.len(), fmt, bits as c_int),
                _ => snprintf(out, buf.len(), fmt, bits),
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

/// Prints `format` with the arguments at `args` to stdout, in one write.
///
/// # Safety
/// `format` is NUL-terminated; `args` holds one 8-byte value per conversion.
pub(crate) unsafe fn print(format: *const u8, args: *const u8) -> i32 {
    // A hook's critical part: it takes stdout's lock (and the C library's).
    // SAFETY: the caller's contract.
    crate::engine::in_hook(|| unsafe { format_and_write(format, args) })
}

/// [`print`]'s work.
///
/// # Safety
/// As for [`print`].
unsafe fn format_and_write(format: *const u8, args: *const u8) -> i32 {
    // SAFETY: the caller's contract.
    let text = unsafe { CStr::from_ptr(format.cast()) }.to_bytes();
    let mut out = Vec::with_capacity(text.len() + 32);
    let mut next = 0usize;
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
        while i < text.len() && matches!(text[i], b'l' | b'h' | b'z' | b'j' | b't' | b'L') {
            i += 1; // length modifiers
        }
        if i >= text.len() {
            out.extend_from_slice(&text[start..]);
            break;
        }
        let mut spec = text[start..=i].to_vec();
        i += 1;
        // Every conversion reads one 8-byte slot; print 64-bit integers.
        let conversion = *spec.last().expect("non-empty");
        if matches!(conversion, b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'p') && conversion != b'p' {
            spec.retain(|&c| !matches!(c, b'l' | b'h' | b'z' | b'j' | b't'));
            let conv = spec.pop().expect("non-empty");
            spec.extend_from_slice(b"ll");
            spec.push(conv);
        }
        spec.push(0);
        // SAFETY: slot `next` exists (caller's contract); it may be unaligned.
        let bits = unsafe { args.add(next * 8).cast::<u64>().read_unaligned() };
        next += 1;
        out.extend_from_slice(&convert(&spec, bits));
    }
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = lock.write_all(&out);
    let _ = lock.flush();
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_match_c() {
        assert_eq!(convert(b"%5lld\0", (-42i64) as u64), b"  -42");
        assert_eq!(convert(b"%-6llu|\0", 7), b"7     |");
        assert_eq!(convert(b"%.3f\0", 2.5f64.to_bits()), b"2.500");
        assert_eq!(convert(b"%e\0", 1234.5f64.to_bits()), b"1.234500e+03");
        assert_eq!(convert(b"%llx\0", 255), b"ff");
    }
}
