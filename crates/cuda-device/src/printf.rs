//! Formatted output from kernels: [`gpu_printf!`](crate::gpu_printf) and
//! [`gpu_println!`](crate::gpu_println), with Rust's `{}` placeholders.
//!
//! ```
//! use cuda_device::{gpu_printf, gpu_println, kernel, thread};
//!
//! #[kernel]
//! pub fn show(values: &[f32], flags: &[u32]) {
//!     let i = thread::index_1d().get();
//!     if i == 0 {
//!         let name = "values";
//!         gpu_printf!("{name}[0] = {:.3}, flags = {:#010x}\n", values[0], flags[0]);
//!         gpu_println!("block {} of {}, ok = {}", thread::blockIdx_x(), thread::gridDim_x(), flags[0] != 0);
//!     }
//! }
//! ```
//!
//! The output goes to the host process's standard output when the host next
//! synchronises with the GPU (CUDA's device `printf` buffer; it is 1 MiB by
//! default and overwritten when a kernel prints more). Each call is printed
//! whole, but calls from different threads are interleaved in no set order.
//!
//! # Format strings
//!
//! The format string is parsed at compile time with Rust's syntax:
//! `{}` `{0}` `{name}` (a named argument `name = expr`, or a variable in
//! scope), `{{` and `}}`, and after a `:`
//!
//! | spec | means | for |
//! | --- | --- | --- |
//! | *(none)* | `Display` | integers, `f32`/`f64`, `bool`, `char`, `&str`, and [`PrintfArg`] types |
//! | `x` `X` `o` `b` | hex (lower/upper), octal, binary; `#` adds `0x` / `0o` / `0b` | integers |
//! | `e` `E` | C's `%e` `%E`: exponent form (see below) | `f32`, `f64` |
//! | `f` | C's `%f`: fixed point, 6 digits after the point unless `.N` | `f32`, `f64` |
//! | `g` `G` | C's `%g` `%G`: 6 (or `.N`) significant digits, exponent form when the exponent is below -4 or not below the precision, trailing zeros dropped | `f32`, `f64` |
//! | `p` | the address, as `0x…`; `#` zero-pads to 18 characters | references and raw pointers |
//! | `.N` | digits after the point (floats), the first N characters (text); ignored for integers | |
//! | `N` | minimum width; `<` / `>` align left / right (default: numbers right, text left) | all |
//! | `0` | pad numbers with zeros after the sign or prefix | numbers |
//! | `+` | a `+` before non-negative numbers | numbers |
//! | ` ` | C's space flag: a space before non-negative numbers (`{: .3f}`) | signed integers, floats |
//! | `#` | for `e E f g G`: C's alternate form (the point always, `g` keeps its zeros) | floats |
//!
//! Widths and precisions are at most 255. Not supported (a compile error that
//! says so): `{:?}`, fill characters other than space, centring (`^`),
//! widths or precisions taken from arguments (`N$`, `.*`), and more than
//! [`MAX_ARGS`] placeholders. `{:e}` is not implemented for integers, and
//! `i128`/`u128` cannot be printed.
//!
//! The C letters `e E f g G` print every value as C's printf (glibc) does,
//! `inf`, `-inf`, `nan` and `-nan` (`INF`, `NAN` for `E G`; the sign of a
//! NaN shown) included. Otherwise integers, text, pointers, `inf` and `NaN`
//! print exactly as Rust's `format!` prints them. Finite floats are formatted by the host's C library (CUDA's
//! printf formats on the host), which matches Rust for `{:.N}` but not for
//! two forms:
//! - `{}` on a float is C's `%g`: six significant digits, exponent form
//!   outside `1e-5..1e6` (`1.5`, `3`, `0.1`, `3.14159`, `1e+20`), where Rust
//!   prints the shortest exact form (`3.1415927`, `100000000000000000000`).
//!   Use `{:.N}` for a Rust-identical result.
//! - `{:e}` is C's `%e`: `1.234500e+03` where Rust writes `1.2345e3`.
//!
//! # How it works
//!
//! The C format depends on the argument types, so the macro writes the
//! literal pieces and each placeholder's spec as constants, and one shared
//! function (`#[inline(never)]`, so each call site stays small) builds the C
//! format string in a local [`FORMAT_CAPACITY`]-byte buffer at run time:
//! literal text and `%` escaped as `%%`; integers in decimal and finite floats as
//! `%lld` / `%llu` / `%g` / `%.Nf` / `%e` conversions with 8-byte arguments;
//! everything else (text, `char`, `bool`, hex, octal, binary, pointers,
//! `inf`, `NaN`, padding) rendered into the format string itself. Then it
//! calls CUDA's `vprintf`. No heap and no `core::fmt`, and it cannot panic.
//!
//! A call whose output would not fit in the format buffer (long text, wide
//! padding) is cut at [`TEXT_LIMIT`] bytes, before the first thing that does
//! not fit whole (a character, a `%%`, a C conversion), then ends with `...`
//! and keeps its final newline if the format string ends with one. NUL
//! characters in arguments are not printed (a format string containing one
//! is a compile error).
//!
//! Each argument is evaluated once, in the order written. The macros
//! evaluate to an `i32`: the number of placeholders printed (fewer when the
//! output was truncated), or `vprintf`'s negative error code.
//!
//! Cost: the shared formatter is about 1,500 lines of PTX, once per module;
//! each call adds a few dozen instructions (its argument array and the call)
//! and needs about 0.5 KiB of per-thread stack (local memory) while it runs.
//!
//! # On the host
//!
//! `gpu_printf!` is meant for kernels. Called on the host it aborts, like
//! every other GPU intrinsic (`vprintf` only exists on the device).

use crate::stubs;

/// The most placeholders one `gpu_printf!` may have.
pub const MAX_ARGS: usize = 16;

/// The size of the C format buffer built for each call, NUL included.
///
/// Literal text, text arguments and padding share it; a call that needs more
/// is truncated (see the [module docs](self)).
pub const FORMAT_CAPACITY: usize = 256;

/// Room kept at the end of the buffer for `...`, a newline and the NUL.
const TRUNCATION_ROOM: usize = 5;

