//! Parsing the outline of a function item:
//! `ATTRS VIS QUALIFIERS fn NAME <GENERICS> (PARAMS) -> RET where CLAUSES { BODY }`.
//!
//! Only the outline is parsed; generics and parameters stay token sequences for
//! `kernel.rs` to take apart.

use crate::split::angle_close;
use crate::tokens::{is_pair, Delim, Error, SourceSpan, Tok};

/// The parts of a function item, as token sequences.
#[derive(Debug)]
pub struct FnItem<S> {
    /// Outer attributes, each `#` followed by its bracketed group.
    pub attrs: Vec<[Tok<S>; 2]>,
    /// `pub`, `pub(crate)`, … or empty.
    pub vis: Vec<Tok<S>>,
    /// The keywords before `fn`: `const`, `async`, `unsafe`, `extern "C"`, ….
    pub qualifiers: Vec<Tok<S>>,
    /// The function's name.
    pub name: Tok<S>,
    /// The generic parameter list including `<` and `>`, or empty.
    pub generics: Vec<Tok<S>>,
    /// The parenthesised parameter list.
    pub params: Tok<S>,
    /// `->` and the return type, or empty.
    pub ret: Vec<Tok<S>>,
    /// `where` and its clauses, or empty.
    pub where_clause: Vec<Tok<S>>,
    /// The braced body; `None` for a declaration ending in `;`.
    pub body: Option<Tok<S>>,
}

impl<S: Copy> FnItem<S> {
    /// The qualifier keyword `word` (`async`, `const`, …), if present.
    pub fn qualifier(&self, word: &str) -> Option<&Tok<S>> {
        self.qualifiers.iter().find(|t| t.is_ident(word))
    }

    /// The generic parameters between `<` and `>`.
    pub fn generic_params(&self) -> &[Tok<S>] {
        match self.generics.len() {
            0 => &[],
            n => &self.generics[1..n - 1],
        }
    }

    /// The return type after `->`.
    pub fn return_type(&self) -> &[Tok<S>] {
        self.ret.get(2..).unwrap_or(&[])
    }

    /// The `#[cfg(..)]` attributes, which must also apply to generated items.
    pub fn cfg_attrs(&self) -> impl Iterator<Item = &[Tok<S>; 2]> {
        self.attrs.iter().filter(|[_, group]| {
            group
                .group_with(Delim::Bracket)
                .and_then(|inner| inner.first())
                .is_some_and(|t| t.is_ident("cfg"))
        })
    }
}

/// Keywords that may precede `fn`.
const QUALIFIERS: [&str; 6] = ["const", "async", "unsafe", "safe", "extern", "default"];

/// Parses a function item; `usage` is the error message for anything else.
pub fn parse_fn<S: SourceSpan>(tokens: &[Tok<S>], usage: &str) -> Result<FnItem<S>, Error<S>> {
    let mut cursor = Cursor { tokens, pos: 0 };
    let attrs = cursor.attributes();
    let vis = cursor.visibility();
    let qualifiers = cursor.qualifiers();
    if !cursor.eat_ident("fn") {
        return Err(cursor.error_here(usage));
    }
    let name = cursor.expect(|t| matches!(t, Tok::Ident { .. }), usage)?;
    let generics = cursor.generics()?;
    let params = cursor.expect(|t| t.group_with(Delim::Paren).is_some(), usage)?;
    let Tail {
        ret,
        where_clause,
        body,
    } = split_tail(cursor.rest(), usage)?;
    Ok(FnItem {
        attrs,
        vis,
        qualifiers,
        name,
        generics,
        params,
        ret,
        where_clause,
        body,
    })
}

/// What follows a function's parameters (see [`FnItem`]).
struct Tail<S> {
    ret: Vec<Tok<S>>,
    where_clause: Vec<Tok<S>>,
    body: Option<Tok<S>>,
}

/// Splits what follows the parameters into return type, where clause and body.
fn split_tail<S: SourceSpan>(tail: &[Tok<S>], usage: &str) -> Result<Tail<S>, Error<S>> {
    let (signature, body) = match tail.split_last() {
        Some((last, rest)) if last.group_with(Delim::Brace).is_some() => (rest, Some(last.clone())),
        Some((last, rest)) if last.is_punct(';') => (rest, None),
        _ => return Err(Error::spanning(tail, usage)),
    };
    let where_at = signature
        .iter()
        .position(|t| t.is_ident("where"))
        .unwrap_or(signature.len());
    let (ret, where_clause) = signature.split_at(where_at);
    if !ret.is_empty() && !is_pair(ret, 0, '-', '>') {
        return Err(Error::spanning(ret, usage));
    }
    Ok(Tail {
        ret: ret.to_vec(),
        where_clause: where_clause.to_vec(),
        body,
    })
}

/// A position in a token sequence.
struct Cursor<'t, S> {
    tokens: &'t [Tok<S>],
    pos: usize,
}

