//! `#[constant]`: a static in GPU constant memory.
//!
//! `#[constant] static NAME: T = EXPR;` becomes
//! `#[link_section = ".oxide.constant"] static NAME: ::cuda_device::Constant<T> =
//! ::cuda_device::Constant::new(EXPR);` (visibility and other attributes kept).
//! The device linker moves statics of that section (Abi.def's ConstantSection)
//! to PTX `.const` memory.

use proc_macro::{Delimiter, Spacing, TokenStream, TokenTree};

/// The expansion, or an error message for a `compile_error!`.
pub fn expand(args: TokenStream, item: TokenStream) -> Result<TokenStream, String> {
    if !args.is_empty() {
        return Err("#[constant] takes no arguments".into());
    }
    wrap_static(
        item,
        "#[constant]",
        crate::abi::CONSTANT_SECTION,
        "::cuda_device::Constant",
        "a #[constant] static cannot be `mut`: kernels only read constant memory; \
         the host changes it with KernelModule::set_constant",
    )
}

/// `ATTR static NAME: T = EXPR;` → `#[link_section = SECTION] static NAME:
/// WRAPPER<T> = WRAPPER::new(EXPR);`, shared by `#[constant]` and
/// `#[device_global]`; `mut_error` is the error for a `static mut`.
pub fn wrap_static(
    item: TokenStream,
    attr: &str,
    section: &str,
    wrapper: &str,
    mut_error: &str,
) -> Result<TokenStream, String> {
    let tokens: Vec<TokenTree> = item.into_iter().collect();
    let is_punct = |t: &TokenTree, c: char| matches!(t, TokenTree::Punct(p) if p.as_char() == c);
    let is_ident = |t: &TokenTree, s: &str| matches!(t, TokenTree::Ident(i) if i.to_string() == s);

    let kw = tokens
        .iter()
        .position(|t| is_ident(t, "static"))
        .ok_or_else(|| format!("{attr} goes on a `static` item: `{attr} static NAME: T = value;`"))?;
    if tokens.get(kw + 1).is_some_and(|t| is_ident(t, "mut")) {
        return Err(mut_error.into());
    }
    let colon = tokens[kw..].iter().position(|t| is_punct(t, ':')).map(|p| p + kw);
    // The `=` of the initialiser: the first lone `=` after the colon at the
    // top level (generic arguments in the type cannot contain a lone `=`).
    let eq = colon.and_then(|c| {
        tokens[c..]
            .iter()
            .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == '=' && p.spacing() == Spacing::Alone))
            .map(|p| p + c)
    });
    let (Some(colon), Some(eq)) = (colon, eq) else {
        return Err(format!("{attr} needs a type and a value: `{attr} static NAME: T = value;`"));
    };
    let end = if tokens.last().is_some_and(|t| is_punct(t, ';')) { tokens.len() - 1 } else { tokens.len() };

    let head: TokenStream = tokens[..=colon].iter().cloned().collect();
    let ty: TokenStream = tokens[colon + 1..eq].iter().cloned().collect();
    let value: TokenStream = tokens[eq + 1..end].iter().cloned().collect();

    let mut out: TokenStream = format!("#[link_section = {section:?}]").parse().unwrap();
    out.extend(head);
    out.extend(format!("{wrapper}<{ty}> = {wrapper}::new").parse::<TokenStream>().unwrap());
    out.extend([TokenTree::Group(proc_macro::Group::new(Delimiter::Parenthesis, value))]);
    out.extend(";".parse::<TokenStream>().unwrap());
    Ok(out)
}
