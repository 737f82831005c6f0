//! A small token model the macros are written against.
//!
//! `proc_macro` types only work while a macro is being expanded, so the parsing
//! and expansion logic operates on [`Tok`], which mirrors `proc_macro::TokenTree`
//! but is generic over the span type. The macro entry points instantiate it with
//! `proc_macro::Span` (see `bridge.rs`); the unit tests with a byte offset into
//! the test input (see `lexer.rs`), which lets them check where errors point.

use std::fmt::Debug;

/// The span type carried by tokens. Implemented by `proc_macro::Span` and by the
/// unit tests' span.
pub trait SourceSpan: Copy + Debug {
    /// The span of tokens the macro writes itself.
    fn call_site() -> Self;
    /// Parses well-formed Rust source text into tokens carrying
    /// [`call_site`](SourceSpan::call_site) spans. Used for the fixed parts of
    /// expansions; panics on malformed text (a bug in this crate).
    fn parse(src: &str) -> Vec<Tok<Self>>;
}

/// The delimiter of a [`Tok::Group`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delim {
    /// `( .. )`
    Paren,
    /// `{ .. }`
    Brace,
    /// `[ .. ]`
    Bracket,
    /// An invisible group, e.g. a `$t:ty` fragment substituted by `macro_rules!`.
    None,
}

/// One token tree.
#[derive(Clone, Debug)]
pub enum Tok<S> {
    /// An identifier or keyword; raw identifiers keep their `r#` prefix.
    Ident { name: String, span: S },
    /// One punctuation character; `joint` when the next punctuation character
    /// follows without whitespace (`::`, `->`, and the `'` of a lifetime).
    Punct { ch: char, joint: bool, span: S },
    /// A literal, as written (`2.5f32`, `"text"`, `b'x'`).
    Lit { text: String, span: S },
    /// A delimited group; `span` covers the whole group.
    Group {
        delim: Delim,
        inner: Vec<Tok<S>>,
        span: S,
    },
}

impl<S: Copy> Tok<S> {
    /// The token's span.
    pub fn span(&self) -> S {
        match self {
            Tok::Ident { span, .. }
            | Tok::Punct { span, .. }
            | Tok::Lit { span, .. }
            | Tok::Group { span, .. } => *span,
        }
    }

    /// An identifier token.
    pub fn ident(name: &str, span: S) -> Self {
        Tok::Ident {
            name: name.to_string(),
            span,
        }
    }

    /// Whether this is the identifier (or keyword) `name`.
    pub fn is_ident(&self, name: &str) -> bool {
        matches!(self, Tok::Ident { name: n, .. } if n == name)
    }

    /// The identifier's text, if this is an identifier.
    pub fn ident_name(&self) -> Option<&str> {
        match self {
            Tok::Ident { name, .. } => Some(name),
            _ => None,
        }
    }

    /// Whether this is the punctuation character `ch`.
    pub fn is_punct(&self, ch: char) -> bool {
        matches!(self, Tok::Punct { ch: c, .. } if *c == ch)
    }

    /// Whether this is a punctuation character joined to the next one.
    pub fn is_joint(&self) -> bool {
        matches!(self, Tok::Punct { joint: true, .. })
    }

    /// The group's delimiter and contents, if this is a group.
    pub fn group(&self) -> Option<(Delim, &[Tok<S>])> {
        match self {
            Tok::Group { delim, inner, .. } => Some((*delim, inner)),
            _ => None,
        }
    }

    /// The contents, if this is a group delimited by `delim`.
    pub fn group_with(&self, delim: Delim) -> Option<&[Tok<S>]> {
        match self.group() {
            Some((d, inner)) if d == delim => Some(inner),
            _ => None,
        }
    }
}

/// Whether `tokens[i]` starts the two-character operator `first second`
/// (`::`, `->`), i.e. `first` is joined to an immediately following `second`.
pub fn is_pair<S: Copy>(tokens: &[Tok<S>], i: usize, first: char, second: char) -> bool {
    tokens[i].is_punct(first)
        && tokens[i].is_joint()
        && tokens.get(i + 1).is_some_and(|t| t.is_punct(second))
}

