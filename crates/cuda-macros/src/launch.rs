//! `cuda_launch!`: reading `key: value` entries and writing the call of
//! `::cuda_host::__private::launchN`.

use crate::kernel::ENTRY_CONST;
use crate::split::{angle_close, split_exprs};
use crate::template::fill;
use crate::tokens::{is_pair, is_single_colon, unwrap_invisible, Delim, Error, SourceSpan, Tok};

/// The most kernel arguments `cuda_launch!` accepts (cuda-host defines
/// `launch0` ..= `launchN` from the same row of Abi.def).
pub const MAX_ARGS: usize = crate::abi::MAX_LAUNCH_ARGUMENTS as usize;

/// The keys, in their documented order.
const KEYS: [&str; 5] = ["kernel", "stream", "module", "config", "args"];

const FORM: &str =
    "cuda_launch! { kernel: PATH, stream: EXPR, module: EXPR, config: EXPR, args: [ARG, ..] }";

/// Expands the macro input into the launch call, or reports every problem.
pub fn expand<S: SourceSpan>(input: &[Tok<S>]) -> Result<Vec<Tok<S>>, Vec<Error<S>>> {
    let [kernel, stream, module, config, args] = read_entries(input)?;
    let kernel = rewrite_kernel_path(kernel).map_err(|error| vec![error]);
    let (kernel, args) = match (kernel, launch_args(args)) {
        (Ok(kernel), Ok(args)) => (kernel, args),
        (kernel, args) => {
            return Err(kernel
                .err()
                .into_iter()
                .chain(args.err())
                .flatten()
                .collect())
        }
    };
    let launch = Tok::ident(&format!("launch{}", args.len()), S::call_site());
    let mut tuple = Vec::new();
    for arg in args {
        tuple.extend(arg);
        tuple.push(Tok::Punct {
            ch: ',',
            joint: false,
            span: S::call_site(),
        });
    }
    Ok(fill(
        "::cuda_host::__private::#launch(&(#module), &(#stream), #config, #kernel, (#args))",
        &[
            ("launch", vec![launch]),
            ("module", module.to_vec()),
            ("stream", stream.to_vec()),
            ("config", config.to_vec()),
            ("kernel", kernel),
            ("args", tuple),
        ],
    ))
}

// ---------------------------------------------------------------------------
// Entries

