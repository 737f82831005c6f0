//! The device linker's tables, read by the crates' build scripts.
//!
//! Each fact that both the device linker (C++) and the Rust crates spell has
//! one home: a `.def` file in `compiler/include/oxide/` (the intrinsic stubs,
//! the atomic encodings, the launch-condition tokens, the reserved names). The
//! C++ side includes the file as an X-macro; a crate's build script reads the
//! same rows through this crate and generates its Rust side into `OUT_DIR`,
//! so the two sides cannot drift apart.
//!
//! A table is a sequence of rows `OXIDE_KIND(field, field, …)`, one per line.
//! A field is an identifier, an integer, a `"string"` or a parenthesised group;
//! comments, blank lines and preprocessor lines are skipped.
//!
//! ```
//! use oxide_tables::Table;
//!
//! let text = "// The prefix of every stub.\nOXIDE_RESERVED_NAME(StubPrefix, \"__oxide_stub_\", \"Intrinsic stubs.\")\n";
//! let table = Table::parse("Abi.def", text).unwrap();
//! let row = table.rows("OXIDE_RESERVED_NAME").next().unwrap();
//! assert_eq!(row.ident(0), "StubPrefix");
//! assert_eq!(row.string(1), "__oxide_stub_");
//! assert_eq!(oxide_tables::screaming_snake_case(row.ident(0)), "STUB_PREFIX");
//! assert!(oxide_tables::abi_rs(&table).contains(r#"pub const STUB_PREFIX: &str = "__oxide_stub_";"#));
//! ```
//!
//! A build script reads a table by its file name ([`Table::read_oxide`]),
//! which also tells cargo to rerun the script when the table changes. Inside
//! the oxide source tree that is the file in `compiler/include/oxide/` of
//! the tree the building package is in; a packaged oxide-tables (from a
//! registry) reads its generated copy in `tables/` instead
//! ([`oxide_include_dir`]), which a test keeps identical.

