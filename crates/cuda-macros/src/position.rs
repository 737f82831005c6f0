//! Where an item sits in its source file: at module level (or in a function
//! body), or among the associated items of an `impl` or `trait` block.
//!
//! An attribute macro is handed its item alone, not the block around it, and
//! `#[kernel]` must know: its expansion adds a type and an `impl` named like
//! the kernel, which a module or a function body accepts and an `impl`
//! block does not. Without this check a kernel written as an associated
//! function gets rustc's parser errors about a `struct` the user never
//! wrote, then unresolved names of the generated entry. With it the user
//! gets one error saying why and what to do.
//!
//! The item's file is read through its span (`Span::local_file`, `line`,
//! `column`) and scanned from its start to the item, following braces,
//! comments and literals; the innermost open brace's header says what
//! block the item is in. Whatever cannot be read or scanned (a span from a
//! macro defined elsewhere, a file that moved) answers "not in an impl":
//! this check only turns rustc's errors into a clearer one, it never
//! refuses what would otherwise build.

/// What kind of block an item is directly in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enclosing {
    /// A module (the file itself, `mod m { .. }`), a function body, or
    /// anything else that accepts a `struct` item.
    ItemScope,
    /// The associated items of an `impl` block.
    Impl,
    /// The associated items of a `trait`.
    Trait,
}

/// The block the item at the 1-based `line` and `column` of `src` is in.
pub fn enclosing_block(src: &str, line: usize, column: usize) -> Enclosing {
    let Some(offset) = offset_of(src, line, column) else { return Enclosing::ItemScope };
    let mut scanner = Scanner { src: src.as_bytes(), pos: 0, stack: Vec::new(), header_start: 0 };
    if scanner.run_to(offset).is_none() {
        return Enclosing::ItemScope;
    }
    match scanner.stack.last() {
        Some(header) => classify(header),
        None => Enclosing::ItemScope,
    }
}

/// The byte offset of a 1-based line and column (counted in characters).
fn offset_of(src: &str, line: usize, column: usize) -> Option<usize> {
    let start = if line <= 1 {
        0
    } else {
        src.match_indices('\n').nth(line - 2)?.0 + 1
    };
    let text = &src[start..];
    let end = text.find('\n').unwrap_or(text.len());
    let within = text[..end].char_indices().nth(column.saturating_sub(1)).map_or(end, |(i, _)| i);
    Some(start + within)
}

/// Classifies a block by the words before its `{`: `impl<T> X for Y`,
/// `unsafe impl ..`, `pub trait ..`, `pub(crate) unsafe trait ..`.
fn classify(header: &str) -> Enclosing {
    let mut words = header
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .skip_while(|w| matches!(*w, "pub" | "crate" | "super" | "self" | "in" | "unsafe" | "default" | "auto"));
    match words.next() {
        Some("impl") => Enclosing::Impl,
        Some("trait") => Enclosing::Trait,
        _ => Enclosing::ItemScope,
    }
}

struct Scanner<'a> {
    src: &'a [u8],
    pos: usize,
    /// The header of every open brace, innermost last.
    stack: Vec<String>,
    /// Where the text before the next `{` began: after the last `;`, `{`
    /// or `}` at any depth, or after the attributes since.
    header_start: usize,
}

