//! `#[kernel]`: checking a kernel's signature and writing its entry wrapper
//! (docs/ABI.md §2).

use crate::position::Enclosing;
use crate::signature::{parse_fn, FnItem};
use crate::split::split_list;
use crate::template::fill;
use crate::tokens::{
    is_pair, is_single_colon, render, unwrap_invisible, Delim, Error, SourceSpan, Tok,
};

/// The prefix of entry wrapper names (Abi.def's KernelEntryPrefix); the device
/// linker and `cuda_launch!` rely on it.
pub const ENTRY_PREFIX: &str = crate::abi::KERNEL_ENTRY_PREFIX;

const USAGE: &str =
    "`#[kernel]` applies to a free function: `#[kernel] pub fn name(param: Type, ..) { .. }`";

/// Checks the kernel `item` (with attribute arguments `args`) and returns its
/// entry wrapper (and, for a kernel without type or const parameters, the
/// static that keeps it compiled), or every problem found.
pub fn expand<S: SourceSpan>(
    args: &[Tok<S>],
    item: &[Tok<S>],
) -> Result<Vec<Tok<S>>, Vec<Error<S>>> {
    let mut errors = check_args(args);
    let item = match parse_fn(item, USAGE) {
        Ok(item) => item,
        Err(error) => {
            errors.push(error);
            return Err(errors);
        }
    };
    errors.extend(check_outline(&item));
    let generics = parse_generics(item.generic_params(), &mut errors);
    let params = parse_params(&item, &mut errors);
    let mut bounds = launch_bounds_call(args);
    bounds.extend(cluster_dims_call(args));
    if errors.is_empty() {
        let mut out = entry_wrapper(&item, &generics, &params, bounds);
        out.extend(keep_entry(&item, &generics));
        out.extend(kernel_name_type(&item, &generics, &params));
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Refuses a kernel written among the associated items of an `impl` or a
/// `trait` (`enclosing`, found by [`crate::position`]): its launch handle is
/// a type named like it, which only a module or a block can hold, and a
/// kernel has no receiver the GPU could be handed.
pub fn check_enclosing<S: SourceSpan>(item: &[Tok<S>], enclosing: Enclosing) -> Result<(), Vec<Error<S>>> {
    let block = match enclosing {
        Enclosing::ItemScope => return Ok(()),
        Enclosing::Impl => "an `impl` block",
        Enclosing::Trait => "a `trait`",
    };
    let item = parse_fn(item, USAGE).map_err(|e| vec![e])?;
    let name = item.name.ident_name().unwrap_or("kernel");
    Err(vec![Error::at(
        item.name.span(),
        format!(
            "a `#[kernel]` must be a free function, but `{name}` is in {block}: a kernel is launched by its \
             own name (`cuda_launch! {{ kernel: {name}, .. }}`), which `#[kernel]` gives a type that only a \
             module can hold; move `{name}` out of the block (into the same module, or a `mod` of its own)"
        ),
    )])
}

/// The associated constant that holds a kernel's entry wrapper, on the type
/// named like the kernel ([`kernel_name_type`]): `cuda_launch!` reaches the
/// entry of `kernel: path::scale` as `path::scale::__oxide_entry`.
pub const ENTRY_CONST: &str = "__oxide_entry";

/// The name of the entry wrapper of kernel `name` (`r#` prefixes dropped).
pub fn entry_name(name: &str) -> String {
    format!("{ENTRY_PREFIX}{}", name.trim_start_matches("r#"))
}

// ---------------------------------------------------------------------------
// Checks

/// `#[kernel]` takes two optional arguments, `launch_bounds(max_threads[, min_blocks])`
/// and `cluster_dims(x[, y[, z]])`.
fn check_args<S: SourceSpan>(args: &[Tok<S>]) -> Vec<Error<S>> {
    split_list(args)
        .into_iter()
        .filter(|arg| !is_launch_bounds(arg) && !is_cluster_dims(arg))
        .map(|arg| {
            let shown = match arg.first() {
                Some(Tok::Ident { name, .. }) => name.clone(),
                _ => render(arg),
            };
            Error::spanning(
                arg,
                format!(
                    "unknown `#[kernel]` argument `{shown}`; write plain `#[kernel]` \
                     or `#[kernel(launch_bounds(max_threads, min_blocks), cluster_dims(x, y, z))]` \
                     (the only arguments: `launch_bounds(..)`, `cluster_dims(..)`)"
                ),
            )
        })
        .collect()
}

/// `launch_bounds(..)`: `.maxntid` (and `.minnctapersm`) for the PTX entry.
fn is_launch_bounds<S: Copy>(arg: &[Tok<S>]) -> bool {
    matches!(arg, [name, group] if name.is_ident("launch_bounds") && group.group_with(Delim::Paren).is_some())
}

/// `cluster_dims(..)`: `.reqnctapercluster` for the PTX entry.
fn is_cluster_dims<S: Copy>(arg: &[Tok<S>]) -> bool {
    matches!(arg, [name, group] if name.is_ident("cluster_dims") && group.group_with(Delim::Paren).is_some())
}

/// Qualifiers, return type and body.
fn check_outline<S: SourceSpan>(item: &FnItem<S>) -> Vec<Error<S>> {
    let mut errors = Vec::new();
    if let Some(tok) = item.qualifier("async") {
        errors.push(Error::at(
            tok.span(),
            "a `#[kernel]` cannot be `async fn`: it runs to completion on the GPU; remove `async` \
             (to overlap launches with host work, use cuda-async's DeviceOperation)",
        ));
    }
    if let Some(tok) = item.qualifier("const") {
        errors.push(Error::at(
            tok.span(),
            "a `#[kernel]` cannot be `const fn`: it runs on the GPU when launched, not at compile time; remove `const`",
        ));
    }
    let ret = item.return_type();
    if !ret.is_empty() && !is_unit(ret) {
        errors.push(Error::spanning(
            ret,
            format!(
                "a `#[kernel]` cannot return a value (found `-> {}`); remove the return type and \
                 write results through an output parameter such as `mut out: DisjointSlice<T>`",
                render(ret)
            ),
        ));
    }
    if item.body.is_none() {
        errors.push(Error::at(
            item.name.span(),
            "a `#[kernel]` needs a body: `{ .. }`",
        ));
    }
    errors
}

fn is_unit<S: Copy>(ty: &[Tok<S>]) -> bool {
    matches!(unwrap_invisible(ty), [group] if group.group_with(Delim::Paren).is_some_and(|inner| inner.is_empty()))
}

// ---------------------------------------------------------------------------
// Generic parameters

/// What a generic parameter declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenericKind {
    Lifetime,
    Type,
    Const,
}

/// One generic parameter: its kind and name.
#[derive(Debug)]
pub struct GenericParam<S> {
    pub kind: GenericKind,
    pub name: Tok<S>,
}

/// Parses the generic parameters, reporting defaults and anything unparsable.
pub(crate) fn parse_generics<S: SourceSpan>(
    tokens: &[Tok<S>],
    errors: &mut Vec<Error<S>>,
) -> Vec<GenericParam<S>> {
    let mut params = Vec::new();
    for param in split_list(tokens).into_iter().map(skip_attributes) {
        let parsed = match param {
            [] => continue,
            [quote, name, ..] if quote.is_punct('\'') => Some((GenericKind::Lifetime, name)),
            [kw, name @ Tok::Ident { .. }, ..] if kw.is_ident("const") => {
                Some((GenericKind::Const, name))
            }
            [name @ Tok::Ident { .. }, ..] => Some((GenericKind::Type, name)),
            _ => None,
        };
        let Some((kind, name)) = parsed else {
            errors.push(Error::spanning(
                param,
                format!("cannot read the generic parameter `{}`", render(param)),
            ));
            continue;
        };
        if let Some(eq) = top_level_position(param, |t| t.is_punct('=')) {
            errors.push(Error::spanning(
                &param[eq..],
                format!(
                    "generic parameter `{}` of a `#[kernel]` cannot have a default; remove `{}`",
                    render(std::slice::from_ref(name)),
                    render(&param[eq..])
                ),
            ));
        }
        params.push(GenericParam {
            kind,
            name: name.clone(),
        });
    }
    params
}

/// The index of the first token outside angle brackets that satisfies `pred`.
fn top_level_position<S: Copy>(tokens: &[Tok<S>], pred: impl Fn(&Tok<S>) -> bool) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        if is_pair(tokens, i, '-', '>') {
            i += 2;
            continue;
        }
        let tok = &tokens[i];
        if tok.is_punct('<') {
            depth += 1;
        } else if tok.is_punct('>') {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && pred(tok) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Drops leading `#[..]` attributes.
pub(crate) fn skip_attributes<S: Copy>(mut tokens: &[Tok<S>]) -> &[Tok<S>] {
    while let [hash, group, rest @ ..] = tokens {
        if !hash.is_punct('#') || group.group_with(Delim::Bracket).is_none() {
            break;
        }
        tokens = rest;
    }
    tokens
}

// ---------------------------------------------------------------------------
// Parameters

/// A kernel parameter that passed the checks.
#[derive(Debug)]
pub struct Param<S> {
    /// The parameter's pattern (`mut out`, `(a, b)`), as written.
    pub pattern: Vec<Tok<S>>,
    /// The parameter's type, as written.
    pub ty: Vec<Tok<S>>,
}

/// Parses the parameters, reporting `self`, varargs and types that cannot
/// cross to the GPU.
pub(crate) fn parse_params<S: SourceSpan>(item: &FnItem<S>, errors: &mut Vec<Error<S>>) -> Vec<Param<S>> {
    let inner = item
        .params
        .group_with(Delim::Paren)
        .expect("parse_fn checked the parameter list");
    let mut params = Vec::new();
    for param in split_list(inner).into_iter().map(skip_attributes) {
        if param.is_empty() {
            continue;
        }
        match parse_param(param) {
            Ok(parsed) => params.push(parsed),
            Err(error) => errors.push(error),
        }
    }
    params
}

fn parse_param<S: SourceSpan>(param: &[Tok<S>]) -> Result<Param<S>, Error<S>> {
    if has_ellipsis(param) {
        return Err(Error::spanning(
            param,
            "a `#[kernel]` cannot be variadic (`...`); pass the values in a slice `&[T]` instead",
        ));
    }
    let colon = (0..param.len()).find(|&i| is_single_colon(param, i));
    let pattern = &param[..colon.unwrap_or(param.len())];
    if unwrap_invisible(pattern).iter().any(|t| t.is_ident("self")) {
        return Err(Error::spanning(
            pattern,
            "a `#[kernel]` cannot take `self`: kernels are free functions; \
             move it out of the `impl` block and pass the value as an ordinary parameter",
        ));
    }
    let Some(colon) = colon else {
        return Err(Error::spanning(
            param,
            format!(
                "kernel parameter `{}` needs a type: `name: Type`",
                render(param)
            ),
        ));
    };
    let ty = &param[colon + 1..];
    if ty.is_empty() {
        return Err(Error::at(
            param[colon].span(),
            "expected the parameter's type after `:`",
        ));
    }
    check_param_type(&param_name(pattern), ty)?;
    Ok(Param {
        pattern: pattern.to_vec(),
        ty: ty.to_vec(),
    })
}

/// Three dots in a row: a C-variadic parameter.
fn has_ellipsis<S: Copy>(param: &[Tok<S>]) -> bool {
    param.windows(3).any(|w| w.iter().all(|t| t.is_punct('.')))
}

/// The name shown in messages: the pattern without `mut`/`ref`.
fn param_name<S: Copy>(pattern: &[Tok<S>]) -> String {
    let mut pattern = unwrap_invisible(pattern);
    while let [first, rest @ ..] = pattern {
        if !(first.is_ident("mut") || first.is_ident("ref")) || rest.is_empty() {
            break;
        }
        pattern = rest;
    }
    render(pattern)
}

// ---------------------------------------------------------------------------
// Parameter types

/// Why a type cannot be a kernel parameter.
#[derive(Debug, PartialEq, Eq)]
enum HostOnly {
    /// `&T` / `&mut T` where `T` is not a slice.
    Reference,
    /// `&str`.
    Str,
    /// `Box`, `Vec`, `String`, `Rc`, `Arc`.
    Owner(&'static str),
    /// `impl Trait`.
    ImplTrait,
}

/// Smart pointers and collections owning host memory.
const HOST_OWNERS: [&str; 5] = ["Box", "Vec", "String", "Rc", "Arc"];

/// Rejects parameter types that cannot cross to the GPU. Slices (`&[T]`,
/// `&mut [T]`) and by-value types are accepted; tuples, arrays and slice
/// elements are checked recursively.
fn check_param_type<S: SourceSpan>(name: &str, ty: &[Tok<S>]) -> Result<(), Error<S>> {
    let Some(problem) = host_only(ty) else {
        return Ok(());
    };
    let shown = render(ty);
    let message = match problem {
        HostOnly::Reference => format!(
            "kernel parameter `{name}` has type `{shown}`: host references cannot cross to the GPU; \
             pass the value by copy, or a slice `&[T]` backed by a DeviceBuffer"
        ),
        HostOnly::Str => format!(
            "kernel parameter `{name}` has type `{shown}`: host references cannot cross to the GPU, \
             and `str` is host text; copy the bytes into a DeviceBuffer and pass a slice `&[u8]`"
        ),
        HostOnly::Owner("String") => format!(
            "kernel parameter `{name}` has type `{shown}`: a `String` lives in host memory, which the GPU \
             cannot reach; copy the bytes into a DeviceBuffer and pass a slice `&[u8]`"
        ),
        HostOnly::Owner(owner) => format!(
            "kernel parameter `{name}` has type `{shown}`: a `{owner}` points into host memory, which the GPU \
             cannot reach; copy the data into a DeviceBuffer and pass a slice `&[T]` \
             (or a `DisjointSlice<T>` for results)"
        ),
        HostOnly::ImplTrait => format!(
            "kernel parameter `{name}` has type `{shown}`: `impl Trait` cannot be a kernel parameter, \
             because the launch must name every type; name the generic parameter instead{}",
            generic_suggestion(name, ty)
        ),
    };
    Err(Error::spanning(ty, message))
}

/// For a type `impl Bounds`, the end of the message suggesting
/// `fn kernel<F: Bounds>(.., name: F)`; otherwise nothing.
fn generic_suggestion<S: Copy>(name: &str, ty: &[Tok<S>]) -> String {
    match unwrap_invisible(ty) {
        [kw, bounds @ ..] if kw.is_ident("impl") && !bounds.is_empty() => {
            let bounds = render(bounds);
            let generic = if bounds.starts_with("Fn") { "F" } else { "T" };
            format!(": `fn kernel<{generic}: {bounds}>(.., {name}: {generic})`")
        }
        _ => String::new(),
    }
}

/// The first reason `ty` cannot be a kernel parameter, if any.
fn host_only<S: Copy>(ty: &[Tok<S>]) -> Option<HostOnly> {
    if contains_impl(ty) {
        return Some(HostOnly::ImplTrait);
    }
    let ty = unwrap_invisible(ty);
    if ty.first()?.is_punct('&') {
        return reference_problem(&ty[1..]);
    }
    match ty.first()?.group() {
        Some((Delim::Paren, tuple)) if ty.len() == 1 => {
            split_list(tuple).into_iter().find_map(host_only)
        }
        Some((Delim::Bracket, array)) if ty.len() == 1 => host_only(element_type(array)),
        _ => owner_problem(ty),
    }
}

/// `&'a mut REFERENT`: only slices may be passed by reference.
fn reference_problem<S: Copy>(mut referent: &[Tok<S>]) -> Option<HostOnly> {
    if let [quote, _lifetime, rest @ ..] = referent {
        if quote.is_punct('\'') {
            referent = rest;
        }
    }
    if let [kw, rest @ ..] = referent {
        if kw.is_ident("mut") {
            referent = rest;
        }
    }
    match unwrap_invisible(referent) {
        [only] if only.is_ident("str") => Some(HostOnly::Str),
        [only] => match only.group_with(Delim::Bracket) {
            Some(slice) if !is_array(slice) => host_only(element_type(slice)),
            _ => Some(HostOnly::Reference),
        },
        _ => Some(HostOnly::Reference),
    }
}

/// `T` of `[T]` or `[T; N]`.
fn element_type<S: Copy>(bracket_inner: &[Tok<S>]) -> &[Tok<S>] {
    let end = bracket_inner
        .iter()
        .position(|t| t.is_punct(';'))
        .unwrap_or(bracket_inner.len());
    &bracket_inner[..end]
}

fn is_array<S: Copy>(bracket_inner: &[Tok<S>]) -> bool {
    bracket_inner.iter().any(|t| t.is_punct(';'))
}

/// A path type whose last segment is a host owner (`Box<T>`, `std::vec::Vec<T>`).
fn owner_problem<S: Copy>(ty: &[Tok<S>]) -> Option<HostOnly> {
    let path_end = ty.iter().position(|t| t.is_punct('<')).unwrap_or(ty.len());
    let path = &ty[..path_end];
    let is_path = path
        .iter()
        .all(|t| matches!(t, Tok::Ident { .. }) || t.is_punct(':'));
    let last = path.iter().rev().find_map(Tok::ident_name)?;
    let owner = HOST_OWNERS.iter().find(|o| **o == last)?;
    is_path.then_some(HostOnly::Owner(owner))
}

/// Whether `impl` appears anywhere in the type, nested groups included.
fn contains_impl<S: Copy>(ty: &[Tok<S>]) -> bool {
    ty.iter().any(|t| match t {
        Tok::Ident { name, .. } => name == "impl",
        Tok::Group { inner, .. } => contains_impl(inner),
        _ => false,
    })
}

/// `::cuda_device::__private::launch_bounds(MAX as u32, MIN as u32);` for a
/// `launch_bounds(MAX[, MIN])` argument (the device linker reads the
/// constants from the wrapper, like the parameter layouts), or nothing.
fn launch_bounds_call<S: SourceSpan>(args: &[Tok<S>]) -> Vec<Tok<S>> {
    let Some(arg) = split_list(args).into_iter().find(|arg| is_launch_bounds(arg)) else {
        return Vec::new();
    };
    let inner = match &arg[1] {
        Tok::Group { inner, .. } => inner.clone(),
        _ => return Vec::new(),
    };
    let mut values = split_list(&inner).into_iter().map(|v| v.to_vec());
    let max = values.next().unwrap_or_default();
    let min = values.next().unwrap_or_else(|| vec![Tok::Lit { text: "0".into(), span: S::call_site() }]);
    fill(
        "::cuda_device::__private::launch_bounds((#max) as u32, (#min) as u32);",
        &[("max", max), ("min", min)],
    )
}

/// `::cuda_device::__private::cluster_dims(X as u32, Y as u32, Z as u32);`
/// for a `cluster_dims(X[, Y[, Z]])` argument (missing dimensions are 1; the
/// device linker reads and checks the constants), or nothing.
fn cluster_dims_call<S: SourceSpan>(args: &[Tok<S>]) -> Vec<Tok<S>> {
    let Some(arg) = split_list(args).into_iter().find(|arg| is_cluster_dims(arg)) else {
        return Vec::new();
    };
    let inner = match &arg[1] {
        Tok::Group { inner, .. } => inner.clone(),
        _ => return Vec::new(),
    };
    let one = || vec![Tok::Lit { text: "1".into(), span: S::call_site() }];
    let mut values = split_list(&inner).into_iter().map(|v| v.to_vec());
    let x = values.next().unwrap_or_else(one);
    let y = values.next().unwrap_or_else(one);
    let z = values.next().unwrap_or_else(one);
    fill(
        "::cuda_device::__private::cluster_dims((#x) as u32, (#y) as u32, (#z) as u32);",
        &[("x", x), ("y", y), ("z", z)],
    )
}

// ---------------------------------------------------------------------------
// The entry wrapper

/// Writes the entry wrapper of docs/ABI.md §2: same generics, visibility and
/// where clause as the kernel; one `*const T` parameter per kernel parameter;
/// one `param_layout` call per parameter, then the call of the kernel.
fn entry_wrapper<S: SourceSpan>(
    item: &FnItem<S>,
    generics: &[GenericParam<S>],
    params: &[Param<S>],
    bounds: Vec<Tok<S>>,
) -> Vec<Tok<S>> {
    let kernel_name = item.name.ident_name().expect("parse_fn checked the name");
    let mut wrapper_params = Vec::new();
    let mut layouts = Vec::new();
    let mut reads = Vec::new();
    let mut exclusive = Vec::new();
    for (index, param) in params.iter().enumerate() {
        let pointer = vec![Tok::ident(&format!("__oxide_p{index}"), S::call_site())];
        let index = vec![Tok::Lit {
            text: format!("{index}u32"),
            span: S::call_site(),
        }];
        let bindings = [("p", pointer), ("index", index), ("ty", param.ty.clone())];
        let wire = entry_param_type(&param.ty);
        wrapper_params.push(fill("#p: *const #wire", &[("p", bindings[0].1.clone()), ("wire", wire)]));
        // `&[T]` / `&mut [T]` cross as SliceParam / SliceMutParam (same
        // layout; docs/ABI.md §2), read back as the kernel's type.
        if slice_wire_type(&param.ty).is_some() {
            reads.push(fill("::core::ptr::read(#p.cast())", &bindings));
            if is_mut_reference(&param.ty) {
                exclusive.extend(single_thread_check(kernel_name, &param_name(&param.pattern), &render(&param.ty)));
            }
        } else {
            reads.push(fill("::core::ptr::read(#p)", &bindings));
        }
        layouts.extend(fill(
            "::cuda_device::__private::param_layout(\
                #index, \
                const { ::core::mem::size_of::<#ty>() }, \
                const { ::core::mem::align_of::<#ty>() }\
             );",
            &bindings,
        ));
    }
    let cfgs = item
        .cfg_attrs()
        .flat_map(|attr| attr.iter().cloned())
        .collect();
    fill(
        "#cfgs
        #[doc(hidden)]
        #[inline(never)]
        #[allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]
        #vis unsafe fn #entry #generics(#params) #where_clause {
            unsafe {
                #bounds
                #layouts
                ::cuda_device::__private::entry_identity(
                    ::core::any::type_name::<#kernel #turbofish> as fn() -> &'static str as *const u8
                );
                #exclusive
                #kernel #turbofish(#reads)
            }
        }",
        &[
            ("cfgs", cfgs),
            ("vis", item.vis.clone()),
            (
                "entry",
                vec![Tok::ident(&entry_name(kernel_name), item.name.span())],
            ),
            ("generics", item.generics.clone()),
            ("params", comma_separated(wrapper_params)),
            ("where_clause", item.where_clause.clone()),
            ("layouts", layouts),
            ("exclusive", exclusive),
            ("bounds", bounds),
            ("kernel", vec![item.name.clone()]),
            ("turbofish", turbofish(generics)),
            ("reads", comma_separated(reads)),
        ],
    )
}

/// A `#[used]` static holding the entry wrapper's address, so that rustc
/// compiles the entry (and the device linker sees the kernel) even when no
/// host code launches it: rustc compiles a binary's functions only as
/// something reaches them, and a kernel that is compiled only once launched
/// would hide its errors (a `vec!` in it) until then. Kernels with type or
/// const parameters have no code until an instance is launched: nothing.
fn keep_entry<S: SourceSpan>(item: &FnItem<S>, generics: &[GenericParam<S>]) -> Vec<Tok<S>> {
    if generics.iter().any(|g| !matches!(g.kind, GenericKind::Lifetime)) {
        return Vec::new();
    }
    let kernel_name = item.name.ident_name().expect("parse_fn checked the name");
    let cfgs = item.cfg_attrs().flat_map(|attr| attr.iter().cloned()).collect();
    fill(
        "#cfgs
        const _: () = {
            #[used]
            static KEEP_ENTRY: ::cuda_device::__private::KeepEntry =
                ::cuda_device::__private::KeepEntry(#entry as *const ());
        };",
        &[("cfgs", cfgs), ("entry", vec![Tok::ident(&entry_name(kernel_name), item.name.span())])],
    )
}

/// A type named like the kernel, holding the entry wrapper as the
/// associated constant [`ENTRY_CONST`]. A function lives in the value
/// namespace and a braced struct only in the type namespace, so the two
/// share the kernel's name: wherever the user can name the kernel (its
/// path, a `use` of it, a glob import, a block it is declared in), the
/// entry comes with it, and a misspelt `kernel:` is reported against the
/// user's own name instead of a generated one. Generic kernels give the
/// type their generics, so `kernel: map::<f32, _>` names
/// `map::<f32, _>::__oxide_entry`, an instance of the entry. The constant
/// is the entry itself (same address), which the launch looks up.
fn kernel_name_type<S: SourceSpan>(item: &FnItem<S>, generics: &[GenericParam<S>], params: &[Param<S>]) -> Vec<Tok<S>> {
    let kernel_name = item.name.ident_name().expect("parse_fn checked the name");
    let cfgs: Vec<Tok<S>> = item.cfg_attrs().flat_map(|attr| attr.iter().cloned()).collect();
    // The type's arguments (`<'a, T, N>`) and what its marker holds: every
    // lifetime and type parameter, through `fn() -> (..)` so that the
    // type is always Send, Sync and Copy-free of its parameters.
    let mut args = Vec::new();
    let mut phantoms = Vec::new();
    let (mut lifetimes, mut types) = (Vec::new(), Vec::new());
    for param in split_list(item.generic_params()).into_iter().map(skip_attributes) {
        match param {
            [quote, name, ..] if quote.is_punct('\'') => {
                let lifetime = vec![quote.clone(), name.clone()];
                args.push(lifetime.clone());
                phantoms.push(fill("&#lt ()", &[("lt", lifetime.clone())]));
                lifetimes.push(lifetime);
            }
            [kw, name, ..] if kw.is_ident("const") => args.push(vec![name.clone()]),
            [name, ..] => {
                args.push(vec![name.clone()]);
                phantoms.push(vec![name.clone()]);
                types.push(name.clone());
            }
            [] => {}
        }
    }
    // The entry's parameter types (`SliceParam<'a, T>`) are well-formed in
    // the entry by implied bounds; the constant's type needs them spelt out.
    let mut outlives = Vec::new();
    for ty in &types {
        for lifetime in &lifetimes {
            outlives.push(fill("#ty: #lt", &[("ty", vec![ty.clone()]), ("lt", lifetime.clone())]));
        }
    }
    let impl_where = match (item.where_clause.is_empty(), outlives.is_empty()) {
        (_, true) => item.where_clause.clone(),
        (true, false) => fill("where #bounds", &[("bounds", comma_separated(outlives))]),
        (false, false) => {
            let mut clause = item.where_clause.clone();
            if !clause.last().is_some_and(|t| t.is_punct(',')) {
                clause.push(Tok::Punct { ch: ',', joint: false, span: S::call_site() });
            }
            clause.extend(comma_separated(outlives));
            clause
        }
    };
    let type_args = if args.is_empty() { Vec::new() } else { fill("<#args>", &[("args", comma_separated(args))]) };
    let marker = if phantoms.is_empty() {
        Vec::new()
    } else {
        fill(
            "__oxide_marker: ::core::marker::PhantomData<fn() -> (#phantoms,)>",
            &[("phantoms", comma_separated(phantoms))],
        )
    };
    let wires = comma_separated(
        params.iter().map(|param| fill("*const #wire", &[("wire", entry_param_type(&param.ty))])).collect(),
    );
    let doc = vec![Tok::Lit {
        text: format!("{:?}", format!("The launch handle of the kernel `{kernel_name}` (for `cuda_launch!`).")),
        span: S::call_site(),
    }];
    fill(
        "#cfgs
        #[doc = #doc]
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name #generics #where_clause { #marker }
        #cfgs
        #[allow(non_upper_case_globals, clippy::type_complexity)]
        impl #generics #name #type_args #impl_where {
            #[doc(hidden)]
            #vis const #entry_const: unsafe fn(#wires) = #entry #turbofish;
        }",
        &[
            ("cfgs", cfgs),
            ("doc", doc),
            ("vis", item.vis.clone()),
            ("name", vec![item.name.clone()]),
            ("generics", item.generics.clone()),
            ("where_clause", item.where_clause.clone()),
            ("impl_where", impl_where),
            ("marker", marker),
            ("type_args", type_args),
            ("entry_const", vec![Tok::ident(ENTRY_CONST, item.name.span())]),
            ("wires", wires),
            ("entry", vec![Tok::ident(&entry_name(kernel_name), item.name.span())]),
            ("turbofish", turbofish(generics)),
        ],
    )
}

/// Whether `ty` is `&mut …` (`&'a mut [T]` included).
fn is_mut_reference<S: SourceSpan>(ty: &[Tok<S>]) -> bool {
    let ty = unwrap_invisible(ty);
    let Some((amp, mut rest)) = ty.split_first() else { return false };
    if !amp.is_punct('&') {
        return false;
    }
    if let [quote, _, tail @ ..] = rest {
        if quote.is_punct('\'') {
            rest = tail;
        }
    }
    matches!(rest.first(), Some(kw) if kw.is_ident("mut"))
}

/// The entry wrapper's refusal of a launch of more than one thread for a
/// kernel with a `&mut` parameter: every thread would hold the same `&mut`
/// at once (two aliasing `&mut`, and a data race as soon as two write).
/// A panic with a literal message, so the GPU reports it word for word.
fn single_thread_check<S: SourceSpan>(kernel: &str, param: &str, ty: &str) -> Vec<Tok<S>> {
    let message = format!(
        "kernel `{kernel}` takes `{param}: {ty}`, which every thread of a launch would hold at once: \
         launch it with one thread (grid and block (1, 1, 1)), or write through a DisjointSlice (one \
         element per thread) or atomics"
    )
    .replace('{', "{{")
    .replace('}', "}}");
    let literal = vec![Tok::Lit { text: format!("{message:?}"), span: S::call_site() }];
    fill(
        "if !::cuda_device::__private::single_thread_launch() { ::core::panic!(#message); }",
        &[("message", literal)],
    )
}

/// The type `P` of the entry wrapper's parameter `*const P` for a kernel
/// parameter of type `ty`: the slice wire type for `&[T]` / `&mut [T]`
/// ([`slice_wire_type`]), `ty` itself otherwise. `#[cuda_module]`'s typed
/// launchers bound their arguments by `KernelArg<P>` with the same types.
pub(crate) fn entry_param_type<S: SourceSpan>(ty: &[Tok<S>]) -> Vec<Tok<S>> {
    slice_wire_type(ty).unwrap_or_else(|| ty.to_vec())
}

/// For a parameter of type `&'a [T]` (`&'a mut [T]`), the type its entry
/// wrapper takes instead: `::cuda_device::__private::SliceParam<'a, T>`
/// (`SliceMutParam`), with `'_` for an elided lifetime. None for other types.
fn slice_wire_type<S: SourceSpan>(ty: &[Tok<S>]) -> Option<Vec<Tok<S>>> {
    let ty = unwrap_invisible(ty);
    let (amp, mut rest) = ty.split_first()?;
    if !amp.is_punct('&') {
        return None;
    }
    let mut lifetime = None;
    if let [quote, name, tail @ ..] = rest {
        if quote.is_punct('\'') {
            lifetime = Some(vec![quote.clone(), name.clone()]);
            rest = tail;
        }
    }
    let mut mutable = false;
    if let [kw, tail @ ..] = rest {
        if kw.is_ident("mut") {
            mutable = true;
            rest = tail;
        }
    }
    let [slice] = unwrap_invisible(rest) else {
        return None;
    };
    let inner = slice.group_with(Delim::Bracket)?;
    if is_array(inner) {
        return None;
    }
    let lifetime = lifetime.unwrap_or_else(|| {
        vec![
            Tok::Punct { ch: '\'', joint: true, span: S::call_site() },
            Tok::ident("_", S::call_site()),
        ]
    });
    let template = if mutable {
        "::cuda_device::__private::SliceMutParam<#lt, #elem>"
    } else {
        "::cuda_device::__private::SliceParam<#lt, #elem>"
    };
    Some(fill(template, &[("lt", lifetime), ("elem", inner.to_vec())]))
}

/// `::<T, { N }>` naming the type and const parameters (lifetimes are left to
/// inference), or nothing when there are none.
pub(crate) fn turbofish<S: SourceSpan>(generics: &[GenericParam<S>]) -> Vec<Tok<S>> {
    let args: Vec<Vec<Tok<S>>> = generics
        .iter()
        .filter_map(|param| match param.kind {
            GenericKind::Lifetime => None,
            GenericKind::Type => Some(vec![param.name.clone()]),
            GenericKind::Const => Some(vec![Tok::Group {
                delim: Delim::Brace,
                inner: vec![param.name.clone()],
                span: param.name.span(),
            }]),
        })
        .collect();
    if args.is_empty() {
        return Vec::new();
    }
    fill("::<#args>", &[("args", comma_separated(args))])
}

/// Joins token sequences with commas (no trailing comma).
pub(crate) fn comma_separated<S: SourceSpan>(items: Vec<Vec<Tok<S>>>) -> Vec<Tok<S>> {
    let mut out = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(Tok::Punct {
                ch: ',',
                joint: false,
                span: S::call_site(),
            });
        }
        out.extend(crate::tokens::detach_end(item));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::{lex, TestSpan};
    use crate::tokens::render_plain;

    fn expand_ok(args: &str, src: &str) -> String {
        match expand(&lex(args), &lex(src)) {
            Ok(tokens) => render_plain(&tokens),
            Err(errors) => panic!("unexpected errors: {errors:#?}"),
        }
    }

    fn plain(src: &str) -> String {
        render_plain(&lex(src))
    }

    /// The errors for `src`, each as (message, source text from the error's start).
    fn errors(args: &str, src: &str) -> Vec<(String, String)> {
        let errors = expand(&lex(args), &lex(src)).expect_err("expected errors");
        errors
            .into_iter()
            .map(|e| {
                // Errors about `args` point into `args`, not `src`; tests ignore their position.
                let at = if e.start == TestSpan::CALL_SITE {
                    ""
                } else {
                    src.get(e.start.0..).unwrap_or("")
                };
                (e.message, at.to_string())
            })
            .collect()
    }

    /// The single error for kernel `src`: (message, source text from the error's start).
    fn error(src: &str) -> (String, String) {
        let mut all = errors("", src);
        assert_eq!(all.len(), 1, "expected one error, got {all:#?}");
        all.remove(0)
    }

    const ATTRS: &str = "#[doc(hidden)] #[inline(never)] \
        #[allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]";

    /// The `#[used]` static that keeps the entry of a non-generic kernel.
    fn keep(entry: &str) -> String {
        format!(
            "const _: () = {{ #[used] static KEEP_ENTRY: ::cuda_device::__private::KeepEntry = \
             ::cuda_device::__private::KeepEntry({entry} as *const ()); }};"
        )
    }

    /// The type named like the kernel that holds its entry:
    /// `struct_head` is `vis struct name<generics> where..`, `impl_head`
    /// is `impl<generics> name<args> where..`.
    fn name_type(kernel: &str, struct_head: &str, marker: &str, impl_head: &str, vis: &str, wires: &str, entry: &str) -> String {
        format!(
            "#[doc = \"The launch handle of the kernel `{kernel}` (for `cuda_launch!`).\"] #[doc(hidden)] \
             #[allow(non_camel_case_types, dead_code)] {struct_head} {{ {marker} }} \
             #[allow(non_upper_case_globals, clippy::type_complexity)] {impl_head} {{ \
             #[doc(hidden)] {vis} const __oxide_entry: unsafe fn({wires}) = {entry}; }}"
        )
    }

    /// The wrapper's `entry_identity` call for the launch handle `handle`.
    fn identity(handle: &str) -> String {
        format!(
            "::cuda_device::__private::entry_identity(\
             ::core::any::type_name::<{handle}> as fn() -> &'static str as *const u8);"
        )
    }

    fn layout(index: usize, ty: &str) -> String {
        format!(
            "::cuda_device::__private::param_layout({index}u32, \
             const {{ ::core::mem::size_of::<{ty}>() }}, const {{ ::core::mem::align_of::<{ty}>() }});"
        )
    }

    #[test]
    fn scale_example() {
        let got = expand_ok(
            "",
            "pub fn scale(input: &[f32], factor: f32, mut out: DisjointSlice<f32>) { body(); }",
        );
        let want = format!(
            "{ATTRS} pub unsafe fn __oxide_kernel_entry_scale(\
                __oxide_p0: *const ::cuda_device::__private::SliceParam<'_, f32>, __oxide_p1: *const f32, __oxide_p2: *const DisjointSlice<f32>) {{ unsafe {{ \
                {} {} {} {} \
                scale(::core::ptr::read(__oxide_p0.cast()), ::core::ptr::read(__oxide_p1), ::core::ptr::read(__oxide_p2)) \
            }} }} {}",
            layout(0, "&[f32]"),
            layout(1, "f32"),
            layout(2, "DisjointSlice<f32>"),
            identity("scale"),
            keep("__oxide_kernel_entry_scale"),
        ) + &name_type(
            "scale",
            "pub struct scale",
            "",
            "impl scale",
            "pub",
            "*const ::cuda_device::__private::SliceParam<'_, f32>, *const f32, *const DisjointSlice<f32>",
            "__oxide_kernel_entry_scale",
        );
        assert_eq!(got, plain(&want));
    }

    #[test]
    fn generic_map_example() {
        let got = expand_ok(
            "",
            "pub fn map<T: Copy, F: Fn(T) -> T + Copy>(f: F, input: &[T], mut out: DisjointSlice<T>) { body(); }",
        );
        let want = format!(
            "{ATTRS} pub unsafe fn __oxide_kernel_entry_map<T: Copy, F: Fn(T) -> T + Copy>(\
                __oxide_p0: *const F, __oxide_p1: *const ::cuda_device::__private::SliceParam<'_, T>, __oxide_p2: *const DisjointSlice<T>) {{ unsafe {{ \
                {} {} {} {} \
                map::<T, F>(::core::ptr::read(__oxide_p0), ::core::ptr::read(__oxide_p1.cast()), ::core::ptr::read(__oxide_p2)) \
            }} }}",
            layout(0, "F"),
            layout(1, "&[T]"),
            layout(2, "DisjointSlice<T>"),
            identity("map::<T, F>"),
        ) + &name_type(
            "map",
            "pub struct map<T: Copy, F: Fn(T) -> T + Copy>",
            "__oxide_marker: ::core::marker::PhantomData<fn() -> (T, F,)>",
            "impl<T: Copy, F: Fn(T) -> T + Copy> map<T, F>",
            "pub",
            "*const F, *const ::cuda_device::__private::SliceParam<'_, T>, *const DisjointSlice<T>",
            "__oxide_kernel_entry_map::<T, F>",
        );
        assert_eq!(got, plain(&want));
    }

    #[test]
    fn lifetimes_const_generics_and_where_clauses() {
        let got = expand_ok(
            "",
            "pub(crate) fn k<'a, T, const N: usize>(x: &'a [T], arr: [T; N]) where T: Copy + core::ops::Mul<Output = T>, {}",
        );
        let want = format!(
            "{ATTRS} pub(crate) unsafe fn __oxide_kernel_entry_k<'a, T, const N: usize>(\
                __oxide_p0: *const ::cuda_device::__private::SliceParam<'a, T>, __oxide_p1: *const [T; N]) \
                where T: Copy + core::ops::Mul<Output = T>, {{ unsafe {{ {} {} {} \
                k::<T, {{ N }}>(::core::ptr::read(__oxide_p0.cast()), ::core::ptr::read(__oxide_p1)) }} }}",
            layout(0, "&'a [T]"),
            layout(1, "[T; N]"),
            identity("k::<T, { N }>"),
        ) + &name_type(
            "k",
            "pub(crate) struct k<'a, T, const N: usize> where T: Copy + core::ops::Mul<Output = T>,",
            "__oxide_marker: ::core::marker::PhantomData<fn() -> (&'a (), T,)>",
            "impl<'a, T, const N: usize> k<'a, T, N> where T: Copy + core::ops::Mul<Output = T>, T: 'a",
            "pub(crate)",
            "*const ::cuda_device::__private::SliceParam<'a, T>, *const [T; N]",
            "__oxide_kernel_entry_k::<T, { N }>",
        );
        assert_eq!(got, plain(&want));
    }

    #[test]
    fn only_lifetimes_means_no_turbofish() {
        let got = expand_ok("", "fn k<'a>(x: &'a [u8]) {}");
        assert!(
            got.contains(&plain("k(::core::ptr::read(__oxide_p0.cast()))")),
            "{got}"
        );
    }

    #[test]
    fn slices_cross_as_slice_params() {
        let got = expand_ok("", "fn k(a: &mut [u8], b: &'x mut [(u8, u16)], c: &[[u8; 4]], d: [u8; 4]) {}");
        for want in [
            "__oxide_p0: *const ::cuda_device::__private::SliceMutParam<'_, u8>",
            "__oxide_p1: *const ::cuda_device::__private::SliceMutParam<'x, (u8, u16)>",
            "__oxide_p2: *const ::cuda_device::__private::SliceParam<'_, [u8; 4]>",
            "__oxide_p3: *const [u8; 4]",
            "k(::core::ptr::read(__oxide_p0.cast()), ::core::ptr::read(__oxide_p1.cast()), \
             ::core::ptr::read(__oxide_p2.cast()), ::core::ptr::read(__oxide_p3))",
        ] {
            assert!(got.contains(&plain(want)), "{want}\n{got}");
        }
    }

    #[test]
    fn mut_slices_make_the_entry_refuse_launches_of_more_than_one_thread() {
        let got = expand_ok("", "fn k(a: &mut [u8], mut b: &'x mut [u16], c: &[u8]) {}");
        let check = |param: &str| {
            plain(&format!(
                "if !::cuda_device::__private::single_thread_launch() {{ ::core::panic!(\"kernel `k` takes `{param}`, \
                 which every thread of a launch would hold at once: launch it with one thread (grid and block \
                 (1, 1, 1)), or write through a DisjointSlice (one element per thread) or atomics\"); }}"
            ))
        };
        assert!(got.contains(&check("a: &mut [u8]")), "{got}");
        assert!(got.contains(&check("b: &'x mut [u16]")), "{got}");
        assert_eq!(got.matches("single_thread_launch").count(), 2, "{got}");
    }

    #[test]
    fn patterns_contribute_only_their_types() {
        let got = expand_ok(
            "",
            "fn k((a, b): (u32, u32), mut out: DisjointSlice<f32>, _: u8, Wrap(w): Wrap) {}",
        );
        assert!(got.contains(&plain(
            "__oxide_p0: *const (u32, u32), __oxide_p1: *const DisjointSlice<f32>, __oxide_p2: *const u8, __oxide_p3: *const Wrap"
        )));
    }

    #[test]
    fn private_kernel_without_parameters() {
        let got = expand_ok("", "fn nothing() -> () {}");
        assert_eq!(
            got,
            plain(&format!(
                "{ATTRS} unsafe fn __oxide_kernel_entry_nothing() {{ unsafe {{ {} nothing() }} }} {} {}",
                identity("nothing"),
                keep("__oxide_kernel_entry_nothing"),
                name_type("nothing", "struct nothing", "", "impl nothing", "", "", "__oxide_kernel_entry_nothing"),
            ))
        );
    }

    #[test]
    fn cfg_attributes_are_copied_to_the_wrapper_and_others_are_not() {
        let got = expand_ok("", "#[cfg(feature = \"x\")] #[doc = \"d\"] #[allow(unused)] fn k(#[allow(unused)] x: u8) {}");
        assert!(
            got.starts_with(&plain("#[cfg(feature = \"x\")] #[doc(hidden)]")),
            "{got}"
        );
        assert!(!got.contains("\"d\"") && !got.contains("unused"), "{got}");
    }

    #[test]
    fn wrapper_name_keeps_the_kernel_name_span_and_drops_raw_prefix() {
        let src = "fn r#match(x: u8) {}";
        let out = expand(&[], &lex(src)).unwrap();
        let entry = out
            .iter()
            .find(|t| t.ident_name().is_some_and(|n| n.starts_with(ENTRY_PREFIX)))
            .unwrap();
        assert_eq!(entry.ident_name(), Some("__oxide_kernel_entry_match"));
        assert_eq!(entry.span(), TestSpan(3));
    }

    #[test]
    fn accepts_launch_bounds_and_qualifiers() {
        expand_ok(
            "launch_bounds(256, 2)",
            "pub unsafe extern \"C\" fn k(x: u8) {}",
        );
        let both = expand_ok("launch_bounds(128), cluster_dims(2, 1)", "pub fn k(x: u8) {}");
        assert!(both.contains("launch_bounds"), "{both}");
        assert!(both.contains(&plain("cluster_dims((2) as u32, (1) as u32, (1) as u32)")), "{both}");
        expand_ok(
            "",
            "fn k(x: &mut [u8], y: &'static [&'static [u8]], f: fn(u8) -> u8, p: *const u8) {}",
        );
    }

    #[test]
    fn rejects_unknown_arguments_naming_them() {
        let all = errors("launch_bounds(1), foo = 1, bar", "fn k() {}");
        assert_eq!(all.len(), 2);
        assert!(
            all[0].0.starts_with("unknown `#[kernel]` argument `foo`;"),
            "{all:?}"
        );
        assert!(
            all[1].0.starts_with("unknown `#[kernel]` argument `bar`;"),
            "{all:?}"
        );
        assert!(all[0].0.contains("launch_bounds(..)") && all[0].0.contains("cluster_dims(..)"));
    }

    #[test]
    fn rejects_async_and_const() {
        let (msg, at) = error("pub async fn k() {}");
        assert!(
            msg.starts_with("a `#[kernel]` cannot be `async fn`") && msg.contains("remove `async`"),
            "{msg}"
        );
        assert!(at.starts_with("async fn"));
        let (msg, at) = error("const fn k() {}");
        assert!(
            msg.starts_with("a `#[kernel]` cannot be `const fn`") && msg.contains("remove `const`"),
            "{msg}"
        );
        assert!(at.starts_with("const fn"));
    }

    #[test]
    fn rejects_return_values() {
        let (msg, at) = error("fn k(x: u8) -> u32 { 1 }");
        assert_eq!(
            msg,
            "a `#[kernel]` cannot return a value (found `-> u32`); remove the return type and write results \
             through an output parameter such as `mut out: DisjointSlice<T>`"
        );
        assert!(at.starts_with("u32 {"));
        assert!(error("fn k() -> ((),) {}").0.contains("found `-> ((),)`"));
    }

    #[test]
    fn rejects_self_and_varargs() {
        for src in [
            "fn k(&self) {}",
            "fn k(&'a mut self, x: u8) {}",
            "fn k(self: Box<Self>) {}",
            "fn k(mut self) {}",
        ] {
            let (msg, at) = error(src);
            assert!(msg.starts_with("a `#[kernel]` cannot take `self`"), "{msg}");
            assert_eq!(&at[..1], &src[5..6], "{src}");
        }
        let (msg, at) = error("unsafe extern \"C\" fn k(x: u8, ...) {}");
        assert!(
            msg.starts_with("a `#[kernel]` cannot be variadic (`...`)"),
            "{msg}"
        );
        assert!(at.starts_with("...)"));
        assert!(error("fn k(x: u8, args: ...) {}").0.contains("variadic"));
    }

    #[test]
    fn rejects_host_references_other_than_slices() {
        let (msg, at) = error("fn k(x: &Foo) {}");
        assert_eq!(
            msg,
            "kernel parameter `x` has type `&Foo`: host references cannot cross to the GPU; \
             pass the value by copy, or a slice `&[T]` backed by a DeviceBuffer"
        );
        assert!(at.starts_with("&Foo)"));
        for (src, shown) in [
            (
                "fn k(mut x: &'a mut Foo<u8>) {}",
                "`x` has type `&'a mut Foo<u8>`",
            ),
            ("fn k(x: &[f32; 4]) {}", "`x` has type `&[f32; 4]`"),
            ("fn k(x: &&[f32]) {}", "`x` has type `&&[f32]`"),
            ("fn k(x: &[&u8]) {}", "`x` has type `&[&u8]`"),
            ("fn k(p: (u8, &u8)) {}", "`p` has type `(u8, &u8)`"),
            ("fn k(p: [&u8; 2]) {}", "`p` has type `[&u8; 2]`"),
            ("fn k(d: &dyn Fn()) {}", "`d` has type `&dyn Fn()`"),
        ] {
            let (msg, _) = error(src);
            assert!(
                msg.contains(shown) && msg.contains("host references cannot cross"),
                "{src}: {msg}"
            );
        }
    }

    #[test]
    fn rejects_str() {
        let (msg, at) = error("fn k(name: &'static str) {}");
        assert!(
            msg.starts_with("kernel parameter `name` has type `&'static str`: host references"),
            "{msg}"
        );
        assert!(msg.ends_with("pass a slice `&[u8]`"), "{msg}");
        assert!(at.starts_with("&'static str"));
    }

    #[test]
    fn rejects_host_owners() {
        let (msg, at) = error("fn k(v: Vec<f32>) {}");
        assert_eq!(
            msg,
            "kernel parameter `v` has type `Vec<f32>`: a `Vec` points into host memory, which the GPU cannot reach; \
             copy the data into a DeviceBuffer and pass a slice `&[T]` (or a `DisjointSlice<T>` for results)"
        );
        assert!(at.starts_with("Vec<f32>"));
        let (msg, _) = error("fn k(b: std::boxed::Box<dyn Fn()>) {}");
        assert!(
            msg.starts_with(
                "kernel parameter `b` has type `std::boxed::Box<dyn Fn()>`: a `Box` points"
            ),
            "{msg}"
        );
        let (msg, _) = error("fn k(s: String) {}");
        assert!(
            msg.starts_with(
                "kernel parameter `s` has type `String`: a `String` lives in host memory"
            ),
            "{msg}"
        );
        assert!(msg.ends_with("pass a slice `&[u8]`"), "{msg}");
        assert!(error("fn k(a: alloc::sync::Arc<u8>) {}")
            .0
            .contains("a `Arc` points"));
        assert!(error("fn k(t: (u8, Rc<u8>)) {}")
            .0
            .contains("a `Rc` points"));
        assert!(error("fn k(s: &[Vec<u8>]) {}").0.contains("a `Vec` points"));
        expand_ok("", "fn k(s: VecLike<u8>, b: Boxed) {}");
    }

    #[test]
    fn rejects_impl_trait_suggesting_a_generic() {
        let (msg, at) = error("fn k(f: impl Fn(f32) -> f32 + Copy, x: u8) {}");
        assert_eq!(
            msg,
            "kernel parameter `f` has type `impl Fn(f32) -> f32 + Copy`: `impl Trait` cannot be a kernel parameter, \
             because the launch must name every type; name the generic parameter instead: \
             `fn kernel<F: Fn(f32) -> f32 + Copy>(.., f: F)`"
        );
        assert!(at.starts_with("impl Fn"));
        let (msg, _) = error("fn k(x: &[impl Copy]) {}");
        assert!(
            msg.contains("name the generic parameter instead") && !msg.contains("fn kernel<"),
            "{msg}"
        );
    }

    #[test]
    fn rejects_generic_defaults() {
        let (msg, at) = error("fn k<T: Mul<Output = T> = f32>(x: T) {}");
        assert_eq!(
            msg,
            "generic parameter `T` of a `#[kernel]` cannot have a default; remove `= f32`"
        );
        assert!(at.starts_with("= f32>"));
        assert!(error("fn k<const N: usize = 4>() {}").0.contains("`N`"));
    }

    #[test]
    fn rejects_non_functions_and_missing_bodies() {
        let (msg, at) = error("pub struct S;");
        assert_eq!(msg, USAGE);
        assert!(at.starts_with("struct"));
        let (msg, _) = error("fn k();");
        assert!(msg.contains("needs a body"), "{msg}");
    }

    #[test]
    fn reports_every_problem_at_once() {
        let all = errors("", "async fn k(a: &u8, b: Vec<u8>) -> u8 {}");
        assert_eq!(all.len(), 4, "{all:#?}");
    }
}
