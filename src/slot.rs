//! The places the shell leaves in its page for the panels module to fill (see `lib.rs`). Each is
//! an empty `<div class="slot" data-slot=NAME>` that the stylesheet lays out as its content.

use leptos::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    HubRead,
    ConfigPaste,
    GgufDrop,
    DesktopUsage,
    Share,
    LessonExamples,
    Serving,
    Speed,
    Curves,
    Breakdown,
    Accuracy,
    Solver,
    Gpu,
    Measured,
    Tables,
}

impl Slot {
    pub const ALL: [Slot; 15] = [
        Slot::HubRead,
        Slot::ConfigPaste,
        Slot::GgufDrop,
        Slot::DesktopUsage,
        Slot::Share,
        Slot::LessonExamples,
        Slot::Serving,
        Slot::Speed,
        Slot::Curves,
        Slot::Breakdown,
        Slot::Accuracy,
        Slot::Solver,
        Slot::Gpu,
        Slot::Measured,
        Slot::Tables,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Slot::HubRead => "hub-read",
            Slot::ConfigPaste => "config-paste",
            Slot::GgufDrop => "gguf-drop",
            Slot::DesktopUsage => "desktop-usage",
            Slot::Share => "share",
            Slot::LessonExamples => "lesson-examples",
            Slot::Serving => "serving",
            Slot::Speed => "speed",
            Slot::Curves => "curves",
            Slot::Breakdown => "breakdown",
            Slot::Accuracy => "accuracy",
            Slot::Solver => "solver",
            Slot::Gpu => "gpu",
            Slot::Measured => "measured",
            Slot::Tables => "tables",
        }
    }

    pub fn named(name: &str) -> Option<Slot> {
        Slot::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The empty place in the shell's view.
    pub fn view(self) -> impl IntoView {
        view! { <div class="slot" data-slot=self.name()></div> }
    }
}

/// The slots in the document, with their elements, in document order.
pub fn in_document() -> Vec<(Slot, web_sys::HtmlElement)> {
    use wasm_bindgen::JsCast;
    let Some(found) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector_all("[data-slot]").ok())
    else {
        return Vec::new();
    };
    (0..found.length())
        .filter_map(|i| found.item(i)?.dyn_into::<web_sys::HtmlElement>().ok())
        .filter_map(|el| Some((Slot::named(&el.get_attribute("data-slot")?)?, el)))
        .collect()
}
