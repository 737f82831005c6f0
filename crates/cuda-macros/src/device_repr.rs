//! `#[derive(DeviceRepr)]`: declares a type fit for device memory
//! (`cuda_core::DeviceRepr`), after checking that it is.
//!
//! A `DeviceBuffer<T>` hands its contents back to safe code (`to_host_vec`,
//! a kernel's `&[T]`), and a kernel or a copy may have written any bytes into
//! it. So `T` must accept every bit pattern: a struct or union whose fields
//! all do (padding may hold anything), or a field-less enum whose variants
//! cover every value of its integer representation. The derive writes the
//! `unsafe impl` only for those:
//!
//! - a struct (named, tuple or unit) or a union: the impl requires every
//!   field type to be `DeviceRepr` (a `where` bound per field), so a `bool`
//!   or `char` field is a compile error naming that field's type;
//! - a field-less enum with `#[repr(u8)]` or `#[repr(i8)]` and 256 variants
//!   (rustc keeps discriminants distinct, so 256 variants are all the
//!   values); any other enum is refused with the number of bit patterns
//!   that are not values and what to store instead.

use crate::split::split_list;
use crate::template::fill;
use crate::tokens::{Delim, Error, SourceSpan, Tok};

/// The `impl`, or the reasons the type cannot have one.
pub fn expand<S: SourceSpan>(item: &[Tok<S>]) -> Result<Vec<Tok<S>>, Vec<Error<S>>> {
    let decl = parse(item).map_err(|e| vec![e])?;
    match decl.kind {
        Kind::Enum => check_enum(&decl).map_err(|e| vec![e])?,
        Kind::Struct | Kind::Union => {}
    }
    Ok(unsafe_impl(&decl))
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Struct,
    Enum,
    Union,
}

/// What the derive needs of the item.
struct Decl<'a, S> {
    kind: Kind,
    /// The `#[repr(..)]` arguments, each as written (`C`, `u8`, `align(8)`).
    reprs: Vec<String>,
    name: &'a Tok<S>,
    /// `<..>` with bounds, or empty.
    generics: &'a [Tok<S>],
    /// `where ..` without a trailing comma's worry, or empty.
    where_clause: &'a [Tok<S>],
    /// The body: `{ fields }`, `( fields )`, or none for a unit struct.
    body: Option<&'a Tok<S>>,
}

fn parse<S: SourceSpan>(item: &[Tok<S>]) -> Result<Decl<'_, S>, Error<S>> {
    let mut reprs = Vec::new();
    let mut i = 0;
    // Outer attributes: keep what `repr` says.
    while let (Some(hash), Some(group)) = (item.get(i), item.get(i + 1)) {
        let Some(attr) = (if hash.is_punct('#') { group.group_with(Delim::Bracket) } else { None }) else { break };
        if let [word, args] = attr {
            if word.is_ident("repr") {
                if let Some(inner) = args.group_with(Delim::Paren) {
                    reprs.extend(split_list(inner).into_iter().map(|r| crate::tokens::render(r).trim().to_string()));
                }
            }
        }
        i += 2;
    }
    // Visibility: `pub`, `pub(..)`.
    if item.get(i).is_some_and(|t| t.is_ident("pub")) {
        i += 1;
        if item.get(i).is_some_and(|t| t.group_with(Delim::Paren).is_some()) {
            i += 1;
        }
    }
    let kind = match item.get(i) {
        Some(t) if t.is_ident("struct") => Kind::Struct,
        Some(t) if t.is_ident("enum") => Kind::Enum,
        Some(t) if t.is_ident("union") => Kind::Union,
        _ => return Err(Error::spanning(item, "#[derive(DeviceRepr)] applies to a struct, an enum or a union")),
    };
    let name = item.get(i + 1).filter(|t| t.ident_name().is_some()).ok_or_else(|| Error::spanning(item, "expected the type's name"))?;
    i += 2;
    let generics_start = i;
    if item.get(i).is_some_and(|t| t.is_punct('<')) {
        i = crate::split::angle_close(item, i).ok_or_else(|| Error::at(name.span(), "unclosed generic parameter list"))? + 1;
    }
    let generics = &item[generics_start..i];
    // The rest: `where .. { }`, `( ) where .. ;`, `;`, `{ }`.
    let rest = &item[i..];
    let body_at = rest.iter().position(|t| matches!(t.group(), Some((Delim::Brace | Delim::Paren, _))));
    let (body, where_clause) = match body_at {
        Some(b) if rest[b].group_with(Delim::Paren).is_some() => {
            // Tuple struct: the where clause follows the fields, before `;`.
            let tail = &rest[b + 1..];
            let end = tail.iter().position(|t| t.is_punct(';')).unwrap_or(tail.len());
            (Some(&rest[b]), &tail[..end])
        }
        Some(b) => (Some(&rest[b]), &rest[..b]),
        None => (None, rest.split_last().filter(|(last, _)| last.is_punct(';')).map_or(rest, |(_, before)| before)),
    };
    Ok(Decl { kind, reprs, name, generics, where_clause, body })
}

