//! Generates the reserved names cuda-core looks for in a device image (the
//! panic record's global, the full-debug-info marker) from the device
//! linker's table `compiler/include/oxide/Abi.def`, so both sides spell them
//! from one place.

use std::env;
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
}
