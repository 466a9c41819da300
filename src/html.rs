//! The model picker and the selects' options are written as HTML text rather than as typed
//! views: they are in the shell, the first download, where a typed picker costs far more wasm and
//! a hundred typed options render slower (docs/performance.md). The rest of the page is typed
//! views, but for the accuracy panel, whose HTML `build.rs` writes. Here: how text goes into
//! that HTML.

/// `text` safe inside HTML text and double-quoted attributes.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;")
}