/// The field types of a struct or union body (attributes, visibility and
/// names dropped); the variants of an enum body are not fields.
fn field_types<'a, S: SourceSpan>(body: Option<&'a Tok<S>>) -> Vec<&'a [Tok<S>]> {
    let Some((delim, inner)) = body.and_then(|b| b.group()) else { return Vec::new() };
    split_list(inner)
        .into_iter()
        .filter(|f| !f.is_empty())
        .map(|f| {
            let mut f = crate::kernel::skip_attributes(f);
            if let [vis, rest @ ..] = f {
                if vis.is_ident("pub") {
                    f = rest;
                    if let [group, rest @ ..] = f {
                        if group.group_with(Delim::Paren).is_some() {
                            f = rest;
                        }
                    }
                }
            }
            // `name: Type` in braces; the type alone in parentheses.
            if delim == Delim::Brace {
                if let Some(colon) = f.iter().position(|t| t.is_punct(':')) {
                    f = &f[colon + 1..];
                }
            }
            f
        })
        .collect()
}

/// A field-less enum is fit only if it is `repr(u8)`/`repr(i8)` with 256
/// variants; otherwise the reason, at the enum's name.
fn check_enum<S: SourceSpan>(decl: &Decl<'_, S>) -> Result<(), Error<S>> {
    let name = decl.name.ident_name().unwrap_or("the enum");
    let variants: Vec<_> = match decl.body.and_then(|b| b.group_with(Delim::Brace)) {
        Some(inner) => split_list(inner).into_iter().filter(|v| !v.is_empty()).collect(),
        None => Vec::new(),
    };
    let with_fields = variants.iter().any(|v| v.iter().any(|t| matches!(t.group(), Some((Delim::Brace | Delim::Paren, _)))));
    let fix = format!(
        "store the discriminant instead (a `DeviceBuffer<u8>`, say, written as `{name} as u8`) and turn what comes back \
         into a `{name}` with a checked conversion (`TryFrom<u8>`)"
    );
    if with_fields {
        return Err(Error::at(
            decl.name.span(),
            format!(
                "`{name}` cannot derive DeviceRepr: an enum with fields has tag values that are no variant, which a \
                 kernel or a copy could leave in device memory; {fix}"
            ),
        ));
    }
    let bits = decl.reprs.iter().find_map(|r| match r.as_str() {
        "u8" | "i8" => Some(8u32),
        "u16" | "i16" => Some(16),
        "u32" | "i32" => Some(32),
        "u64" | "i64" => Some(64),
        "u128" | "i128" => Some(128),
        "usize" | "isize" => Some(64),
        _ => None,
    });
    let Some(bits) = bits else {
        return Err(Error::at(
            decl.name.span(),
            format!(
                "`{name}` cannot derive DeviceRepr: without an integer `#[repr(..)]` its layout is not fixed, and \
                 most bit patterns are no variant; {fix}"
            ),
        ));
    };
    let values = 1u128.checked_shl(bits);
    let invalid = values.map(|v| v - variants.len() as u128);
    match invalid {
        Some(0) => Ok(()),
        _ => Err(Error::at(
            decl.name.span(),
            format!(
                "`{name}` cannot derive DeviceRepr: its {bits}-bit representation has {} bit patterns that are no \
                 variant ({} variants), and a kernel or a copy could leave one in device memory, which safe code would \
                 then read as a `{name}`; {fix}",
                invalid.map_or_else(|| "2^128 minus a few".to_string(), |n| n.to_string()),
                variants.len()
            ),
        )),
    }
}

