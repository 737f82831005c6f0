//! Generates what cuda-core must spell as the device linker does, from the
//! device linker's tables in `compiler/include/oxide/`:
//!   * `abi.rs` from `Abi.def`: the reserved names cuda-core looks for in a
//!     device image (the panic record's global, the full-debug-info marker);
//!   * `panic_record.rs` from `PanicRecord.def`: the panic record's field
//!     offsets and sizes, its numbers, and the kinds of the values it holds.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

fn main() {
    let abi = oxide_tables::Table::read_oxide("Abi.def");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let mut out = oxide_tables::abi_rs(&abi);
    // The driver looks the panic record's global up by a C string.
    let record = oxide_tables::reserved_name(&abi, "PanicRecordGlobal");
    out.push_str(&format!("/// PANIC_RECORD_GLOBAL as a C string.\npub const PANIC_RECORD_GLOBAL_C: &std::ffi::CStr = c{record:?};\n"));
    fs::write(out_dir.join("abi.rs"), out).unwrap();

    let panic_record = oxide_tables::Table::read_oxide("PanicRecord.def");
    fs::write(out_dir.join("panic_record.rs"), panic_record_rs(&panic_record)).unwrap();
}

/// The record's layout as constants (`LINE`, `LINE_SIZE`, …, `MAX_VALUES`) and
/// the value kinds as an enum with its codes.
fn panic_record_rs(table: &oxide_tables::Table) -> String {
    let mut out = String::from("// Generated from compiler/include/oxide/PanicRecord.def by cuda-core's build script.\n\n");
    for row in table.rows("OXIDE_PANIC_RECORD_FIELD") {
        let name = oxide_tables::screaming_snake_case(row.ident(0));
        let (offset, size, doc) = (row.integer(1), row.integer(2), row.string(3));
        writeln!(out, "/// Offset of: {doc}\n#[allow(dead_code)]\npub const {name}: usize = {offset};").unwrap();
        writeln!(out, "/// Bytes of [`{name}`].\n#[allow(dead_code)]\npub const {name}_SIZE: usize = {size};").unwrap();
    }
    for row in table.rows("OXIDE_PANIC_RECORD_VALUE") {
        let name = oxide_tables::screaming_snake_case(row.ident(0));
        let (value, doc) = (row.integer(1), row.string(2));
        writeln!(out, "#[doc = {doc:?}]\n#[allow(dead_code)]\npub const {name}: usize = {value};").unwrap();
    }
    let kinds: Vec<_> = table.rows("OXIDE_PANIC_VALUE_KIND").map(|r| (r.ident(0).to_string(), r.integer(1), r.string(2).to_string())).collect();
    out.push_str("/// The type of a value in the record (`KINDS`).\n#[derive(Clone, Copy, Debug, PartialEq, Eq)]\npub enum ValueKind {\n");
    for (name, code, ty) in &kinds {
        writeln!(out, "    /// `{ty}`\n    {name} = {code},").unwrap();
    }
    out.push_str("}\n\nimpl ValueKind {\n    /// The kind a code of the record stands for.\n    pub fn from_code(code: u8) -> Option<ValueKind> {\n        match code {\n");
    for (name, code, _) in &kinds {
        writeln!(out, "            {code} => Some(ValueKind::{name}),").unwrap();
    }
    out.push_str("            _ => None,\n        }\n    }\n}\n");
    out
}
