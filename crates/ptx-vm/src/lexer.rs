//! The lexer: PTX text → tokens.
//!
//! It owns the character-level rules of PTX: identifiers (which may start
//! with `%`, `$` or `_`), dotted directives and instruction modifiers
//! (`.reg`, `.shared::cta`, `.mbarrier::complete_tx::bytes`), integer
//! literals in every base PTX accepts (with an optional `U` suffix), the
//! hexadecimal float forms `0fXXXXXXXX` / `0dXXXXXXXXXXXXXXXX`, decimal
//! floats, strings, and `//` and `/* */` comments. Every token records its
//! byte offset, line and column, so that the parser's errors and the VM's
//! faults can point at the source.

use crate::ParseError;

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok<'a> {
    /// An identifier: a name, a register (`%r1`), a label (`$L__BB0_1`) or an
    /// opcode (`add`).
    Ident(&'a str),
    /// A directive or a modifier, with its dot: `.reg`, `.s32`, `.shared::cta`.
    Dot(&'a str),
    /// An integer literal, as the bits of a 64-bit value (negative literals
    /// arrive as `-` then the literal).
    Int(u64),
    /// `0fXXXXXXXX`: the bits of an `f32`.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX` or a decimal float: the bits of an `f64`.
    F64(u64),
    /// A string literal, without its quotes.
    Str(String),
    /// One punctuation character: `, ; : { } [ ] ( ) + - ! | @ < > =`.
    Punct(char),
}

/// A token and where it starts.
#[derive(Clone, Debug)]
pub struct Token<'a> {
    pub tok: Tok<'a>,
    /// Byte offset in the source.
    pub offset: usize,
    /// 1-based line.
    pub line: u32,
    /// 1-based column (in bytes).
    pub column: u32,
}

/// Splits `src` into tokens.
pub fn lex(src: &str) -> Result<Vec<Token<'_>>, ParseError> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::with_capacity(src.len() / 4);
    let mut i = 0usize;
    let mut line = 1u32;
    let mut line_start = 0usize;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            line_start = i;
            continue;
        }
        if c == b' ' || c == b'\t' || c == b'\r' {
            i += 1;
            continue;
        }
        let column = (i - line_start + 1) as u32;
        let (tok_line, tok_column) = (line, column);
        let error = move |message: String| ParseError {
            line: tok_line,
            column: tok_column,
            message,
        };
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i += 2;
            loop {
                if i + 1 >= bytes.len() {
                    return Err(error("unterminated /* comment".into()));
                }
                if bytes[i] == b'\n' {
                    line += 1;
                    line_start = i + 1;
                }
                if bytes[i] == b'*' && bytes[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                i += 1;
            }
            continue;
        }
        let start = i;
        let tok = if is_ident_start(c) {
            i += 1;
            while i < bytes.len() && is_ident_continue(bytes[i]) {
                i += 1;
            }
            Tok::Ident(&src[start..i])
        } else if c == b'.'
            && bytes
                .get(i + 1)
                .is_some_and(|&b| is_ident_start(b) || b.is_ascii_digit())
        {
            i += 1;
            loop {
                while i < bytes.len() && is_ident_continue(bytes[i]) {
                    i += 1;
                }
                // `.shared::cta`, `.mbarrier::complete_tx::bytes`, `.cta_group::1`.
                if bytes.get(i) == Some(&b':')
                    && bytes.get(i + 1) == Some(&b':')
                    && bytes.get(i + 2).is_some_and(|&b| is_ident_start(b) || b.is_ascii_digit())
                {
                    i += 2;
                    continue;
                }
                break;
            }
            Tok::Dot(&src[start..i])
        } else if c.is_ascii_digit() {
            let (tok, len) = lex_number(&bytes[i..]).map_err(error)?;
            i += len;
            tok
        } else if c == b'"' {
            i += 1;
            let mut s = String::new();
            loop {
                match bytes.get(i) {
                    None | Some(b'\n') => return Err(error("unterminated string".into())),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if i + 1 < bytes.len() => {
                        s.push(bytes[i + 1] as char);
                        i += 2;
                    }
                    Some(_) => {
                        let ch = src[i..].chars().next().unwrap_or('?');
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            Tok::Str(s)
        } else if b",;:{}[]()+-!|@<>=".contains(&c) {
            i += 1;
            Tok::Punct(c as char)
        } else {
            let ch = src[i..].chars().next().unwrap_or('?');
            return Err(error(format!("unexpected character `{ch}`")));
        };
        tokens.push(Token {
            tok,
            offset: start,
            line,
            column,
        });
    }
    Ok(tokens)
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c == b'%'
}

fn is_ident_continue(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// Lexes a number starting at `b[0]` (a digit); returns the token and its length.
fn lex_number(b: &[u8]) -> Result<(Tok<'static>, usize), String> {
    let hex_run = |from: usize| {
        let mut j = from;
        while j < b.len() && b[j].is_ascii_hexdigit() {
            j += 1;
        }
        j
    };
    if b[0] == b'0' && b.len() > 2 && (b[1] == b'f' || b[1] == b'F') && b[2].is_ascii_hexdigit() {
        let end = hex_run(2);
        if end - 2 != 8 {
            return Err("a 0f float literal has exactly 8 hexadecimal digits".into());
        }
        let text = std::str::from_utf8(&b[2..end]).unwrap_or("0");
        let bits = u32::from_str_radix(text, 16).map_err(|e| e.to_string())?;
        return Ok((Tok::F32(bits), end));
    }
    if b[0] == b'0' && b.len() > 2 && (b[1] == b'd' || b[1] == b'D') && b[2].is_ascii_hexdigit() {
        let end = hex_run(2);
        if end - 2 != 16 {
            return Err("a 0d float literal has exactly 16 hexadecimal digits".into());
        }
        let text = std::str::from_utf8(&b[2..end]).unwrap_or("0");
        let bits = u64::from_str_radix(text, 16).map_err(|e| e.to_string())?;
        return Ok((Tok::F64(bits), end));
    }
    if b[0] == b'0' && b.len() > 2 && (b[1] == b'x' || b[1] == b'X') {
        let end = hex_run(2);
        let text = std::str::from_utf8(&b[2..end]).unwrap_or("");
        let v = u64::from_str_radix(text, 16)
            .map_err(|_| format!("bad hexadecimal literal `0x{text}`"))?;
        return Ok((Tok::Int(v), skip_unsigned_suffix(b, end)));
    }
    if b[0] == b'0'
        && b.len() > 2
        && (b[1] == b'b' || b[1] == b'B')
        && (b[2] == b'0' || b[2] == b'1')
    {
        let mut end = 2;
        while end < b.len() && (b[end] == b'0' || b[end] == b'1') {
            end += 1;
        }
        let text = std::str::from_utf8(&b[2..end]).unwrap_or("");
        let v =
            u64::from_str_radix(text, 2).map_err(|_| format!("bad binary literal `0b{text}`"))?;
        return Ok((Tok::Int(v), skip_unsigned_suffix(b, end)));
    }
    let mut end = 0;
    while end < b.len() && b[end].is_ascii_digit() {
        end += 1;
    }
    // A decimal float: digits '.' digits [e[+-]digits], or digits e[+-]digits.
    let is_float =
        (end < b.len() && b[end] == b'.' && b.get(end + 1).is_some_and(|c| c.is_ascii_digit()))
            || (end < b.len() && (b[end] == b'e' || b[end] == b'E'));
    if is_float {
        let mut j = end;
        if j < b.len() && b[j] == b'.' {
            j += 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
        }
        if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
            j += 1;
            if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                j += 1;
            }
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
        }
        let text = std::str::from_utf8(&b[..j]).unwrap_or("0");
        let v: f64 = text
            .parse()
            .map_err(|_| format!("bad float literal `{text}`"))?;
        return Ok((Tok::F64(v.to_bits()), j));
    }
    let text = std::str::from_utf8(&b[..end]).unwrap_or("0");
    let v = if text.len() > 1 && text.starts_with('0') {
        u64::from_str_radix(&text[1..], 8).map_err(|_| format!("bad octal literal `{text}`"))?
    } else {
        text.parse::<u64>()
            .map_err(|_| format!("integer literal `{text}` does not fit in 64 bits"))?
    };
    Ok((Tok::Int(v), skip_unsigned_suffix(b, end)))
}