/// `unsafe impl<G> ::cuda_core::DeviceRepr for Name<G> where Field: DeviceRepr, .. {}`
fn unsafe_impl<S: SourceSpan>(decl: &Decl<'_, S>) -> Vec<Tok<S>> {
    // The type's arguments: its parameters without bounds or defaults.
    let params = match decl.generics {
        [open, inner @ .., close] if open.is_punct('<') && close.is_punct('>') => split_list(inner),
        _ => Vec::new(),
    };
    let mut args = Vec::new();
    let mut impl_params = Vec::new();
    for p in params.into_iter().filter(|p| !p.is_empty()) {
        match p {
            [quote, name, ..] if quote.is_punct('\'') => args.push(vec![quote.clone(), name.clone()]),
            [kw, name, ..] if kw.is_ident("const") => args.push(vec![name.clone()]),
            [name, ..] => args.push(vec![name.clone()]),
            [] => {}
        }
        // Defaults (`T = u32`) stay on the type, not on the impl.
        let end = p.iter().position(|t| t.is_punct('=')).unwrap_or(p.len());
        impl_params.push(p[..end].to_vec());
    }
    let comma = |items: Vec<Vec<Tok<S>>>| crate::kernel::comma_separated(items);
    let impl_generics = if impl_params.is_empty() { Vec::new() } else { fill("<#p>", &[("p", comma(impl_params))]) };
    let type_args = if args.is_empty() { Vec::new() } else { fill("<#a>", &[("a", comma(args))]) };
    let mut bounds: Vec<Vec<Tok<S>>> = Vec::new();
    if let [kw, rest @ ..] = decl.where_clause {
        if kw.is_ident("where") {
            bounds.extend(split_list(rest).into_iter().filter(|b| !b.is_empty()).map(<[_]>::to_vec));
        }
    }
    if decl.kind != Kind::Enum {
        for ty in field_types(decl.body) {
            // The whole bound carries the field type's span, so that a
            // field that is not DeviceRepr is reported at that field.
            let span = ty.first().map_or_else(S::call_site, Tok::span);
            let bound = fill("#ty: ::cuda_core::DeviceRepr", &[("ty", ty.to_vec())]);
            bounds.push(bound.into_iter().map(|t| respan(t, span)).collect());
        }
    }
    let where_clause = if bounds.is_empty() { Vec::new() } else { fill("where #b", &[("b", comma(bounds))]) };
    // The impl's safety: every field is DeviceRepr (the bounds), or the
    // enum's variants are every value of its repr (check_enum).
    fill(
        "#[automatically_derived]
        unsafe impl #impl_generics ::cuda_core::DeviceRepr for #name #type_args #where_clause {}",
        &[
            ("impl_generics", impl_generics),
            ("name", vec![decl.name.clone()]),
            ("type_args", type_args),
            ("where_clause", where_clause),
        ],
    )
}

