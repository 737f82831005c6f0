//! `vprintf(format, args)`: what the embedder receives.
//!
//! It owns the layout of CUDA's argument buffer (one argument per
//! conversion, each at its natural size and alignment: 4 bytes for
//! `%d %u %x %c` and the `*` of a width or precision, 8 for the `l`/`ll`/`z`/
//! `j`/`t` integers, the doubles of `%f %e %g %a` and the pointers of
//! `%s %p %n`) and the copy handed to the embedder: read through the VM's
//! memory (the buffer usually lives in the thread's local memory), with each
//! `%s` pointer turned into a host pointer, since a string in shared or local
//! memory has a generic address that means nothing outside the VM.

/// One argument: its size in bytes and whether it is a `%s` string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arg {
    pub size: u8,
    pub string: bool,
}

/// The arguments a C format string reads, in order.
pub(crate) fn arguments(format: &[u8]) -> Vec<Arg> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < format.len() {
        if format[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        if format.get(i) == Some(&b'%') {
            i += 1;
            continue;
        }
        let mut wide = false;
        while let Some(&c) = format.get(i) {
            i += 1;
            match c {
                b'*' => out.push(Arg {
                    size: 4,
                    string: false,
                }),
                b'l' | b'z' | b'j' | b't' | b'L' | b'q' => wide = true,
                b'd' | b'i' | b'u' | b'o' | b'x' | b'X' | b'c' => {
                    out.push(Arg {
                        size: if wide { 8 } else { 4 },
                        string: false,
                    });
                    break;
                }
                b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' | b'p' | b'n' => {
                    out.push(Arg {
                        size: 8,
                        string: false,
                    });
                    break;
                }
                b's' => {
                    out.push(Arg {
                        size: 8,
                        string: true,
                    });
                    break;
                }
                // Flags, width, precision and `h`/`hh` (promoted to int).
                b'-' | b'+' | b' ' | b'#' | b'0'..=b'9' | b'.' | b'h' => {}
                _ => break,
            }
        }
    }
    out
}

/// The byte offset of each argument (aligned to its size) and the buffer's
/// length.
pub(crate) fn layout(args: &[Arg]) -> (Vec<usize>, usize) {
    let mut offsets = Vec::with_capacity(args.len());
    let mut at = 0usize;
    for a in args {
        at = at.div_ceil(a.size as usize) * a.size as usize;
        offsets.push(at);
        at += a.size as usize;
    }
    (offsets, at)
}

/// How many arguments `vprintf` reports having read.
pub(crate) fn count(format: &[u8]) -> u64 {
    arguments(format).len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_sizes_and_offsets() {
        let args = arguments(b"%u %llu %5.2f%% %s %c %-08lx %*d %hhd");
        let sizes: Vec<u8> = args.iter().map(|a| a.size).collect();
        assert_eq!(sizes, vec![4, 8, 8, 8, 4, 8, 4, 4, 4]);
        assert!(args[3].string);
        let (offsets, len) = layout(&args);
        assert_eq!(offsets, vec![0, 8, 16, 24, 32, 40, 48, 52, 56]);
        assert_eq!(len, 60);
        assert_eq!(count(b"100%% done"), 0);
    }
}
