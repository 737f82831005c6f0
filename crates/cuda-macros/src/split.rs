//! Splitting token sequences at their top-level commas.
//!
//! Groups (`(..)`, `[..]`, `{..}`) are single token trees, so their commas are
//! never top-level. The remaining cases are angle brackets, which are plain
//! punctuation (`HashMap<K, V>`, `foo::<a, b>(c)`), and closure parameter lists
//! (`|a, b| a + b`).

use crate::tokens::{is_pair, Tok};

/// Splits a list of types, generic parameters or function parameters at commas
/// outside angle brackets (`K: Into<(A, B)>, V` is two items; the `>` of `->`
/// does not close a bracket). One trailing comma is allowed; an empty input gives
/// no items. Empty items in the middle (`a,,b`) are returned as empty slices.
pub fn split_list<S: Copy>(tokens: &[Tok<S>]) -> Vec<&[Tok<S>]> {
    let mut items = Vec::new();
    let (mut depth, mut start, mut i) = (0usize, 0, 0);
    while i < tokens.len() {
        let tok = &tokens[i];
        if is_pair(tokens, i, '-', '>') {
            i += 2;
            continue;
        }
        if tok.is_punct('<') {
            depth += 1;
        } else if tok.is_punct('>') {
            depth = depth.saturating_sub(1);
        } else if tok.is_punct(',') && depth == 0 {
            items.push(&tokens[start..i]);
            start = i + 1;
        }
        i += 1;
    }
    if start < tokens.len() {
        items.push(&tokens[start..]);
    }
    items
}

