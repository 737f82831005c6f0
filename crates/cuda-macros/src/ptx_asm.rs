//! `ptx_asm!`: inline PTX with typed operands.
//!
//! The input is a string literal (the PTX, with `{name}` or `{N}`
//! placeholders), then operands `[name =] DIR(TYPE) EXPR` with DIR one of
//! `in`, `out`, `inout`, or `[name =] const EXPR`, then optionally
//! `options(pure, nomem, readonly)`.
//!
//! The expansion is a block with a function of its own, the *site*: its
//! parameters are the operands in the order written (an input by value, an
//! output or in-out operand as a `*mut TYPE` to a temporary), and its body
//! calls the stub `ptx_asm` with a static byte string, the spec, which the
//! device linker reads (compiler/lib/Legalize/LowerInlinePtx.cpp describes
//! it): the options, each operand's constraint (InlinePtx.def), and the
//! template with its placeholders numbered as LLVM numbers asm operands
//! (outputs and in-out operands first, in the order written, then inputs and
//! immediates). The device linker replaces each call of the site with inline
//! asm; on the host the stub refuses to run. After the stub call the body
//! hands each output's place, and each pointer operand, to the stub
//! `ptx_asm_output`, opaque on the host: without it the outputs never
//! written there make the host code that reads them undefined (and memory
//! written only through a pointer operand keeps its old value), and the
//! optimiser folded that code away, giving two kernels that differ only
//! after their PTX one host wrapper (docs/ABI.md §2).

use crate::split::split_exprs;
use crate::template::fill;
use crate::tokens::{render, unwrap_invisible, Delim, Error, SourceSpan, Tok};

mod table {
    include!(concat!(env!("OUT_DIR"), "/ptx_operands.rs"));
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    In,
    Out,
    InOut,
    Const,
}

struct Operand<'t, S> {
    name: Option<String>,
    dir: Dir,
    /// The type as written (empty for `const`).
    ty: &'t [Tok<S>],
    /// The constraint letter.
    letter: &'static str,
    /// The expression or place (`None` for `out(T) _`).
    expr: Option<&'t [Tok<S>]>,
    /// Where to point errors about this operand.
    span_tokens: &'t [Tok<S>],
    used: bool,
}

#[derive(Default)]
struct Options {
    pure: bool,
    nomem: bool,
    readonly: bool,
}

/// The spelling of the supported types, for messages.
fn supported_types() -> String {
    let mut names: Vec<&str> = table::OPERANDS.iter().map(|(t, _, _)| *t).filter(|t| *t != "ptr").collect();
    names.push("*const T");
    names.push("*mut T");
    names.join(", ")
}

/// The constraint letter of a written type, or `None` when the type cannot
/// be an operand.
fn letter_of<S: Copy>(ty: &[Tok<S>]) -> Option<&'static str> {
    let key = match unwrap_invisible(ty) {
        [Tok::Ident { name, .. }] => name.as_str(),
        _ if is_raw_pointer(ty) => "ptr",
        _ => return None,
    };
    table::OPERANDS.iter().find(|(t, _, _)| *t == key).map(|(_, c, _)| *c)
}

/// Whether `ty` is `*const T` or `*mut T`.
fn is_raw_pointer<S: Copy>(ty: &[Tok<S>]) -> bool {
    matches!(unwrap_invisible(ty), [first, second, ..] if first.is_punct('*') && (second.is_ident("const") || second.is_ident("mut")))
}