impl Scanner<'_> {
    /// Scans up to `end`; `None` where the text is not Rust the scanner
    /// follows (an unterminated literal or comment).
    fn run_to(&mut self, end: usize) -> Option<()> {
        while self.pos < end.min(self.src.len()) {
            let c = self.src[self.pos];
            match c {
                b'/' if self.peek(1) == Some(b'/') => self.skip_line_comment(),
                b'/' if self.peek(1) == Some(b'*') => self.skip_block_comment()?,
                b'"' => self.skip_string(1)?,
                b'r' | b'b' | b'c' if self.raw_or_prefixed_string() => {}
                b'\'' => self.skip_char_or_lifetime(),
                b'{' => {
                    self.stack.push(String::from_utf8_lossy(&self.src[self.header_start..self.pos]).into_owned());
                    self.pos += 1;
                    self.header_start = self.pos;
                }
                b'}' => {
                    self.stack.pop();
                    self.pos += 1;
                    self.header_start = self.pos;
                }
                b';' => {
                    self.pos += 1;
                    self.header_start = self.pos;
                }
                b'#' if self.peek(1) == Some(b'[') || (self.peek(1) == Some(b'!') && self.peek(2) == Some(b'[')) => {
                    self.skip_attribute()?;
                    self.header_start = self.pos;
                }
                _ => self.pos += 1,
            }
        }
        // Past the item: it began inside a literal or an attribute, which
        // a valid file does not have.
        (self.pos == end).then_some(())
    }

    fn peek(&self, ahead: usize) -> Option<u8> {
        self.src.get(self.pos + ahead).copied()
    }

    fn skip_line_comment(&mut self) {
        while self.pos < self.src.len() && self.src[self.pos] != b'\n' {
            self.pos += 1;
        }
    }

    /// Block comments nest in Rust.
    fn skip_block_comment(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match (self.peek(0)?, self.peek(1)) {
                (b'/', Some(b'*')) => {
                    depth += 1;
                    self.pos += 2;
                }
                (b'*', Some(b'/')) => {
                    depth -= 1;
                    self.pos += 2;
                    if depth == 0 {
                        return Some(());
                    }
                }
                _ => self.pos += 1,
            }
        }
    }

    /// A `"..."` string whose opening quote is `skip` bytes ahead.
    fn skip_string(&mut self, skip: usize) -> Option<()> {
        self.pos += skip;
        loop {
            match self.peek(0)? {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => self.pos += 1,
            }
        }
    }

    /// `r"..."`, `r#".."#`, `b".."`, `br#".."#`, `c".."`, `cr".."`, and
    /// `b'x'`; false (nothing consumed) when the letter starts an identifier.
    fn raw_or_prefixed_string(&mut self) -> bool {
        if self.pos > 0 && is_ident_byte(self.src[self.pos - 1]) {
            return false;
        }
        let mut at = self.pos;
        if matches!(self.src[at], b'b' | b'c') {
            at += 1;
            match self.src.get(at) {
                Some(b'"') => {
                    if self.skip_string(at - self.pos).is_none() {
                        self.pos = self.src.len();
                    }
                    return true;
                }
                Some(b'\'') if self.src[self.pos] == b'b' => {
                    self.pos = at;
                    self.skip_char_or_lifetime();
                    return true;
                }
                Some(b'r') => {}
                _ => return false,
            }
        }
        // At `r`: count the hashes, then a quote must follow.
        let mut hashes = 0;
        at += 1;
        while self.src.get(at) == Some(&b'#') {
            hashes += 1;
            at += 1;
        }
        if self.src.get(at) != Some(&b'"') {
            return false;
        }
        at += 1;
        let mut closing = vec![b'"'];
        closing.extend(std::iter::repeat_n(b'#', hashes));
        match self.src[at..].windows(closing.len()).position(|w| w == closing.as_slice()) {
            Some(found) => self.pos = at + found + closing.len(),
            None => self.pos = self.src.len(), // unterminated: the scan ends
        }
        true
    }

    /// `'x'`, `'\n'`, `'\u{..}'` or a lifetime `'a` (no closing quote).
    fn skip_char_or_lifetime(&mut self) {
        let rest = &self.src[self.pos + 1..];
        let close = if rest.first() == Some(&b'\\') {
            rest.iter().skip(1).position(|&b| b == b'\'').map(|p| p + 1)
        } else {
            // One character (up to 4 bytes of UTF-8), then the quote.
            let len = match rest.first() {
                Some(&b) if b >= 0xF0 => 4,
                Some(&b) if b >= 0xE0 => 3,
                Some(&b) if b >= 0xC0 => 2,
                _ => 1,
            };
            (rest.get(len) == Some(&b'\'')).then_some(len)
        };
        self.pos += match close {
            Some(p) => p + 2,
            None => 1, // a lifetime: its name is scanned as ordinary text
        };
    }

    /// `#[..]` or `#![..]`, brackets nested, literals inside skipped.
    fn skip_attribute(&mut self) -> Option<()> {
        while self.src[self.pos] != b'[' {
            self.pos += 1;
        }
        let mut depth = 0usize;
        loop {
            match self.peek(0)? {
                b'[' => depth += 1,
                b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos += 1;
                        return Some(());
                    }
                }
                b'"' => {
                    self.skip_string(1)?;
                    continue;
                }
                _ => {}
            }
            self.pos += 1;
        }
    }
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block around the marker `@@` (removed before scanning).
    fn around(src: &str) -> Enclosing {
        let at = src.find("@@").expect("a marker");
        let text = src.replacen("@@", "", 1);
        let line = text[..at].matches('\n').count() + 1;
        let column = text[..at].rsplit('\n').next().unwrap().chars().count() + 1;
        enclosing_block(&text, line, column)
    }

    #[test]
    fn module_level_and_function_bodies_take_items() {
        assert_eq!(around("use a::b;\n@@pub fn k() {}"), Enclosing::ItemScope);
        assert_eq!(around("mod m {\n    @@fn k() {}\n}"), Enclosing::ItemScope);
        assert_eq!(around("fn main() {\n    @@fn k() {}\n}"), Enclosing::ItemScope);
        assert_eq!(around("impl X {}\n@@fn k() {}"), Enclosing::ItemScope);
    }

    #[test]
    fn impl_and_trait_blocks_are_found_with_their_qualifiers() {
        assert_eq!(around("impl Scaler {\n    @@pub fn k() {}\n}"), Enclosing::Impl);
        assert_eq!(around("impl<T: Copy> Tr for S<T> where T: Send {\n  fn a() {}\n  @@fn k() {}\n}"), Enclosing::Impl);
        assert_eq!(around("unsafe impl Send for X {\n@@fn k() {}}"), Enclosing::Impl);
        assert_eq!(around("pub(crate) unsafe trait T {\n    @@fn k();\n}"), Enclosing::Trait);
        assert_eq!(around("#[cfg(test)]\nimpl X {\n    @@fn k() {}\n}"), Enclosing::Impl);
    }

    #[test]
    fn braces_in_comments_literals_and_attributes_do_not_count() {
        let src = "// impl X {\n/* { /* nested { */ */\nconst S: &str = \"impl Y {\";\nconst R: &str = r#\"impl Z { \"# ;\n\
                   const C: char = '{';\nconst B: u8 = b'{';\n#[doc = \"impl W {\"]\nfn f<'a>(x: &'a str) -> &'a str { x }\n@@fn k() {}";
        assert_eq!(around(src), Enclosing::ItemScope);
        let in_impl = "impl X {\n    const S: &str = \"}\";\n    // }\n    const C: char = '}';\n    @@fn k() {}\n}";
        assert_eq!(around(in_impl), Enclosing::Impl);
    }

    #[test]
    fn what_cannot_be_read_is_not_an_impl() {
        assert_eq!(enclosing_block("impl X {\n fn k() {}\n}", 99, 1), Enclosing::ItemScope);
        assert_eq!(around("impl X {\n const S: &str = \"unterminated\n@@fn k() {}"), Enclosing::ItemScope);
    }
}
