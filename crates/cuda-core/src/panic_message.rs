//! The message of a device panic, from its record.
//!
//! A GPU thread cannot run `Display`, so a panic message that formats values
//! (`panic!("{} > {:#x}", a, b)`, `assert!(x < n, "x = {x}")`, core's own
//! asserts) reaches the host in parts: the device linker (LowerPanics.cpp)
//! writes each printable value's bits and kind into the panic record
//! (integers, `bool`, `char`, `f32`, `f64`; docs/ABI.md §5), and the message
//! as a template in Rust's format syntax whose `{N:spec}` is value N, with
//! the options the program wrote: `{0} > {1:#x}`. [`render`] formats the
//! values as Rust would have: fill, alignment, sign, `#`, `0`, width and
//! precision (a width or precision taken from an argument is a value of its
//! own, `{0:1$}`), and the traits' letters (`?`, `x?`, `x`, `X`, `o`, `b`,
//! `e`, `E`). A value the device could not read is already `{..}` in the
//! text; a template cut short by the record's capacity renders up to where
//! it ends, the rest as it stands.

use cuda_driver_sys::panic_record::ValueKind;

/// One value of a panic record: its kind and its bits, zero-extended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecordedValue {
    /// What the bits are; None for a code this reader does not know (`{..}`).
    pub(crate) kind: Option<ValueKind>,
    /// The value's bits (a float's IEEE bits, a bool's 0 or 1, a char's scalar value).
    pub(crate) bits: u128,
}

/// The template with each `{N:spec}` replaced by value N, formatted by `spec`;
/// `{{` and `}}` are braces.
pub(crate) fn render(template: &str, values: &[RecordedValue]) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        if let Some(after) = tail.strip_prefix('}') {
            out.push('}');
            rest = after;
            continue;
        }
        let Some(end) = tail.find('}') else {
            // Cut short by the record's capacity: the rest as it stands.
            out.push_str(tail);
            return out;
        };
        match placeholder(&tail[1..end], values) {
            Some(text) => out.push_str(&text),
            None => out.push_str(&tail[..=end]),
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

/// `N` or `N:spec`, formatted; None if it is not one of those over `values`.
fn placeholder(inner: &str, values: &[RecordedValue]) -> Option<String> {
    let (index, spec) = inner.split_once(':').unwrap_or((inner, ""));
    let value = values.get(index.parse::<usize>().ok()?)?;
    let spec = Spec::parse(spec)?;
    let count = |c: Option<Count>| -> Option<Option<usize>> {
        match c {
            None => Some(None),
            Some(Count::Is(n)) => Some(Some(n)),
            Some(Count::Value(i)) => Some(Some(usize::try_from(values.get(i)?.bits).ok()?)),
        }
    };
    let width = count(spec.width)?;
    let precision = count(spec.precision)?;
    Some(format_value(value, &spec, width, precision))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Align {
    Left,
    Right,
    Center,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Count {
    /// A number written in the template.
    Is(usize),
    /// The value with this index (`N$`).
    Value(usize),
}

/// The trait a placeholder prints with (its type letter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trait {
    Display,
    Debug,
    DebugLowerHex,
    DebugUpperHex,
    LowerHex,
    UpperHex,
    Octal,
    Binary,
    LowerExp,
    UpperExp,
}

/// A format spec: `[[fill]align][+|-][#][0][width][.precision][type]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Spec {
    fill: char,
    align: Option<Align>,
    plus: bool,
    alternate: bool,
    zero: bool,
    width: Option<Count>,
    precision: Option<Count>,
    trait_: Trait,
}

impl Spec {
    fn parse(s: &str) -> Option<Spec> {
        let align_of = |c: char| match c {
            '<' => Some(Align::Left),
            '>' => Some(Align::Right),
            '^' => Some(Align::Center),
            _ => None,
        };
        let mut spec = Spec {
            fill: ' ',
            align: None,
            plus: false,
            alternate: false,
            zero: false,
            width: None,
            precision: None,
            trait_: Trait::Display,
        };
        let mut rest = s;
        let mut chars = rest.chars();
        let (first, second) = (chars.next(), chars.next());
        if let (Some(fill), Some(a)) = (first, second.and_then(align_of)) {
            spec.fill = fill;
            spec.align = Some(a);
            rest = &rest[fill.len_utf8() + 1..];
        } else if let Some(a) = first.and_then(align_of) {
            spec.align = Some(a);
            rest = &rest[1..];
        }
        if let Some(r) = rest.strip_prefix('+') {
            spec.plus = true;
            rest = r;
        } else if let Some(r) = rest.strip_prefix('-') {
            rest = r; // reserved by Rust, changes nothing
        }
        if let Some(r) = rest.strip_prefix('#') {
            spec.alternate = true;
            rest = r;
        }
        if rest.starts_with('0') && !rest[1..].starts_with('$') {
            spec.zero = true;
            rest = &rest[1..];
        }
        (spec.width, rest) = count(rest)?;
        if let Some(r) = rest.strip_prefix('.') {
            let (precision, r) = count(r)?;
            spec.precision = Some(precision?);
            rest = r;
        }
        spec.trait_ = match rest {
            "" => Trait::Display,
            "?" => Trait::Debug,
            "x?" => Trait::DebugLowerHex,
            "X?" => Trait::DebugUpperHex,
            "x" => Trait::LowerHex,
            "X" => Trait::UpperHex,
            "o" => Trait::Octal,
            "b" => Trait::Binary,
            "e" => Trait::LowerExp,
            "E" => Trait::UpperExp,
            _ => return None,
        };
        Some(spec)
    }
}

/// A number (`12`) or a value index (`1$`) at the start of `s`, and the rest.
fn count(s: &str) -> Option<(Option<Count>, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Some((None, s));
    }
    let n = s[..digits].parse().ok()?;
    match s[digits..].strip_prefix('$') {
        Some(rest) => Some((Some(Count::Value(n)), rest)),
        None => Some((Some(Count::Is(n)), &s[digits..])),
    }
}

