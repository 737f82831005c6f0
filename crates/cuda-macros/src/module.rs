//! `#[cuda_module]`: typed launchers for the `#[kernel]`s of a module.
//!
//! ```rust,ignore
//! #[cuda_module]
//! pub mod kernels {
//!     use super::*;
//!     #[kernel]
//!     pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) { .. }
//! }
//! ```
//!
//! The module is emitted unchanged, plus, as its last item,
//!
//! ```rust,ignore
//! pub mod launch {
//!     #[allow(unused_imports)]
//!     use super::*;
//!     #[allow(clippy::too_many_arguments, non_snake_case)]
//!     pub fn scale(
//!         module: &::cuda_host::KernelModule,
//!         stream: &::cuda_core::CudaStream,
//!         config: impl ::cuda_host::LaunchShape,
//!         input: impl for<'__oxide_l0> ::cuda_host::arg::KernelArg<::cuda_device::__private::SliceParam<'__oxide_l0, f32>>,
//!         factor: impl ::cuda_host::arg::KernelArg<f32>,
//!         out: impl ::cuda_host::arg::KernelArg<DisjointSlice<f32>>,
//!     ) -> ::core::result::Result<(), ::cuda_host::HostError> {
//!         ::cuda_host::__private::launch3(module, stream, config,
//!             super::__oxide_kernel_entry_scale, (input, factor, out,))
//!     }
//! }
//! ```
//!
//! `config` is anything `cuda_launch!` takes (`cuda_host::LaunchShape`): a
//! `LaunchConfig`, a cluster launch (`LaunchConfig::with_cluster`) or a
//! cooperative one, checked the same way.
//!
//! The bound of each argument is `KernelArg<P>` with `P` the type of the
//! entry wrapper's parameter (`kernel::entry_param_type`), so a wrong
//! argument is a compile error at the call. Elided lifetimes (`'_`) of those
//! types are bound by `for<'__oxide_lN>` (`impl Trait` in argument position
//! may not contain `'_`, and a launcher lifetime would need `T: 'l` bounds).
//! A named lifetime (`x: &'a [T]`) is kept: with a generic `T`, the kernel
//! then needs `where T: 'a` for its launcher to compile.
//!
//! Kernels in nested inline modules get launchers in their own module's
//! `launch` (`kernels::inner::launch::k`), where the nested module's names
//! are in scope; a nested module without kernels is left as it is, and one
//! with its own `#[cuda_module]` is left to it. Kernels produced by macros
//! and kernels in modules of other files (`mod inner;`, whose tokens the
//! attribute does not see) get none: put `#[cuda_module]` on that module.
//! A kernel that `#[kernel]` rejects gets no launcher: `#[kernel]` reports
//! the problem.

use crate::kernel::{self, comma_separated, entry_param_type, parse_generics, parse_params, turbofish};
use crate::signature::parse_fn;
use crate::template::fill;
use crate::tokens::{Delim, Error, SourceSpan, Tok};

const USAGE: &str = "`#[cuda_module]` applies to an inline module: `#[cuda_module] mod kernels { #[kernel] pub fn k(..) { .. } }`";

/// The most parameters a launcher handles (`cuda_host::__private::launchN`,
/// N from Abi.def).
const MAX_PARAMS: usize = crate::abi::MAX_LAUNCH_ARGUMENTS as usize;

/// Names of the launcher's own parameters, which kernel parameters must not reuse.
const RESERVED: [&str; 3] = ["module", "stream", "config"];