/// Whether `tokens[i]` is a lone `:` (a type ascription), not part of `::`.
pub fn is_single_colon<S: Copy>(tokens: &[Tok<S>], i: usize) -> bool {
    tokens[i].is_punct(':')
        && !is_pair(tokens, i, ':', ':')
        && !(i > 0 && is_pair(tokens, i - 1, ':', ':'))
}

/// Removes invisible (`Delim::None`) groups wrapping the whole sequence, as
/// `macro_rules!` leaves around `$t:ty` and similar fragments.
pub fn unwrap_invisible<S: Copy>(mut tokens: &[Tok<S>]) -> &[Tok<S>] {
    while let [only] = tokens {
        match only.group_with(Delim::None) {
            Some(inner) => tokens = inner,
            None => break,
        }
    }
    tokens
}

/// Marks the last token as not joined to whatever follows, so that splicing a
/// user's tokens before a template's punctuation cannot glue them together.
pub fn detach_end<S: Copy>(mut tokens: Vec<Tok<S>>) -> Vec<Tok<S>> {
    if let Some(Tok::Punct { joint, .. }) = tokens.last_mut() {
        *joint = false;
    }
    tokens
}

/// A compile error: a message and the range of source it points at.
#[derive(Clone, Debug)]
pub struct Error<S> {
    /// Where the highlighted range starts.
    pub start: S,
    /// Where the highlighted range ends (may equal `start`).
    pub end: S,
    /// What is wrong and what to do about it.
    pub message: String,
}

impl<S: SourceSpan> Error<S> {
    /// An error pointing at one span.
    pub fn at(span: S, message: impl Into<String>) -> Self {
        Error {
            start: span,
            end: span,
            message: message.into(),
        }
    }

    /// An error covering `tokens` (the call site when empty).
    pub fn spanning(tokens: &[Tok<S>], message: impl Into<String>) -> Self {
        match (tokens.first(), tokens.last()) {
            (Some(first), Some(last)) => Error {
                start: first.span(),
                end: last.span(),
                message: message.into(),
            },
            _ => Error::at(S::call_site(), message),
        }
    }
}

/// Renders tokens the way a person writes Rust types and patterns
/// (`&'a mut [T]`, `Vec<f32>`, `impl Fn(T) -> T + Copy`), for error messages.
pub fn render<S: Copy>(tokens: &[Tok<S>]) -> String {
    let mut out = String::new();
    for (i, tok) in tokens.iter().enumerate() {
        if i > 0 && space_between(tokens, i) {
            out.push(' ');
        }
        match tok {
            Tok::Ident { name, .. } => out.push_str(name),
            Tok::Lit { text, .. } => out.push_str(text),
            Tok::Punct { ch, .. } => out.push(*ch),
            Tok::Group { delim, inner, .. } => {
                let inner = render(inner);
                match delim {
                    Delim::Paren => out.push_str(&format!("({inner})")),
                    Delim::Bracket => out.push_str(&format!("[{inner}]")),
                    Delim::Brace if inner.is_empty() => out.push_str("{}"),
                    Delim::Brace => out.push_str(&format!("{{ {inner} }}")),
                    Delim::None => out.push_str(&inner),
                }
            }
        }
    }
    out
}

