//! JSON as Python's `json` module writes it: `Infinity`, `-Infinity` and `NaN` are literals there
//! (NemotronH's and FalconH1's `time_step_limit` default to `(0.0, inf)`), and transformers reads
//! them back. serde_json refuses them, so they become `null` before parsing; no size the planner
//! reads can be infinite.

/// The text with every `Infinity`, `-Infinity` and `NaN` outside a string replaced by `null`.
/// Borrows the text unchanged when there is none.
pub(super) fn nonfinite_as_null(text: &str) -> std::borrow::Cow<'_, str> {
    const LITERALS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    if !LITERALS.iter().any(|l| text.contains(l)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_string = true;
        } else if let Some(literal) = LITERALS.iter().find(|l| rest.starts_with(*l)) {
            out.push_str("null");
            rest = &rest[literal.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals_outside_strings_become_null() {
        let text = r#"{"time_step_limit": [0.0, Infinity], "a": -Infinity, "b": NaN, "name": "NaN \"Infinity\""}"#;
        let value: serde_json::Value = serde_json::from_str(&nonfinite_as_null(text)).unwrap();
        assert_eq!(value["time_step_limit"][1], serde_json::Value::Null);
        assert_eq!(value["a"], serde_json::Value::Null);
        assert_eq!(value["b"], serde_json::Value::Null);
        assert_eq!(value["name"], "NaN \"Infinity\"");
        assert!(matches!(
            nonfinite_as_null("{}"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
