//! A small Rust lexer for the unit tests, standing in for `proc_macro`'s parser
//! (which only works during macro expansion). It produces the same token trees
//! `proc_macro` would: lifetimes are a joint `'` followed by an identifier, and a
//! punctuation character is joint when another one follows without whitespace.

use crate::tokens::{Delim, SourceSpan, Tok};

/// A test span: the byte offset of the token in the lexed source, or
/// [`TestSpan::CALL_SITE`] for tokens the macro wrote itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestSpan(pub usize);

impl TestSpan {
    /// The span of generated tokens.
    pub const CALL_SITE: TestSpan = TestSpan(usize::MAX);
}

impl SourceSpan for TestSpan {
    fn call_site() -> Self {
        TestSpan::CALL_SITE
    }

    fn parse(src: &str) -> Vec<Tok<Self>> {
        let mut tokens = lex(src);
        forget_positions(&mut tokens);
        tokens
    }
}

/// Lexes `src`; each token's span is its byte offset. Panics on malformed input.
pub fn lex(src: &str) -> Vec<Tok<TestSpan>> {
    let mut lexer = Lexer { src, pos: 0 };
    let tokens = lexer.trees(None);
    assert_eq!(lexer.pos, src.len(), "unbalanced delimiters in {src:?}");
    tokens
}

fn forget_positions(tokens: &mut [Tok<TestSpan>]) {
    for tok in tokens {
        match tok {
            Tok::Ident { span, .. } | Tok::Punct { span, .. } | Tok::Lit { span, .. } => {
                *span = TestSpan::CALL_SITE
            }
            Tok::Group { span, inner, .. } => {
                *span = TestSpan::CALL_SITE;
                forget_positions(inner);
            }
        }
    }
}

const PUNCT: &str = "+-*/%^!&|=<>@.,;:#$?~\\'";