/// Bits and signedness of an integer kind.
fn integer_kind(kind: ValueKind) -> Option<(u32, bool)> {
    Some(match kind {
        ValueKind::U8 => (8, false),
        ValueKind::U16 => (16, false),
        ValueKind::U32 => (32, false),
        ValueKind::U64 => (64, false),
        ValueKind::U128 => (128, false),
        ValueKind::I8 => (8, true),
        ValueKind::I16 => (16, true),
        ValueKind::I32 => (32, true),
        ValueKind::I64 => (64, true),
        ValueKind::I128 => (128, true),
        _ => return None,
    })
}

fn format_value(value: &RecordedValue, spec: &Spec, width: Option<usize>, precision: Option<usize>) -> String {
    let Some(kind) = value.kind else { return "{..}".to_string() };
    if let Some((bits, signed)) = integer_kind(kind) {
        let unsigned = if bits == 128 { value.bits } else { value.bits & ((1u128 << bits) - 1) };
        let shift = 128 - bits;
        let signed_value = ((unsigned << shift) as i128) >> shift;
        let negative = signed && signed_value < 0;
        let sign = if negative { "-" } else if spec.plus { "+" } else { "" };
        let magnitude = if signed { signed_value.unsigned_abs() } else { unsigned };
        let (prefix, digits) = match spec.trait_ {
            Trait::LowerHex | Trait::DebugLowerHex => ("0x", format!("{unsigned:x}")),
            Trait::UpperHex | Trait::DebugUpperHex => ("0x", format!("{unsigned:X}")),
            Trait::Octal => ("0o", format!("{unsigned:o}")),
            Trait::Binary => ("0b", format!("{unsigned:b}")),
            Trait::LowerExp | Trait::UpperExp => {
                let text = match (precision, spec.trait_ == Trait::LowerExp) {
                    (Some(p), true) => format!("{magnitude:.p$e}"),
                    (Some(p), false) => format!("{magnitude:.p$E}"),
                    (None, true) => format!("{magnitude:e}"),
                    (None, false) => format!("{magnitude:E}"),
                };
                ("", text)
            }
            Trait::Display | Trait::Debug => ("", magnitude.to_string()),
        };
        // The sign of a hex, octal or binary number is never `-`: those
        // print the two's complement bits.
        let radix = !matches!(spec.trait_, Trait::Display | Trait::Debug | Trait::LowerExp | Trait::UpperExp);
        let sign = if radix { if spec.plus { "+" } else { "" } } else { sign };
        let prefix = if spec.alternate && radix { prefix } else { "" };
        return pad_number(sign, prefix, &digits, spec, width);
    }
    match kind {
        ValueKind::F32 | ValueKind::F64 => {
            let text = if kind == ValueKind::F32 {
                float_text(f32::from_bits(value.bits as u32), spec.trait_, precision)
            } else {
                float_text(f64::from_bits(value.bits as u64), spec.trait_, precision)
            };
            let nan = text.ends_with("NaN");
            let (sign, digits) = match text.strip_prefix('-') {
                Some(d) => ("-", d.to_string()),
                None => (if spec.plus && !nan { "+" } else { "" }, text),
            };
            pad_number(sign, "", &digits, spec, width)
        }
        ValueKind::Bool => pad_text(if value.bits != 0 { "true" } else { "false" }, spec, width, precision),
        ValueKind::Char => {
            let c = char::from_u32(value.bits as u32).unwrap_or(char::REPLACEMENT_CHARACTER);
            if spec.trait_ == Trait::Debug {
                // `'q'` with its escapes; Rust's Debug of a char ignores
                // width and fill.
                format!("{c:?}")
            } else {
                pad_text(c.encode_utf8(&mut [0; 4]), spec, width, precision)
            }
        }
        _ => "{..}".to_string(),
    }
}

