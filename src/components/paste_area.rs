//! A text area that takes pasted text or a dropped file, for the nvidia-smi and measurement panels.
//! A file that cannot be read (too large, not text) is reported beside the area and the text
//! already there stays.

use leptos::prelude::*;

#[component]
pub fn PasteArea(
    id: &'static str,
    testid: &'static str,
    rows: u32,
    text: RwSignal<String>,
) -> impl IntoView {
    let drop_error = RwSignal::new(None::<String>);
    view! {
        <textarea id=id data-testid=testid rows=rows spellcheck="false"
            on:input=move |ev| {
                drop_error.set(None);
                text.set(event_target_value(&ev));
            }
            on:dragover=|ev: web_sys::DragEvent| ev.prevent_default()
            on:drop=move |ev: web_sys::DragEvent| {
                let target = event_target::<web_sys::HtmlTextAreaElement>(&ev);
                crate::browser::read_dropped_file(&ev, move |result| match result {
                    Ok(content) => {
                        drop_error.set(None);
                        target.set_value(&content);
                        text.set(content);
                    }
                    Err(message) => drop_error.set(Some(message)),
                });
            }></textarea>
        {move || drop_error.get().map(|message| view! {
            <p class="field-error" role="alert" data-testid=format!("{testid}-drop-error")>{message}</p>
        })}
    }
}
