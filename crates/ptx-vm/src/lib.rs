//! ptx-vm (work in progress)
pub mod ast;
pub mod lexer;
pub mod parser;

/// A PTX text that does not parse: where, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// What was wrong.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PTX line {}, column {}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for ParseError {}
