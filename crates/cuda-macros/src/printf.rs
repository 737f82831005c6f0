//! `gpu_printf!` and `gpu_println!`: Rust format strings for CUDA's device
//! `printf`.
//!
//! The format string is parsed here, at compile time, into literal pieces and
//! placeholder specs; the C format itself depends on the argument types, so
//! `cuda_device::printf` builds it at run time (see that module). This file
//! checks everything that does not depend on types (the syntax, what specs
//! are supported, which arguments exist and are used); the argument types are
//! checked by rustc through the traits each placeholder's spec requires.
//!
//! ```text
//! gpu_printf!("x = {:>5}, y = {:#x}\n", a, b)
//! ```
//!
//! becomes
//!
//! ```text
//! {
//!     const __OXIDE_PIECES: &[::cuda_device::printf::__private::Piece] = &[
//!         Piece::new("x = ", Spec::new(Kind::Display).right().width(5u8)),
//!         Piece::new(", y = ", Spec::new(Kind::LowerHex).alternate()),
//!         Piece::text("\n"),
//!     ];
//!     match (&(a), &(b),) {
//!         (__oxide_arg0, __oxide_arg1,) => (|| ::cuda_device::printf::__private::print(
//!             __OXIDE_PIECES,
//!             &[display(__oxide_arg0), radix(__oxide_arg1),],
//!         ))(),
//!     }
//! }
//! ```
//!
//! (paths shortened). Each argument is evaluated once, in the order written,
//! like `format!` does; `__oxide_argN` carries the span of its argument, so a
//! type that cannot be printed with a spec is reported at the argument. The
//! argument array is built inside a closure called at once: when the device
//! linker inlines it, LLVM gives the array a scoped stack slot, so the calls
//! of a kernel share one slot instead of adding one each (unoptimised
//! bitcode has no lifetime markers of its own).

use crate::split::split_exprs;
use crate::template::fill;
use crate::tokens::{is_pair, unwrap_invisible, Delim, Error, SourceSpan, Tok};

/// The most placeholders one call may have (`cuda_device::printf::MAX_ARGS`).
pub const MAX_ARGS: usize = 16;

/// The most bytes of literal text one call may have, `%` counted twice
/// (`cuda_device::printf`'s `TEXT_LIMIT`: its 256-byte buffer less the room
/// kept for `...`, a newline and the NUL).
pub const TEXT_LIMIT: usize = 251;

/// Widths and precisions are at most this.
const MAX_COUNT: u32 = 255;

const SUPPORTED: &str = "supported: `{}`, `{:x}`, `{:X}`, `{:o}`, `{:b}`, `{:e}`, `{:E}`, `{:f}`, `{:g}`, \
     `{:G}`, `{:p}`, with `+`, ` ` (C's space flag), `#`, `0`, `<` or `>`, a width and a `.precision` \
     (at most 255)";

/// Which macro is expanded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `gpu_printf!`: prints; evaluates to the `i32` status.
    Print,
    /// `gpu_println!`: prints with a newline appended.
    PrintLine,
    /// `__gpu_format!` (hidden): evaluates to the `CFormat` without printing,
    /// for host tests.
    Format,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Print => "gpu_printf!",
            Mode::PrintLine => "gpu_println!",
            Mode::Format => "__gpu_format!",
        }
    }
}

/// Expands the macro input into the call of `cuda_device::printf`, or reports
/// every problem.
pub fn expand<S: SourceSpan>(input: &[Tok<S>], mode: Mode) -> Result<Vec<Tok<S>>, Vec<Error<S>>> {
    let name = mode.name();
    let items = split_exprs(input);
    let (format_tokens, arg_items) = match items.split_first() {
        Some((first, rest)) => (unwrap_invisible(first), rest),
        None if mode == Mode::PrintLine => (&[][..], &[][..]),
        None => {
            return Err(vec![Error::at(
                S::call_site(),
                format!("{name} needs a format string, like {name}(\"x = {{}}\\n\", x)"),
            )])
        }
    };
    let (mut text, literal_span) = match format_tokens {
        [] => (String::new(), S::call_site()),
        [Tok::Lit { text, span }] => match unescape_str_literal(text) {
            Some(value) => (value, *span),
            None => return Err(vec![not_a_format_string(format_tokens, name)]),
        },
        _ => return Err(vec![not_a_format_string(format_tokens, name)]),
    };
    if mode == Mode::PrintLine {
        text.push('\n');
    }
    let segments = parse_format(&text)
        .map_err(|message| vec![Error::at(literal_span, format!("{name}: {message}"))])?;
    let args = read_args(arg_items, name)?;
    let plan = plan(&segments, &args, literal_span, name)?;
    Ok(expansion(&plan, mode))
}

fn not_a_format_string<S: SourceSpan>(tokens: &[Tok<S>], name: &str) -> Error<S> {
    Error::spanning(
        tokens,
        format!("{name} needs a string literal as its format, like {name}(\"x = {{}}\\n\", x)"),
    )
}

