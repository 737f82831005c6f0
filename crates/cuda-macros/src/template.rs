//! A tiny run-time `quote!`: Rust source with `#name` placeholders, parsed and
//! then filled with token sequences (which keep the user's spans).
//!
//! ```text
//! fill("#name::<#ty>(#args)", &[("name", ..), ("ty", ..), ("args", ..)])
//! ```
//!
//! `#` followed by an identifier is a placeholder; `#` followed by anything else
//! (`#[doc(hidden)]`) is left alone.

use crate::tokens::{detach_end, SourceSpan, Tok};

/// Named token sequences to substitute into a template.
pub type Bindings<'b, S> = [(&'b str, Vec<Tok<S>>)];

/// Parses `template` and replaces every `#name` by the tokens bound to `name`.
///
/// Panics if the template names a placeholder that is not bound: that is a bug
/// in this crate, not in the user's code.
pub fn fill<S: SourceSpan>(template: &str, bindings: &Bindings<'_, S>) -> Vec<Tok<S>> {
    substitute(S::parse(template), bindings)
}

fn substitute<S: SourceSpan>(tokens: Vec<Tok<S>>, bindings: &Bindings<'_, S>) -> Vec<Tok<S>> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut iter = tokens.into_iter().peekable();
    while let Some(tok) = iter.next() {
        match tok {
            Tok::Punct { ch: '#', .. } if iter.peek().and_then(Tok::ident_name).is_some() => {
                let placeholder = iter.next().expect("peeked");
                let name = placeholder.ident_name().expect("peeked an identifier");
                let (_, value) = bindings
                    .iter()
                    .find(|(bound, _)| *bound == name)
                    .unwrap_or_else(|| panic!("template placeholder `#{name}` is not bound"));
                out.extend(detach_end(value.clone()));
            }
            Tok::Group { delim, inner, span } => out.push(Tok::Group {
                delim,
                inner: substitute(inner, bindings),
                span,
            }),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::{lex, TestSpan};
    use crate::tokens::render_plain;

    #[test]
    fn fills_placeholders_inside_groups_and_keeps_attributes() {
        let out: Vec<Tok<TestSpan>> = fill(
            "#[doc(hidden)] fn #name() { #body }",
            &[("name", lex("k")), ("body", lex("a + b"))],
        );
        assert_eq!(render_plain(&out), "# [ doc ( hidden ) ] fn k () { a + b }");
    }

    #[test]
    fn keeps_spans_of_substituted_tokens() {
        let out: Vec<Tok<TestSpan>> = fill("x #v", &[("v", lex("  y"))]);
        assert_eq!(out[0].span(), TestSpan::CALL_SITE);
        assert_eq!(out[1].span(), TestSpan(2));
    }

    #[test]
    fn detaches_trailing_punctuation_of_substituted_tokens() {
        let mut ty = lex("Vec<u8>,");
        ty.pop();
        assert!(ty[3].is_joint());
        let out: Vec<Tok<TestSpan>> = fill("#t>", &[("t", ty)]);
        assert!(!out[3].is_joint());
    }

    #[test]
    #[should_panic(expected = "`#missing` is not bound")]
    fn unbound_placeholder_is_a_bug() {
        let _: Vec<Tok<TestSpan>> = fill("#missing", &[]);
    }
}
