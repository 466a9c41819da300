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

/// A shell command as the page shows it: the command in a code line, and a button whose
/// `data-copy` holds it, for [`copy_clicked`] on the panel.
pub fn command(testid: &str, label: &str, command: &str) -> String {
    let command = escape(command);
    format!(
        "<div class=\"command\"><code data-testid=\"{testid}\">{command}</code>\
         <button type=\"button\" data-copy=\"{command}\" data-testid=\"{testid}-copy\" \
         aria-label=\"Copy the {label}\">Copy</button></div>"
    )
}

/// For a click inside a panel with [`command`]s: copies the clicked button's command to the
/// clipboard and says so on the button.
pub fn copy_clicked(ev: &web_sys::Event) {
    let Some(button) = ev
        .target()
        .and_then(|t| t.dyn_into::<Element>().ok())
        .and_then(|e| e.closest("[data-copy]").ok().flatten())
    else {
        return;
    };
    if let Some(text) = button.get_attribute("data-copy") {
        crate::browser::copy_text(&text);
        button.set_text_content(Some("Copied"));
    }
}