// ---------------------------------------------------------------------------
// The string literal

/// The value of a string literal as written (`"a\n"`, `r#"a"#`), or `None`
/// for anything else (byte and C strings, numbers, malformed escapes).
pub fn unescape_str_literal(literal: &str) -> Option<String> {
    if let Some(raw) = literal.strip_prefix('r') {
        let hashes = raw.len() - raw.trim_start_matches('#').len();
        let body = raw.get(hashes..)?.strip_prefix('"')?;
        let body = body.strip_suffix(&"#".repeat(hashes))?.strip_suffix('"')?;
        return Some(body.to_string());
    }
    let body = literal.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            '\\' => out.push('\\'),
            '0' => out.push('\0'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            'x' => {
                let hex: String = [chars.next()?, chars.next()?].iter().collect();
                let value = u8::from_str_radix(&hex, 16).ok().filter(|v| *v <= 0x7F)?;
                out.push(value as char);
            }
            'u' => {
                if chars.next()? != '{' {
                    return None;
                }
                let mut hex = String::new();
                loop {
                    match chars.next()? {
                        '}' => break,
                        '_' => {}
                        h => hex.push(h),
                    }
                }
                out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
            }
            '\n' => {
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------
// The format string

/// A piece of a parsed format string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Literal text (`{{` and `}}` already unescaped).
    Text(String),
    /// A `{..}` placeholder.
    Placeholder(Placeholder),
}

/// One `{arg:spec}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placeholder {
    /// Which argument it prints.
    pub arg: ArgRef,
    /// How.
    pub spec: Spec,
}

/// The argument part of a placeholder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgRef {
    /// `{}`: the next positional argument.
    Next,
    /// `{0}`
    Index(usize),
    /// `{name}`: a named argument, or else a variable in scope.
    Name(String),
}

/// The spec's type letter (`cuda_device::printf::__private::Kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Display,
    LowerHex,
    UpperHex,
    Octal,
    Binary,
    LowerExp,
    UpperExp,
    Fixed,
    General,
    UpperGeneral,
    Pointer,
}

impl Kind {
    /// The variant's name in `cuda_device::printf::__private::Kind`.
    fn name(self) -> &'static str {
        match self {
            Kind::Display => "Display",
            Kind::LowerHex => "LowerHex",
            Kind::UpperHex => "UpperHex",
            Kind::Octal => "Octal",
            Kind::Binary => "Binary",
            Kind::LowerExp => "LowerExp",
            Kind::UpperExp => "UpperExp",
            Kind::Fixed => "Fixed",
            Kind::General => "General",
            Kind::UpperGeneral => "UpperGeneral",
            Kind::Pointer => "Pointer",
        }
    }

    /// The function of `cuda_device::printf::__private` that makes the
    /// argument, which decides the trait its type must implement.
    fn constructor(self) -> &'static str {
        match self {
            Kind::Display => "display",
            Kind::LowerHex | Kind::UpperHex | Kind::Octal | Kind::Binary => "radix",
            Kind::LowerExp | Kind::UpperExp | Kind::Fixed | Kind::General | Kind::UpperGeneral => "exp",
            Kind::Pointer => "pointer",
        }
    }
}

/// Alignment within the width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A parsed spec (the part after `:`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub kind: Kind,
    pub plus: bool,
    pub space: bool,
    pub alternate: bool,
    pub zero: bool,
    pub align: Option<Align>,
    pub width: Option<u8>,
    pub precision: Option<u8>,
}

impl Spec {
    const fn of(kind: Kind) -> Self {
        Spec {
            kind,
            plus: false,
            space: false,
            alternate: false,
            zero: false,
            align: None,
            width: None,
            precision: None,
        }
    }

    /// The `Spec` constructor chain `cuda_device::printf` reads.
    fn render(&self, private: &str) -> String {
        let mut out = format!(
            "{private}::Spec::new({private}::Kind::{})",
            self.kind.name()
        );
        if self.plus {
            out.push_str(".plus()");
        }
        if self.space {
            out.push_str(".space()");
        }
        if self.alternate {
            out.push_str(".alternate()");
        }
        if self.zero {
            out.push_str(".zero()");
        }
        match self.align {
            Some(Align::Left) => out.push_str(".left()"),
            Some(Align::Right) => out.push_str(".right()"),
            None => {}
        }
        if let Some(width) = self.width {
            out.push_str(&format!(".width({width}u8)"));
        }
        if let Some(precision) = self.precision {
            out.push_str(&format!(".precision({precision}u8)"));
        }
        out
    }
}

