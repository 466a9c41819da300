//! The shell writes its form's options, the model picker, the summary, the stack's legend and the
//! URL's warnings as HTML text rather than as typed views: it is the first download, and a typed
//! view costs it far more wasm (docs/performance.md). The panels module, loaded after the first
//! paint, uses typed views. Here: how text goes into that HTML.

/// `text` safe inside HTML text and double-quoted attributes.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;")
}
