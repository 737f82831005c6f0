//! Generates the reserved names the macros write (the kernel entry prefix,
//! the constant-memory section) from the device linker's table
//! `compiler/include/oxide/Abi.def`, and the operand types of `ptx_asm!`
//! from `InlinePtx.def`, so both sides spell them from one place.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;

fn main() {
    let abi = oxide_tables::Table::read_oxide("Abi.def");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    fs::write(out_dir.join("abi.rs"), oxide_tables::abi_rs(&abi)).unwrap();

    let ptx = oxide_tables::Table::read_oxide("InlinePtx.def");
    let mut out = String::from(
        "/// The Rust types `ptx_asm!` takes as operands, each with its NVPTX\n\
         /// constraint letter and PTX register (InlinePtx.def); `ptr` stands for\n\
         /// every raw pointer type.\npub const OPERANDS: &[(&str, &str, &str)] = &[\n",
    );
    for row in ptx.rows("OXIDE_PTX_OPERAND") {
        writeln!(out, "    ({:?}, {:?}, {:?}),", row.ident(0), row.ident(1), row.string(3)).unwrap();
    }
    out.push_str("];\n");
    let immediate = ptx.rows("OXIDE_PTX_IMMEDIATE").next().expect("InlinePtx.def has an OXIDE_PTX_IMMEDIATE row");
    writeln!(out, "/// The constraint of a `const` operand (InlinePtx.def).\npub const IMMEDIATE: &str = {:?};", row_ident(immediate)).unwrap();
    fs::write(out_dir.join("ptx_operands.rs"), out).unwrap();
}

fn row_ident(row: &oxide_tables::Row) -> &str {
    row.ident(0)
}