/// The bytes of C format text one call may fill before it is truncated:
/// literal text and rendered arguments count their UTF-8 bytes (`%` twice),
/// a decimal integer or finite float its C conversion (`%lld`, `%.3f`, at
/// most 14 bytes). A format string whose literal text alone is longer is a
/// compile error (`cuda-macros` checks it with this number).
pub const TEXT_LIMIT: usize = FORMAT_CAPACITY - TRUNCATION_ROOM;

/// The longest C conversion written (`%+#0255.255f` and `%-+255lld` are 12
/// and 10 bytes).
const CONVERSION_MAX: usize = 14;

// ---------------------------------------------------------------------------
// Arguments

/// One argument, in the form the formatter prints it.
///
/// Implementations of [`PrintfArg`] build it with the constructors below.
#[derive(Clone, Copy, Debug)]
pub struct Arg<'a>(Repr<'a>);

#[derive(Clone, Copy, Debug)]
enum Repr<'a> {
    Int(i64),
    Uint(u64),
    Float(f64),
    Text(&'a str),
    Char(char),
}

impl<'a> Arg<'a> {
    /// A signed integer.
    pub const fn int(value: i64) -> Self {
        Arg(Repr::Int(value))
    }

    /// An unsigned integer.
    pub const fn uint(value: u64) -> Self {
        Arg(Repr::Uint(value))
    }

    /// A floating-point number (`f32` widens exactly to `f64`).
    pub const fn float(value: f64) -> Self {
        Arg(Repr::Float(value))
    }

    /// Text, printed as it is (without quotes or escapes).
    pub const fn str(value: &'a str) -> Self {
        Arg(Repr::Text(value))
    }

    /// One character.
    pub const fn char(value: char) -> Self {
        Arg(Repr::Char(value))
    }
}

/// A value `gpu_printf!` prints with `{}` (Rust's `Display`).
///
/// Implemented for `i8`..`i64`, `isize`, `u8`..`u64`, `usize`, `f32`, `f64`,
/// `bool`, `char`, `str`, and references to any of these. Implement it for
/// your own types by returning one of the [`Arg`] forms:
///
/// ```
/// use cuda_device::printf::{Arg, PrintfArg};
///
/// struct Meters(f32);
///
/// impl PrintfArg for Meters {
///     fn printf_arg(&self) -> Arg<'_> {
///         Arg::float(self.0 as f64)
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be printed by gpu_printf!",
    label = "not printable with `{{}}` on the GPU",
    note = "gpu_printf! prints integers up to 64 bits, f32, f64, bool, char, &str and references to them; pointers with `{{:p}}`; implement `cuda_device::printf::PrintfArg` for other types"
)]
pub trait PrintfArg {
    /// The value to print.
    fn printf_arg(&self) -> Arg<'_>;
}

/// An integer `gpu_printf!` prints with `{:x}`, `{:X}`, `{:o}` or `{:b}`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be printed in hex, octal or binary by gpu_printf!",
    label = "not an integer",
    note = "`{{:x}}`, `{{:X}}`, `{{:o}}` and `{{:b}}` take integers up to 64 bits and references to them"
)]
pub trait PrintfRadix {
    /// The two's-complement bits at the type's width, zero-extended
    /// (`-1i8` gives `0xff`), as Rust's `{:x}` prints them.
    fn printf_bits(&self) -> u64;
}

/// A float `gpu_printf!` prints with `{:e}` or `{:E}`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be printed in exponent form by gpu_printf!",
    label = "not a float",
    note = "`{{:e}}` and `{{:E}}` take f32, f64 and references to them"
)]
pub trait PrintfExp {
    /// The value, widened to `f64`.
    fn printf_float(&self) -> f64;
}

/// A pointer `gpu_printf!` prints with `{:p}`: references and raw pointers.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a pointer: gpu_printf!'s `{{:p}}` takes references and raw pointers",
    label = "not a pointer"
)]
pub trait PrintfPointer {
    /// The address.
    fn printf_address(&self) -> usize;
}

macro_rules! integers {
    ($($t:ty => $ctor:ident as $wide:ty, $unsigned:ty;)*) => {$(
        impl PrintfArg for $t {
            #[inline(always)]
            fn printf_arg(&self) -> Arg<'_> {
                Arg::$ctor(*self as $wide)
            }
        }
        impl PrintfRadix for $t {
            #[inline(always)]
            fn printf_bits(&self) -> u64 {
                *self as $unsigned as u64
            }
        }
    )*};
}

integers! {
    i8 => int as i64, u8;
    i16 => int as i64, u16;
    i32 => int as i64, u32;
    i64 => int as i64, u64;
    isize => int as i64, usize;
    u8 => uint as u64, u8;
    u16 => uint as u64, u16;
    u32 => uint as u64, u32;
    u64 => uint as u64, u64;
    usize => uint as u64, usize;
}

impl PrintfArg for f32 {
    #[inline(always)]
    fn printf_arg(&self) -> Arg<'_> {
        Arg::float(*self as f64)
    }
}

impl PrintfArg for f64 {
    #[inline(always)]
    fn printf_arg(&self) -> Arg<'_> {
        Arg::float(*self)
    }
}

impl PrintfExp for f32 {
    #[inline(always)]
    fn printf_float(&self) -> f64 {
        *self as f64
    }
}

impl PrintfExp for f64 {
    #[inline(always)]
    fn printf_float(&self) -> f64 {
        *self
    }
}

impl PrintfArg for bool {
    #[inline(always)]
    fn printf_arg(&self) -> Arg<'_> {
        Arg::str(if *self { "true" } else { "false" })
    }
}

impl PrintfArg for char {
    #[inline(always)]
    fn printf_arg(&self) -> Arg<'_> {
        Arg::char(*self)
    }
}

impl PrintfArg for str {
    #[inline(always)]
    fn printf_arg(&self) -> Arg<'_> {
        Arg::str(self)
    }
}

macro_rules! through_references {
    ($($trait:ident :: $method:ident -> $ret:ty;)*) => {$(
        impl<T: $trait + ?Sized> $trait for &T {
            #[inline(always)]
            fn $method(&self) -> $ret {
                (**self).$method()
            }
        }
        impl<T: $trait + ?Sized> $trait for &mut T {
            #[inline(always)]
            fn $method(&self) -> $ret {
                (**self).$method()
            }
        }
    )*};
}

through_references! {
    PrintfArg::printf_arg -> Arg<'_>;
    PrintfRadix::printf_bits -> u64;
    PrintfExp::printf_float -> f64;
}

