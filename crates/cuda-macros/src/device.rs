//! `#[device]`: a marker for functions called from kernels. The function is
//! emitted unchanged (the device linker compiles whatever the kernels reach);
//! the macro only rejects what can never run on the GPU.
//!
//! With `#[no_mangle]` and `extern "C"` the function is also exported to
//! CUDA C++: the macro writes a `#[used]` marker static named
//! `__oxide_device_export_<name>` (Abi.def's `DeviceExportPrefix`) holding
//! its address, from which the device linker keeps it in the PTX as a
//! `.visible .func` that nvcc-compiled code links against.

use crate::signature::{parse_fn, FnItem};
use crate::template::fill;
use crate::tokens::{Delim, Error, SourceSpan, Tok};

/// Whether an outer attribute is `#[no_mangle]` or `#[unsafe(no_mangle)]`.
fn is_no_mangle<S: SourceSpan>(attr: &[Tok<S>; 2]) -> bool {
    match attr[1].group_with(Delim::Bracket) {
        Some([name]) => name.is_ident("no_mangle"),
        Some([word, group]) if word.is_ident("unsafe") => {
            matches!(group.group_with(Delim::Paren), Some([name]) if name.is_ident("no_mangle"))
        }
        _ => false,
    }
}

/// The export marker for a `#[no_mangle] extern "C"` function, or the error
/// that says why a `#[no_mangle]` function cannot be exported; nothing for
/// an ordinary device function.
fn export<S: SourceSpan>(item: &FnItem<S>) -> Result<Vec<Tok<S>>, Error<S>> {
    let Some(attr) = item.attrs.iter().find(|a| is_no_mangle(a)) else {
        return Ok(Vec::new());
    };
    let extern_c = item.qualifiers.windows(2).any(|w| {
        w[0].is_ident("extern") && matches!(&w[1], Tok::Lit { text, .. } if text == "\"C\"")
    });
    if !extern_c {
        return Err(Error::spanning(
            attr,
            "a `#[device] #[no_mangle]` function is exported to CUDA C++, which calls it with the C calling convention: write `pub extern \"C\" fn`",
        ));
    }
    if !item.generics.is_empty() {
        return Err(Error::at(
            item.name.span(),
            "an exported `#[device]` function cannot be generic: CUDA C++ calls one function by one name",
        ));
    }
    let name = item.name.ident_name().expect("parse_fn checked the name");
    let marker = format!("{}{name}", crate::abi::DEVICE_EXPORT_PREFIX);
    let cfgs = item.cfg_attrs().flat_map(|attr| attr.iter().cloned()).collect();
    Ok(fill(
        "#cfgs
        const _: () = {
            #[used]
            #[unsafe(no_mangle)]
            #[allow(non_upper_case_globals)]
            static #marker: ::cuda_device::__private::KeepEntry =
                ::cuda_device::__private::KeepEntry(#name as *const ());
        };",
        &[
            ("cfgs", cfgs),
            ("marker", vec![Tok::ident(&marker, item.name.span())]),
            ("name", vec![item.name.clone()]),
        ],
    ))
}

/// What `#[device]` adds after the function: the export marker, if any.
pub fn expand<S: SourceSpan>(args: &[Tok<S>], item: &[Tok<S>]) -> Result<Vec<Tok<S>>, Vec<Error<S>>> {
    let errors = check(args, item);
    if !errors.is_empty() {
        return Err(errors);
    }
    let item = parse_fn(item, USAGE).map_err(|e| vec![e])?;
    export(&item).map_err(|e| vec![e])
}

const USAGE: &str =
    "`#[device]` applies to a function: `#[device] fn name(param: Type, ..) -> Ret { .. }`";

/// The problems with `#[device]` (arguments `args`) on `item`; empty if none.
pub fn check<S: SourceSpan>(args: &[Tok<S>], item: &[Tok<S>]) -> Vec<Error<S>> {
    let mut errors = Vec::new();
    if !args.is_empty() {
        errors.push(Error::spanning(
            args,
            "`#[device]` takes no arguments; write plain `#[device]`",
        ));
    }
    match parse_fn(item, USAGE) {
        Ok(item) => {
            if let Some(tok) = item.qualifier("async") {
                errors.push(Error::at(
                    tok.span(),
                    "a `#[device]` function cannot be `async fn`: there is no executor on the GPU; remove `async`",
                ));
            }
        }
        Err(error) => errors.push(error),
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::{lex, TestSpan};

    #[test]
    fn accepts_functions() {
        assert!(check::<TestSpan>(
            &[],
            &lex("#[inline] pub(crate) const unsafe fn f<T>(x: &T) -> T where T: Copy { *x }")
        )
        .is_empty());
    }

    #[test]
    fn exports_no_mangle_extern_c_functions() {
        let out = expand::<TestSpan>(&[], &lex("#[no_mangle] pub extern \"C\" fn cube(x: f32) -> f32 { x * x * x }"))
            .expect("an export");
        let text = crate::tokens::render_plain(&out);
        assert!(text.contains("static __oxide_device_export_cube"), "{text}");
        assert!(text.contains("KeepEntry ( cube as * const () )"), "{text}");
        let unsafe_attr = expand::<TestSpan>(&[], &lex("#[unsafe(no_mangle)] pub extern \"C\" fn f() {}")).unwrap();
        assert!(!unsafe_attr.is_empty());
        // Without #[no_mangle] nothing is exported.
        assert!(expand::<TestSpan>(&[], &lex("pub extern \"C\" fn f() {}")).unwrap().is_empty());
    }

    #[test]
    fn refuses_exports_without_the_c_abi_or_with_generics() {
        let errors = expand::<TestSpan>(&[], &lex("#[no_mangle] pub fn f() {}")).unwrap_err();
        assert!(errors[0].message.contains("write `pub extern \"C\" fn`"), "{}", errors[0].message);
        let errors = expand::<TestSpan>(&[], &lex("#[no_mangle] pub extern \"C\" fn f<T>() {}")).unwrap_err();
        assert!(errors[0].message.starts_with("an exported `#[device]` function cannot be generic"));
    }

    #[test]
    fn rejects_async_at_the_keyword() {
        let src = "pub async fn f() {}";
        let errors = check(&[], &lex(src));
        assert_eq!(errors.len(), 1);
        assert!(errors[0]
            .message
            .starts_with("a `#[device]` function cannot be `async fn`"));
        assert_eq!(errors[0].start, TestSpan(4));
    }

    #[test]
    fn rejects_arguments_and_other_items() {
        let errors = check(&lex("inline"), &lex("static X: u8 = 0;"));
        let messages: Vec<_> = errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "`#[device]` takes no arguments; write plain `#[device]`",
                USAGE
            ]
        );
    }
}
