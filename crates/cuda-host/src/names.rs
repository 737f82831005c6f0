//! Turning symbol names back into Rust paths for messages.

/// `scale` or `my_crate::kernels::scale` from the legacy-mangled name of a
/// kernel entry wrapper (`_ZN8my_crate26__oxide_kernel_entry_scale17h…E`).
/// Names in another scheme are returned unchanged.
pub(crate) fn kernel_path(symbol: &str) -> String {
    let Some(mut rest) = symbol.strip_prefix("_ZN") else {
        return symbol.to_string();
    };
    let mut segments = Vec::new();
    while let Some(digits_len) = rest.find(|c: char| !c.is_ascii_digit()) {
        if digits_len == 0 {
            break;
        }
        let Ok(len) = rest[..digits_len].parse::<usize>() else { break };
        let Some(segment) = rest.get(digits_len..digits_len + len) else { break };
        segments.push(segment);
        rest = &rest[digits_len + len..];
    }
    if let Some(last) = segments.last() {
        if last.len() == 17 && last.starts_with('h') {
            segments.pop();
        }
    }
    if segments.is_empty() {
        return symbol.to_string();
    }
    let path = segments.join("::");
    path.replace("__oxide_kernel_entry_", "").replace("$LT$", "<").replace("$GT$", ">")
}

#[cfg(test)]
mod tests {
    use super::kernel_path;

    #[test]
    fn legacy_names_become_paths() {
        assert_eq!(
            kernel_path("_ZN2k126__oxide_kernel_entry_scale17hba82c1977915c15cE"),
            "k1::scale"
        );
    }

    #[test]
    fn other_names_are_kept() {
        assert_eq!(kernel_path("_RNvCs123_3foo5scale"), "_RNvCs123_3foo5scale");
        assert_eq!(kernel_path("plain"), "plain");
    }
}