/// A float as Rust's trait prints it, sign included.
fn float_text<F: std::fmt::Display + std::fmt::Debug + std::fmt::LowerExp + std::fmt::UpperExp>(
    f: F,
    trait_: Trait,
    precision: Option<usize>,
) -> String {
    match (trait_, precision) {
        (Trait::LowerExp, Some(p)) => format!("{f:.p$e}"),
        (Trait::LowerExp, None) => format!("{f:e}"),
        (Trait::UpperExp, Some(p)) => format!("{f:.p$E}"),
        (Trait::UpperExp, None) => format!("{f:E}"),
        (Trait::Debug, Some(p)) => format!("{f:.p$?}"),
        (Trait::Debug, None) => format!("{f:?}"),
        (_, Some(p)) => format!("{f:.p$}"),
        (_, None) => format!("{f}"),
    }
}

/// A number padded to the width: with `0`, zeros between the sign and
/// prefix and the digits; otherwise the fill, right-aligned unless the spec
/// says otherwise.
fn pad_number(sign: &str, prefix: &str, digits: &str, spec: &Spec, width: Option<usize>) -> String {
    let len = sign.chars().count() + prefix.len() + digits.chars().count();
    match width {
        Some(w) if w > len && spec.zero => format!("{sign}{prefix}{}{digits}", "0".repeat(w - len)),
        _ => pad(&format!("{sign}{prefix}{digits}"), spec, width, Align::Right),
    }
}

/// Text padded to the width, left-aligned unless the spec says otherwise;
/// a precision keeps that many characters.
fn pad_text(text: &str, spec: &Spec, width: Option<usize>, precision: Option<usize>) -> String {
    let text: String = match precision {
        Some(p) => text.chars().take(p).collect(),
        None => text.to_string(),
    };
    pad(&text, spec, width, Align::Left)
}

