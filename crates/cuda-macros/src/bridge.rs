//! Conversions between `proc_macro` token streams and the crate's token model,
//! and the `compile_error!` output for errors.

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

use crate::tokens::{Delim, Error, SourceSpan, Tok};

impl SourceSpan for Span {
    fn call_site() -> Self {
        Span::call_site()
    }

    fn parse(src: &str) -> Vec<Tok<Self>> {
        let stream: TokenStream = src
            .parse()
            .unwrap_or_else(|e| panic!("cuda-macros template {src:?}: {e}"));
        from_stream(stream)
    }
}

/// The model of a token stream; spans are kept.
pub fn from_stream(stream: TokenStream) -> Vec<Tok<Span>> {
    stream.into_iter().map(from_tree).collect()
}

fn from_tree(tree: TokenTree) -> Tok<Span> {
    match tree {
        TokenTree::Ident(ident) => Tok::Ident {
            name: ident.to_string(),
            span: ident.span(),
        },
        TokenTree::Punct(punct) => Tok::Punct {
            ch: punct.as_char(),
            joint: punct.spacing() == Spacing::Joint,
            span: punct.span(),
        },
        TokenTree::Literal(lit) => Tok::Lit {
            text: lit.to_string(),
            span: lit.span(),
        },
        TokenTree::Group(group) => Tok::Group {
            delim: match group.delimiter() {
                Delimiter::Parenthesis => Delim::Paren,
                Delimiter::Brace => Delim::Brace,
                Delimiter::Bracket => Delim::Bracket,
                Delimiter::None => Delim::None,
            },
            inner: from_stream(group.stream()),
            span: group.span(),
        },
    }
}

/// The token stream of a model; spans are kept.
pub fn to_stream(tokens: Vec<Tok<Span>>) -> TokenStream {
    tokens.into_iter().map(to_tree).collect()
}

fn to_tree(tok: Tok<Span>) -> TokenTree {
    match tok {
        Tok::Ident { name, span } => match name.strip_prefix("r#") {
            Some(raw) => Ident::new_raw(raw, span).into(),
            None => Ident::new(&name, span).into(),
        },
        Tok::Punct { ch, joint, span } => {
            let mut punct = Punct::new(
                ch,
                if joint {
                    Spacing::Joint
                } else {
                    Spacing::Alone
                },
            );
            punct.set_span(span);
            punct.into()
        }
        Tok::Lit { text, span } => {
            let mut lit: Literal = text
                .parse()
                .unwrap_or_else(|e| panic!("literal {text:?}: {e}"));
            lit.set_span(span);
            lit.into()
        }
        Tok::Group { delim, inner, span } => {
            let delimiter = match delim {
                Delim::Paren => Delimiter::Parenthesis,
                Delim::Brace => Delimiter::Brace,
                Delim::Bracket => Delimiter::Bracket,
                Delim::None => Delimiter::None,
            };
            let mut group = Group::new(delimiter, to_stream(inner));
            group.set_span(span);
            group.into()
        }
    }
}

/// Where the errors are emitted, which decides how they are terminated.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// Among items: `compile_error!(..);` each.
    Item,
    /// As an expression: `{ compile_error!(..); compile_error!(..) }`.
    Expr,
}

/// `::core::compile_error!("..")` for each error. The path carries the error's
/// start span and the parenthesised message its end span, so rustc highlights
/// the whole range.
pub fn compile_errors(errors: &[Error<Span>], position: Position) -> TokenStream {
    let mut out = TokenStream::new();
    for (i, error) in errors.iter().enumerate() {
        out.extend(compile_error(error));
        if position == Position::Item || i + 1 < errors.len() {
            out.extend([tree(Punct::new(';', Spacing::Alone), error.end)]);
        }
    }
    match position {
        Position::Item => out,
        Position::Expr => TokenStream::from(TokenTree::Group(Group::new(Delimiter::Brace, out))),
    }
}

fn compile_error(error: &Error<Span>) -> TokenStream {
    let start = error.start;
    let message = TokenStream::from(tree(Literal::string(&error.message), error.end));
    [
        tree(Punct::new(':', Spacing::Joint), start),
        tree(Punct::new(':', Spacing::Alone), start),
        tree(Ident::new("core", start), start),
        tree(Punct::new(':', Spacing::Joint), start),
        tree(Punct::new(':', Spacing::Alone), start),
        tree(Ident::new("compile_error", start), start),
        tree(Punct::new('!', Spacing::Alone), start),
        tree(Group::new(Delimiter::Parenthesis, message), error.end),
    ]
    .into_iter()
    .collect()
}

/// A token tree with its span set.
fn tree(token: impl Into<TokenTree>, span: Span) -> TokenTree {
    let mut tree = token.into();
    tree.set_span(span);
    tree
}

/// The block `item` is written in, read from its source file (see
/// [`crate::position`]); [`Enclosing::ItemScope`](crate::position::Enclosing)
/// when the file cannot be read.
pub fn enclosing_block(item: &TokenStream) -> crate::position::Enclosing {
    let unknown = crate::position::Enclosing::ItemScope;
    let Some(first) = item.clone().into_iter().next() else { return unknown };
    let span = first.span();
    let Some(path) = span.local_file() else { return unknown };
    match std::fs::read_to_string(path) {
        Ok(src) => crate::position::enclosing_block(&src, span.line(), span.column()),
        Err(_) => unknown,
    }
}
