fn main() {
    for p in std::env::args().skip(1) {
        let s = std::fs::read_to_string(&p).unwrap();
        let t = std::time::Instant::now();
        match ptx_vm::parser::parse_module(&s) {
            Ok(m) => println!("{p}: {} items in {:?}", m.items.len(), t.elapsed()),
            Err(e) => println!("{p}: {e}"),
        }
    }
}
