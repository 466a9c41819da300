//! Panels the page writes as HTML text rather than as typed views (a typed view costs far more
//! wasm): how text goes into that HTML, and how one handler on a panel finds what was clicked.

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
