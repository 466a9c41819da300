//! A text area that takes pasted text or a dropped file, for the nvidia-smi and measurement panels.

use leptos::prelude::*;

#[component]
pub fn PasteArea(
    id: &'static str,
    testid: &'static str,
    rows: u32,
    text: RwSignal<String>,
) -> impl IntoView {
    view! {
        <textarea id=id data-testid=testid rows=rows spellcheck="false"
            on:input=move |ev| text.set(event_target_value(&ev))
            on:dragover=|ev: web_sys::DragEvent| ev.prevent_default()
            on:drop=move |ev: web_sys::DragEvent| {
                let target = event_target::<web_sys::HtmlTextAreaElement>(&ev);
                crate::browser::read_dropped_file(&ev, move |result| {
                    let content = result.unwrap_or_else(|message| message);
                    target.set_value(&content);
                    text.set(content);
                });
            }></textarea>
    }
}