impl<T: ?Sized> PrintfPointer for &T {
    #[inline(always)]
    fn printf_address(&self) -> usize {
        *self as *const T as *const () as usize
    }
}

impl<T: ?Sized> PrintfPointer for &mut T {
    #[inline(always)]
    fn printf_address(&self) -> usize {
        &**self as *const T as *const () as usize
    }
}

impl<T: ?Sized> PrintfPointer for *const T {
    #[inline(always)]
    fn printf_address(&self) -> usize {
        *self as *const () as usize
    }
}

impl<T: ?Sized> PrintfPointer for *mut T {
    #[inline(always)]
    fn printf_address(&self) -> usize {
        *self as *const () as usize
    }
}

// ---------------------------------------------------------------------------
// What the macro writes

/// How a placeholder prints its argument (the spec's type letter).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `{}`
    Display,
    /// `{:x}`
    LowerHex,
    /// `{:X}`
    UpperHex,
    /// `{:o}`
    Octal,
    /// `{:b}`
    Binary,
    /// `{:e}`
    LowerExp,
    /// `{:E}`
    UpperExp,
    /// `{:f}` (C's `%f`)
    Fixed,
    /// `{:g}` (C's `%g`)
    General,
    /// `{:G}` (C's `%G`)
    UpperGeneral,
    /// `{:p}`
    Pointer,
}

impl Kind {
    /// The C conversions (`e E f g G`): every value, `inf` and `nan`
    /// included, prints as C's printf prints it.
    const fn is_c_float(self) -> bool {
        matches!(self, Kind::LowerExp | Kind::UpperExp | Kind::Fixed | Kind::General | Kind::UpperGeneral)
    }
}

/// A placeholder's spec, built by the macro with the `const` methods below
/// (`Spec::new(Kind::LowerHex).alternate().zero().width(10)`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    kind: Kind,
    flags: u8,
    width: u8,
    precision: u8,
}

const PLUS: u8 = 1;
const ALTERNATE: u8 = 2;
const ZERO: u8 = 4;
const LEFT: u8 = 8;
const RIGHT: u8 = 16;
const PRECISION: u8 = 32;
const SPACE: u8 = 64;

#[doc(hidden)]
impl Spec {
    /// No flags, width or precision.
    pub const fn new(kind: Kind) -> Self {
        Spec {
            kind,
            flags: 0,
            width: 0,
            precision: 0,
        }
    }
    /// `+`
    pub const fn plus(self) -> Self {
        self.flag(PLUS)
    }
    /// ` ` (C's space flag: a space before non-negative numbers)
    pub const fn space(self) -> Self {
        self.flag(SPACE)
    }
    /// `#`
    pub const fn alternate(self) -> Self {
        self.flag(ALTERNATE)
    }
    /// `0`
    pub const fn zero(self) -> Self {
        self.flag(ZERO)
    }
    /// `<`
    pub const fn left(self) -> Self {
        self.flag(LEFT)
    }
    /// `>`
    pub const fn right(self) -> Self {
        self.flag(RIGHT)
    }
    /// The minimum width.
    pub const fn width(mut self, width: u8) -> Self {
        self.width = width;
        self
    }
    /// `.N`
    pub const fn precision(mut self, precision: u8) -> Self {
        self.precision = precision;
        self.flag(PRECISION)
    }
    const fn flag(mut self, flag: u8) -> Self {
        self.flags |= flag;
        self
    }
    const fn has(self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Literal text followed by one placeholder, or (`spec: None`) the text after
/// the last placeholder.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Piece {
    text: &'static str,
    spec: Option<Spec>,
}

#[doc(hidden)]
impl Piece {
    /// Text, then a placeholder.
    pub const fn new(text: &'static str, spec: Spec) -> Self {
        Piece {
            text,
            spec: Some(spec),
        }
    }
    /// Text only.
    pub const fn text(text: &'static str) -> Self {
        Piece { text, spec: None }
    }
}

/// A C format string and its argument buffer, as passed to `vprintf`.
#[doc(hidden)]
#[derive(Clone)]
pub struct CFormat {
    text: [u8; FORMAT_CAPACITY],
    len: usize,
    args: [u64; MAX_ARGS],
    n_args: usize,
    /// Placeholders printed in full.
    printed: usize,
    truncated: bool,
}

impl CFormat {
    /// The format string, without its NUL.
    pub fn format(&self) -> &[u8] {
        self.text.get(..self.len).unwrap_or(&[])
    }

    /// The 8-byte arguments of the format's conversions, in order.
    pub fn args(&self) -> &[u64] {
        self.args.get(..self.n_args).unwrap_or(&[])
    }

    /// Whether the output was cut at [`FORMAT_CAPACITY`].
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// How many placeholders were printed in full.
    pub fn printed(&self) -> usize {
        self.printed
    }
}

/// The macros' entry points. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use super::{build, print, CFormat, Kind, Piece, Spec};
    pub use cuda_macros::__gpu_format;

    use super::{Arg, PrintfArg, PrintfExp, PrintfPointer, PrintfRadix};

    /// `{}`
    #[inline(always)]
    pub fn display<T: PrintfArg + ?Sized>(value: &T) -> Arg<'_> {
        value.printf_arg()
    }
    /// `{:x}` `{:X}` `{:o}` `{:b}`
    #[inline(always)]
    pub fn radix<T: PrintfRadix + ?Sized>(value: &T) -> Arg<'static> {
        Arg::uint(value.printf_bits())
    }
    /// `{:e}` `{:E}` `{:f}` `{:g}` `{:G}`
    #[inline(always)]
    pub fn exp<T: PrintfExp + ?Sized>(value: &T) -> Arg<'static> {
        Arg::float(value.printf_float())
    }
    /// `{:p}`
    #[inline(always)]
    pub fn pointer<T: PrintfPointer + ?Sized>(value: &T) -> Arg<'static> {
        Arg::uint(value.printf_address() as u64)
    }
}