/// Splits a format string into text and placeholders. The error says what is
/// wrong (without the macro's name).
pub fn parse_format(format: &str) -> Result<Vec<Segment>, String> {
    let mut segments = Vec::new();
    let mut text = String::new();
    let mut rest = format;
    while let Some(c) = rest.chars().next() {
        match c {
            '{' if rest.starts_with("{{") => {
                text.push('{');
                rest = &rest[2..];
            }
            '}' if rest.starts_with("}}") => {
                text.push('}');
                rest = &rest[2..];
            }
            '}' => {
                return Err("unmatched `}` in the format string; write `}}` to print a `}`".into())
            }
            '{' => {
                let close = rest
                    .find('}')
                    .ok_or("unterminated `{` in the format string; write `{{` to print a `{`")?;
                let inner = &rest[1..close];
                if inner.contains('{') {
                    return Err(format!(
                        "invalid placeholder `{}`; write `{{{{` to print a `{{`",
                        &rest[..=close]
                    ));
                }
                if !text.is_empty() {
                    segments.push(Segment::Text(std::mem::take(&mut text)));
                }
                let placeholder =
                    parse_placeholder(inner).map_err(|why| format!("`{{{inner}}}`: {why}"))?;
                segments.push(Segment::Placeholder(placeholder));
                rest = &rest[close + 1..];
            }
            '\0' => {
                return Err(
                    "the format string contains a NUL character, which C's printf cannot print"
                        .into(),
                )
            }
            _ => {
                text.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !text.is_empty() {
        segments.push(Segment::Text(text));
    }
    Ok(segments)
}

/// The inside of `{..}`.
fn parse_placeholder(inner: &str) -> Result<Placeholder, String> {
    let (arg, spec) = match inner.split_once(':') {
        Some((arg, spec)) => (arg, Some(spec)),
        None => (inner, None),
    };
    let arg = arg.trim();
    let arg = if arg.is_empty() {
        ArgRef::Next
    } else if arg.bytes().all(|b| b.is_ascii_digit()) {
        ArgRef::Index(
            arg.parse()
                .map_err(|_| "argument index too large".to_string())?,
        )
    } else if is_identifier(arg) {
        ArgRef::Name(arg.to_string())
    } else {
        return Err(format!(
            "`{arg}` is not an argument: write a position (`{{0}}`) or a name (`{{x}}`); \
             expressions like `{{x.y}}` are passed as arguments: `(\"{{}}\", x.y)`"
        ));
    };
    let spec = match spec {
        Some(spec) => parse_spec(spec)?,
        None => Spec::of(Kind::Display),
    };
    Ok(Placeholder { arg, spec })
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
        && s != "_"
}

/// `[[fill]align][sign]['#']['0'][width]['.' precision][type]`.
fn parse_spec(spec: &str) -> Result<Spec, String> {
    let chars: Vec<char> = spec.chars().collect();
    let mut i = 0;
    let mut align = None;
    let align_of = |c: Option<&char>| match c {
        Some('<') => Some(Some(Align::Left)),
        Some('>') => Some(Some(Align::Right)),
        Some('^') => Some(None),
        _ => None,
    };
    let (fill, align_char) = match (align_of(chars.get(1)), align_of(chars.first())) {
        (Some(a), _) => (Some(chars[0]), Some((a, chars[1]))),
        (None, Some(a)) => (None, Some((a, chars[0]))),
        (None, None) => (None, None),
    };
    if let Some((a, c)) = align_char {
        i += if fill.is_some() { 2 } else { 1 };
        if let Some(f) = fill.filter(|f| *f != ' ') {
            return Err(format!(
                "fill characters are not supported (`{f}{c}`); only spaces pad; {SUPPORTED}"
            ));
        }
        match a {
            Some(a) => align = Some(a),
            None => return Err(format!("centring (`^`) is not supported; {SUPPORTED}")),
        }
    }
    let mut out = Spec::of(Kind::Display);
    out.align = align;
    match chars.get(i) {
        Some('+') => {
            out.plus = true;
            i += 1;
        }
        Some('-') => i += 1, // accepted and unused, as in Rust
        // C's space flag (not Rust's): a fill-and-align `' '` was taken above.
        Some(' ') => {
            out.space = true;
            i += 1;
        }
        _ => {}
    }
    if chars.get(i) == Some(&'#') {
        out.alternate = true;
        i += 1;
    }
    if chars.get(i) == Some(&'0') && chars.get(i + 1) != Some(&'$') {
        out.zero = true;
        i += 1;
    }
    out.width = count(&chars, &mut i, "width")?;
    if chars.get(i) == Some(&'.') {
        i += 1;
        if chars.get(i) == Some(&'*') {
            return Err(format!(
                "a precision taken from an argument (`.*`) is not supported; {SUPPORTED}"
            ));
        }
        out.precision = Some(
            count(&chars, &mut i, "precision")?
                .ok_or_else(|| format!("`.` must be followed by a precision; {SUPPORTED}"))?,
        );
    }
    let ty: String = chars[i..].iter().collect();
    out.kind = match ty.as_str() {
        "" => Kind::Display,
        "x" => Kind::LowerHex,
        "X" => Kind::UpperHex,
        "o" => Kind::Octal,
        "b" => Kind::Binary,
        "e" => Kind::LowerExp,
        "E" => Kind::UpperExp,
        "f" => Kind::Fixed,
        "g" => Kind::General,
        "G" => Kind::UpperGeneral,
        "p" => Kind::Pointer,
        _ if ty.ends_with('?') => {
            return Err(format!(
                "Debug formatting is not supported on the GPU; use `{{}}`; {SUPPORTED}"
            ))
        }
        other => return Err(format!("unknown format `{other}`; {SUPPORTED}")),
    };
    Ok(out)
}

/// A width or precision at `chars[*i]`: digits, or nothing. Counts taken from
/// arguments (`N$`, `name$`) are rejected.
fn count(chars: &[char], i: &mut usize, what: &str) -> Result<Option<u8>, String> {
    let start = *i;
    while chars
        .get(*i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
    {
        *i += 1;
    }
    let word: String = chars[start..*i].iter().collect();
    if chars.get(*i) == Some(&'$') {
        return Err(format!(
            "a {what} taken from an argument (`{word}$`) is not supported; {SUPPORTED}"
        ));
    }
    if word.is_empty() {
        return Ok(None);
    }
    let digits = word.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        // Not a count: the type letter (`{:x}`) follows directly.
        *i = start;
        return Ok(None);
    }
    *i = start + digits;
    let value: u32 = word[..digits].parse().unwrap_or(u32::MAX);
    if value > MAX_COUNT {
        return Err(format!(
            "a {what} of {} is too large; gpu_printf! takes at most {MAX_COUNT}",
            &word[..digits]
        ));
    }
    Ok(Some(value as u8))
}

// ---------------------------------------------------------------------------
// Arguments

/// One macro argument.
struct MacroArg<'t, S> {
    /// `name = ..`
    name: Option<&'t Tok<S>>,
    /// The expression.
    expr: &'t [Tok<S>],
}

fn read_args<'t, S: SourceSpan>(
    items: &'t [&'t [Tok<S>]],
    name: &str,
) -> Result<Vec<MacroArg<'t, S>>, Vec<Error<S>>> {
    let mut args: Vec<MacroArg<'t, S>> = Vec::new();
    let mut errors = Vec::new();
    for item in items {
        let item: &[Tok<S>] = item;
        if item.is_empty() {
            errors.push(Error::at(
                S::call_site(),
                format!("{name}: expected an argument between the commas"),
            ));
            continue;
        }
        let named = item.len() >= 3
            && item[0].ident_name().is_some()
            && item[1].is_punct('=')
            && !is_pair(item, 1, '=', '=');
        if named {
            let ident = &item[0];
            if args
                .iter()
                .any(|a| a.name.and_then(Tok::ident_name) == ident.ident_name())
            {
                errors.push(Error::at(
                    ident.span(),
                    format!(
                        "{name}: the argument `{}` is named twice",
                        ident.ident_name().unwrap_or("")
                    ),
                ));
            }
            args.push(MacroArg {
                name: Some(ident),
                expr: &item[2..],
            });
        } else {
            if args.iter().any(|a| a.name.is_some()) {
                errors.push(Error::spanning(
                    item,
                    format!("{name}: positional arguments must come before named ones"),
                ));
            }
            args.push(MacroArg {
                name: None,
                expr: item,
            });
        }
    }
    if errors.is_empty() {
        Ok(args)
    } else {
        Err(errors)
    }
}