impl<'t, S: SourceSpan> Cursor<'t, S> {
    fn peek(&self) -> Option<&'t Tok<S>> {
        self.tokens.get(self.pos)
    }

    fn rest(&self) -> &'t [Tok<S>] {
        &self.tokens[self.pos..]
    }

    fn eat_ident(&mut self, word: &str) -> bool {
        let found = self.peek().is_some_and(|t| t.is_ident(word));
        self.pos += usize::from(found);
        found
    }

    fn expect(
        &mut self,
        accept: impl Fn(&Tok<S>) -> bool,
        usage: &str,
    ) -> Result<Tok<S>, Error<S>> {
        match self.peek() {
            Some(tok) if accept(tok) => {
                self.pos += 1;
                Ok(tok.clone())
            }
            _ => Err(self.error_here(usage)),
        }
    }

    fn error_here(&self, message: &str) -> Error<S> {
        match self.peek() {
            Some(tok) => Error::at(tok.span(), message),
            None => Error::spanning(self.tokens, message),
        }
    }

    /// `#[..]` attributes (doc comments arrive as `#[doc = ".."]`).
    fn attributes(&mut self) -> Vec<[Tok<S>; 2]> {
        let mut attrs = Vec::new();
        while let [hash, group, ..] = self.rest() {
            if !hash.is_punct('#') || group.group_with(Delim::Bracket).is_none() {
                break;
            }
            attrs.push([hash.clone(), group.clone()]);
            self.pos += 2;
        }
        attrs
    }

    /// `pub` with an optional `(crate)`, `(super)`, `(in path)`.
    fn visibility(&mut self) -> Vec<Tok<S>> {
        let start = self.pos;
        if self.eat_ident("pub")
            && self
                .peek()
                .is_some_and(|t| t.group_with(Delim::Paren).is_some())
        {
            self.pos += 1;
        }
        self.tokens[start..self.pos].to_vec()
    }

    /// Keywords before `fn`, with the ABI string of `extern "C"`.
    fn qualifiers(&mut self) -> Vec<Tok<S>> {
        let start = self.pos;
        while let Some(tok) = self.peek() {
            let is_qualifier = QUALIFIERS.iter().any(|q| tok.is_ident(q));
            let is_abi = matches!(tok, Tok::Lit { .. }) && self.pos > start;
            if !is_qualifier && !is_abi {
                break;
            }
            self.pos += 1;
        }
        self.tokens[start..self.pos].to_vec()
    }

    /// `<..>` after the name, or nothing.
    fn generics(&mut self) -> Result<Vec<Tok<S>>, Error<S>> {
        if !self.peek().is_some_and(|t| t.is_punct('<')) {
            return Ok(Vec::new());
        }
        let close = angle_close(self.tokens, self.pos)
            .ok_or_else(|| self.error_here("unclosed `<` in the generic parameters"))?;
        let generics = self.tokens[self.pos..=close].to_vec();
        self.pos = close + 1;
        Ok(generics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::{lex, TestSpan};
    use crate::tokens::render;

    fn parse(src: &str) -> FnItem<TestSpan> {
        parse_fn(&lex(src), "usage").unwrap()
    }

    #[test]
    fn parses_a_plain_function() {
        let f = parse("pub fn scale(input: &[f32], factor: f32) { body() }");
        assert_eq!(render(&f.vis), "pub");
        assert_eq!(render(std::slice::from_ref(&f.name)), "scale");
        assert_eq!(
            render(std::slice::from_ref(&f.params)),
            "(input: &[f32], factor: f32)"
        );
        assert!(f.generics.is_empty() && f.ret.is_empty() && f.where_clause.is_empty());
        assert!(f.body.is_some());
    }

    #[test]
    fn parses_generics_return_type_and_where_clause() {
        let f = parse(
            "#[doc = \"d\"] #[cfg(test)] pub(crate) unsafe extern \"C\" fn map<'a, T: Fn(u8) -> u8, const N: usize>(x: T) -> () where T: Copy, { }",
        );
        assert_eq!(f.attrs.len(), 2);
        assert_eq!(f.cfg_attrs().count(), 1);
        assert_eq!(render(&f.vis), "pub(crate)");
        assert_eq!(render(&f.qualifiers), "unsafe extern \"C\"");
        assert_eq!(
            render(f.generic_params()),
            "'a, T: Fn(u8) -> u8, const N: usize"
        );
        assert_eq!(render(f.return_type()), "()");
        assert_eq!(render(&f.where_clause), "where T: Copy,");
    }

    #[test]
    fn recognises_qualifiers_and_declarations() {
        let f = parse("const async fn f();");
        assert!(f.qualifier("const").is_some() && f.qualifier("async").is_some());
        assert!(f.body.is_none());
    }

    #[test]
    fn rejects_other_items_at_their_first_token() {
        let src = "pub struct S;";
        let err = parse_fn(&lex(src), "usage").unwrap_err();
        assert_eq!(err.message, "usage");
        assert_eq!(err.start, TestSpan(4));
        assert!(parse_fn(&lex("fn f<T(x: T) {}"), "usage").is_err());
        assert!(parse_fn(&lex("fn f() -> u8"), "usage").is_err());
        assert!(parse_fn(&lex("fn f() u8 {}"), "usage").is_err());
    }
}