/// Returns the module `item` with its `launch` submodule added, or the errors.
pub fn expand<S: SourceSpan>(
    args: &[Tok<S>],
    item: &[Tok<S>],
) -> Result<Vec<Tok<S>>, Vec<Error<S>>> {
    let mut errors = Vec::new();
    if !args.is_empty() {
        errors.push(Error::spanning(
            args,
            "`#[cuda_module]` takes no arguments; write plain `#[cuda_module]`",
        ));
    }
    let Some((head, body, body_span)) = split_module(item) else {
        errors.push(Error::spanning(item, USAGE));
        return Err(errors);
    };
    let inner = with_launchers(body, true, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut out = head.to_vec();
    out.push(Tok::Group {
        delim: Delim::Brace,
        inner,
        span: body_span,
    });
    Ok(out)
}

/// `body` with a `launch` submodule of launchers for its kernels appended
/// (when it has kernels, or `always`), and every nested inline module that
/// holds kernels given its own, the same way: `kernels::inner::launch::k`.
/// A nested module with its own `#[cuda_module]` is left to that attribute.
fn with_launchers<S: SourceSpan>(body: &[Tok<S>], always: bool, errors: &mut Vec<Error<S>>) -> Vec<Tok<S>> {
    let mut launchers = Vec::new();
    let kernels = find_kernels(body);
    for (attr_args, kernel_item) in &kernels {
        match launcher(attr_args, kernel_item) {
            Ok(tokens) => launchers.extend(tokens),
            Err(mut more) => errors.append(&mut more),
        }
    }
    let mut inner: Vec<Tok<S>> = body.to_vec();
    for at in nested_modules(body) {
        if let Tok::Group { delim: Delim::Brace, inner: nested, span } = &body[at] {
            let rewritten = with_launchers(nested, false, errors);
            inner[at] = Tok::Group { delim: Delim::Brace, inner: rewritten, span: *span };
        }
    }
    if kernels.is_empty() && !always {
        return inner;
    }
    let launch_mod = fill(
        "#[doc = \"Typed launchers for this module's kernels, generated by `#[cuda_module]`: \
          `launch::k(&module, &stream, config, args..)`. Generic kernels are instantiated by \
          inference from the arguments.\"]
        pub mod launch {
            #[allow(unused_imports)]
            use super::*;
            #launchers
        }",
        &[("launchers", launchers)],
    );
    inner.extend(launch_mod);
    inner
}

/// The positions of the bodies of the inline modules declared in `body`
/// (`ATTRS VIS mod NAME { .. }`) whose attributes do not include
/// `#[cuda_module]`.
fn nested_modules<S: Copy>(body: Toks<'_, S>) -> Vec<usize> {
    let mut found = Vec::new();
    for i in 0..body.len() {
        let is_module = body[i].is_ident("mod")
            && matches!(body.get(i + 1), Some(Tok::Ident { .. }))
            && body.get(i + 2).is_some_and(|t| t.group_with(Delim::Brace).is_some());
        if !is_module {
            continue;
        }
        // Back over the visibility and the attributes.
        let mut j = i;
        if j >= 1 && body[j - 1].group_with(Delim::Paren).is_some() && j >= 2 && body[j - 2].is_ident("pub") {
            j -= 2;
        } else if j >= 1 && body[j - 1].is_ident("pub") {
            j -= 1;
        }
        let mut own_attribute = false;
        while j >= 2 && body[j - 2].is_punct('#') {
            let Some(attr) = body[j - 1].group_with(Delim::Bracket) else { break };
            own_attribute |= attr.last().is_some_and(|t| t.is_ident("cuda_module"));
            j -= 2;
        }
        if !own_attribute {
            found.push(i + 2);
        }
    }
    found
}

/// A run of tokens.
type Toks<'t, S> = &'t [Tok<S>];

/// `ATTRS VIS mod NAME { BODY }`: the tokens before the body, the body and its span.
fn split_module<S: Copy>(item: Toks<'_, S>) -> Option<(Toks<'_, S>, Toks<'_, S>, S)> {
    let (last, head) = item.split_last()?;
    let body = last.group_with(Delim::Brace)?;
    match head {
        [.., kw, Tok::Ident { .. }] if kw.is_ident("mod") => Some((head, body, last.span())),
        _ => None,
    }
}

/// Whether the attribute inside `#[..]` is `kernel` / `path::kernel`, with
/// its arguments (the contents of `kernel(..)`).
fn kernel_attr<S: Copy>(inner: &[Tok<S>]) -> Option<&[Tok<S>]> {
    let (path, args) = match inner.split_last()? {
        (last, path) if last.group_with(Delim::Paren).is_some() => {
            (path, last.group_with(Delim::Paren).unwrap_or(&[]))
        }
        _ => (inner, &[][..]),
    };
    let is_path = path
        .iter()
        .all(|t| matches!(t, Tok::Ident { .. }) || t.is_punct(':'));
    (is_path && path.last()?.is_ident("kernel")).then_some(args)
}

/// The `#[kernel]` functions of the module body: attribute arguments and the
/// whole item (attributes through body).
fn find_kernels<S: Copy>(body: Toks<'_, S>) -> Vec<(Toks<'_, S>, Toks<'_, S>)> {
    let mut kernels = Vec::new();
    let mut i = 0;
    while i + 1 < body.len() {
        let args = match (&body[i], body[i + 1].group_with(Delim::Bracket)) {
            (hash, Some(inner)) if hash.is_punct('#') => kernel_attr(inner),
            _ => None,
        };
        let Some(args) = args else {
            i += 1;
            continue;
        };
        // Attributes before `#[kernel]` belong to the same item.
        let mut start = i;
        while start >= 2
            && body[start - 2].is_punct('#')
            && body[start - 1].group_with(Delim::Bracket).is_some()
        {
            start -= 2;
        }
        // The item ends at the body after `fn` (or a `;`).
        let fn_at = (i..body.len()).find(|&j| body[j].is_ident("fn"));
        let end = fn_at.and_then(|f| {
            (f..body.len()).find(|&j| body[j].is_punct(';') || body[j].group_with(Delim::Brace).is_some())
        });
        let Some(end) = end else {
            break;
        };
        kernels.push((args, &body[start..=end]));
        i = end + 1;
    }
    kernels
}

/// The launcher of one kernel; nothing when `#[kernel]` rejects it (it reports
/// why itself).
fn launcher<S: SourceSpan>(attr_args: &[Tok<S>], item: &[Tok<S>]) -> Result<Vec<Tok<S>>, Vec<Error<S>>> {
    if kernel::expand(attr_args, item).is_err() {
        return Ok(Vec::new());
    }
    let Ok(item) = parse_fn(item, USAGE) else {
        return Ok(Vec::new());
    };
    let mut scratch = Vec::new();
    let generics = parse_generics(item.generic_params(), &mut scratch);
    let params = parse_params(&item, &mut scratch);
    if !scratch.is_empty() {
        return Ok(Vec::new());
    }
    let kernel_name = item.name.ident_name().expect("parse_fn checked the name");
    if params.len() > MAX_PARAMS {
        return Err(vec![Error::at(
            item.name.span(),
            format!(
                "`#[cuda_module]` writes launchers for kernels of at most {MAX_PARAMS} parameters; \
                 `{kernel_name}` has {}: group parameters into a `#[derive(Clone, Copy)]` struct",
                params.len()
            ),
        )]);
    }
    let mut launcher_params = Vec::new();
    let mut names = Vec::new();
    for (index, param) in params.iter().enumerate() {
        let name = match simple_name(&param.pattern) {
            Some(name) if !RESERVED.contains(&name) => name.to_string(),
            _ => format!("arg{index}"),
        };
        let name = vec![Tok::ident(&name, S::call_site())];
        let mut lifetimes = Vec::new();
        let wire = name_elided_lifetimes(entry_param_type(&param.ty), &mut lifetimes);
        launcher_params.push(fill(
            "#name: impl #binder ::cuda_host::arg::KernelArg<#wire>",
            &[("name", name.clone()), ("binder", binder(&lifetimes)), ("wire", wire)],
        ));
        names.push(name);
    }
    let generics_tokens = item.generics.clone();
    let mut args = comma_separated(names);
    if !args.is_empty() {
        args.push(Tok::Punct { ch: ',', joint: false, span: S::call_site() });
    }
    let cfgs = item.cfg_attrs().flat_map(|attr| attr.iter().cloned()).collect();
    let doc = format!(
        "Launches the kernel [`{}`](super::{}) (see `#[cuda_module]`).",
        kernel_name.trim_start_matches("r#"),
        kernel_name
    );
    Ok(fill(
        "#cfgs
        #[doc = #doc]
        #[allow(clippy::too_many_arguments, non_snake_case)]
        #vis fn #name #generics(
            module: &::cuda_host::KernelModule,
            stream: &::cuda_core::CudaStream,
            config: impl ::cuda_host::LaunchShape,
            #params
        ) -> ::core::result::Result<(), ::cuda_host::HostError> #where_clause {
            ::cuda_host::__private::#launch(module, stream, config, super::#entry #turbofish, (#args))
        }",
        &[
            ("cfgs", cfgs),
            ("doc", vec![Tok::Lit { text: format!("{doc:?}"), span: S::call_site() }]),
            ("vis", launcher_vis(&item.vis)),
            ("name", vec![item.name.clone()]),
            ("generics", generics_tokens),
            ("params", comma_separated(launcher_params)),
            ("where_clause", item.where_clause.clone()),
            ("launch", vec![Tok::ident(&format!("launch{}", params.len()), S::call_site())]),
            ("entry", vec![Tok::ident(&kernel::entry_name(kernel_name), item.name.span())]),
            ("turbofish", turbofish(&generics)),
            ("args", args),
        ],
    ))
}