pub fn expand<S: SourceSpan>(input: &[Tok<S>]) -> Result<Vec<Tok<S>>, Vec<Error<S>>> {
    let items = split_exprs(input);
    let Some((first, rest)) = items.split_first() else {
        return Err(vec![Error::at(
            S::call_site(),
            "ptx_asm! needs a PTX template, like ptx_asm!(\"add.s32 {d}, {a}, {b};\", d = out(i32) d, a = in(i32) a, b = in(i32) b)",
        )]);
    };
    let first = unwrap_invisible(first);
    let (template, template_span) = match first {
        [Tok::Lit { text, span }] => match crate::printf::unescape_str_literal(text) {
            Some(value) => (value, *span),
            None => return Err(vec![Error::spanning(first, "ptx_asm!'s first argument must be a string literal: the PTX")]),
        },
        _ => return Err(vec![Error::spanning(first, "ptx_asm!'s first argument must be a string literal: the PTX")]),
    };

    let mut errors = Vec::new();
    let mut operands: Vec<Operand<S>> = Vec::new();
    let mut options = Options::default();
    let mut seen_options = false;
    for item in rest {
        let item = unwrap_invisible(item);
        if item.is_empty() {
            continue;
        }
        if let [Tok::Ident { name, .. }, Tok::Group { delim: Delim::Paren, inner, .. }] = item {
            if name == "options" {
                seen_options = true;
                for word in split_exprs(inner) {
                    match unwrap_invisible(word) {
                        [w] if w.is_ident("pure") => options.pure = true,
                        [w] if w.is_ident("nomem") => options.nomem = true,
                        [w] if w.is_ident("readonly") => options.readonly = true,
                        [] => {}
                        other => errors.push(Error::spanning(
                            other,
                            format!("ptx_asm! has no option `{}`: the options are pure, nomem and readonly", render(other)),
                        )),
                    }
                }
                continue;
            }
        }
        if seen_options {
            errors.push(Error::spanning(item, "ptx_asm!'s options(...) come last, after every operand"));
            continue;
        }
        match operand(item) {
            Ok(op) => {
                if let Some(name) = &op.name {
                    if operands.iter().any(|o| o.name.as_deref() == Some(name)) {
                        errors.push(Error::spanning(item, format!("ptx_asm! has two operands called `{name}`")));
                    }
                }
                operands.push(op)
            }
            Err(e) => errors.push(e),
        }
    }
    if options.nomem && options.readonly {
        errors.push(Error::at(S::call_site(), "ptx_asm!: `nomem` and `readonly` contradict each other; keep one"));
    }
    let outputs = operands.iter().filter(|o| matches!(o.dir, Dir::Out | Dir::InOut)).count();
    if options.pure && outputs == 0 {
        errors.push(Error::at(
            S::call_site(),
            "ptx_asm!: `pure` PTX without outputs does nothing and would be deleted; drop `pure` or add an `out` operand",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }

    // LLVM's operand numbers: outputs (out, inout) in the order written, then
    // inputs (in, const) in the order written.
    let mut number = vec![0usize; operands.len()];
    let mut next = 0;
    for (i, o) in operands.iter().enumerate() {
        if matches!(o.dir, Dir::Out | Dir::InOut) {
            number[i] = next;
            next += 1;
        }
    }
    for (i, o) in operands.iter().enumerate() {
        if matches!(o.dir, Dir::In | Dir::Const) {
            number[i] = next;
            next += 1;
        }
    }

    let llvm_template = match rewrite_template(&template, &mut operands, &number) {
        Ok(t) => t,
        Err(message) => return Err(vec![Error::at(template_span, format!("ptx_asm!: {message}"))]),
    };
    for o in &operands {
        if !o.used {
            let what = o.name.as_ref().map_or_else(String::new, |n| format!(" `{n}`"));
            errors.push(Error::spanning(
                o.span_tokens,
                format!("ptx_asm!: operand{what} is not used in the PTX template; name it there ({{{}}}) or remove it",
                    o.name.clone().unwrap_or_else(|| "N".into())),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }

    let mut option_words = Vec::new();
    if options.pure {
        option_words.push("pure");
    }
    if options.nomem {
        option_words.push("nomem");
    }
    if options.readonly {
        option_words.push("readonly");
    }
    let constraints: Vec<String> = operands
        .iter()
        .map(|o| match o.dir {
            Dir::Out => format!("={}", o.letter),
            Dir::InOut => format!("+{}", o.letter),
            Dir::In | Dir::Const => o.letter.to_string(),
        })
        .collect();
    let mut spec = Vec::new();
    spec.extend_from_slice(option_words.join(",").as_bytes());
    spec.push(0);
    spec.extend_from_slice(constraints.join(",").as_bytes());
    spec.push(0);
    spec.extend_from_slice(llvm_template.as_bytes());
    Ok(expansion(&operands, &spec))
}

fn operand<'t, S: SourceSpan>(item: &'t [Tok<S>]) -> Result<Operand<'t, S>, Error<S>> {
    let (name, body) = match item {
        [Tok::Ident { name, .. }, eq, rest @ ..] if eq.is_punct('=') && !eq.is_joint() => (Some(name.clone()), rest),
        _ => (None, item),
    };
    let usage = "write an operand as `name = in(TYPE) value`, `name = out(TYPE) place`, `name = inout(TYPE) place` or `name = const VALUE`";
    match body {
        [kw, expr @ ..] if kw.is_ident("const") => {
            if expr.is_empty() {
                return Err(Error::spanning(item, format!("ptx_asm!: `const` needs a value; {usage}")));
            }
            Ok(Operand { name, dir: Dir::Const, ty: &[], letter: table::IMMEDIATE, expr: Some(expr), span_tokens: item, used: false })
        }
        [Tok::Ident { name: dir, .. }, Tok::Group { delim: Delim::Paren, inner, .. }, expr @ ..] => {
            let dir = match dir.as_str() {
                "in" => Dir::In,
                "out" => Dir::Out,
                "inout" => Dir::InOut,
                other => {
                    return Err(Error::spanning(
                        &body[..1],
                        format!("ptx_asm!: `{other}` is no operand direction (in, out, inout, const); {usage}"),
                    ))
                }
            };
            let letter = letter_of(inner).ok_or_else(|| {
                Error::spanning(
                    if inner.is_empty() { &body[1..2] } else { inner },
                    format!(
                        "ptx_asm!: `{}` cannot be a PTX operand; the operand types are {} (a bool is a predicate; for an 8-bit value, widen it to u16 or u32)",
                        render(inner),
                        supported_types()
                    ),
                )
            })?;
            let expr = match expr {
                [] => return Err(Error::spanning(item, format!("ptx_asm!: the operand needs a value or place; {usage}"))),
                [t] if t.is_ident("_") && dir == Dir::Out => None,
                [t] if t.is_ident("_") => {
                    return Err(Error::spanning(expr, "ptx_asm!: only an `out` operand can be `_` (discarded)"))
                }
                e => Some(e),
            };
            Ok(Operand { name, dir, ty: inner, letter, expr, span_tokens: item, used: false })
        }
        _ => Err(Error::spanning(item, format!("ptx_asm!: {usage}"))),
    }
}

/// The template with `{name}`/`{N}` → `$k`, `{{`/`}}` → braces, `$` → `$$`;
/// marks the operands it names.
fn rewrite_template<S>(template: &str, operands: &mut [Operand<S>], number: &[usize]) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '}' => return Err("a lone `}` in the template; write `}}` for a brace of the PTX".into()),
            '$' => out.push_str("$$"),
            '{' => {
                let mut key = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(ch) => key.push(ch),
                        None => return Err("a `{` in the template is not closed; write `{{` for a brace of the PTX".into()),
                    }
                }
                let key = key.trim();
                let index = if let Ok(position) = key.parse::<usize>() {
                    if position >= operands.len() {
                        return Err(format!("the template names operand {{{position}}}, but there are {} operands", operands.len()));
                    }
                    position
                } else {
                    match operands.iter().position(|o| o.name.as_deref() == Some(key)) {
                        Some(i) => i,
                        None => {
                            let names: Vec<String> = operands.iter().filter_map(|o| o.name.clone()).collect();
                            return Err(format!(
                                "the template names `{{{key}}}`, but no operand is called `{key}` (the named operands: {})",
                                if names.is_empty() { "none".to_string() } else { names.join(", ") }
                            ));
                        }
                    }
                };
                operands[index].used = true;
                out.push_str(&format!("${}", number[index]));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// `b"…"` with every byte escaped that a byte string cannot hold as is.
fn byte_string(bytes: &[u8]) -> String {
    let mut s = String::from("b\"");
    for &b in bytes {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b' '..=b'~' => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s.push('"');
    s
}

fn expansion<S: SourceSpan>(operands: &[Operand<S>], spec: &[u8]) -> Vec<Tok<S>> {
    let mut params = Vec::new();
    let mut unused = Vec::new();
    let mut prelude = Vec::new();
    let mut args = Vec::new();
    let mut writeback = Vec::new();
    // The host body hands each output's place, and the memory each pointer
    // operand points to, to `ptx_asm_output`, opaque there, so that the
    // optimiser cannot take them for never written by the PTX: reading an
    // output would be undefined, a static written only through a pointer
    // operand would keep its initial value, and the host code after the
    // PTX could be folded away (two kernels that differ only there would
    // get one host wrapper, the address a launch finds its PTX by).
    let mut outputs = Vec::new();
    let comma = || S::parse(",");
    for (i, o) in operands.iter().enumerate() {
        let param = S::parse(&format!("__oxide_operand{i}"));
        let temp = S::parse(&format!("__oxide_place{i}"));
        let ty = o.ty.to_vec();
        match o.dir {
            Dir::In => {
                if is_raw_pointer(o.ty) {
                    outputs.extend(fill("::cuda_device::__private::ptx_asm_output(#p as *const u8 as *mut u8);", &[("p", param.clone())]));
                }
                params.extend(fill("#p: #ty,", &[("p", param.clone()), ("ty", ty)]));
                args.extend(fill("(#e),", &[("e", o.expr.unwrap().to_vec())]));
            }
            Dir::Const => {
                params.extend(fill("#p: i64,", &[("p", param.clone())]));
                args.extend(fill("const { (#e) as i64 },", &[("e", o.expr.unwrap().to_vec())]));
            }
            Dir::Out => {
                outputs.extend(fill("::cuda_device::__private::ptx_asm_output(#p.cast::<u8>());", &[("p", param.clone())]));
                params.extend(fill("#p: *mut #ty,", &[("p", param.clone()), ("ty", ty.clone())]));
                prelude.extend(fill(
                    "let mut #t = ::core::mem::MaybeUninit::<#ty>::uninit();",
                    &[("t", temp.clone()), ("ty", ty)],
                ));
                args.extend(fill("#t.as_mut_ptr(),", &[("t", temp.clone())]));
                if let Some(place) = o.expr {
                    // SAFETY (of the expansion): the PTX wrote the output register.
                    writeback.extend(fill("#place = unsafe { #t.assume_init() };", &[("place", place.to_vec()), ("t", temp)]));
                }
            }
            Dir::InOut => {
                outputs.extend(fill("::cuda_device::__private::ptx_asm_output(#p.cast::<u8>());", &[("p", param.clone())]));
                params.extend(fill("#p: *mut #ty,", &[("p", param.clone()), ("ty", ty.clone())]));
                prelude.extend(fill("let mut #t: #ty = #e;", &[("t", temp.clone()), ("ty", ty), ("e", o.expr.unwrap().to_vec())]));
                args.extend(fill("&raw mut #t,", &[("t", temp.clone())]));
                writeback.extend(fill("#place = #t;", &[("place", o.expr.unwrap().to_vec()), ("t", temp)]));
            }
        }
        unused.extend(param);
        unused.extend(comma());
    }
    let spec_len = spec.len();
    fill(
        &format!(
            "{{
                #[inline(never)]
                #[allow(non_snake_case, unused_variables, clippy::too_many_arguments)]
                unsafe fn __oxide_ptx_asm_site(#params) {{
                    static __OXIDE_PTX_ASM_SPEC: [u8; {spec_len}] = *{bytes};
                    let _ = (#unused);
                    ::cuda_device::__private::ptx_asm(&raw const __OXIDE_PTX_ASM_SPEC as *const u8, {spec_len}usize);
                    #outputs
                }}
                #prelude
                __oxide_ptx_asm_site(#args);
                #writeback
            }}",
            bytes = byte_string(spec)
        ),
        &[("params", params), ("unused", unused), ("outputs", outputs), ("prelude", prelude), ("args", args), ("writeback", writeback)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::{lex, TestSpan};
    use crate::tokens::render_plain;

    fn expand_src(src: &str) -> Result<String, Vec<String>> {
        expand(&lex(src)).map(|t| render_plain(&t)).map_err(|e| e.into_iter().map(|e| e.message).collect())
    }

    fn spec_of(out: &str) -> String {
        let start = out.find("= * b\"").or_else(|| out.find("=*b\"")).expect("a spec") ;
        let rest = &out[start..];
        let open = rest.find('"').unwrap();
        let close = rest[open + 1..].find("\" ;").or_else(|| rest[open + 1..].find("\";")).unwrap();
        rest[open + 1..open + 1 + close].to_string()
    }

    #[test]
    fn numbers_outputs_first_and_writes_constraints_from_the_table() {
        let out = expand_src(r#""add.s32 {d}, {a}, {b}; setp {p} {k} // {{x}} $", a = in(i32) x, d = out(i32) r, b = in(u64) y, p = out(bool) q, k = const 4"#).unwrap();
        assert_eq!(spec_of(&out), r"\x00r,=r,l,=b,n\x00add.s32 $0, $2, $3; setp $1 $4 // {x} $$");
        assert!(out.contains("r = unsafe"), "{out}");
    }

    /// Each output's and in-out operand's place, and each pointer input, is
    /// handed to `ptx_asm_output` in the site's body (after the stub call);
    /// no other input is.
    #[test]
    fn the_host_body_hands_over_every_output_place_and_pointer() {
        let out = expand_src(r#""st.u32 [{p}], {a}; add.s32 {d}, {a}, {b};", d = out(i32) r, a = in(i32) x, b = inout(i32) y, p = in(*mut u32) q"#).unwrap();
        let plain = out.replace(' ', "");
        let stub = plain.find("__private::ptx_asm(").expect("the stub call");
        for call in [
            "__private::ptx_asm_output(__oxide_operand0.cast::<u8>());",
            "__private::ptx_asm_output(__oxide_operand2.cast::<u8>());",
            "__private::ptx_asm_output(__oxide_operand3as*constu8as*mutu8);",
        ] {
            let at = plain.find(call).unwrap_or_else(|| panic!("no {call} in {out}"));
            assert!(at > stub, "{call} before the stub call: {out}");
        }
        assert_eq!(plain.matches("ptx_asm_output(").count(), 3, "{out}");
    }

    #[test]
    fn positional_placeholders_and_inout() {
        let out = expand_src(r#""add.u32 {0}, {0}, {1};", inout(u32) acc, in(u32) 1u32, options(pure, nomem)"#).unwrap();
        assert_eq!(spec_of(&out), r"pure,nomem\x00+r,r\x00add.u32 $0, $0, $1;");
        assert!(out.contains("acc = __oxide_place0"), "{out}");
    }

    #[test]
    fn rejects_mismatches_with_a_message_that_says_what_to_do() {
        let e = expand_src(r#""mov.u32 {d}, {c};", d = out(u32) r, a = in(u32) x"#).unwrap_err();
        assert!(e[0].contains("no operand is called `c`"), "{e:?}");
        let e = expand_src(r#""mov.u32 {d}, 1;", d = out(u32) r, a = in(u32) x"#).unwrap_err();
        assert!(e[0].contains("operand `a` is not used"), "{e:?}");
        let e = expand_src(r#""mov.u32 {d}, {a};", d = out(u32) r, a = in(u8) x"#).unwrap_err();
        assert!(e[0].contains("`u8` cannot be a PTX operand"), "{e:?}");
        let e = expand_src(r#""mov.u32 {d}, {a};", d = out(u32) r, a = into(u32) x"#).unwrap_err();
        assert!(e[0].contains("no operand direction"), "{e:?}");
        let e = expand_src(r#""mov.u32 {2};", in(u32) x"#).unwrap_err();
        assert!(e[0].contains("there are 1 operands"), "{e:?}");
        let e = expand_src(r#""trap;", options(pure)"#).unwrap_err();
        assert!(e[0].contains("without outputs"), "{e:?}");
        let e = expand_src(r#""mov.u32 {d}, 1; }", d = out(u32) r"#).unwrap_err();
        assert!(e[0].contains("lone `}`"), "{e:?}");
    }

    #[test]
    fn pointer_operands_are_64_bit() {
        let out = expand_src(r#""ld.u32 {v}, [{p}];", v = out(u32) v, p = in(*const u32) ptr, options(readonly)"#).unwrap();
        assert_eq!(spec_of(&out), r"readonly\x00=r,l\x00ld.u32 $0, [$1];");
        let _ = TestSpan::call_site();
    }
}