/// Whether [`render`] puts a space between `tokens[i - 1]` and `tokens[i]`.
fn space_between<S: Copy>(tokens: &[Tok<S>], i: usize) -> bool {
    let (prev, next) = (&tokens[i - 1], &tokens[i]);
    let prev_is_arrow_head = prev.is_punct('>') && i >= 2 && is_pair(tokens, i - 2, '-', '>');
    let path_sep_at =
        |j: usize| is_pair(tokens, j, ':', ':') || (j > 0 && is_pair(tokens, j - 1, ':', ':'));
    if let Tok::Punct { ch, .. } = prev {
        if prev_is_arrow_head {
            return true; // `-> T`
        }
        if "&*'#!<.".contains(*ch) || path_sep_at(i - 1) || is_pair(tokens, i - 1, '-', '>') {
            return false; // `&T`, `*const`, `'a`, `#[..]`, `Vec<T`, `x.0`, `::x`, `->`
        }
    }
    match next {
        Tok::Punct {
            ch: ',' | ';' | '.',
            ..
        } => false,
        Tok::Punct { ch: ':', .. } => false, // `x: T` and `a::b`
        Tok::Punct { ch: '<', .. } => {
            !matches!(prev, Tok::Ident { .. } | Tok::Punct { ch: ':', .. })
        }
        Tok::Punct { ch: '>', .. } => prev.is_punct('-'),
        Tok::Punct { ch: '-', .. } => true,
        Tok::Group {
            delim: Delim::Paren | Delim::Bracket,
            ..
        } => {
            !matches!(prev, Tok::Ident { .. } | Tok::Punct { ch: '>' | '!', .. })
                || prev.is_ident("mut")
                || prev.is_ident("const")
                || prev.is_ident("dyn")
                || prev.is_ident("impl")
        }
        _ => true,
    }
}

/// Renders tokens with a space between every two trees, gluing only `::`, `->`
/// and lifetimes, and ignoring spans and other spacing: two token sequences
/// render the same exactly when they are the same tokens. Used by tests.
#[cfg(test)]
pub fn render_plain<S: Copy>(tokens: &[Tok<S>]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut glue_next = false;
    for (i, tok) in tokens.iter().enumerate() {
        let text = match tok {
            Tok::Ident { name, .. } => name.clone(),
            Tok::Lit { text, .. } => text.clone(),
            Tok::Punct { ch, .. } => ch.to_string(),
            Tok::Group { delim, inner, .. } => {
                let inner = render_plain(inner);
                let (open, close) = match delim {
                    Delim::Paren => ("(", ")"),
                    Delim::Bracket => ("[", "]"),
                    Delim::Brace => ("{", "}"),
                    Delim::None => ("«", "»"),
                };
                if inner.is_empty() {
                    format!("{open}{close}")
                } else {
                    format!("{open} {inner} {close}")
                }
            }
        };
        match parts.last_mut() {
            Some(last) if glue_next => last.push_str(&text),
            _ => parts.push(text),
        }
        glue_next =
            tok.is_punct('\'') || is_pair(tokens, i, ':', ':') || is_pair(tokens, i, '-', '>');
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::{lex, TestSpan};

    #[test]
    fn renders_types_as_written() {
        for ty in [
            "&'a mut [T]",
            "&[f32; 4]",
            "Vec<Vec<u8>>",
            "impl Fn(T) -> T + Copy",
            "T: Mul<Output = T>",
            "<T as Trait>::Assoc",
            "*const std::ffi::c_void",
            "(u32, &dyn Fn())",
            "fn(u8) -> ()",
            "mut out",
        ] {
            assert_eq!(render(&lex(ty)), ty);
        }
    }

    #[test]
    fn distinguishes_colons_from_path_separators() {
        let toks = lex("x: a::b");
        assert!(is_single_colon(&toks, 1));
        assert!(!is_single_colon(&toks, 3) && !is_single_colon(&toks, 4));
        assert!(is_pair(&toks, 3, ':', ':'));
    }

    #[test]
    fn unwraps_invisible_groups() {
        let inner = lex("&u8");
        let wrapped = vec![Tok::Group {
            delim: Delim::None,
            inner: vec![Tok::Group {
                delim: Delim::None,
                inner: inner.clone(),
                span: TestSpan(0),
            }],
            span: TestSpan(0),
        }];
        assert_eq!(
            render_plain(unwrap_invisible(&wrapped)),
            render_plain(&inner)
        );
    }

    #[test]
    fn errors_span_their_tokens() {
        let toks = lex("a b c");
        let error = Error::spanning(&toks, "m");
        assert_eq!((error.start, error.end), (TestSpan(0), TestSpan(4)));
        assert_eq!(
            Error::<TestSpan>::spanning(&[], "m").start,
            TestSpan::CALL_SITE
        );
    }
}