/// `x`, `mut x`, `ref x`: the binding's name; None for other patterns.
fn simple_name<S: Copy>(pattern: &[Tok<S>]) -> Option<&str> {
    let mut pattern = crate::tokens::unwrap_invisible(pattern);
    while let [first, rest @ ..] = pattern {
        if !(first.is_ident("mut") || first.is_ident("ref")) || rest.is_empty() {
            break;
        }
        pattern = rest;
    }
    match pattern {
        [Tok::Ident { name, .. }] if name != "_" => Some(name),
        _ => None,
    }
}

/// Replaces each `'_` in `ty` (nested groups included) by a fresh lifetime
/// `'__oxide_lN`, whose name is appended to `lifetimes`.
fn name_elided_lifetimes<S: SourceSpan>(ty: Vec<Tok<S>>, lifetimes: &mut Vec<String>) -> Vec<Tok<S>> {
    let mut out: Vec<Tok<S>> = Vec::with_capacity(ty.len());
    for tok in ty {
        match tok {
            Tok::Ident { ref name, span } if name == "_" && out.last().is_some_and(|t| t.is_punct('\'')) => {
                let fresh = format!("__oxide_l{}", lifetimes.len());
                out.push(Tok::ident(&fresh, span));
                lifetimes.push(fresh);
            }
            Tok::Group { delim, inner, span } => out.push(Tok::Group {
                delim,
                inner: name_elided_lifetimes(inner, lifetimes),
                span,
            }),
            other => out.push(other),
        }
    }
    out
}