/// Prints `pieces` with `args` (one per placeholder, in order) through CUDA's
/// `vprintf`. What `gpu_printf!` calls.
///
/// Returns the number of placeholders printed (fewer than `args.len()` when
/// the output was truncated), or `vprintf`'s negative error code.
#[doc(hidden)]
#[inline(never)]
pub fn print(pieces: &[Piece], args: &[Arg<'_>]) -> i32 {
    let mut format = CFormat::new();
    format.write(pieces, args);
    // The stub is a safe function, but `vprintf` trusts its inputs: the
    // format is NUL-terminated (`build` always leaves room for the NUL, and
    // the buffer starts zeroed), and the argument buffer holds one 8-byte,
    // 8-aligned value for each `%lld`/`%llu`/`%g`/`%f`/`%e`/`%E` conversion
    // in it, in order (every other `%` is escaped as `%%`). Both outlive the call.
    let status = stubs::__oxide_stub_vprintf(format.text.as_ptr(), format.args.as_ptr().cast());
    if status < 0 {
        status
    } else {
        format.printed as i32
    }
}

/// Builds the C format string and argument buffer for `pieces` and `args`.
#[doc(hidden)]
pub fn build(pieces: &[Piece], args: &[Arg<'_>]) -> CFormat {
    let mut format = CFormat::new();
    format.write(pieces, args);
    format
}

impl CFormat {
    /// An empty format.
    fn new() -> Self {
        CFormat {
            text: [0; FORMAT_CAPACITY],
            len: 0,
            args: [0; MAX_ARGS],
            n_args: 0,
            printed: 0,
            truncated: false,
        }
    }

    /// Appends `pieces` with `args` (one per placeholder, in order).
    fn write(&mut self, pieces: &[Piece], args: &[Arg<'_>]) {
        let mut args = args.iter();
        for piece in pieces {
            self.escaped(piece.text.as_bytes());
            if let Some(spec) = piece.spec {
                let Some(arg) = args.next() else { break };
                self.arg(spec, arg.0);
                if !self.truncated {
                    self.printed = self.printed.wrapping_add(1);
                }
            }
            if self.truncated {
                break;
            }
        }
        if self.truncated {
            // (`last()` on the bytes: `ends_with` would call `memcmp`.)
            let ends_line = matches!(pieces.last(), Some(p) if p.spec.is_none() && p.text.as_bytes().last() == Some(&b'\n'));
            self.finish_truncated(ends_line);
        }
    }
}

// ---------------------------------------------------------------------------
// The formatter
//
// Written to stay small in PTX and free of panic paths in every build: the
// helpers that many places use are `#[inline(never)]`, indexing goes through
// `get`/`get_mut`, and counters use wrapping arithmetic, so that a debug build
// (overflow checks on) adds no checks; no value here can come near overflowing.

impl CFormat {
    /// Whether `n` more bytes of text fit; if not, the output is truncated
    /// from here on.
    #[inline(never)]
    fn reserve(&mut self, n: usize) -> bool {
        if !self.truncated && self.len.wrapping_add(n) <= TEXT_LIMIT {
            return true;
        }
        self.truncated = true;
        false
    }

    /// Appends one byte (room was reserved).
    #[inline(always)]
    fn put(&mut self, byte: u8) {
        if let Some(slot) = self.text.get_mut(self.len) {
            *slot = byte;
            self.len = self.len.wrapping_add(1);
        }
    }

    /// Appends text, one whole character at a time: `%` becomes `%%` and NUL
    /// bytes are left out.
    #[inline(never)]
    fn escaped(&mut self, text: &[u8]) {
        let mut i = 0usize;
        while let Some(&lead) = text.get(i) {
            let n = utf8_len(lead);
            match lead {
                0 => {}
                b'%' => {
                    if !self.reserve(2) {
                        return;
                    }
                    self.put(b'%');
                    self.put(b'%');
                }
                _ => {
                    if !self.reserve(n) {
                        return;
                    }
                    let mut k = 0;
                    while k < n {
                        if let Some(&b) = text.get(i.wrapping_add(k)) {
                            self.put(b);
                        }
                        k = k.wrapping_add(1);
                    }
                }
            }
            i = i.wrapping_add(n);
        }
    }

    /// Appends `count` copies of `byte` (a space or `0`).
    #[inline(never)]
    fn repeat(&mut self, byte: u8, count: usize) {
        let mut left = count;
        while left != 0 && self.reserve(1) {
            self.put(byte);
            left = left.wrapping_sub(1);
        }
    }

    /// `...`, the newline if the format ended with one, and the NUL (the room
    /// for them is kept free by [`TEXT_LIMIT`]).
    fn finish_truncated(&mut self, ends_line: bool) {
        for &b in b"..." {
            self.put(b);
        }
        if ends_line {
            self.put(b'\n');
        }
        self.put(0);
        self.len = self.len.wrapping_sub(1);
    }

    fn arg(&mut self, spec: Spec, arg: Repr<'_>) {
        match (arg, spec.kind) {
            (Repr::Text(text), _) => self.text(text.as_bytes(), spec),
            (Repr::Char(c), _) => {
                let mut buf = [0u8; 4];
                let n = encode_utf8(c, &mut buf);
                self.text(buf.get(..n).unwrap_or(&[]), spec)
            }
            (Repr::Int(v), Kind::Display) => self.conversion(spec, b'd', v as u64),
            (Repr::Uint(v), Kind::Display) => self.conversion(spec, b'u', v),
            (Repr::Int(v), _) => self.radix(v as u64, spec),
            (Repr::Uint(v), _) => self.radix(v, spec),
            (Repr::Float(v), _) => self.float(v, spec),
        }
    }

    /// Text (`&str`, `char`, `bool`): the first `precision` characters,
    /// padded to the width with spaces, left-aligned unless `>` is given.
    fn text(&mut self, text: &[u8], spec: Spec) {
        let mut body = text;
        if spec.has(PRECISION) {
            body = text
                .get(..char_boundary(text, spec.precision as usize))
                .unwrap_or(text);
        }
        self.padded(&[], body, spec, false);
    }

    /// Writes `prefix` and `body` padded to the spec's width. Numbers align
    /// right by default and take `0` padding between prefix and body.
    #[inline(never)]
    fn padded(&mut self, prefix: &[u8], body: &[u8], spec: Spec, numeric: bool) {
        let len = char_count(prefix).wrapping_add(char_count(body));
        let pad = (spec.width as usize).saturating_sub(len);
        let zero = numeric && spec.has(ZERO);
        let left = !zero && (spec.has(LEFT) || (!numeric && !spec.has(RIGHT)));
        if !zero && !left {
            self.repeat(b' ', pad);
        }
        self.escaped(prefix);
        if zero {
            self.repeat(b'0', pad);
        }
        self.escaped(body);
        if left {
            self.repeat(b' ', pad);
        }
    }

    /// Hex, octal, binary and pointers, rendered here as Rust prints them.
    #[inline(never)]
    fn radix(&mut self, value: u64, mut spec: Spec) {
        let (shift, letter, upper) = match spec.kind {
            Kind::UpperHex => (4, b'x', true),
            Kind::Octal => (3, b'o', false),
            Kind::Binary => (1, b'b', false),
            _ => (4, b'x', false),
        };
        if spec.kind == Kind::Pointer {
            // Rust's `{:p}`: always `0x`; `{:#p}` zero-pads to the full width.
            if spec.has(ALTERNATE) {
                spec = spec.zero();
                if spec.width == 0 {
                    spec.width = 2 + 2 * core::mem::size_of::<usize>() as u8;
                }
            }
            spec = spec.alternate();
        }
        let mut digits = [0u8; 64];
        let mut start = digits.len();
        let mask = (1u64 << shift).wrapping_sub(1);
        let mut rest = value;
        loop {
            let d = (rest & mask) as u8;
            let digit = match d {
                0..=9 => b'0'.wrapping_add(d),
                _ if upper => b'A'.wrapping_add(d).wrapping_sub(10),
                _ => b'a'.wrapping_add(d).wrapping_sub(10),
            };
            start = start.wrapping_sub(1);
            if let Some(slot) = digits.get_mut(start) {
                *slot = digit;
            }
            rest >>= shift;
            if rest == 0 || start == 0 {
                break;
            }
        }
        let mut head = [0u8; 3];
        let mut n = 0usize;
        if spec.has(PLUS) {
            head[0] = b'+';
            n = 1;
        }
        if spec.has(ALTERNATE) {
            if let Some([zero, x]) = head.get_mut(n..n.wrapping_add(2)) {
                *zero = b'0';
                *x = letter;
            }
            n = n.wrapping_add(2);
        }
        let body = digits.get(start..).unwrap_or(&[]);
        self.padded(head.get(..n).unwrap_or(&[]), body, spec, true);
    }

    /// Floats: `inf` and `NaN` rendered here (as Rust prints them, or for
    /// the C conversions as C does); finite values as a C conversion.
    fn float(&mut self, value: f64, spec: Spec) {
        if spec.kind.is_c_float() && !value.is_finite() {
            return self.c_non_finite(value, spec);
        }
        if value.is_nan() {
            return self.padded(&[], b"NaN", spec, true);
        }
        if value.is_infinite() {
            let sign: &[u8] = match (value < 0.0, spec.has(PLUS), spec.has(SPACE)) {
                (true, _, _) => b"-",
                (false, true, _) => b"+",
                (false, false, true) => b" ",
                (false, false, false) => b"",
            };
            return self.padded(sign, b"inf", spec, true);
        }
        let letter = match spec.kind {
            Kind::LowerExp => b'e',
            Kind::UpperExp => b'E',
            Kind::Fixed => b'f',
            Kind::General => b'g',
            Kind::UpperGeneral => b'G',
            _ if spec.has(PRECISION) => b'f',
            _ => b'g',
        };
        self.conversion(spec, letter, value.to_bits());
    }

    /// `inf` and `nan` as C's printf (glibc) prints them for `%e %f %g`:
    /// lower case (upper for `%E %G`), the sign of a NaN shown, `+` or the
    /// space flag before a positive one, padded with spaces even with `0`.
    #[inline(never)]
    fn c_non_finite(&mut self, value: f64, mut spec: Spec) {
        let upper = matches!(spec.kind, Kind::UpperExp | Kind::UpperGeneral);
        let body: &[u8] = match (value.is_nan(), upper) {
            (true, false) => b"nan",
            (true, true) => b"NAN",
            (false, false) => b"inf",
            (false, true) => b"INF",
        };
        let sign: &[u8] = if value.is_sign_negative() {
            b"-"
        } else if spec.has(PLUS) {
            b"+"
        } else if spec.has(SPACE) {
            b" "
        } else {
            b""
        };
        spec.flags &= !ZERO;
        self.padded(sign, body, spec, true);
    }

    /// `%[-][+][0][width][.precision]<letter>` taking the 8-byte `bits`,
    /// appended whole or not at all. Integers (`d`, `u`) get the `ll` length;
    /// floats the precision (Rust ignores it for integers, where C would read
    /// it as a minimum number of digits).
    #[inline(never)]
    fn conversion(&mut self, spec: Spec, letter: u8, bits: u64) {
        if self.n_args >= MAX_ARGS {
            self.truncated = true;
            return;
        }
        let is_float = !matches!(letter, b'd' | b'u');
        let mut c = Conversion {
            bytes: [0; CONVERSION_MAX],
            len: 0,
        };
        c.push(b'%');
        if spec.has(LEFT) && !spec.has(ZERO) {
            c.push(b'-');
        }
        if spec.has(PLUS) {
            c.push(b'+');
        } else if spec.has(SPACE) && letter != b'u' {
            c.push(b' ');
        }
        if spec.has(ALTERNATE) && spec.kind.is_c_float() {
            c.push(b'#');
        }
        if spec.has(ZERO) {
            c.push(b'0');
        }
        if spec.width > 0 {
            c.decimal(spec.width);
        }
        if is_float && spec.has(PRECISION) {
            c.push(b'.');
            c.decimal(spec.precision);
        }
        if !is_float {
            c.push(b'l');
            c.push(b'l');
        }
        c.push(letter);
        if !self.reserve(c.len) {
            return;
        }
        for &b in c.bytes.get(..c.len).unwrap_or(&[]) {
            self.put(b);
        }
        if let Some(slot) = self.args.get_mut(self.n_args) {
            *slot = bits;
            self.n_args = self.n_args.wrapping_add(1);
        }
    }
}

/// A C conversion being assembled.
struct Conversion {
    bytes: [u8; CONVERSION_MAX],
    len: usize,
}

impl Conversion {
    fn push(&mut self, b: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = b;
            self.len = self.len.wrapping_add(1);
        }
    }

    fn decimal(&mut self, value: u8) {
        if value >= 100 {
            self.push(b'0'.wrapping_add(value / 100));
        }
        if value >= 10 {
            self.push(b'0'.wrapping_add(value / 10 % 10));
        }
        self.push(b'0'.wrapping_add(value % 10));
    }
}

/// The length of the UTF-8 sequence that starts with `lead`.
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// Whether `byte` starts a character (is not a UTF-8 continuation byte).
fn starts_char(byte: u8) -> bool {
    byte & 0xC0 != 0x80
}

/// The number of characters in UTF-8 `text`.
fn char_count(text: &[u8]) -> usize {
    let mut n = 0usize;
    for &b in text {
        if starts_char(b) {
            n = n.wrapping_add(1);
        }
    }
    n
}

/// The byte offset after the first `chars` characters of `text`.
fn char_boundary(text: &[u8], chars: usize) -> usize {
    let (mut seen, mut i) = (0usize, 0usize);
    while let Some(&b) = text.get(i) {
        if starts_char(b) {
            if seen == chars {
                return i;
            }
            seen = seen.wrapping_add(1);
        }
        i = i.wrapping_add(1);
    }
    text.len()
}

/// Writes `c` as UTF-8 into `buf`; returns the length.
fn encode_utf8(c: char, buf: &mut [u8; 4]) -> usize {
    let c = c as u32;
    if c < 0x80 {
        buf[0] = c as u8;
        1
    } else if c < 0x800 {
        buf[0] = 0xC0 | (c >> 6) as u8;
        buf[1] = 0x80 | (c & 0x3F) as u8;
        2
    } else if c < 0x1_0000 {
        buf[0] = 0xE0 | (c >> 12) as u8;
        buf[1] = 0x80 | ((c >> 6) & 0x3F) as u8;
        buf[2] = 0x80 | (c & 0x3F) as u8;
        3
    } else {
        buf[0] = 0xF0 | (c >> 18) as u8;
        buf[1] = 0x80 | ((c >> 12) & 0x3F) as u8;
        buf[2] = 0x80 | ((c >> 6) & 0x3F) as u8;
        buf[3] = 0x80 | (c & 0x3F) as u8;
        4
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::__private::{display, exp, pointer, radix};
    use super::*;
    use std::string::{String, ToString};
    use std::vec::Vec;
    use std::{format, vec};

    fn s(kind: Kind) -> Spec {
        Spec::new(kind)
    }

    /// The C format of one placeholder printing `arg` with `spec`.
    fn one(spec: Spec, arg: Arg<'_>) -> CFormat {
        build(&[Piece::new("", spec)], &[arg])
    }

    fn text(format: &CFormat) -> String {
        String::from_utf8(format.format().to_vec()).unwrap()
    }

    /// The format string and the arguments of one placeholder.
    fn c(spec: Spec, arg: Arg<'_>) -> (String, Vec<u64>) {
        let f = one(spec, arg);
        (text(&f), f.args().to_vec())
    }

    #[test]
    fn c_float_letters_pass_their_flags_to_c() {
        let x = 2.5f64;
        assert_eq!(c(s(Kind::Fixed), exp(&x)), ("%f".into(), vec![x.to_bits()]));
        assert_eq!(c(s(Kind::Fixed).precision(3), exp(&x)).0, "%.3f");
        assert_eq!(c(s(Kind::General).space(), exp(&x)).0, "% g");
        assert_eq!(c(s(Kind::UpperGeneral).plus().space().width(12).precision(4), exp(&x)).0, "%+12.4G");
        assert_eq!(c(s(Kind::LowerExp).alternate().zero().width(9), exp(&x)).0, "%#09e");
        assert_eq!(c(s(Kind::Fixed).left().width(10).precision(1), exp(&(x as f32))).0, "%-10.1f");
        // The space flag reaches signed integers only, as in C.
        assert_eq!(c(s(Kind::Display).space(), display(&-3i32)).0, "% lld");
        assert_eq!(c(s(Kind::Display).space(), display(&3u32)).0, "%llu");
        // `#` is C's alternate form for the C letters only.
        assert_eq!(c(s(Kind::Display).alternate().precision(2), display(&x)).0, "%.2f");
    }

    #[test]
    fn c_float_letters_print_inf_and_nan_as_glibc_does() {
        let cases: [(Spec, f64, &str); 10] = [
            (s(Kind::Fixed), f64::INFINITY, "inf"),
            (s(Kind::Fixed), f64::NEG_INFINITY, "-inf"),
            (s(Kind::General), f64::NAN, "nan"),
            (s(Kind::General), -f64::NAN, "-nan"),
            (s(Kind::UpperGeneral), f64::NAN, "NAN"),
            (s(Kind::UpperExp), f64::NEG_INFINITY, "-INF"),
            (s(Kind::LowerExp).plus(), f64::INFINITY, "+inf"),
            (s(Kind::Fixed).space(), f64::NAN, " nan"),
            (s(Kind::Fixed).zero().width(6), f64::INFINITY, "   inf"),
            (s(Kind::General).left().width(6), -f64::NAN, "-nan  "),
        ];
        for (spec, value, want) in cases {
            let f = one(spec, exp(&value));
            assert_eq!((text(&f).as_str(), f.args().len()), (want, 0), "{spec:?} {value}");
        }
        // `{}` keeps Rust's spelling.
        assert_eq!(text(&one(s(Kind::Display), display(&-f64::NAN))), "NaN");
        assert_eq!(text(&one(s(Kind::Display).space(), display(&f64::INFINITY))), " inf");
    }

    #[test]
    fn decimal_integers_are_64_bit_c_conversions() {
        assert_eq!(
            c(s(Kind::Display), display(&-5i32)),
            ("%lld".into(), vec![(-5i64) as u64])
        );
        assert_eq!(
            c(s(Kind::Display), display(&i8::MIN)),
            ("%lld".into(), vec![(-128i64) as u64])
        );
        assert_eq!(
            c(s(Kind::Display), display(&u64::MAX)),
            ("%llu".into(), vec![u64::MAX])
        );
        assert_eq!(
            c(s(Kind::Display), display(&&7usize)),
            ("%llu".into(), vec![7])
        );
        assert_eq!(
            c(s(Kind::Display).left().width(5), display(&1u8)).0,
            "%-5llu"
        );
        assert_eq!(
            c(s(Kind::Display).right().width(5), display(&1i16)).0,
            "%5lld"
        );
        // `0` wins over `<`, as in Rust; the precision is ignored for integers.
        assert_eq!(
            c(s(Kind::Display).left().zero().width(5), display(&1i64)).0,
            "%05lld"
        );
        assert_eq!(
            c(
                s(Kind::Display).plus().zero().width(255).precision(3),
                display(&1i64)
            )
            .0,
            "%+0255lld"
        );
        assert_eq!(c(s(Kind::Display).alternate(), display(&1isize)).0, "%lld");
    }

    #[test]
    fn finite_floats_are_c_conversions_on_doubles() {
        let bits = 1.5f64.to_bits();
        assert_eq!(
            c(s(Kind::Display), display(&1.5f32)),
            ("%g".into(), vec![bits])
        );
        assert_eq!(
            c(s(Kind::Display).precision(3), display(&1.5f64)),
            ("%.3f".into(), vec![bits])
        );
        assert_eq!(c(s(Kind::Display).precision(0), display(&1.5f64)).0, "%.0f");
        assert_eq!(
            c(s(Kind::LowerExp), exp(&1.5f32)),
            ("%e".into(), vec![bits])
        );
        assert_eq!(c(s(Kind::UpperExp).precision(2), exp(&&1.5f64)).0, "%.2E");
        assert_eq!(
            c(
                s(Kind::Display).plus().zero().width(8).precision(3),
                display(&-1.5f64)
            )
            .0,
            "%+08.3f"
        );
        assert_eq!(
            c(s(Kind::Display).left().width(6), display(&1.5f64)).0,
            "%-6g"
        );
        assert_eq!(
            c(s(Kind::Display), display(&-0.0f64)).1,
            vec![(-0.0f64).to_bits()]
        );
    }

    /// Checks that the device renders `value` with `spec` exactly as Rust's
    /// `format!` does with `rust` (for the cases rendered without C).
    macro_rules! same_as_rust {
        ($($spec:expr, $arg:expr, $rust:literal, $value:expr;)*) => {$(
            let f = one($spec, $arg);
            assert!(f.args().is_empty(), "{} uses a C conversion", $rust);
            assert_eq!(text(&f).replace("%%", "%"), format!($rust, $value), "{}", $rust);
        )*};
    }

    #[test]
    fn radix_pointers_and_text_render_like_rust() {
        let p = 0x1234usize as *const u8;
        same_as_rust! {
            s(Kind::LowerHex), radix(&255u8), "{:x}", 255u8;
            s(Kind::UpperHex), radix(&0xabcdu32), "{:X}", 0xabcdu32;
            s(Kind::LowerHex), radix(&-1i8), "{:x}", -1i8;
            s(Kind::LowerHex), radix(&-1i32), "{:x}", -1i32;
            s(Kind::LowerHex), radix(&u64::MAX), "{:x}", u64::MAX;
            s(Kind::LowerHex), radix(&0u32), "{:x}", 0u32;
            s(Kind::LowerHex).alternate(), radix(&0u32), "{:#x}", 0u32;
            s(Kind::UpperHex).alternate(), radix(&255u32), "{:#X}", 255u32;
            s(Kind::Octal).alternate(), radix(&15u32), "{:#o}", 15u32;
            s(Kind::Octal), radix(&i64::MIN), "{:o}", i64::MIN;
            s(Kind::Binary).alternate(), radix(&5u8), "{:#b}", 5u8;
            s(Kind::Binary), radix(&u64::MAX), "{:b}", u64::MAX;
            s(Kind::Binary), radix(&-2isize), "{:b}", -2isize;
            s(Kind::LowerHex).alternate().zero().width(10), radix(&255u32), "{:#010x}", 255u32;
            s(Kind::LowerHex).alternate().width(8), radix(&255u32), "{:#8x}", 255u32;
            s(Kind::LowerHex).alternate().left().width(8), radix(&255u32), "{:<#8x}", 255u32;
            s(Kind::LowerHex).plus().alternate(), radix(&255u32), "{:+#x}", 255u32;
            s(Kind::Binary).zero().width(12), radix(&&5u16), "{:012b}", 5u16;
            s(Kind::Pointer), pointer(&p), "{:p}", p;
            s(Kind::Pointer).alternate(), pointer(&p), "{:#p}", p;
            s(Kind::Pointer).width(10), pointer(&p), "{:10p}", p;
            s(Kind::Pointer).zero().width(10), pointer(&p), "{:010p}", p;
            s(Kind::Pointer), pointer(&core::ptr::null::<u8>()), "{:p}", core::ptr::null::<u8>();
            s(Kind::Display), display("héllo"), "{}", "héllo";
            s(Kind::Display).precision(3), display("héllo"), "{:.3}", "héllo";
            s(Kind::Display).width(5).precision(1), display("héllo"), "{:5.1}", "héllo";
            s(Kind::Display).right().width(7), display(&"héllo"), "{:>7}", "héllo";
            s(Kind::Display).zero().width(5), display("ab"), "{:05}", "ab";
            s(Kind::Display).precision(9), display("ab"), "{:.9}", "ab";
            s(Kind::Display), display("100% sure"), "{}", "100% sure";
            s(Kind::Display), display(&true), "{}", true;
            s(Kind::Display).width(6), display(&false), "{:6}", false;
            s(Kind::Display).precision(2), display(&true), "{:.2}", true;
            s(Kind::Display), display(&'λ'), "{}", 'λ';
            s(Kind::Display), display(&'😀'), "{}", '😀';
            s(Kind::Display), display(&'%'), "{}", '%';
            s(Kind::Display).right().width(3), display(&'x'), "{:>3}", 'x';
            s(Kind::Display).precision(0), display(&'a'), "{:.0}", 'a';
            s(Kind::Display), display(&f64::NAN), "{}", f64::NAN;
            s(Kind::Display).plus().precision(2), display(&f32::NAN), "{:+.2}", f32::NAN;
            s(Kind::Display).zero().width(5), display(&f64::NAN), "{:05}", f64::NAN;
            s(Kind::Display), display(&f64::INFINITY), "{}", f64::INFINITY;
            s(Kind::Display), display(&f32::NEG_INFINITY), "{}", f32::NEG_INFINITY;
            s(Kind::Display).plus(), display(&f64::INFINITY), "{:+}", f64::INFINITY;
            s(Kind::Display).width(6), display(&f64::NEG_INFINITY), "{:6}", f64::NEG_INFINITY;
            s(Kind::Display).left().width(6), display(&f64::INFINITY), "{:<6}", f64::INFINITY;
            s(Kind::Display).zero().width(6), display(&f64::NEG_INFINITY), "{:06}", f64::NEG_INFINITY;
            s(Kind::LowerExp), exp(&f64::INFINITY), "{:e}", f64::INFINITY;
        }
    }

    #[test]
    fn literal_text_escapes_percent_and_drops_nul() {
        let f = build(
            &[
                Piece::new("100% of ", s(Kind::Display)),
                Piece::text(" done\n"),
            ],
            &[display("a\0b%")],
        );
        assert_eq!(text(&f), "100%% of ab%% done\n");
        assert_eq!(f.text[f.len], 0);
        assert_eq!((f.printed(), f.truncated()), (1, false));
    }

    #[test]
    fn pieces_and_arguments_interleave_in_order() {
        let f = build(
            &[
                Piece::new("x = ", s(Kind::Display)),
                Piece::new(", y = ", s(Kind::LowerHex).alternate()),
                Piece::new(", f = ", s(Kind::Display).precision(3)),
                Piece::new(", ok = ", s(Kind::Display)),
                Piece::text("\n"),
            ],
            &[
                display(&-3i32),
                radix(&255u32),
                display(&2.5f32),
                display(&true),
            ],
        );
        assert_eq!(text(&f), "x = %lld, y = 0xff, f = %.3f, ok = true\n");
        assert_eq!(f.args(), &[(-3i64) as u64, 2.5f64.to_bits()]);
        assert_eq!(f.printed(), 4);
        let empty = build(&[], &[]);
        assert_eq!((text(&empty), empty.printed()), (String::new(), 0));
    }

    #[test]
    fn sixteen_conversions_fit() {
        let pieces = [Piece::new(
            " ",
            s(Kind::Display).plus().zero().width(255).precision(255),
        ); MAX_ARGS];
        let args = [display(&1.0f64); MAX_ARGS];
        let f = build(&pieces, &args);
        assert!(!f.truncated());
        assert_eq!((f.args().len(), f.printed()), (MAX_ARGS, MAX_ARGS));
        assert_eq!(text(&f), " %+0255.255f".repeat(MAX_ARGS));
    }

    #[test]
    fn long_output_is_cut_whole_and_keeps_its_newline() {
        let long = "é".repeat(200); // 400 bytes
        let f = build(
            &[
                Piece::new("a", s(Kind::Display)),
                Piece::new("b", s(Kind::Display)),
                Piece::text("\n"),
            ],
            &[display(long.as_str()), display(&1u8)],
        );
        assert!(f.truncated());
        assert_eq!(f.printed(), 0);
        let t = text(&f); // valid UTF-8: no character was split
        assert!(t.starts_with("aé") && t.ends_with("é...\n"), "{t}");
        assert!(f.len < FORMAT_CAPACITY && f.text[f.len] == 0);
        assert!(f.args().is_empty());

        // Padding that does not fit: cut, no newline because the format has none after.
        let f = build(
            &[
                Piece::new("x", s(Kind::Display).width(255)),
                Piece::new("", s(Kind::Display).width(255)),
            ],
            &[display("a"), display("b")],
        );
        assert!(f.truncated() && text(&f).ends_with(" ...") && f.printed() == 0);

        // A conversion is never cut in half: it is left out whole.
        let pad = "p".repeat(TEXT_LIMIT - 3);
        let f = build(
            &[
                Piece::new("", s(Kind::Display)),
                Piece::new("", s(Kind::Display)),
                Piece::text("\n"),
            ],
            &[display(pad.as_str()), display(&1i32)],
        );
        assert_eq!(text(&f), format!("{pad}...\n"));
        assert!(f.args().is_empty() && f.printed() == 1);
        let pad = "p".repeat(TEXT_LIMIT - 4);
        let f = build(
            &[
                Piece::new("", s(Kind::Display)),
                Piece::new("", s(Kind::Display)),
            ],
            &[display(pad.as_str()), display(&1i32)],
        );
        assert_eq!(
            (text(&f).len(), f.args().len(), f.truncated()),
            (TEXT_LIMIT, 1, false)
        );

        // `%%` is not split either.
        let percent = "%".repeat(200);
        let f = build(
            &[Piece::new("", s(Kind::Display))],
            &[display(percent.as_str())],
        );
        assert_eq!(text(&f), format!("{}...", "%%".repeat(TEXT_LIMIT / 2)));
    }

    #[test]
    fn missing_arguments_stop_the_output() {
        let f = build(&[Piece::new("a", s(Kind::Display)), Piece::text("b")], &[]);
        assert_eq!((text(&f), f.printed()), ("a".into(), 0));
    }

    #[test]
    fn custom_types_print_through_their_arg() {
        struct Meters(f32);
        impl PrintfArg for Meters {
            fn printf_arg(&self) -> Arg<'_> {
                Arg::float(self.0 as f64)
            }
        }
        assert_eq!(
            c(s(Kind::Display), display(&Meters(2.0))),
            ("%g".into(), vec![2.0f64.to_bits()])
        );
        assert_eq!(c(s(Kind::Display), display(&Arg::int(-1))).0, "%lld");
    }

    impl PrintfArg for Arg<'_> {
        fn printf_arg(&self) -> Arg<'_> {
            *self
        }
    }

    #[test]
    fn utf8_helpers() {
        for ch in [
            'a',
            'é',
            '€',
            '😀',
            '\u{7f}',
            '\u{80}',
            '\u{7ff}',
            '\u{800}',
            '\u{ffff}',
            '\u{10000}',
            char::MAX,
        ] {
            let mut buf = [0u8; 4];
            let n = encode_utf8(ch, &mut buf);
            assert_eq!(&buf[..n], ch.to_string().as_bytes());
            assert_eq!(utf8_len(buf[0]), n);
        }
        assert_eq!(char_count("aé😀".as_bytes()), 3);
        assert_eq!(char_boundary("aé😀".as_bytes(), 2), 3);
        assert_eq!(char_boundary("ab".as_bytes(), 5), 2);
    }
}
