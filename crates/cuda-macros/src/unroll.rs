//! Loop unrolling hints: `unroll!(N, LOOP)` / `unroll!(full, LOOP)`, and
//! `#[unroll]` / `#[unroll(N)]` on a loop inside a `#[kernel]` or
//! `#[device]` function (stable Rust has no attribute macros on
//! expressions, but the function's own attribute macro sees the loop's
//! attribute first and removes it).
//!
//! Either way the loop's body starts with a call of the stub `unroll`
//! (`::cuda_device::__private::unroll(COUNT)`, 0 for full), a marker the
//! device linker turns into `llvm.loop.unroll.*` metadata on the loop that
//! holds it (compiler/lib/Legalize/LowerUnrollHints.cpp); on the host it
//! does nothing.

use crate::tokens::{render, unwrap_invisible, Delim, Error, SourceSpan, Tok};

const USAGE: &str = "write `unroll!(4, for i in 0..n { … })` (a count) or `unroll!(full, for … { … })`";

/// `full` → 0; a count N ≥ 1 → N (1: do not unroll).
fn count<S: SourceSpan>(tokens: &[Tok<S>], what: &str) -> Result<u32, Error<S>> {
    match unwrap_invisible(tokens) {
        [t] if t.is_ident("full") => Ok(0),
        [Tok::Lit { text, span }] => {
            let digits: String = text.chars().take_while(|c| c.is_ascii_digit() || *c == '_').filter(|c| *c != '_').collect();
            let suffix = &text[text.find(|c: char| !c.is_ascii_digit() && c != '_').unwrap_or(text.len())..];
            match (digits.parse::<u32>(), suffix) {
                (Ok(n), "" | "u32" | "usize") if n >= 1 => Ok(n),
                _ => Err(Error::at(*span, format!("{what}: the count must be an integer literal of at least 1 (1: do not unroll), or `full`; found `{text}`"))),
            }
        }
        other => Err(Error::spanning(other, format!("{what}: the count must be an integer literal or `full`; found `{}`", render(other)))),
    }
}

/// Where the loop's body is: the index of its block, after an optional
/// label and the `for`/`while`/`loop` keyword.
fn loop_body<S: Copy>(tokens: &[Tok<S>]) -> Option<usize> {
    let mut i = 0;
    if tokens.first()?.is_punct('\'') {
        // `'label:`
        if !tokens.get(2)?.is_punct(':') {
            return None;
        }
        i = 3;
    }
    let kw = tokens.get(i)?;
    if !(kw.is_ident("for") || kw.is_ident("while") || kw.is_ident("loop")) {
        return None;
    }
    (i + 1..tokens.len()).find(|&j| tokens[j].group_with(Delim::Brace).is_some())
}

/// The marker statement, spanned at `span` (the user's hint).
fn marker<S: SourceSpan>(n: u32, span: S) -> Vec<Tok<S>> {
    let mut toks = S::parse(&format!("::cuda_device::__private::unroll({n}u32);"));
    respan(&mut toks, span);
    toks
}

fn respan<S: Copy>(tokens: &mut [Tok<S>], to: S) {
    for t in tokens {
        match t {
            Tok::Ident { span, .. } | Tok::Punct { span, .. } | Tok::Lit { span, .. } => *span = to,
            Tok::Group { inner, span, .. } => {
                *span = to;
                respan(inner, to);
            }
        }
    }
}

/// The body block at `tokens[body]` with the marker as its first statement.
fn mark_body<S: SourceSpan>(tokens: &mut [Tok<S>], body: usize, n: u32, span: S) {
    if let Tok::Group { inner, .. } = &mut tokens[body] {
        let mut marked = marker(n, span);
        marked.append(inner);
        *inner = marked;
    }
}

/// `unroll!(COUNT, LOOP)`.
pub fn expand<S: SourceSpan>(input: &[Tok<S>]) -> Result<Vec<Tok<S>>, Vec<Error<S>>> {
    let comma = input.iter().position(|t| t.is_punct(','));
    let Some(comma) = comma else {
        return Err(vec![Error::spanning(input, format!("unroll! needs a count and a loop: {USAGE}"))]);
    };
    let n = count(&input[..comma], "unroll!").map_err(|e| vec![e])?;
    let mut tokens: Vec<Tok<S>> = unwrap_invisible(&input[comma + 1..]).to_vec();
    while tokens.last().is_some_and(|t| t.is_punct(',')) {
        tokens.pop();
    }
    let Some(body) = loop_body(&tokens) else {
        return Err(vec![Error::spanning(&input[comma + 1..], format!("unroll!'s second argument must be a `for`, `while` or `loop` loop: {USAGE}"))]);
    };
    if body + 1 != tokens.len() {
        return Err(vec![Error::spanning(&tokens[body + 1..], "unroll! takes one loop; these tokens follow it")]);
    }
    let span = input[0].span();
    let (rest, errors) = rewrite_attributes(tokens);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut tokens = rest;
    mark_body(&mut tokens, body, n, span);
    Ok(tokens)
}

