//! The shell writes its form's options, the model picker, the summary, the stack's legend, the
//! starting points and the URL's warnings as HTML text rather than as typed views: it is the
//! first download, and a typed view costs it far more wasm (docs/performance.md). The panels
//! module, loaded after the first paint, uses typed views. Here: how text goes into that HTML,
//! and how one handler on a shell panel finds what was clicked.

use wasm_bindgen::JsCast;
use web_sys::Element;

/// `text` safe inside HTML text and double-quoted attributes.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('"', "&quot;")
}

/// For a click (or change) inside HTML written here: the value of `attribute` on the nearest
/// element, from the one the event happened on outwards, that has it.
pub fn target_attribute(ev: &web_sys::Event, attribute: &str) -> Option<String> {
    ev.target()?
        .dyn_into::<Element>()
        .ok()?
        .closest(&format!("[{attribute}]"))
        .ok()??
        .get_attribute(attribute)
}