/// `tok` (and what it contains) with the span `span`.
fn respan<S: SourceSpan>(tok: Tok<S>, span: S) -> Tok<S> {
    match tok {
        Tok::Ident { name, .. } => Tok::Ident { name, span },
        Tok::Punct { ch, joint, .. } => Tok::Punct { ch, joint, span },
        Tok::Lit { text, .. } => Tok::Lit { text, span },
        Tok::Group { delim, inner, .. } => Tok::Group { delim, inner: inner.into_iter().map(|t| respan(t, span)).collect(), span },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex;
    use crate::tokens::render_plain;

    fn derive(src: &str) -> Result<String, String> {
        expand(&lex(src)).map(|t| render_plain(&t)).map_err(|e| e[0].message.clone())
    }

    fn plain(src: &str) -> String {
        render_plain(&lex(src))
    }

    const HEAD: &str = "#[automatically_derived] unsafe impl";

    #[test]
    fn structs_require_every_field_to_be_device_repr() {
        assert_eq!(
            derive("#[derive(Clone, Copy)] #[repr(C)] pub struct P { pub pos: [f32; 3], #[doc = \"x\"] id: u32 }"),
            Ok(plain(&format!("{HEAD} ::cuda_core::DeviceRepr for P where [f32; 3]: ::cuda_core::DeviceRepr, u32: ::cuda_core::DeviceRepr {{}}")))
        );
        assert_eq!(
            derive("struct T(pub(crate) f32, u8);"),
            Ok(plain(&format!("{HEAD} ::cuda_core::DeviceRepr for T where f32: ::cuda_core::DeviceRepr, u8: ::cuda_core::DeviceRepr {{}}")))
        );
        assert_eq!(derive("struct U;"), Ok(plain(&format!("{HEAD} ::cuda_core::DeviceRepr for U {{}}"))));
    }

    #[test]
    fn generics_and_where_clauses_carry_over() {
        assert_eq!(
            derive("struct Pair<T: Copy, const N: usize = 2> where T: Default { a: [T; N], b: T }"),
            Ok(plain(&format!(
                "{HEAD} <T: Copy, const N: usize> ::cuda_core::DeviceRepr for Pair<T, N> \
                 where T: Default, [T; N]: ::cuda_core::DeviceRepr, T: ::cuda_core::DeviceRepr {{}}"
            )))
        );
        assert_eq!(
            derive("struct W<T>(T) where T: Copy;"),
            Ok(plain(&format!("{HEAD} <T> ::cuda_core::DeviceRepr for W<T> where T: Copy, T: ::cuda_core::DeviceRepr {{}}")))
        );
    }

    #[test]
    fn unions_need_every_field_too() {
        assert_eq!(
            derive("#[repr(C)] union Bits { f: f32, u: u32 }"),
            Ok(plain(&format!("{HEAD} ::cuda_core::DeviceRepr for Bits where f32: ::cuda_core::DeviceRepr, u32: ::cuda_core::DeviceRepr {{}}")))
        );
    }

    #[test]
    fn an_enum_of_every_byte_value_is_accepted() {
        let variants: Vec<String> = (0..256).map(|i| format!("V{i}")).collect();
        let src = format!("#[repr(u8)] enum Byte {{ {} }}", variants.join(", "));
        assert_eq!(derive(&src), Ok(plain(&format!("{HEAD} ::cuda_core::DeviceRepr for Byte {{}}"))));
    }

    #[test]
    fn other_enums_are_refused_with_the_reason() {
        let e = derive("#[derive(Clone, Copy)] #[repr(u8)] enum Op { Add, Mul = 4, Max }").unwrap_err();
        assert!(e.contains("`Op` cannot derive DeviceRepr: its 8-bit representation has 253 bit patterns that are no variant (3 variants)"), "{e}");
        assert!(e.contains("store the discriminant instead"), "{e}");
        let e = derive("enum Op { Add, Mul }").unwrap_err();
        assert!(e.contains("without an integer `#[repr(..)]`"), "{e}");
        let e = derive("#[repr(u8)] enum Op { Add(u8), Mul { x: u8 } }").unwrap_err();
        assert!(e.contains("an enum with fields"), "{e}");
        let e = derive("#[repr(u32)] enum Op { A }").unwrap_err();
        assert!(e.contains("4294967295 bit patterns"), "{e}");
    }

    #[test]
    fn other_items_are_refused() {
        assert_eq!(derive("fn f() {}"), Err("#[derive(DeviceRepr)] applies to a struct, an enum or a union".into()));
    }
}