fn skip_unsigned_suffix(b: &[u8], end: usize) -> usize {
    if end < b.len() && (b[end] == b'U' || b[end] == b'u') {
        end + 1
    } else {
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok<'_>> {
        lex(src).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn instruction_with_modifiers_and_address() {
        assert_eq!(
            kinds("@!%p1 ld.global.nc.v2.b64 {%rd1, %rd2}, [%rd3+-8]; // c"),
            vec![
                Tok::Punct('@'),
                Tok::Punct('!'),
                Tok::Ident("%p1"),
                Tok::Ident("ld"),
                Tok::Dot(".global"),
                Tok::Dot(".nc"),
                Tok::Dot(".v2"),
                Tok::Dot(".b64"),
                Tok::Punct('{'),
                Tok::Ident("%rd1"),
                Tok::Punct(','),
                Tok::Ident("%rd2"),
                Tok::Punct('}'),
                Tok::Punct(','),
                Tok::Punct('['),
                Tok::Ident("%rd3"),
                Tok::Punct('+'),
                Tok::Punct('-'),
                Tok::Int(8),
                Tok::Punct(']'),
                Tok::Punct(';'),
            ]
        );
    }

    #[test]
    fn literals() {
        assert_eq!(kinds("0f3F800000"), vec![Tok::F32(0x3F80_0000)]);
        assert_eq!(
            kinds("0dBFF0000000000000"),
            vec![Tok::F64(0xBFF0_0000_0000_0000)]
        );
        assert_eq!(kinds("0xFFFFFFFFFFFFFFFF"), vec![Tok::Int(u64::MAX)]);
        assert_eq!(kinds("017"), vec![Tok::Int(15)]);
        assert_eq!(kinds("0b101U"), vec![Tok::Int(5)]);
        assert_eq!(kinds("1.5"), vec![Tok::F64(1.5f64.to_bits())]);
        assert_eq!(kinds("-3"), vec![Tok::Punct('-'), Tok::Int(3)]);
    }

    #[test]
    fn scoped_modifiers_and_comments() {
        assert_eq!(
            kinds("/* x\n y */ mbarrier.try_wait.parity.shared::cta.b64"),
            vec![
                Tok::Ident("mbarrier"),
                Tok::Dot(".try_wait"),
                Tok::Dot(".parity"),
                Tok::Dot(".shared::cta"),
                Tok::Dot(".b64"),
            ]
        );
        // A scope may be a number (Blackwell's `.cta_group::1`).
        assert_eq!(
            kinds("tcgen05.alloc.cta_group::1.sync"),
            vec![Tok::Ident("tcgen05"), Tok::Dot(".alloc"), Tok::Dot(".cta_group::1"), Tok::Dot(".sync")]
        );
        let toks = lex("a\n  b").unwrap();
        assert_eq!((toks[1].line, toks[1].column), (2, 3));
    }

    #[test]
    fn errors_point_at_the_character() {
        let e = lex("mov.b32 %r1, #3;").unwrap_err();
        assert_eq!((e.line, e.column), (1, 14));
        assert!(e.message.contains('#'));
    }
}
