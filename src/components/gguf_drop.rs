//! "Read a .gguf file": a dropped or chosen GGUF file sets llama.cpp inference with the file's own
//! shape, type and exact tensor bytes. Only the header is read, from a slice at the start of the
//! file (grown when the header is longer), so a 40 GB file costs what its header costs and nothing
//! leaves the browser. A file that is not a GGUF model is named in an alert, and the last good
//! estimate stays.

use crate::browser;
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::model::{read_gguf, GgufError, GGUF_FIRST_READ_BYTES};

#[derive(Clone)]
enum Reading {
    Started(String),
    Read {
        summary: String,
        warnings: Vec<String>,
    },
    Failed(String),
}

/// Reads `len` bytes from the start of `file` and gives them to the header reader; a header that
/// runs past them is read again with at least what it needs, doubling, up to the whole file.
fn read_header(
    file: web_sys::File,
    len: u64,
    state: PageState,
    shown: RwSignal<Option<Reading>>,
    current: RwSignal<u32>,
    id: u32,
) {
    browser::read_file_start(&file.clone(), len, move |bytes| {
        if current.get_untracked() != id {
            return; // a later file replaced this one
        }
        let message = match bytes {
            Err(message) => message,
            Ok(bytes) => match read_gguf(&bytes) {
                Ok(model) => {
                    let changes: Vec<(String, String)> = model
                        .pairs()
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect();
                    state.apply(&changes);
                    shown.set(Some(Reading::Read {
                        summary: model.summary(),
                        warnings: model.warnings,
                    }));
                    return;
                }
                Err(GgufError::Truncated { needed_at_least })
                    if (bytes.len() as f64) < file.size() =>
                {
                    let next = needed_at_least.max(len.saturating_mul(2));
                    read_header(file, next, state, shown, current, id);
                    return;
                }
                Err(GgufError::Truncated { needed_at_least }) => format!(
                    "{} ends inside its GGUF header, which needs at least {needed_at_least} bytes: is the file complete?",
                    file.name()
                ),
                Err(e) => format!("{}: {e}", file.name()),
            },
        };
        shown.set(Some(Reading::Failed(message)));
    });
}

/// What the file gave, or why it gave nothing.
fn reading(reading: &Reading) -> AnyView {
    match reading.clone() {
        Reading::Started(name) => view! {
            <p class="note" role="status" data-testid="gguf-reading">"Reading the header of "{name}"…"</p>
        }
        .into_any(),
        Reading::Read { summary, warnings } => {
            let items = warnings
                .into_iter()
                .map(|w| view! { <li class="warning" data-testid="gguf-warning">{w}</li> })
                .collect_view();
            view! {
                <div role="status" data-testid="gguf-read">
                    <p class="note" data-testid="gguf-summary">{summary}</p>
                    <ul class="config-warnings">{items}</ul>
                </div>
            }
            .into_any()
        }
        Reading::Failed(message) => view! {
            <p class="field-error" role="alert" data-testid="gguf-error">{message}</p>
        }
        .into_any(),
    }
}

#[component]
pub fn GgufDrop() -> impl IntoView {
    let state = expect_context::<PageState>();
    let shown = RwSignal::new(None::<Reading>);
    let current = RwSignal::new(0u32);
    let open = move |file: Option<web_sys::File>| {
        let Some(file) = file else { return };
        let id = current.get_untracked().wrapping_add(1);
        current.set(id);
        shown.set(Some(Reading::Started(file.name())));
        read_header(
            file,
            GGUF_FIRST_READ_BYTES as u64,
            state,
            shown,
            current,
            id,
        );
    };
    let details = NodeRef::<leptos::html::Details>::new();
    view! {
        <details class="gguf-drop" data-testid="gguf-drop" node_ref=details
            on:dragover=|ev: web_sys::DragEvent| ev.prevent_default()
            on:drop=move |ev: web_sys::DragEvent| {
                ev.prevent_default();
                // Dropped on the closed summary: open it, so what was read shows.
                if let Some(details) = details.get_untracked() {
                    details.set_open(true);
                }
                open(ev.data_transfer().and_then(|d| d.files()).and_then(|f| f.get(0)));
            }>
            <summary>"Read a .gguf file"</summary>
            <label class="drop-zone" for="gguf-file">
                "Drop a llama.cpp .gguf file here, or choose one. Only its header is read, in this browser; nothing is uploaded."
            </label>
            <input type="file" id="gguf-file" accept=".gguf" data-testid="gguf-file"
                on:change=move |ev| {
                    let input = event_target::<web_sys::HtmlInputElement>(&ev);
                    open(input.files().and_then(|f| f.get(0)));
                    input.set_value("");
                }/>
            <div>{move || shown.with(|r| r.as_ref().map(reading))}</div>
        </details>
    }
}