fn pad(text: &str, spec: &Spec, width: Option<usize>, default: Align) -> String {
    let len = text.chars().count();
    let Some(w) = width.filter(|&w| w > len) else { return text.to_string() };
    let fill = |n: usize| spec.fill.to_string().repeat(n);
    let n = w - len;
    match spec.align.unwrap_or(default) {
        Align::Left => format!("{text}{}", fill(n)),
        Align::Right => format!("{}{text}", fill(n)),
        Align::Center => format!("{}{text}{}", fill(n / 2), fill(n - n / 2)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Rust value as the device records it.
    trait Record {
        fn record(self) -> RecordedValue;
    }
    macro_rules! record_int {
        ($($t:ty => $k:ident),*) => {$(
            impl Record for $t {
                fn record(self) -> RecordedValue {
                    // Zero-extended bits, as the device stores them.
                    let mask = if <$t>::BITS == 128 { u128::MAX } else { (1u128 << <$t>::BITS) - 1 };
                    RecordedValue { kind: Some(ValueKind::$k), bits: self as u128 & mask }
                }
            }
        )*};
    }
    record_int!(u8 => U8, u16 => U16, u32 => U32, u64 => U64, u128 => U128, i8 => I8, i16 => I16, i32 => I32, i64 => I64, i128 => I128);
    impl Record for f32 {
        fn record(self) -> RecordedValue {
            RecordedValue { kind: Some(ValueKind::F32), bits: self.to_bits() as u128 }
        }
    }
    impl Record for f64 {
        fn record(self) -> RecordedValue {
            RecordedValue { kind: Some(ValueKind::F64), bits: self.to_bits() as u128 }
        }
    }
    impl Record for bool {
        fn record(self) -> RecordedValue {
            RecordedValue { kind: Some(ValueKind::Bool), bits: self as u128 }
        }
    }
    impl Record for char {
        fn record(self) -> RecordedValue {
            RecordedValue { kind: Some(ValueKind::Char), bits: self as u128 }
        }
    }

    /// The renderer gives what Rust's own formatting gives for the same spec.
    macro_rules! same {
        ($spec:literal, $($v:expr),+) => {$(
            let v = $v;
            assert_eq!(render(concat!("<{0", $spec, "}>"), &[v.record()]), format!(concat!("<{0", $spec, "}>"), v), "spec {} of {:?}", $spec, v);
        )+};
    }

    #[test]
    fn integers_format_as_rust_does() {
        same!("", 0u8, 255u8, -128i8, 65535u16, -1i16, u32::MAX, i32::MIN, u64::MAX, i64::MIN, u128::MAX, i128::MIN);
        same!(":+", 7u32, -7i32, 0i64);
        same!(":>8", 42u32, -42i32);
        same!(":<8", 42u32, -42i32);
        same!(":^9", 42u32, -42i64);
        same!(":*^9", 42u32);
        same!(":08", 42u32, -42i32);
        same!(":+08", 42i32);
        same!(":<08", 42i32);
        same!(":x", 255u8, -1i8, -1i32, i128::MIN);
        same!(":#x", 255u32, -1i16, 0u8);
        same!(":#010x", 255u32, -1i8);
        same!(":X", 48879u32);
        same!(":#X", 48879u64);
        same!(":o", 8u32, -1i8);
        same!(":#o", 8u32);
        same!(":b", 5u8, -1i8);
        same!(":#b", 5u16);
        same!(":#012b", 5u16);
        same!(":?", 7u32, -7i64);
        same!(":x?", 255u32, -1i8);
        same!(":X?", 255u32);
        same!(":#x?", 255u32);
        same!(":e", 1234u32, -1234i32, 0u8);
        same!(":E", 1234u64);
        same!(":.2e", 1234u32);
        same!(":+x", 255u32);
        same!(":.3", 42u32);
    }

    #[test]
    fn floats_format_as_rust_does() {
        same!("", 1.5f32, 0.1f32, -2.0f32, 1e20f32, f32::NAN, f32::INFINITY, -0.0f32, 1.0f64, 0.1f64, f64::MIN_POSITIVE);
        same!(":.3", 1.5f32, -3.25159f64, 2.0f32);
        same!(":?", 1.0f32, 0.1f64, 1e20f64, f64::NAN);
        same!(":.2?", 1.0f32);
        same!(":e", 1234.5f32, 0.001f64);
        same!(":E", 1234.5f64);
        same!(":.2e", 1234.5f32);
        same!(":+", 1.5f32, -1.5f32, f32::NAN, f32::INFINITY);
        same!(":8.2", 3.25159f32, -3.25159f32);
        same!(":<8.2", 3.25159f32);
        same!(":^9", 1.5f64);
        same!(":08.2", -3.25159f64, 3.25159f32);
        same!(":+08", 1.5f32);
        same!(":05", f32::NAN, f32::INFINITY);
    }

    #[test]
    fn bools_and_chars_format_as_rust_does() {
        same!("", true, false, 'q', 'é', '🦀');
        same!(":?", true, 'q', '\n', '\'', 'é');
        same!(":>6", true, 'q');
        same!(":6", false, 'q');
        same!(":*^7", true, 'q');
        same!(":.2", true, 'q');
        same!(":>6?", 'q', true);
    }

    #[test]
    fn widths_and_precisions_may_be_values() {
        let values = [42u32.record(), 8u64.record(), 3u64.record(), 2.5f64.record()];
        assert_eq!(render("[{0:1$}] [{3:.2$}] [{3:>1$.2$}]", &values), format!("[{:8}] [{:.3}] [{:>8.3}]", 42u32, 2.5f64, 2.5f64));
    }

    #[test]
    fn templates_keep_their_text_and_braces() {
        let values = [7u32.record(), 9u32.record()];
        assert_eq!(render("{0} > {1}", &values), "7 > 9");
        assert_eq!(render("{{literal}} {1}{0}", &values), "{literal} 97");
        assert_eq!(render("value {..} and {0}", &values), "value {..} and 7");
        // Cut short by the record's capacity, or not a placeholder of these values.
        assert_eq!(render("a {0} b {1:#", &values), "a 7 b {1:#");
        assert_eq!(render("{5} {x} {0:?!}", &values), "{5} {x} {0:?!}");
        assert_eq!(render("no values", &[]), "no values");
    }
}
