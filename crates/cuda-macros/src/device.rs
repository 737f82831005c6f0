//! `#[device]`: a marker for functions called from kernels. The function is
//! emitted unchanged (the device linker compiles whatever the kernels reach);
//! the macro only rejects what can never run on the GPU.

use crate::signature::parse_fn;
use crate::tokens::{Error, SourceSpan, Tok};

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