/// `for<'__oxide_l0, ..>` binding the lifetimes that replaced `'_`, or nothing.
fn binder<S: SourceSpan>(lifetimes: &[String]) -> Vec<Tok<S>> {
    if lifetimes.is_empty() {
        return Vec::new();
    }
    let items = lifetimes
        .iter()
        .map(|name| {
            vec![
                Tok::Punct { ch: '\'', joint: true, span: S::call_site() },
                Tok::ident(name, S::call_site()),
            ]
        })
        .collect();
    fill("for<#items>", &[("items", comma_separated(items))])
}

/// The launcher sits one module deeper than the kernel; this visibility
/// reaches as far as the kernel's: private → `pub(super)`, `pub(super)` →
/// `pub(in super::super)`, `pub(in super::..)` → one more `super`.
fn launcher_vis<S: SourceSpan>(vis: &[Tok<S>]) -> Vec<Tok<S>> {
    let restriction = match vis {
        [] => return fill("pub(super)", &[]),
        [_, group] => group.group_with(Delim::Paren),
        _ => None,
    };
    match restriction {
        Some([word]) if word.is_ident("self") => fill("pub(super)", &[]),
        Some([word]) if word.is_ident("super") => fill("pub(in super::super)", &[]),
        Some([kw, path @ ..]) if kw.is_ident("in") && path.first().is_some_and(|t| t.is_ident("super") || t.is_ident("self")) => {
            let path = match path {
                [first, _, _, rest @ ..] if first.is_ident("self") => rest.to_vec(),
                _ => path.to_vec(),
            };
            if path.is_empty() {
                fill("pub(super)", &[])
            } else {
                fill("pub(in super::#path)", &[("path", path)])
            }
        }
        _ => vis.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex;
    use crate::tokens::render_plain;

    fn expand_ok(src: &str) -> String {
        match expand(&[], &lex(src)) {
            Ok(tokens) => render_plain(&tokens),
            Err(errors) => panic!("unexpected errors: {errors:#?}"),
        }
    }

    fn plain(src: &str) -> String {
        render_plain(&lex(src))
    }

    #[test]
    fn scale_launcher() {
        let got = expand_ok(
            "pub mod kernels { use x::*; #[kernel] pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) { body(); } }",
        );
        let want = plain(
            "pub fn scale(\
                module: &::cuda_host::KernelModule, stream: &::cuda_core::CudaStream, config: impl ::cuda_host::LaunchShape, \
                input: impl for<'__oxide_l0> ::cuda_host::arg::KernelArg<::cuda_device::__private::SliceParam<'__oxide_l0, f32>>, \
                factor: impl ::cuda_host::arg::KernelArg<f32>, \
                out: impl ::cuda_host::arg::KernelArg<DisjointSlice<f32>>\
            ) -> ::core::result::Result<(), ::cuda_host::HostError> {\
                ::cuda_host::__private::launch3(module, stream, config, super::__oxide_kernel_entry_scale, (input, factor, out,))\
            }",
        );
        assert!(got.contains(&want), "{got}");
        assert!(got.starts_with(&plain("pub mod kernels")), "{got}");
        assert!(got.contains(&plain("use x::*; #[kernel] pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) { body(); }")), "{got}");
        assert!(got.contains(&plain("pub mod launch")), "{got}");
        assert!(got.contains(&plain("#[allow(unused_imports)] use super::*;")), "{got}");
    }

    #[test]
    fn generic_launcher_keeps_generics_and_where_clause() {
        let got = expand_ok(
            "mod k { #[cuda_device::kernel] #[cfg(x)] pub(crate) fn map<'a, T, const N: usize>(x: &'a [T], y: &mut [T], config: [T; N]) where T: Copy {} }",
        );
        for want in [
            "#[cfg(x)]",
            "pub(crate) fn map<'a, T, const N: usize>",
            "x: impl ::cuda_host::arg::KernelArg<::cuda_device::__private::SliceParam<'a, T>>",
            "y: impl for<'__oxide_l0> ::cuda_host::arg::KernelArg<::cuda_device::__private::SliceMutParam<'__oxide_l0, T>>",
            "arg2: impl ::cuda_host::arg::KernelArg<[T; N]>",
            "-> ::core::result::Result<(), ::cuda_host::HostError> where T: Copy",
            "launch3(module, stream, config, super::__oxide_kernel_entry_map::<T, { N }>, (x, y, arg2,))",
        ] {
            assert!(got.contains(&plain(want)), "{want}\n{got}");
        }
    }

    #[test]
    fn launchers_up_to_the_most_arguments_and_an_error_past_them() {
        let params = |n: usize| (0..n).map(|i| format!("p{i}: u32")).collect::<Vec<_>>().join(", ");
        let got = expand_ok(&format!("mod k {{ #[kernel] pub fn wide({}) {{}} }}", params(MAX_PARAMS)));
        assert!(got.contains(&format!("launch{MAX_PARAMS}")), "{got}");
        let src = format!("mod k {{ #[kernel] pub fn wider({}) {{}} }}", params(MAX_PARAMS + 1));
        let Err(errors) = expand(&[], &lex(&src)) else { panic!("a launcher past the most arguments") };
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].message.contains(&format!(
                "writes launchers for kernels of at most {MAX_PARAMS} parameters; `wider` has {}",
                MAX_PARAMS + 1
            )),
            "{}",
            errors[0].message
        );
    }

    #[test]
    fn visibility_reaches_as_far_as_the_kernel() {
        for (vis, want) in [
            ("", "pub(super)"),
            ("pub", "pub"),
            ("pub(crate)", "pub(crate)"),
            ("pub(self)", "pub(super)"),
            ("pub(super)", "pub(in super::super)"),
            ("pub(in crate::a)", "pub(in crate::a)"),
            ("pub(in super::a)", "pub(in super::super::a)"),
        ] {
            let got = render_plain(&launcher_vis(&lex(vis)));
            assert_eq!(got, plain(want), "{vis}");
        }
    }

    #[test]
    fn nested_modules_with_kernels_get_their_own_launchers() {
        let got = expand_ok(
            "mod kernels { #[kernel] pub fn a() {} pub mod inner { #[kernel] pub fn b() {} pub(crate) mod deeper { #[kernel] pub fn c() {} } } \
             mod plain { fn helper() {} } #[cuda_module] pub mod own { #[kernel] pub fn d() {} } }",
        );
        // One `launch` for kernels, inner and deeper each; none for plain
        // (no kernels) or own (its own attribute writes it).
        assert_eq!(got.matches("pub mod launch").count(), 3, "{got}");
        assert!(got.contains(&plain("mod plain { fn helper() {} }")), "{got}");
        assert!(got.contains(&plain("#[cuda_module] pub mod own { #[kernel] pub fn d() {} }")), "{got}");
        for (kernel, entry) in [("b", "__oxide_kernel_entry_b"), ("c", "__oxide_kernel_entry_c")] {
            assert!(got.contains(&plain(&format!("pub fn {kernel}"))), "{got}");
            assert!(got.contains(&plain(&format!("super::{entry}"))), "{got}");
        }
    }

    #[test]
    fn no_parameters_and_non_kernels() {
        let got = expand_ok("mod k { fn helper() {} #[device] fn d() {} #[kernel] fn tick() {} struct S { a: u8 } }");
        assert!(
            got.contains(&plain("pub(super) fn tick(module: &::cuda_host::KernelModule, stream: &::cuda_core::CudaStream, config: impl ::cuda_host::LaunchShape,) -> ::core::result::Result<(), ::cuda_host::HostError> { ::cuda_host::__private::launch0(module, stream, config, super::__oxide_kernel_entry_tick, ()) }")),
            "{got}"
        );
        assert!(got.contains(&plain("fn helper() {}")), "{got}");
        assert_eq!(got.matches("module :").count(), 1, "{got}");
    }

    #[test]
    fn rejected_kernels_get_no_launcher() {
        let got = expand_ok("mod k { #[kernel] fn bad(v: Vec<u8>) {} }");
        assert!(!got.contains("module :"), "{got}");
    }

    #[test]
    fn rejects_non_modules_and_arguments() {
        assert!(expand(&[], &lex("fn f() {}")).is_err());
        assert!(expand(&[], &lex("mod k;")).is_err());
        assert!(expand(&lex("x"), &lex("mod k {}")).is_err());
    }
}
