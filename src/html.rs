//! Panels the page writes as HTML text rather than as typed views (a typed view costs far more
//! wasm): how text goes into that HTML.

/// `text` safe inside HTML text and double-quoted attributes.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;")
}