use std::fmt;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One row of a table: `OXIDE_KIND(field, …)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The macro the row invokes (`OXIDE_STUB`).
    pub kind: String,
    /// The fields as written, trimmed (strings keep their quotes).
    pub fields: Vec<String>,
    /// Where the row is, `Stubs.def:42`, for messages.
    pub location: String,
}

impl Row {
    /// Field `i` as written.
    pub fn raw(&self, i: usize) -> &str {
        self.fields.get(i).map(String::as_str).unwrap_or_else(|| {
            panic!("{}: {} has {} fields, field {} is missing", self.location, self.kind, self.fields.len(), i + 1)
        })
    }

    /// Field `i`, which must be a string literal, without its quotes. The
    /// tables use no escapes, so the text is taken as it stands.
    pub fn string(&self, i: usize) -> &str {
        let raw = self.raw(i);
        raw.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or_else(|| {
            panic!("{}: field {} of {} must be a \"string\", found `{raw}`", self.location, i + 1, self.kind)
        })
    }

    /// Field `i`, which must be an identifier (or a bare word such as `90a`).
    pub fn ident(&self, i: usize) -> &str {
        let raw = self.raw(i);
        if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            panic!("{}: field {} of {} must be a name, found `{raw}`", self.location, i + 1, self.kind);
        }
        raw
    }

    /// Field `i`, which must be an unsigned integer (decimal, or hex with `0x`;
    /// C's `ULL` suffix is allowed).
    pub fn integer(&self, i: usize) -> u64 {
        let raw = self.raw(i);
        let digits = raw.trim_end_matches(['U', 'L', 'u', 'l']);
        let parsed = match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => digits.parse(),
        };
        parsed.unwrap_or_else(|_| {
            panic!("{}: field {} of {} must be an unsigned integer, found `{raw}`", self.location, i + 1, self.kind)
        })
    }
}

/// A table that does not parse: where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableError {
    /// `Stubs.def:42`.
    pub location: String,
    /// What is wrong with the line.
    pub message: String,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (each row is one line `OXIDE_KIND(field, …)`)", self.location, self.message)
    }
}

impl std::error::Error for TableError {}

/// The rows of one `.def` file, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    rows: Vec<Row>,
}

impl Table {
    /// Parses the text of a table; `name` is used in messages.
    pub fn parse(name: &str, text: &str) -> Result<Table, TableError> {
        let mut rows = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let location = format!("{name}:{}", index + 1);
            let line = line.trim();
            if !line.starts_with("OXIDE_") {
                continue;
            }
            let error = |message: &str| TableError { location: location.clone(), message: message.to_string() };
            let open = line.find('(').ok_or_else(|| error("no `(` after the row's kind"))?;
            let kind = &line[..open];
            if !kind.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') {
                return Err(error("the row's kind must be an upper-case name"));
            }
            let inner = line[open + 1..]
                .strip_suffix(')')
                .ok_or_else(|| error("the row must end with `)` on the same line"))?;
            let fields = split_fields(inner).map_err(|m| error(&m))?;
            rows.push(Row { kind: kind.to_string(), fields, location });
        }
        Ok(Table { rows })
    }

    /// Reads a table from a file. For build scripts: tells cargo to rerun the
    /// script when the file changes, and panics with the reason when the file
    /// cannot be read or parsed (which fails the build with that message).
    pub fn read(path: &Path) -> Table {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read the table {}: {e}", path.display()));
        let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        Table::parse(&name, &text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`read`](Self::read) of the table `<name>` in [`oxide_include_dir`]:
    /// `compiler/include/oxide/<name>` in the source tree, this crate's
    /// packaged copy elsewhere.
    pub fn read_oxide(name: &str) -> Table {
        Table::read(&oxide_include_dir().join(name))
    }

    /// The rows of one kind, in order.
    pub fn rows<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows.iter().filter(move |r| r.kind == kind)
    }

    /// Every row, in order.
    pub fn all_rows(&self) -> &[Row] {
        &self.rows
    }
}

/// The directory of the tables: `compiler/include/oxide/`, their one source,
/// when the package whose build script asks is inside an oxide source tree;
/// else (packaged crates, from a registry) the copy in this crate's
/// `tables/`, which `scripts/sync-tables.sh` refreshes and the test
/// `packaged_tables_match_source` keeps identical to the source.
///
/// The source tree is found from the asking package's directory (cargo's
/// `CARGO_MANIFEST_DIR` when the build script runs), not from where this
/// crate was compiled: cargo shares a path dependency's compiled artifacts
/// between checkouts that build into one target directory (its hashes take
/// the path relative to the workspace), so a directory fixed when this
/// crate was compiled could name another checkout's tables, or one since
/// deleted.
pub fn oxide_include_dir() -> PathBuf {
    let asking = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    source_tables_above(asking.as_deref()).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tables"))
}

/// The source tables of the oxide tree that holds `dir`: the first ancestor
/// of `dir` with `compiler/include/oxide/Abi.def`; None outside a tree.
fn source_tables_above(dir: Option<&Path>) -> Option<PathBuf> {
    dir?.ancestors().map(|a| a.join("compiler/include/oxide")).find(|d| d.join("Abi.def").is_file())
}

#[cfg(test)]
mod packaged_copy {
    use std::path::Path;

    /// The `.def` file names of a directory, sorted.
    fn tables(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".def"))
            .collect();
        names.sort();
        names
    }

    /// `tables/` (what the package carries) holds exactly the source tables,
    /// byte for byte. Outside the source tree (a packaged crate) there is
    /// nothing to compare with.
    #[test]
    fn packaged_tables_match_source() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let source = here.join("../../compiler/include/oxide");
        if !source.is_dir() {
            return;
        }
        let copy = here.join("tables");
        let stale = "crates/oxide-tables/tables is stale: run `bash scripts/sync-tables.sh`";
        assert_eq!(tables(&source), tables(&copy), "{stale}");
        for name in tables(&source) {
            let a = std::fs::read(source.join(&name)).unwrap();
            let b = std::fs::read(copy.join(&name)).unwrap();
            assert!(a == b, "{name} differs from compiler/include/oxide/{name}; {stale}");
        }
        let found = super::oxide_include_dir().canonicalize().unwrap();
        assert_eq!(found, source.canonicalize().unwrap(), "inside the source tree the source tables are read");
    }

    /// Regression: the tables were looked for where oxide-tables was
    /// compiled, so a build in one checkout read another checkout's tables
    /// when the two shared a target directory (and failed once that
    /// checkout was deleted). They are found from the asking package's
    /// directory: that of its own tree, or none outside a tree.
    #[test]
    fn tables_are_found_from_the_asking_package() {
        let root = std::env::temp_dir().join(format!("oxide-tables-lookup-{}", std::process::id()));
        let tree = root.join("checkout");
        let tables = tree.join("compiler/include/oxide");
        std::fs::create_dir_all(&tables).unwrap();
        std::fs::create_dir_all(tree.join("crates/cuda-device")).unwrap();
        std::fs::create_dir_all(root.join("elsewhere/cuda-device")).unwrap();
        std::fs::write(tables.join("Abi.def"), "").unwrap();
        assert_eq!(super::source_tables_above(Some(&tree.join("crates/cuda-device"))), Some(tables.clone()));
        assert_eq!(super::source_tables_above(Some(&tree)), Some(tables));
        assert_eq!(super::source_tables_above(Some(&root.join("elsewhere/cuda-device"))), None);
        assert_eq!(super::source_tables_above(None), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}

/// Splits `a, "b, c", (d, e)` at the commas outside strings and parentheses.
fn split_fields(inner: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut current = String::new();
    let mut in_string = false;
    let mut depth = 0usize;
    for ch in inner.chars() {
        match ch {
            '\\' if in_string => return Err("strings in a table take no escapes".to_string()),
            '"' => in_string = !in_string,
            '(' if !in_string => depth += 1,
            ')' if !in_string => depth = depth.checked_sub(1).ok_or("unbalanced `)`")?,
            ',' if !in_string && depth == 0 => {
                fields.push(std::mem::take(&mut current).trim().to_string());
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    if in_string {
        return Err("a string is not closed".to_string());
    }
    if depth != 0 {
        return Err("unbalanced `(`".to_string());
    }
    fields.push(current.trim().to_string());
    Ok(fields)
}

/// `KernelEntryPrefix` → `KERNEL_ENTRY_PREFIX`, `BlockDimX` → `BLOCK_DIM_X`.
/// A run of capitals stays one word (`PTXImage` → `PTX_IMAGE`), and so does
/// a single capital at the start with what follows (`UMax` → `UMAX`).
pub fn screaming_snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let starts_word = i > 0
            && c.is_ascii_uppercase()
            && (chars[i - 1].is_ascii_lowercase()
                || chars[i - 1].is_ascii_digit()
                || (chars[i - 1].is_ascii_uppercase() && chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase()) && i > 1));
        if starts_word && !out.ends_with('_') {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// The Rust side of `Abi.def`: one `pub const` per row, with the row's doc,
/// named in SCREAMING_SNAKE_CASE: `&str` for an `OXIDE_RESERVED_NAME(Name,
/// "spelling", "doc")`, the row's type for an `OXIDE_ABI_VALUE(Name, u64,
/// value, "doc")`. `include!` it into a module; the constants a crate does
/// not use are allowed to be dead.
pub fn abi_rs(table: &Table) -> String {
    let mut out = String::from("// Generated from compiler/include/oxide/Abi.def by oxide-tables.\n\n");
    for row in table.all_rows() {
        let name = screaming_snake_case(row.ident(0));
        match row.kind.as_str() {
            "OXIDE_RESERVED_NAME" => {
                let (spelling, doc) = (row.string(1), row.string(2));
                writeln!(out, "#[doc = {doc:?}]\n#[allow(dead_code)]\npub const {name}: &str = {spelling:?};").unwrap();
            }
            "OXIDE_ABI_VALUE" => {
                let ty = match row.ident(1) {
                    ty @ ("u32" | "u64") => ty,
                    other => panic!("{}: an ABI value is u32 or u64, not {other}", row.location),
                };
                let (value, doc) = (row.integer(2), row.string(3));
                writeln!(out, "#[doc = {doc:?}]\n#[allow(dead_code)]\npub const {name}: {ty} = {value:#x};").unwrap();
            }
            other => panic!("{}: Abi.def has no row kind {other}", row.location),
        }
    }
    out
}

/// The spelling of the reserved name `name` (`StubPrefix` → `__oxide_stub_`).
pub fn reserved_name<'a>(table: &'a Table, name: &str) -> &'a str {
    table
        .rows("OXIDE_RESERVED_NAME")
        .find(|r| r.ident(0) == name)
        .unwrap_or_else(|| panic!("Abi.def has no reserved name `{name}`"))
        .string(1)
}