/// Reads `key: value` entries: each key of [`KEYS`] exactly once, in any order.
/// Returns the values in [`KEYS`] order.
fn read_entries<S: SourceSpan>(input: &[Tok<S>]) -> Result<[&[Tok<S>]; 5], Vec<Error<S>>> {
    let mut values: [Option<&[Tok<S>]>; 5] = [None; 5];
    let mut errors = Vec::new();
    for entry in split_exprs(input) {
        match read_entry(entry) {
            Ok(Entry { index, key, value }) => {
                if values[index].is_some() {
                    errors.push(Error::at(
                        key.span(),
                        format!("`{}:` is given twice in cuda_launch!", KEYS[index]),
                    ));
                }
                values[index] = Some(value);
            }
            Err(error) => errors.push(error),
        }
    }
    let missing: Vec<String> = KEYS
        .iter()
        .zip(&values)
        .filter(|(_, value)| value.is_none())
        .map(|(key, _)| format!("`{key}:`"))
        .collect();
    // A malformed entry may be the missing key: report missing keys only otherwise.
    if !missing.is_empty() && errors.is_empty() {
        errors.push(Error::at(
            S::call_site(),
            format!(
                "cuda_launch! is missing {}; expected {FORM}",
                missing.join(", ")
            ),
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(values.map(|value| value.expect("checked above")))
}

/// One `key: value` entry.
struct Entry<'t, S> {
    /// The key's index in [`KEYS`].
    index: usize,
    key: &'t Tok<S>,
    value: &'t [Tok<S>],
}

fn read_entry<S: SourceSpan>(entry: &[Tok<S>]) -> Result<Entry<'_, S>, Error<S>> {
    let [key, colon, value @ ..] = entry else {
        return Err(Error::spanning(
            entry,
            format!("expected `key: value`; the form is {FORM}"),
        ));
    };
    let Some(index) = KEYS.iter().position(|k| key.is_ident(k)) else {
        let shown = key
            .ident_name()
            .map_or_else(|| "…".to_string(), str::to_string);
        return Err(Error::at(
            key.span(),
            format!("unknown key `{shown}` in cuda_launch!; expected {FORM}"),
        ));
    };
    if !is_single_colon(entry, 1) {
        return Err(Error::at(
            colon.span(),
            format!("expected `:` after `{}`; the form is {FORM}", KEYS[index]),
        ));
    }
    if value.is_empty() {
        return Err(Error::spanning(
            entry,
            format!("`{}:` needs a value; the form is {FORM}", KEYS[index]),
        ));
    }
    Ok(Entry { index, key, value })
}

// ---------------------------------------------------------------------------
// `kernel:`

const PATH_USAGE: &str = "`kernel:` expects the path of a `#[kernel]` function, \
     like `scale`, `kernels::scale` or `scale::<f32>`";

/// `a::b::k::<T>` → `a::b::k::<T>::__oxide_entry`: the entry wrapper, held
/// by the type `#[kernel]` names like the kernel (`kernel::ENTRY_CONST`).
/// The user's tokens keep their spans, so an unknown or misspelt kernel is
/// reported at, and by, the name the user wrote.
fn rewrite_kernel_path<S: SourceSpan>(path: &[Tok<S>]) -> Result<Vec<Tok<S>>, Error<S>> {
    let path = unwrap_invisible(path);
    let last = last_segment(path).ok_or_else(|| Error::spanning(path, PATH_USAGE))?;
    let span = path[last].span();
    let mut rewritten = path.to_vec();
    rewritten.push(Tok::Punct { ch: ':', joint: true, span });
    rewritten.push(Tok::Punct { ch: ':', joint: false, span });
    rewritten.push(Tok::ident(ENTRY_CONST, span));
    Ok(rewritten)
}

/// The index of the last segment's identifier in `[::] seg (:: seg)*`, where
/// each `seg` is an identifier with an optional `::<..>`.
fn last_segment<S: Copy>(path: &[Tok<S>]) -> Option<usize> {
    let mut i = if is_pair(path, 0, ':', ':') { 2 } else { 0 };
    loop {
        let last = i;
        path.get(i)?.ident_name()?;
        i += 1;
        if i < path.len()
            && is_pair(path, i, ':', ':')
            && path.get(i + 2).is_some_and(|t| t.is_punct('<'))
        {
            i = angle_close(path, i + 2)? + 1;
        }
        if i == path.len() {
            return Some(last);
        }
        if !is_pair(path, i, ':', ':') {
            return None;
        }
        i += 2;
    }
}

// ---------------------------------------------------------------------------
// `args:`

/// The arguments of `[ARG, ..]`, with `slice(x)` / `slice_mut(x)` rewritten.
fn launch_args<S: SourceSpan>(value: &[Tok<S>]) -> Result<Vec<Vec<Tok<S>>>, Vec<Error<S>>> {
    let list = match unwrap_invisible(value) {
        [group] => group.group_with(Delim::Bracket),
        _ => None,
    };
    let Some(list) = list else {
        return Err(vec![Error::spanning(
            value,
            "`args:` expects a bracketed list, like `args: [slice(input), 2.5f32, slice_mut(output)]`",
        )]);
    };
    let args = split_exprs(list);
    if args.len() > MAX_ARGS {
        return Err(vec![Error::spanning(
            args[MAX_ARGS..].concat().as_slice(),
            format!(
                "cuda_launch! supports at most {MAX_ARGS} kernel arguments, found {}",
                args.len()
            ),
        )]);
    }
    let mut rewritten = Vec::with_capacity(args.len());
    let mut errors = Vec::new();
    for arg in args {
        match launch_arg(arg) {
            Ok(arg) => rewritten.push(arg),
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() {
        Ok(rewritten)
    } else {
        Err(errors)
    }
}

/// `slice(x)` → `::cuda_host::arg::slice(&(x))`, `slice_mut(x)` →
/// `::cuda_host::arg::slice_mut(&mut (x))`, anything else unchanged.
fn launch_arg<S: SourceSpan>(arg: &[Tok<S>]) -> Result<Vec<Tok<S>>, Error<S>> {
    if arg.is_empty() {
        return Err(Error::at(
            S::call_site(),
            "empty argument in `args: [..]` (two commas in a row?)",
        ));
    }
    let [func, Tok::Group {
        delim: Delim::Paren,
        inner,
        ..
    }] = arg
    else {
        return Ok(arg.to_vec());
    };
    let template = match func.ident_name() {
        Some("slice") => "::cuda_host::arg::slice(&(#value))",
        Some("slice_mut") => "::cuda_host::arg::slice_mut(&mut (#value))",
        _ => return Ok(arg.to_vec()),
    };
    match split_exprs(inner).as_slice() {
        [value] if !value.is_empty() => Ok(fill(template, &[("value", value.to_vec())])),
        _ => Err(Error::spanning(
            arg,
            format!(
                "`{0}(..)` takes one buffer: `{0}(buffer)`",
                func.ident_name().unwrap_or_default()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::{lex, TestSpan};
    use crate::tokens::render_plain;

    fn expand_ok(src: &str) -> String {
        match expand(&lex(src)) {
            Ok(tokens) => render_plain(&tokens),
            Err(errors) => panic!("unexpected errors: {errors:#?}"),
        }
    }

    fn plain(src: &str) -> String {
        render_plain(&lex(src))
    }

    /// Every error: (message, source text from the error's start, or "" for the call site).
    fn errors(src: &str) -> Vec<(String, String)> {
        expand(&lex(src))
            .expect_err("expected errors")
            .into_iter()
            .map(|e| {
                let at = if e.start == TestSpan::CALL_SITE {
                    String::new()
                } else {
                    src[e.start.0..].to_string()
                };
                (e.message, at)
            })
            .collect()
    }

    fn rewrite(path: &str) -> Result<String, String> {
        rewrite_kernel_path(&lex(path))
            .map(|t| render_plain(&t))
            .map_err(|e| e.message)
    }

    #[test]
    fn design_example() {
        let got = expand_ok(
            "kernel: scale, stream: stream, module: module,
             config: LaunchConfig::for_num_elems(1024),
             args: [slice(input), 2.5f32, slice_mut(output)]",
        );
        let want = "::cuda_host::__private::launch3(&(module), &(stream), LaunchConfig::for_num_elems(1024), \
             scale::__oxide_entry, (::cuda_host::arg::slice(&(input)), 2.5f32, \
             ::cuda_host::arg::slice_mut(&mut (output)),))";
        assert_eq!(got, plain(want));
    }

    #[test]
    fn keys_in_any_order_with_trailing_commas() {
        let got = expand_ok("args: [move |x| x * factor, slice(a.b),], config: cfg, module: &m, stream: s.0, kernel: k::map::<f32, _>,");
        let want = "::cuda_host::__private::launch2(&(&m), &(s.0), cfg, k::map::<f32, _>::__oxide_entry, \
             (move |x| x * factor, ::cuda_host::arg::slice(&(a.b)),))";
        assert_eq!(got, plain(want));
    }

    #[test]
    fn zero_arguments_give_an_empty_tuple() {
        let got = expand_ok("kernel: k, stream: s, module: m, config: c, args: []");
        assert_eq!(
            got,
            plain("::cuda_host::__private::launch0(&(m), &(s), c, k::__oxide_entry, ())")
        );
    }

    #[test]
    fn other_arguments_pass_through() {
        let got = expand_ok("kernel: k, stream: s, module: m, config: c, args: [f(a, b), foo::<a, b>(c), slice(x).len(), my::slice(y)]");
        let tuple = plain("(f(a, b), foo::<a, b>(c), slice(x).len(), my::slice(y),)");
        assert!(got.ends_with(&format!("{tuple} )")), "{got}");
    }

    #[test]
    fn buffer_borrows_pass_through() {
        let got = expand_ok("kernel: k, stream: s, module: m, config: c, args: [&input, 2.5f32, &mut out.0]");
        assert!(got.ends_with(&format!("{} )", plain("(&input, 2.5f32, &mut out.0,)"))), "{got}");
    }

    #[test]
    fn path_rewriting() {
        assert_eq!(rewrite("scale"), Ok(plain("scale::__oxide_entry")));
        assert_eq!(
            rewrite("kernels::scale"),
            Ok(plain("kernels::scale::__oxide_entry"))
        );
        assert_eq!(
            rewrite("scale::<f32>"),
            Ok(plain("scale::<f32>::__oxide_entry"))
        );
        assert_eq!(
            rewrite("crate::k::map::<f32, _>"),
            Ok(plain("crate::k::map::<f32, _>::__oxide_entry"))
        );
        assert_eq!(
            rewrite("::a::b::<Vec<u8>, 3>"),
            Ok(plain("::a::b::<Vec<u8>, 3>::__oxide_entry"))
        );
        assert_eq!(rewrite("r#type"), Ok(plain("r#type::__oxide_entry")));
        for bad in ["scale<f32>", "a::", "k()", "<T as Tr>::k", "a::<T>b", "2"] {
            assert_eq!(rewrite(bad), Err(PATH_USAGE.to_string()), "{bad}");
        }
    }

    #[test]
    fn rewritten_name_keeps_the_user_span() {
        let out = rewrite_kernel_path(&lex("kernels::scale")).unwrap();
        assert_eq!(out[3].span(), TestSpan(9));
    }

    #[test]
    fn missing_keys_are_named() {
        let all = errors("kernel: k, stream: s, module: m");
        assert_eq!(
            all,
            [(
                format!("cuda_launch! is missing `config:`, `args:`; expected {FORM}"),
                String::new()
            )]
        );
        let all = errors("");
        assert_eq!(all.len(), 1);
        assert!(all[0].0.starts_with(
            "cuda_launch! is missing `kernel:`, `stream:`, `module:`, `config:`, `args:`;"
        ));
    }

    #[test]
    fn unknown_and_duplicate_keys_point_at_the_key() {
        let all = errors("kernel: k, stream: s, module: m, config: c, args: [], grid: g");
        assert_eq!(
            all,
            [(
                format!("unknown key `grid` in cuda_launch!; expected {FORM}"),
                "grid: g".to_string()
            )]
        );
        let all = errors("kernel: k, stream: s, stream: t, module: m, config: c, args: []");
        assert_eq!(
            all,
            [(
                "`stream:` is given twice in cuda_launch!".to_string(),
                "stream: t, module: m, config: c, args: []".to_string()
            )]
        );
    }

    #[test]
    fn malformed_entries() {
        assert!(errors("kernel")
            .iter()
            .any(|(m, _)| m.starts_with("expected `key: value`")));
        assert!(errors("kernel k")[0]
            .0
            .starts_with("expected `:` after `kernel`"));
        assert!(
            errors("kernel: k, stream:, module: m, config: c, args: []")[0]
                .0
                .starts_with("`stream:` needs a value")
        );
        assert!(
            errors("kernel:: k, stream: s, module: m, config: c, args: []")[0]
                .0
                .starts_with("expected `:` after `kernel`")
        );
        assert!(errors("kernel: k,, stream: s")[0]
            .0
            .starts_with("expected `key: value`"));
    }

    #[test]
    fn bad_args() {
        let all = errors("kernel: k, stream: s, module: m, config: c, args: a");
        assert!(
            all[0].0.starts_with("`args:` expects a bracketed list"),
            "{all:?}"
        );
        let all = errors(
            "kernel: k, stream: s, module: m, config: c, args: [slice(), slice_mut(a, b), x,, y]",
        );
        let messages: Vec<_> = all.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(
            messages,
            [
                "`slice(..)` takes one buffer: `slice(buffer)`",
                "`slice_mut(..)` takes one buffer: `slice_mut(buffer)`",
                "empty argument in `args: [..]` (two commas in a row?)"
            ]
        );
    }

    #[test]
    fn at_most_max_arguments() {
        let all_allowed = (0..MAX_ARGS)
            .map(|i| format!("a{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        assert!(expand_ok(&format!(
            "kernel: k, stream: s, module: m, config: c, args: [{all_allowed}]"
        ))
        .contains(&format!("launch{MAX_ARGS}")));
        let src = format!("kernel: k, stream: s, module: m, config: c, args: [{all_allowed}, x, y]");
        let all = errors(&src);
        assert_eq!(
            all,
            [(
                format!("cuda_launch! supports at most {MAX_ARGS} kernel arguments, found {}", MAX_ARGS + 2),
                "x, y]".to_string()
            )]
        );
    }

    #[test]
    fn bad_kernel_path_and_bad_args_are_both_reported() {
        let all = errors("kernel: k(), stream: s, module: m, config: c, args: [slice()]");
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].0, PATH_USAGE);
    }
}