/// Whether `tokens` hold an `#[unroll…]` attribute anywhere.
pub fn mentions_unroll<S: Copy>(tokens: &[Tok<S>]) -> bool {
    tokens.iter().enumerate().any(|(i, t)| match t {
        Tok::Group { delim: Delim::Bracket, inner, .. } => {
            i > 0 && tokens[i - 1].is_punct('#') && inner.first().is_some_and(|f| f.is_ident("unroll"))
        }
        Tok::Group { inner, .. } => mentions_unroll(inner),
        _ => false,
    })
}

/// Every `#[unroll]` / `#[unroll(N)]` on a loop in `tokens` (at any depth)
/// removed, its loop's body starting with the marker. An `#[unroll]` on
/// anything but a loop is an error.
pub fn rewrite_attributes<S: SourceSpan>(tokens: Vec<Tok<S>>) -> (Vec<Tok<S>>, Vec<Error<S>>) {
    let mut errors = Vec::new();
    let mut out: Vec<Tok<S>> = Vec::with_capacity(tokens.len());
    let mut pending: Option<(u32, S)> = None;
    let mut iter = tokens.into_iter().peekable();
    while let Some(tok) = iter.next() {
        // `#` `[unroll …]`
        if tok.is_punct('#') {
            if let Some(Tok::Group { delim: Delim::Bracket, inner, span }) = iter.peek() {
                if inner.first().is_some_and(|f| f.is_ident("unroll")) {
                    let (inner, span) = (inner.clone(), *span);
                    iter.next();
                    let n = match &inner[1..] {
                        [] => Ok(0),
                        [Tok::Group { delim: Delim::Paren, inner: args, .. }] => count(args, "#[unroll(…)]"),
                        other => Err(Error::spanning(other, "write `#[unroll]` (full) or `#[unroll(4)]` (a count)")),
                    };
                    match n {
                        Ok(n) => pending = Some((n, span)),
                        Err(e) => errors.push(e),
                    }
                    // The loop follows: collect it, then mark it.
                    let mut rest: Vec<Tok<S>> = Vec::new();
                    while let Some(t) = iter.peek() {
                        let is_body = t.group_with(Delim::Brace).is_some() && loop_body(&rest).is_none() && {
                            let mut probe = rest.clone();
                            probe.push(t.clone());
                            loop_body(&probe).is_some()
                        };
                        rest.push(iter.next().unwrap());
                        if is_body {
                            break;
                        }
                    }
                    let (mut rest, inner_errors) = rewrite_attributes(rest);
                    errors.extend(inner_errors);
                    match (loop_body(&rest), pending.take()) {
                        (Some(body), Some((n, span))) => mark_body(&mut rest, body, n, span),
                        (None, Some((_, span))) => errors.push(Error::at(
                            span,
                            "#[unroll] goes on a `for`, `while` or `loop` loop (of a #[kernel] or #[device] function); elsewhere use unroll!(N, LOOP)",
                        )),
                        _ => {}
                    }
                    out.extend(rest);
                    continue;
                }
            }
        }
        match tok {
            Tok::Group { delim, inner, span } => {
                let (inner, inner_errors) = rewrite_attributes(inner);
                errors.extend(inner_errors);
                out.push(Tok::Group { delim, inner, span });
            }
            other => out.push(other),
        }
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex;
    use crate::tokens::render_plain;

    fn plain(src: &str) -> String {
        render_plain(&lex(src))
    }

    #[test]
    fn the_macro_marks_the_loop_body() {
        let out = expand(&lex("4, for i in 0..n { s += i; }")).unwrap();
        assert_eq!(render_plain(&out), plain("for i in 0..n { ::cuda_device::__private::unroll(4u32); s += i; }"));
        let out = expand(&lex("full, 'outer: while k < 8 { k += 1; }")).unwrap();
        assert_eq!(render_plain(&out), plain("'outer: while k < 8 { ::cuda_device::__private::unroll(0u32); k += 1; }"));
    }

    #[test]
    fn attributes_on_loops_become_markers_at_any_depth() {
        let (out, errors) = rewrite_attributes(lex("fn f() { let x = 1; #[unroll(2)] for i in v.iter().map(|x| { x }) { #[unroll] loop { break; } } }"));
        assert!(errors.is_empty());
        assert_eq!(
            render_plain(&out),
            plain("fn f() { let x = 1; for i in v.iter().map(|x| { x }) { ::cuda_device::__private::unroll(2u32); loop { ::cuda_device::__private::unroll(0u32); break; } } }")
        );
        assert!(mentions_unroll(&lex("fn f() { #[unroll] for i in 0..4 {} }")));
        assert!(!mentions_unroll(&lex("fn f() { #[inline] for i in 0..4 {} }")));
    }

    #[test]
    fn misuse_is_an_error_that_says_what_to_write() {
        let msg = |r: Result<Vec<Tok<crate::lexer::TestSpan>>, Vec<Error<crate::lexer::TestSpan>>>| r.err().unwrap()[0].message.clone();
        assert!(msg(expand(&lex("0, for i in 0..4 {}"))).contains("at least 1"));
        assert!(msg(expand(&lex("n, for i in 0..4 {}"))).contains("integer literal or `full`"));
        assert!(msg(expand(&lex("4, x + 1"))).contains("must be a `for`, `while` or `loop`"));
        let (_, errors) = rewrite_attributes(lex("fn f() { #[unroll] let x = 1; }"));
        assert!(errors[0].message.contains("goes on a `for`"));
    }
}