/// A `macro_rules!` that expands to the spelling of one reserved name, for
/// the places Rust wants a literal (`#[link_section = name!()]`,
/// `#[export_name = …]`, `concat!`). `exported`: `#[macro_export]` (for use
/// in another macro's expansion, as `$crate::name!()`), hidden from the docs.
pub fn reserved_name_macro(table: &Table, name: &str, macro_name: &str, exported: bool) -> String {
    let spelling = reserved_name(table, name);
    let attrs = if exported { "#[doc(hidden)]\n#[macro_export]\n" } else { "#[allow(unused_macros)]\n" };
    format!(
        "/// The reserved name `{spelling}` as a literal (Abi.def's `{name}`).\n{attrs}macro_rules! {macro_name} {{\n    () => {{ {spelling:?} }};\n}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_commas_inside_strings_and_groups() {
        let t = Table::parse("T.def", "OXIDE_PASS(\"a-b\", APass, (Opts.Diags, Opts.Arch))\n").unwrap();
        let row = &t.all_rows()[0];
        assert_eq!(row.fields, ["\"a-b\"", "APass", "(Opts.Diags, Opts.Arch)"]);
        assert_eq!(row.string(0), "a-b");
        assert_eq!(row.location, "T.def:1");
    }

    #[test]
    fn skips_comments_and_preprocessor_lines() {
        let text = "// OXIDE_X(1)\n#ifndef OXIDE_X\n#define OXIDE_X(A)\n#endif\n\nOXIDE_X(2)\n";
        let t = Table::parse("T.def", text).unwrap();
        assert_eq!(t.all_rows().len(), 1);
        assert_eq!(t.all_rows()[0].integer(0), 2);
        assert_eq!(t.all_rows()[0].location, "T.def:6");
    }

    #[test]
    fn integers_in_decimal_and_hex() {
        let t = Table::parse("T.def", "OXIDE_V(Magic, 0x34304D494445584FULL, 17)\n").unwrap();
        let row = &t.all_rows()[0];
        assert_eq!(row.integer(1), 0x3430_4D49_4445_584F);
        assert_eq!(row.integer(2), 17);
    }

    #[test]
    fn malformed_rows_name_their_line() {
        let err = Table::parse("T.def", "\nOXIDE_X(\"open)\n").unwrap_err();
        assert_eq!(err.location, "T.def:2");
        assert!(err.to_string().contains("string is not closed"), "{err}");
        let err = Table::parse("T.def", "OXIDE_X(a,\n  b)\n").unwrap_err();
        assert!(err.to_string().contains("same line"), "{err}");
        let err = Table::parse("T.def", "OXIDE_X(a))\n").unwrap_err();
        assert!(err.to_string().contains("unbalanced"), "{err}");
        let err = Table::parse("T.def", "OXIDE_X(\"a\\\"b\")\n").unwrap_err();
        assert!(err.to_string().contains("no escapes"), "{err}");
    }

    #[test]
    #[should_panic(expected = "T.def:1: field 1 of OXIDE_X must be a \"string\"")]
    fn a_field_of_the_wrong_form_panics_with_its_location() {
        Table::parse("T.def", "OXIDE_X(name)\n").unwrap().all_rows()[0].string(0);
    }

    #[test]
    fn names_become_screaming_snake_case() {
        assert_eq!(screaming_snake_case("KernelEntryPrefix"), "KERNEL_ENTRY_PREFIX");
        assert_eq!(screaming_snake_case("BlockDimX"), "BLOCK_DIM_X");
        assert_eq!(screaming_snake_case("UMax"), "UMAX");
        assert_eq!(screaming_snake_case("FMaximum"), "FMAXIMUM");
        assert_eq!(screaming_snake_case("LshrExact"), "LSHR_EXACT");
        assert_eq!(screaming_snake_case("Sm90"), "SM90");
        assert_eq!(screaming_snake_case("PTXImage"), "PTX_IMAGE");
    }

    #[test]
    fn abi_rows_render_as_constants_and_macros() {
        let text = "OXIDE_RESERVED_NAME(SharedSection, \".oxide.shared\", \"Where shared! puts its statics.\")\n\
                    OXIDE_ABI_VALUE(ImageMagic, u64, 0x34304D494445584F, \"The first word.\")\n";
        let t = Table::parse("Abi.def", text).unwrap();
        let consts = abi_rs(&t);
        assert!(consts.contains("pub const SHARED_SECTION: &str = \".oxide.shared\";"), "{consts}");
        assert!(consts.contains("#[doc = \"Where shared! puts its statics.\"]"), "{consts}");
        assert!(consts.contains("pub const IMAGE_MAGIC: u64 = 0x34304d494445584f;"), "{consts}");
        assert_eq!(reserved_name(&t, "SharedSection"), ".oxide.shared");
        let mac = reserved_name_macro(&t, "SharedSection", "shared_section", false);
        assert!(mac.contains("macro_rules! shared_section {\n    () => { \".oxide.shared\" };\n}"), "{mac}");
    }
}
