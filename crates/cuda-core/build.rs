//! Generates the reserved names cuda-core looks for in a device image (the
//! full-debug-info marker) from the device linker's table
//! `compiler/include/oxide/Abi.def`, so both sides spell them from one place.
//! The panic record's global and layout are the raw layer's: cuda-driver-sys
//! generates them from Abi.def and PanicRecord.def.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let abi = oxide_tables::Table::read_oxide("Abi.def");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    fs::write(out_dir.join("abi.rs"), oxide_tables::abi_rs(&abi)).unwrap();
}