/// What the expansion is made of.
struct Plan<S> {
    /// Literal text before each placeholder, with its spec; then the text
    /// after the last one (spec `None`).
    pieces: Vec<(String, Option<Spec>)>,
    /// The argument expressions, in evaluation order, each with the span its
    /// binding carries.
    values: Vec<(Vec<Tok<S>>, S)>,
    /// For each placeholder: the index into `values` and the spec.
    uses: Vec<(usize, Kind)>,
}

fn plan<S: SourceSpan>(
    segments: &[Segment],
    args: &[MacroArg<'_, S>],
    literal_span: S,
    name: &str,
) -> Result<Plan<S>, Vec<Error<S>>> {
    let positional = args.iter().filter(|a| a.name.is_none()).count();
    let mut values: Vec<(Vec<Tok<S>>, S)> = args
        .iter()
        .map(|a| {
            (
                a.expr.to_vec(),
                a.name.map_or_else(|| a.expr[0].span(), Tok::span),
            )
        })
        .collect();
    let mut used = vec![false; args.len()];
    let mut captured: Vec<String> = Vec::new();
    let mut next = 0;
    let mut pieces = Vec::new();
    let mut uses = Vec::new();
    let mut text = String::new();
    let mut errors = Vec::new();
    let mut text_bytes = 0;
    let mut placeholders = 0;
    for segment in segments {
        let placeholder = match segment {
            Segment::Text(t) => {
                text_bytes += t.len() + t.matches('%').count();
                text.push_str(t);
                continue;
            }
            Segment::Placeholder(p) => p,
        };
        placeholders += 1;
        let index = match &placeholder.arg {
            ArgRef::Next | ArgRef::Index(_) => {
                let i = match placeholder.arg {
                    ArgRef::Index(i) => i,
                    _ => {
                        next += 1;
                        next - 1
                    }
                };
                if i >= positional {
                    errors.push(Error::at(
                        literal_span,
                        format!(
                            "{name}: the format string refers to argument {i}, but there {}",
                            match positional {
                                0 => "are no positional arguments".to_string(),
                                1 => "is 1 positional argument".to_string(),
                                n => format!("are {n} positional arguments"),
                            }
                        ),
                    ));
                    continue;
                }
                i
            }
            ArgRef::Name(n) => {
                let named = args
                    .iter()
                    .position(|a| a.name.and_then(Tok::ident_name) == Some(n.as_str()));
                match named {
                    Some(i) => i,
                    None => match captured.iter().position(|c| c == n) {
                        Some(c) => args.len() + c,
                        None => {
                            captured.push(n.clone());
                            values.push((vec![Tok::ident(n, literal_span)], literal_span));
                            args.len() + captured.len() - 1
                        }
                    },
                }
            }
        };
        if let Some(u) = used.get_mut(index) {
            *u = true;
        }
        pieces.push((std::mem::take(&mut text), Some(placeholder.spec)));
        uses.push((index, placeholder.spec.kind));
    }
    if !text.is_empty() {
        pieces.push((text, None));
    }
    for (arg, used) in args.iter().zip(&used) {
        if !used {
            let what = if arg.name.is_some() {
                "named argument"
            } else {
                "argument"
            };
            errors.push(Error::spanning(
                arg.expr,
                format!("{name}: {what} never used in the format string"),
            ));
        }
    }
    if placeholders > MAX_ARGS {
        errors.push(Error::at(
            literal_span,
            format!("{name}: {placeholders} placeholders; at most {MAX_ARGS} per call (split it into several calls)"),
        ));
    }
    if text_bytes > TEXT_LIMIT {
        errors.push(Error::at(
            literal_span,
            format!("{name}: the format string has {text_bytes} bytes of text; at most {TEXT_LIMIT} fit in one call (split it into several calls)"),
        ));
    }
    if errors.is_empty() {
        Ok(Plan {
            pieces,
            values,
            uses,
        })
    } else {
        Err(errors)
    }
}

// ---------------------------------------------------------------------------
// The expansion

const PRIVATE: &str = "::cuda_device::printf::__private";

fn expansion<S: SourceSpan>(plan: &Plan<S>, mode: Mode) -> Vec<Tok<S>> {
    let comma = || Tok::Punct {
        ch: ',',
        joint: false,
        span: S::call_site(),
    };
    let binding = |i: usize| Tok::ident(&format!("__oxide_arg{i}"), plan.values[i].1);

    let mut pieces_src = String::new();
    for (text, spec) in &plan.pieces {
        match spec {
            Some(spec) => pieces_src.push_str(&format!(
                "{PRIVATE}::Piece::new({text:?}, {}),",
                spec.render(PRIVATE)
            )),
            None => pieces_src.push_str(&format!("{PRIVATE}::Piece::text({text:?}),")),
        }
    }

    let mut refs = Vec::new();
    let mut bindings = Vec::new();
    for (i, (expr, span)) in plan.values.iter().enumerate() {
        refs.push(Tok::Punct {
            ch: '&',
            joint: false,
            span: *span,
        });
        refs.push(Tok::Group {
            delim: Delim::Paren,
            inner: expr.clone(),
            span: *span,
        });
        refs.push(comma());
        bindings.push(binding(i));
        bindings.push(comma());
    }

    let mut args = Vec::new();
    for &(index, kind) in &plan.uses {
        args.extend(S::parse(&format!("{PRIVATE}::{}", kind.constructor())));
        args.push(Tok::Group {
            delim: Delim::Paren,
            inner: vec![binding(index)],
            span: plan.values[index].1,
        });
        args.push(comma());
    }

    let function = match mode {
        Mode::Print | Mode::PrintLine => "print",
        Mode::Format => "build",
    };
    let template = format!(
        "{{
            const __OXIDE_PIECES: &[{PRIVATE}::Piece] = &[#pieces];
            match (#refs) {{
                (#bindings) => (|| {PRIVATE}::{function}(__OXIDE_PIECES, &[#args]))(),
            }}
        }}"
    );
    fill(
        &template,
        &[
            ("pieces", S::parse(&pieces_src)),
            ("refs", refs),
            ("bindings", bindings),
            ("args", args),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::{lex, TestSpan};
    use crate::tokens::render_plain;

    fn spec(kind: Kind) -> Spec {
        Spec::of(kind)
    }

    fn one(format: &str) -> Spec {
        match parse_format(format).unwrap().as_slice() {
            [Segment::Placeholder(p)] => p.spec,
            other => panic!("{format:?} parsed to {other:?}"),
        }
    }

    fn error(format: &str) -> String {
        parse_format(format).expect_err(format)
    }

    #[test]
    fn parses_every_type_letter() {
        for (format, kind) in [
            ("{}", Kind::Display),
            ("{:x}", Kind::LowerHex),
            ("{:X}", Kind::UpperHex),
            ("{:o}", Kind::Octal),
            ("{:b}", Kind::Binary),
            ("{:e}", Kind::LowerExp),
            ("{:E}", Kind::UpperExp),
            ("{:f}", Kind::Fixed),
            ("{:g}", Kind::General),
            ("{:G}", Kind::UpperGeneral),
            ("{:p}", Kind::Pointer),
            ("{:}", Kind::Display),
        ] {
            assert_eq!(one(format), spec(kind), "{format}");
        }
    }

    #[test]
    fn parses_the_space_flag_apart_from_a_space_fill() {
        let spaced = one("{: .3f}");
        assert_eq!(spaced, Spec { space: true, precision: Some(3), ..spec(Kind::Fixed) });
        let space_fill = one("{: >8g}");
        assert_eq!(space_fill, Spec { align: Some(Align::Right), width: Some(8), ..spec(Kind::General) });
        assert_eq!(one("{: 10}"), Spec { space: true, width: Some(10), ..spec(Kind::Display) });
        assert_eq!(one("{:+#G}"), Spec { plus: true, alternate: true, ..spec(Kind::UpperGeneral) });
    }

    #[test]
    fn parses_flags_width_and_precision() {
        let full = one("{:<+#08.3x}");
        assert_eq!(
            full,
            Spec {
                kind: Kind::LowerHex,
                plus: true,
                space: false,
                alternate: true,
                zero: true,
                align: Some(Align::Left),
                width: Some(8),
                precision: Some(3),
            }
        );
        assert_eq!(one("{:>5}").align, Some(Align::Right));
        assert_eq!(one("{: >5}").align, Some(Align::Right));
        assert_eq!(one("{: <5}").align, Some(Align::Left));
        assert_eq!(one("{:.0}").precision, Some(0));
        assert_eq!(one("{:255.255}").width, Some(255));
        assert_eq!(
            one("{:0}"),
            Spec {
                zero: true,
                ..spec(Kind::Display)
            }
        );
        assert_eq!(
            one("{:00}"),
            Spec {
                zero: true,
                width: Some(0),
                ..spec(Kind::Display)
            }
        );
        assert_eq!(one("{:-}"), spec(Kind::Display));
        assert_eq!(
            one("{:#?}".replace('?', "x").as_str()),
            Spec {
                alternate: true,
                ..spec(Kind::LowerHex)
            }
        );
        assert_eq!(
            one("{:10.3e}"),
            Spec {
                width: Some(10),
                precision: Some(3),
                ..spec(Kind::LowerExp)
            }
        );
        assert_eq!(
            one("{:#p}"),
            Spec {
                alternate: true,
                ..spec(Kind::Pointer)
            }
        );
    }

    #[test]
    fn parses_arguments_and_escapes() {
        let segments = parse_format("a {{b}} {} {1} {name:x} %\n").unwrap();
        assert_eq!(
            segments,
            vec![
                Segment::Text("a {b} ".into()),
                Segment::Placeholder(Placeholder {
                    arg: ArgRef::Next,
                    spec: spec(Kind::Display)
                }),
                Segment::Text(" ".into()),
                Segment::Placeholder(Placeholder {
                    arg: ArgRef::Index(1),
                    spec: spec(Kind::Display)
                }),
                Segment::Text(" ".into()),
                Segment::Placeholder(Placeholder {
                    arg: ArgRef::Name("name".into()),
                    spec: spec(Kind::LowerHex)
                }),
                Segment::Text(" %\n".into()),
            ]
        );
        assert_eq!(parse_format("").unwrap(), vec![]);
        assert_eq!(
            parse_format("{{}}").unwrap(),
            vec![Segment::Text("{}".into())]
        );
        assert_eq!(parse_format("é{}ü").unwrap().len(), 3);
    }

    #[test]
    fn rejects_unsupported_specs_saying_what_is_supported() {
        for (format, says) in [
            ("{:?}", "Debug formatting"),
            ("{:#?}", "Debug formatting"),
            ("{:x?}", "Debug formatting"),
            ("{:5?}", "Debug formatting"),
            ("{:*<5}", "fill characters"),
            ("{:^5}", "centring"),
            ("{: ^5}", "centring"),
            ("{:1$}", "width taken from an argument"),
            ("{:w$}", "width taken from an argument"),
            ("{:.*}", "precision taken from an argument"),
            ("{:.1$}", "precision taken from an argument"),
            ("{:.p$}", "precision taken from an argument"),
            ("{:.}", "must be followed by a precision"),
            ("{:256}", "too large"),
            ("{:.300}", "too large"),
            ("{:y}", "unknown format `y`"),
            ("{:5s}", "unknown format `s`"),
        ] {
            let message = error(format);
            assert!(message.contains(says), "{format}: {message}");
            assert!(
                message.contains(&format!("`{format}`")),
                "{format}: {message}"
            );
            assert!(
                message.contains("supported:") || says == "too large",
                "{format}: {message}"
            );
        }
    }

    #[test]
    fn rejects_malformed_format_strings() {
        assert!(error("a } b").contains("unmatched `}`"));
        assert!(error("a { b").contains("unterminated `{`"));
        assert!(error("{x.y}").contains("not an argument"));
        assert!(error("{-1}").contains("not an argument"));
        assert!(error("{{}").contains("unterminated") || error("{{}").contains("unmatched"));
        assert!(error("a\0b").contains("NUL"));
        assert!(error("{a{b}").contains("invalid placeholder"));
    }

    #[test]
    fn unescapes_string_literals() {
        assert_eq!(
            unescape_str_literal(r#""a\n\t\\\"\'\0""#).unwrap(),
            "a\n\t\\\"'\0"
        );
        assert_eq!(
            unescape_str_literal(r#""\x41\u{e9}\u{1F600}""#).unwrap(),
            "Aé😀"
        );
        assert_eq!(unescape_str_literal("\"a\\\n    b\"").unwrap(), "ab");
        assert_eq!(
            unescape_str_literal(r###"r#"a"b\n"#"###).unwrap(),
            "a\"b\\n"
        );
        assert_eq!(unescape_str_literal(r#"r"x""#).unwrap(), "x");
        assert_eq!(unescape_str_literal(r#"b"x""#), None);
        assert_eq!(unescape_str_literal(r#"c"x""#), None);
        assert_eq!(unescape_str_literal("5u8"), None);
        assert_eq!(unescape_str_literal(r#""\xff""#), None);
    }

    fn expand_src(src: &str, mode: Mode) -> Result<String, Vec<Error<TestSpan>>> {
        expand(&lex(src), mode).map(|toks| render_plain(&toks))
    }

    fn errors(src: &str) -> Vec<(String, TestSpan)> {
        match expand(&lex(src), Mode::Print) {
            Ok(toks) => panic!("{src} expanded to {}", render_plain(&toks)),
            Err(errors) => errors.into_iter().map(|e| (e.message, e.start)).collect(),
        }
    }

    #[test]
    fn expands_to_pieces_and_one_binding_per_argument() {
        let out = expand_src(r#""x = {:>5}, y = {:#x} {0}\n", a + 1, b"#, Mode::Print).unwrap();
        let want = render_plain(&lex(r#"{
                const __OXIDE_PIECES: &[::cuda_device::printf::__private::Piece] = &[
                    ::cuda_device::printf::__private::Piece::new("x = ",
                        ::cuda_device::printf::__private::Spec::new(::cuda_device::printf::__private::Kind::Display).right().width(5u8)),
                    ::cuda_device::printf::__private::Piece::new(", y = ",
                        ::cuda_device::printf::__private::Spec::new(::cuda_device::printf::__private::Kind::LowerHex).alternate()),
                    ::cuda_device::printf::__private::Piece::new(" ",
                        ::cuda_device::printf::__private::Spec::new(::cuda_device::printf::__private::Kind::Display)),
                    ::cuda_device::printf::__private::Piece::text("\n"),
                ];
                match (&(a + 1), &(b),) {
                    (__oxide_arg0, __oxide_arg1,) => (|| ::cuda_device::printf::__private::print(__OXIDE_PIECES, &[
                        ::cuda_device::printf::__private::display(__oxide_arg0),
                        ::cuda_device::printf::__private::radix(__oxide_arg1),
                        ::cuda_device::printf::__private::display(__oxide_arg0),
                    ]))(),
                }
            }"#));
        assert_eq!(out, want);
    }

    /// Whether the rendered expansion `out` contains the tokens of `snippet`.
    fn has(out: &str, snippet: &str) -> bool {
        out.contains(&render_plain(&lex(snippet)))
    }

    #[test]
    fn println_appends_a_newline_and_format_builds() {
        let out = expand_src(r#""v""#, Mode::PrintLine).unwrap();
        assert!(has(&out, r#"Piece::text("v\n")"#), "{out}");
        assert!(
            has(&out, "|| ::cuda_device::printf::__private::print"),
            "{out}"
        );
        let empty = expand_src("", Mode::PrintLine).unwrap();
        assert!(has(&empty, r#"Piece::text("\n")"#), "{empty}");
        let built = expand_src(r#""{}", 1"#, Mode::Format).unwrap();
        assert!(has(&built, "(&(1),)"), "{built}");
        assert!(
            has(&built, "(__oxide_arg0,) =>")
                && has(&built, "|| ::cuda_device::printf::__private::build"),
            "{built}"
        );
    }

    #[test]
    fn captures_names_and_uses_named_arguments() {
        let out = expand_src(r#""{x} {n:e} {x:x} {}", 5, n = 2.0"#, Mode::Print).unwrap();
        // 5 is argument 0, `n` argument 1, the captured `x` argument 2.
        assert!(has(&out, "(&(5), &(2.0), &(x),)"), "{out}");
        assert!(
            has(
                &out,
                "display(__oxide_arg2), ::cuda_device::printf::__private::exp(__oxide_arg1)"
            ),
            "{out}"
        );
        assert!(
            has(
                &out,
                "radix(__oxide_arg2), ::cuda_device::printf::__private::display(__oxide_arg0)"
            ),
            "{out}"
        );
    }

    #[test]
    fn bindings_carry_the_argument_span() {
        let src = r#""{}{v}", value"#;
        let toks = expand(&lex(src), Mode::Print).unwrap();
        let mut spans = Vec::new();
        collect_binding_spans(&toks, &mut spans);
        let value_at = src.find("value").unwrap();
        assert!(spans.contains(&TestSpan(value_at)), "{spans:?}");
        assert!(
            spans.contains(&TestSpan(0)),
            "captured names carry the literal's span: {spans:?}"
        );
        assert!(spans
            .iter()
            .all(|s| *s == TestSpan(value_at) || *s == TestSpan(0)));
    }

    fn collect_binding_spans(toks: &[Tok<TestSpan>], out: &mut Vec<TestSpan>) {
        for tok in toks {
            match tok {
                Tok::Ident { name, span } if name.starts_with("__oxide_arg") => out.push(*span),
                Tok::Group { inner, .. } => collect_binding_spans(inner, out),
                _ => {}
            }
        }
    }

    #[test]
    fn reports_argument_mistakes_at_their_place() {
        let src = r#""{} {}", a"#;
        assert_eq!(
            errors(src),
            vec![("gpu_printf!: the format string refers to argument 1, but there is 1 positional argument".into(), TestSpan(0))]
        );
        let src = r#""{}", a, b"#;
        assert_eq!(
            errors(src),
            vec![(
                "gpu_printf!: argument never used in the format string".into(),
                TestSpan(src.find('b').unwrap())
            )]
        );
        let src = r#""{}", a, n = 1"#;
        assert_eq!(
            errors(src)[0].0,
            "gpu_printf!: named argument never used in the format string"
        );
        let src = r#""{n}", n = 1, 2"#;
        assert!(errors(src)[0]
            .0
            .contains("positional arguments must come before named ones"));
        let src = r#""{n}", n = 1, n = 2"#;
        assert!(errors(src)[0].0.contains("named twice"));
        assert!(errors(r#""{2}""#)[0]
            .0
            .contains("there are no positional arguments"));
        assert!(errors(r#""{}", a,, b"#)[0]
            .0
            .contains("expected an argument"));
    }

    #[test]
    fn rejects_non_literal_formats_and_limits() {
        assert!(errors("")[0].0.contains("needs a format string"));
        assert!(errors("x, 1")[0].0.contains("needs a string literal"));
        assert!(errors(r#"b"x""#)[0].0.contains("needs a string literal"));
        let (message, span) = &errors(r#""{:?}", a"#)[0];
        assert!(
            message
                .starts_with("gpu_printf!: `{:?}`: Debug formatting is not supported on the GPU"),
            "{message}"
        );
        assert_eq!(*span, TestSpan(0));
        let many = format!("\"{}\", {}", "{}".repeat(17), vec!["1"; 17].join(", "));
        assert!(errors(&many)[0].0.contains("17 placeholders; at most 16"));
        let sixteen = format!("\"{}\", {}", "{}".repeat(16), vec!["1"; 16].join(", "));
        assert!(expand_src(&sixteen, Mode::Print).is_ok());
        let long = format!("\"{}\"", "a".repeat(TEXT_LIMIT + 1));
        assert!(errors(&long)[0]
            .0
            .contains("252 bytes of text; at most 251"));
        let percent = format!("\"{}{}\"", "a".repeat(TEXT_LIMIT - 1), "%");
        assert!(errors(&percent)[0].0.contains("252 bytes"));
        assert!(expand_src(&format!("\"{}\"", "a".repeat(TEXT_LIMIT)), Mode::Print).is_ok());
    }

    #[test]
    fn accepts_a_trailing_comma_and_a_wrapped_literal() {
        assert!(expand_src(r#""{}", 1,"#, Mode::Print).is_ok());
        let wrapped = vec![
            Tok::Group {
                delim: Delim::None,
                inner: lex(r#""{}""#),
                span: TestSpan(0),
            },
            lex(",")[0].clone(),
            lex("1")[0].clone(),
        ];
        assert!(expand(&wrapped, Mode::Print).is_ok());
    }
}
