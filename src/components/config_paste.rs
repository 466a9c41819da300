//! "Paste config.json": fills the architecture fields from a Hugging Face config, or names what
//! the paste is missing. The count of parameters then follows from the shape.

use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::model::{parse_hf_config, HfConfig};

/// What the config was read as, with the defaults it needed and its warnings, or why it could not
/// be read.
fn read_out(read: &Result<HfConfig, String>) -> AnyView {
    let config =
        match read {
            Ok(config) => config,
            Err(text) => return view! {
                <p class="field-error" role="alert" data-testid="config-error">{text.clone()}</p>
            }
            .into_any(),
        };
    let defaults = (!config.defaults_used.is_empty()).then(|| {
        let family = config.model_type.clone().unwrap_or_else(|| "family".to_string());
        view! {
            <p class="note">
                "Not in the file, taken from the "{family}" defaults: "{config.defaults_used.join(", ")}"."
            </p>
        }
    });
    let warnings = config
        .warnings
        .iter()
        .map(|w| view! { <li class="warning" data-testid="config-warning">{w.clone()}</li> })
        .collect_view();
    view! {
        <div role="status" data-testid="config-read">
            <p class="note">{config.summary()}</p>
            {defaults}
            <ul class="config-warnings">{warnings}</ul>
        </div>
    }
    .into_any()
}

#[component]
pub fn ConfigPaste() -> impl IntoView {
    let state = expect_context::<PageState>();
    let message = RwSignal::new(None::<Result<HfConfig, String>>);
    let on_input = move |text: String| {
        if text.trim().is_empty() {
            message.set(None);
            return;
        }
        match parse_hf_config(&text) {
            Ok(config) => {
                let mut changes: Vec<(String, String)> = vec![
                    ("model".to_string(), String::new()),
                    ("params".to_string(), String::new()),
                ];
                changes.extend(config.pairs().into_iter().map(|(k, v)| (k.to_string(), v)));
                state.apply(&changes);
                message.set(Some(Ok(config)));
            }
            Err(e) => message.set(Some(Err(e.to_string()))),
        }
    };
    view! {
        <details class="config-paste">
            <summary>"Paste config.json"</summary>
            <label for="config-json">"A Hugging Face config.json (nested text_config is fine)"</label>
            <textarea id="config-json" data-testid="config-paste" rows="5" spellcheck="false"
                on:input=move |ev| on_input(event_target_value(&ev))></textarea>
            <div>{move || message.with(|m| m.as_ref().map(read_out))}</div>
        </details>
    }
}