struct Lexer<'s> {
    src: &'s str,
    pos: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(n)
    }

    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn bump(&mut self) -> char {
        let c = self.peek().expect("unexpected end of input");
        self.pos += c.len_utf8();
        c
    }

    /// Token trees up to (and consuming) `close`, or to the end of input.
    fn trees(&mut self, close: Option<char>) -> Vec<Tok<TestSpan>> {
        let mut out = Vec::new();
        loop {
            self.skip_trivia();
            let start = self.pos;
            let Some(c) = self.peek() else {
                assert!(close.is_none(), "missing {close:?}");
                return out;
            };
            if Some(c) == close {
                self.bump();
                return out;
            }
            let span = TestSpan(start);
            let tok = match c {
                '(' | '[' | '{' => {
                    self.bump();
                    let (delim, close) = match c {
                        '(' => (Delim::Paren, ')'),
                        '[' => (Delim::Bracket, ']'),
                        _ => (Delim::Brace, '}'),
                    };
                    Tok::Group {
                        delim,
                        inner: self.trees(Some(close)),
                        span,
                    }
                }
                ')' | ']' | '}' => panic!("unexpected {c:?} at {start}"),
                '\'' if self.is_lifetime() => {
                    self.bump();
                    out.push(Tok::Punct {
                        ch: '\'',
                        joint: true,
                        span,
                    });
                    let name = self.ident_text();
                    Tok::Ident {
                        name,
                        span: TestSpan(start + 1),
                    }
                }
                '\'' | '"' => Tok::Lit {
                    text: self.quoted(),
                    span,
                },
                'b' | 'r' | 'c' if self.starts_literal() => Tok::Lit {
                    text: self.prefixed_literal(),
                    span,
                },
                c if c.is_ascii_digit() => Tok::Lit {
                    text: self.number(),
                    span,
                },
                c if c == '_' || c.is_alphanumeric() => Tok::Ident {
                    name: self.ident_text(),
                    span,
                },
                c if PUNCT.contains(c) => {
                    self.bump();
                    let joint = self.peek().is_some_and(|n| PUNCT.contains(n) && n != '\'');
                    Tok::Punct { ch: c, joint, span }
                }
                _ => panic!("unexpected character {c:?} at {start}"),
            };
            out.push(tok);
        }
    }

    fn skip_trivia(&mut self) {
        loop {
            let rest = self.rest();
            if rest.starts_with("//") {
                self.pos += rest.find('\n').unwrap_or(rest.len());
            } else if rest.starts_with("/*") {
                self.pos += rest.find("*/").expect("unterminated comment") + 2;
            } else if self.peek().is_some_and(char::is_whitespace) {
                self.bump();
            } else {
                return;
            }
        }
    }

    /// `'a` (not `'a'`), at a `'`.
    fn is_lifetime(&self) -> bool {
        let starts_ident = self
            .peek_at(1)
            .is_some_and(|c| c == '_' || c.is_alphabetic());
        starts_ident && self.peek_at(2) != Some('\'')
    }

    fn ident_text(&mut self) -> String {
        let start = self.pos;
        if self.rest().starts_with("r#") {
            self.pos += 2;
        }
        while self.peek().is_some_and(|c| c == '_' || c.is_alphanumeric()) {
            self.bump();
        }
        self.src[start..self.pos].to_string()
    }

    /// A string or character literal starting at the quote.
    fn quoted(&mut self) -> String {
        let start = self.pos;
        let quote = self.bump();
        loop {
            match self.bump() {
                '\\' => {
                    self.bump();
                }
                c if c == quote => break,
                _ => {}
            }
        }
        self.literal_suffix();
        self.src[start..self.pos].to_string()
    }

    fn starts_literal(&self) -> bool {
        let rest = self.rest();
        ["b'", "b\"", "br\"", "br#", "r\"", "r#\"", "r##", "c\""]
            .iter()
            .any(|p| rest.starts_with(p))
    }

    fn prefixed_literal(&mut self) -> String {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c == 'b' || c == 'r' || c == 'c')
        {
            self.bump();
        }
        let raw = self.src[start..self.pos].contains('r');
        if !raw {
            self.quoted();
            return self.src[start..self.pos].to_string();
        }
        let hashes = self.rest().chars().take_while(|&c| c == '#').count();
        self.pos += hashes + 1; // the hashes and the opening quote
        let terminator = format!("\"{}", "#".repeat(hashes));
        self.pos += self
            .rest()
            .find(&terminator)
            .expect("unterminated raw string")
            + terminator.len();
        self.src[start..self.pos].to_string()
    }

    fn number(&mut self) -> String {
        let start = self.pos;
        while let Some(c) = self.peek() {
            let fraction = c == '.' && self.peek_at(1).is_some_and(|n| n.is_ascii_digit());
            let exponent_sign = (c == '+' || c == '-')
                && matches!(self.src[..self.pos].chars().last(), Some('e' | 'E'))
                && !self.src[start..self.pos].starts_with("0x");
            if c.is_alphanumeric() || c == '_' || fraction || exponent_sign {
                self.bump();
            } else {
                break;
            }
        }
        self.src[start..self.pos].to_string()
    }

    fn literal_suffix(&mut self) {
        while self.peek().is_some_and(|c| c == '_' || c.is_alphanumeric()) {
            self.bump();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::render_plain;

    #[test]
    fn lexes_lifetimes_literals_and_groups() {
        let toks = lex(
            "fn f<'a>(x: &'a [u8], c: char) { 'x'; \"s\\\"\"; 2.5f32; 1e-3; b'a'; r#\"q\"#; x.0 }",
        );
        assert_eq!(
            render_plain(&toks),
            "fn f < 'a > ( x : & 'a [ u8 ] , c : char ) { 'x' ; \"s\\\"\" ; 2.5f32 ; 1e-3 ; b'a' ; r#\"q\"# ; x . 0 }"
        );
    }

    #[test]
    fn marks_joint_punctuation() {
        let toks = lex("a::b -> c");
        assert!(toks[1].is_joint() && !toks[2].is_joint());
        assert!(toks[4].is_joint() && !toks[5].is_joint());
    }

    #[test]
    fn spans_are_byte_offsets() {
        let toks = lex("ab  cd");
        assert_eq!(toks[1].span(), TestSpan(4));
    }
}
