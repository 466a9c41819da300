//! The two modules' one channel: events on the window, each carrying text. The shell owns the
//! scenario, the URL and history; it announces every scenario as its URL query. The panels module
//! follows those announcements and asks the shell for a change instead of making it, so there is
//! one scenario however many modules show it. The model picker asks the Hub panel to read a repo,
//! and the shell asks `public/boot.js` to load the panels module once its answer is painted.

use leptos::prelude::window_event_listener_untyped;
use vramfit_engine::query::{parse_query, percent_encode};
use wasm_bindgen::{JsCast, JsValue};

const SCENARIO: &str = "vramfit:scenario";
const CHANGE: &str = "vramfit:change";
const HUB_ASK: &str = "vramfit:hub-ask";
/// boot.js listens for it; the name is written there too.
const LOAD_PANELS: &str = "vramfit:load-panels";

fn send(name: &str, detail: &JsValue) {
    let init = web_sys::CustomEventInit::new();
    init.set_detail(detail);
    let Some(window) = web_sys::window() else {
        return;
    };
    if let Ok(event) = web_sys::CustomEvent::new_with_event_init_dict(name, &init) {
        let _ = window.dispatch_event(&event);
    }
}

/// Calls `then` with each event's text, for as long as the page lives.
fn listen(name: &'static str, then: impl Fn(String) + 'static) {
    let handle = window_event_listener_untyped(name, move |event| {
        if let Some(text) = event
            .dyn_ref::<web_sys::CustomEvent>()
            .and_then(|e| e.detail().as_string())
        {
            then(text);
        }
    });
    // Listening is for the page's life, so the handle, which would remove it, is dropped unused.
    drop(handle);
}

/// The shell: the scenario is now `query` (its URL form).
pub fn announce_scenario(query: &str) {
    send(SCENARIO, &JsValue::from_str(query));
}

/// The panels: follows the shell's scenario.
pub fn on_scenario(then: impl Fn(String) + 'static) {
    listen(SCENARIO, then);
}

/// A change the panels ask of the shell: `changes` applied to `base` (a scenario's query), or to
/// the shell's current scenario when there is no base.
pub struct Change {
    pub base: Option<String>,
    pub changes: Vec<(String, String)>,
}

/// The panels: asks the shell for `change`. The first line of the text is `?` and the base's
/// query (the default scenario's is empty), or empty for no base; the second line is the changes
/// as a query.
pub fn ask_change(base: Option<&str>, changes: &[(String, String)]) {
    let changes: Vec<String> = changes
        .iter()
        .map(|(k, v)| format!("{k}={}", percent_encode(v)))
        .collect();
    let base = base.map(|query| format!("?{query}")).unwrap_or_default();
    let text = format!("{base}\n{}", changes.join("&"));
    send(CHANGE, &JsValue::from_str(&text));
}

/// The shell: acts on the panels' asks.
pub fn on_change(then: impl Fn(Change) + 'static) {
    listen(CHANGE, move |text| {
        let (base, changes) = text.split_once('\n').unwrap_or((&text, ""));
        then(Change {
            base: base.strip_prefix('?').map(str::to_string),
            changes: parse_query(changes),
        });
    });
}

/// The model picker's way to ask the Hub panel for a read, given where the shell shows that panel.
#[derive(Clone, Copy)]
pub struct HubAsk;

impl HubAsk {
    pub fn ask(&self, text: &str) {
        send(HUB_ASK, &JsValue::from_str(text));
    }
}

/// The Hub panel: reads what the model picker asks for.
pub fn on_hub_ask(then: impl Fn(String) + 'static) {
    listen(HUB_ASK, then);
}

/// The shell: the first screen is painted; load the panels module.
pub fn load_panels() {
    send(LOAD_PANELS, &JsValue::NULL);
}
