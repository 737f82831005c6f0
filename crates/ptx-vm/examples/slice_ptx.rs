//! Cuts a small module out of a large PTX file: the named kernels, every
//! function and variable they reference (transitively), and the module
//! header, in their original order. Used to make the test fixtures under
//! `tests/fixtures` from `cargo oxide pipeline` output.
//!
//! Usage: cargo run -p ptx-vm --example slice_ptx -- IN.ptx KERNEL... > OUT.ptx
//!
//! It relies on the shape of LLVM's PTX output: every module-level item
//! starts in column 0, and a function body ends with a `}` in column 0.

use std::collections::{HashMap, HashSet};

struct Item {
    name: String,
    text: String,
}

fn item_name(header: &str) -> Option<String> {
    // The name is the identifier before the first `(`, `[`, `;`, `=` or
    // whitespace after the type/directive words.
    let words: Vec<&str> = header
        .split(|c: char| {
            c.is_whitespace() || c == '(' || c == '[' || c == ';' || c == '=' || c == ')'
        })
        .filter(|w| !w.is_empty())
        .collect();
    words
        .iter()
        .find(|w| {
            !w.starts_with('.')
                && !w.starts_with("func_retval")
                && **w != "{"
                && !w.chars().next().is_some_and(|c| c.is_ascii_digit())
        })
        .map(|w| w.to_string())
}

fn identifiers(text: &str) -> HashSet<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| !w.is_empty())
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((path, kernels)) = args.split_first() else {
        eprintln!("usage: slice_ptx IN.ptx KERNEL...");
        std::process::exit(2);
    };
    let src = std::fs::read_to_string(path).expect("readable PTX");
    let mut header = String::new();
    let mut items: Vec<Item> = Vec::new();
    let mut lines = src.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if line.starts_with(".version")
            || line.starts_with(".target")
            || line.starts_with(".address_size")
        {
            header.push_str(line);
            header.push('\n');
            continue;
        }
        let starts_item =
            line.starts_with('.') && !line.starts_with(".section") && !line.starts_with(".file");
        if !starts_item {
            continue;
        }
        let _ = t;
        let mut text = String::from(line);
        text.push('\n');
        let is_func = line.contains(".func") || line.contains(".entry");
        if is_func {
            // Up to a `;` ending a declaration, or the `}` closing a body.
            let mut in_body = false;
            if !line.trim_end().ends_with(';') || line.contains('(') {
                for l in lines.by_ref() {
                    text.push_str(l);
                    text.push('\n');
                    if l.starts_with('{') {
                        in_body = true;
                    }
                    if (in_body && l.starts_with('}')) || (!in_body && l.trim_end().ends_with(';'))
                    {
                        break;
                    }
                }
            }
        } else {
            while !text.trim_end().ends_with(';') {
                match lines.next() {
                    Some(l) => {
                        text.push_str(l);
                        text.push('\n');
                    }
                    None => break,
                }
            }
        }
        if let Some(name) = item_name(line) {
            items.push(Item { name, text });
        }
    }
    let by_name: HashMap<&str, Vec<usize>> =
        items
            .iter()
            .enumerate()
            .fold(HashMap::new(), |mut m, (i, it)| {
                m.entry(it.name.as_str()).or_default().push(i);
                m
            });
    let mut keep: HashSet<usize> = HashSet::new();
    let mut work: Vec<&str> = kernels.iter().map(|s| s.as_str()).collect();
    while let Some(name) = work.pop() {
        let Some(ids) = by_name.get(name) else {
            eprintln!("warning: `{name}` not found");
            continue;
        };
        for &i in ids {
            if keep.insert(i) {
                for id in identifiers(&items[i].text) {
                    if id != name && by_name.contains_key(id) {
                        work.push(id);
                    }
                }
            }
        }
    }
    println!("{header}");
    for (i, it) in items.iter().enumerate() {
        if keep.contains(&i) {
            println!("{}", it.text);
        }
    }
}
