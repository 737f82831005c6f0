//! A command-line front of many_kernels.rs, for building the many-kernel
//! crate by hand: `gen_many_kernels COUNT OUT.rs [EDITED]` writes the main.rs
//! of a program with COUNT kernels (kernel EDITED's EDIT line swapped).

#[path = "many_kernels.rs"]
mod many_kernels;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: {} COUNT OUT.rs [EDITED]", args[0]);
        std::process::exit(2);
    }
    let count: usize = args[1].parse().expect("COUNT must be a number");
    let edited = args.get(3).map(|e| e.parse::<usize>().expect("EDITED must be a number"));
    std::fs::write(&args[2], many_kernels::many_kernels_source(count, edited))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", args[2]));
}