/// Finds the `>` closing the `<` at `tokens[open]`.
pub fn angle_close<S: Copy>(tokens: &[Tok<S>], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < tokens.len() {
        if is_pair(tokens, i, '-', '>') {
            i += 2;
            continue;
        }
        if tokens[i].is_punct('<') {
            depth += 1;
        } else if tokens[i].is_punct('>') {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

/// Splits a list of expressions (or `key: expression` entries) at top-level
/// commas. Commas do not split:
/// - inside a closure's parameters: `|a, b| a + b`, `move |x| x * k`;
/// - inside turbofish and qualified-path brackets: `foo::<a, b>(c)`,
///   `<T as Tr<A, B>>::f()`;
/// - inside the type of a cast: `x as Foo<A, B>`.
///
/// A `<` elsewhere is a comparison (`a < b, c > d` is two expressions). One
/// trailing comma is allowed; empty items in the middle are returned as empty
/// slices.
pub fn split_exprs<S: Copy>(tokens: &[Tok<S>]) -> Vec<&[Tok<S>]> {
    let mut items = Vec::new();
    let mut start = 0;
    let mut state = ExprState::default();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i].is_punct(',') && state.is_top_level() {
            items.push(&tokens[start..i]);
            start = i + 1;
            state = ExprState::default();
            i += 1;
            continue;
        }
        i += state.step(tokens, i, start);
    }
    if start < tokens.len() {
        items.push(&tokens[start..]);
    }
    items
}

/// What [`split_exprs`] knows about the expression it is scanning.
#[derive(Default)]
struct ExprState {
    /// Depth of turbofish / qualified-path / cast-type angle brackets.
    angle_depth: usize,
    /// Between the `|`s of a closure's parameter list.
    in_closure_params: bool,
    /// Reading the type after `as`.
    in_cast_type: bool,
}

impl ExprState {
    fn is_top_level(&self) -> bool {
        self.angle_depth == 0 && !self.in_closure_params
    }

    /// Consumes the token(s) at `tokens[i]`; returns how many. `start` is where
    /// the current expression began.
    fn step<S: Copy>(&mut self, tokens: &[Tok<S>], i: usize, start: usize) -> usize {
        let tok = &tokens[i];
        if self.in_closure_params {
            self.in_closure_params = !tok.is_punct('|');
            return 1;
        }
        if is_pair(tokens, i, '-', '>') {
            return 2;
        }
        if self.angle_depth > 0 {
            if tok.is_punct('<') {
                self.angle_depth += 1;
            } else if tok.is_punct('>') {
                self.angle_depth -= 1;
            }
            return 1;
        }
        let operand_start = at_operand_start(&tokens[start..i]);
        if self.in_cast_type && !continues_cast_type(tok) {
            self.in_cast_type = false;
        }
        if tok.is_punct('<') && (self.in_cast_type || operand_start || after_path_sep(tokens, i)) {
            self.angle_depth = 1;
        } else if tok.is_punct('|') && operand_start {
            if is_pair(tokens, i, '|', '|') {
                return 2; // `|| body`: a closure without parameters
            }
            self.in_closure_params = true;
        } else if tok.is_ident("as") {
            self.in_cast_type = true;
        }
        1
    }
}

/// Whether the next token begins an operand, given the tokens of the expression
/// so far: at the start, after an operator, or after a keyword like `move`.
fn at_operand_start<S: Copy>(before: &[Tok<S>]) -> bool {
    const PREFIX_KEYWORDS: [&str; 6] = ["move", "return", "break", "in", "async", "static"];
    match before.last() {
        None => true,
        Some(Tok::Punct { ch, .. }) => *ch != '?',
        Some(Tok::Ident { name, .. }) => PREFIX_KEYWORDS.contains(&name.as_str()),
        Some(Tok::Lit { .. } | Tok::Group { .. }) => false,
    }
}

/// Whether `tokens[i]` directly follows `::` (a turbofish).
fn after_path_sep<S: Copy>(tokens: &[Tok<S>], i: usize) -> bool {
    i >= 2 && is_pair(tokens, i - 2, ':', ':')
}

/// Tokens that may continue the type after `as` (`*const a::B`, `u32`).
fn continues_cast_type<S: Copy>(tok: &Tok<S>) -> bool {
    match tok {
        Tok::Ident { .. } => true,
        Tok::Punct { ch, .. } => matches!(ch, ':' | '*' | '<'),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::{lex, TestSpan};
    use crate::tokens::render_plain;

    /// Checks that `split` cuts `src` into exactly `expected` (compared as tokens).
    type Splitter = fn(&[Tok<TestSpan>]) -> Vec<&[Tok<TestSpan>]>;

    fn check(split: Splitter, src: &str, expected: &[&str]) {
        let toks = lex(src);
        let got: Vec<String> = split(&toks).into_iter().map(render_plain).collect();
        let want: Vec<String> = expected.iter().map(|e| render_plain(&lex(e))).collect();
        assert_eq!(got, want, "splitting {src:?}");
    }

    fn list(src: &str, expected: &[&str]) {
        check(split_list, src, expected)
    }

    fn exprs(src: &str, expected: &[&str]) {
        check(split_exprs, src, expected)
    }

    #[test]
    fn list_respects_angle_brackets_and_arrows() {
        list(
            "T: Mul<Output = T>, F: Fn(T) -> T + Copy, m: HashMap<K, V>,",
            &[
                "T: Mul<Output = T>",
                "F: Fn(T) -> T + Copy",
                "m: HashMap<K, V>",
            ],
        );
        list("f: fn(u8) -> u8, g: G", &["f: fn(u8) -> u8", "g: G"]);
        list("", &[]);
        list("a,,b", &["a", "", "b"]);
    }

    #[test]
    fn angle_close_skips_arrows_and_nesting() {
        let toks = lex("<F: Fn(A) -> B, T: X<Y>> (x)");
        assert_eq!(angle_close(&toks, 0), Some(toks.len() - 2));
        assert_eq!(angle_close(&lex("<a"), 0), None);
    }

    #[test]
    fn exprs_split_at_top_level_commas_only() {
        exprs(
            "f(a, b), [1, 2], S { x, y }",
            &["f(a, b)", "[1, 2]", "S { x, y }"],
        );
        exprs("a < b, c > d", &["a < b", "c > d"]);
        exprs("a, b,", &["a", "b"]);
        exprs("a,,b", &["a", "", "b"]);
    }

    #[test]
    fn exprs_keep_closures_whole() {
        exprs("move |x| x * factor, y", &["move |x| x * factor", "y"]);
        exprs("|a, b| a + b, || 1, c", &["|a, b| a + b", "|| 1", "c"]);
        exprs("|x: Pair<A, B>| x.0, z", &["|x: Pair<A, B>| x.0", "z"]);
        exprs(
            "f(|a, b| a), a | b, a || b",
            &["f(|a, b| a)", "a | b", "a || b"],
        );
        exprs("x? | y, z", &["x? | y", "z"]);
    }

    #[test]
    fn exprs_keep_turbofish_qualified_paths_and_casts_whole() {
        exprs("foo::<a, b>(c), d", &["foo::<a, b>(c)", "d"]);
        exprs("<T as Tr<A, B>>::f(), d", &["<T as Tr<A, B>>::f()", "d"]);
        exprs(
            "x as Foo<A, B>, y as u32, z",
            &["x as Foo<A, B>", "y as u32", "z"],
        );
        exprs(
            "key: Vec::<(u8, u8)>::new(), k2: v",
            &["key: Vec::<(u8, u8)>::new()", "k2: v"],
        );
        exprs("f::<fn() -> u8, X>(), y", &["f::<fn() -> u8, X>()", "y"]);
    }
}
