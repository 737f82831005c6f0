//! Times each stage of loading a PTX file: lexing, parsing, decoding.
//! cargo run --release -p ptx-vm --example load_time -- FILE.ptx
fn main() {
    for p in std::env::args().skip(1) {
        let s = std::fs::read_to_string(&p).expect("readable file");
        let t = std::time::Instant::now();
        let tokens = ptx_vm::lexer::lex(&s).expect("lexes");
        let lexed = t.elapsed();
        let t = std::time::Instant::now();
        let ast = ptx_vm::parser::parse_module(&s).expect("parses");
        let parsed = t.elapsed();
        let t = std::time::Instant::now();
        let m = ptx_vm::Module::parse(&s).expect("loads");
        let loaded = t.elapsed();
        println!("{p}: {} tokens lexed in {lexed:?}; lexed+parsed ({} items) in {parsed:?}; loaded ({} kernels) in {loaded:?}", tokens.len(), ast.items.len(), m.kernels().count());
    }
}
