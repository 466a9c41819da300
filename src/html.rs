//! The model picker is written as HTML text rather than as a typed view: it is in the shell, the
//! first download, where a typed view with reactive attributes costs far more wasm
//! (docs/performance.md). The rest of the page is typed views, but for the accuracy panel, whose
//! HTML `build.rs` writes. Here: how text goes into the picker's HTML.

/// `text` safe inside HTML text and double-quoted attributes.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;")
}
