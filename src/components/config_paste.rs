//! "Paste config.json": fills the architecture fields from a Hugging Face config, or names what
//! the paste is missing. The count of parameters then follows from the shape.

use crate::html::escape;
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::model::{parse_hf_config, HfConfig};

/// What the config was read as, with the defaults it needed and its warnings, or why it could not
/// be read.
fn read_out(read: &Result<HfConfig, String>) -> String {
    let config = match read {
        Ok(config) => config,
        Err(text) => {
            return format!(
                "<p class=\"field-error\" role=\"alert\" data-testid=\"config-error\">{}</p>",
                escape(text)
            )
        }
    };
    let mut html = format!(
        "<div role=\"status\" data-testid=\"config-read\"><p class=\"note\">{}</p>",
        escape(&config.summary())
    );
    if !config.defaults_used.is_empty() {
        html += &format!(
            "<p class=\"note\">Not in the file, taken from the {} defaults: {}.</p>",
            escape(config.model_type.as_deref().unwrap_or("family")),
            escape(&config.defaults_used.join(", "))
        );
    }
    html += "<ul class=\"config-warnings\">";
    for w in &config.warnings {
        html += &format!(
            "<li class=\"warning\" data-testid=\"config-warning\">{}</li>",
            escape(w)
        );
    }
    html + "</ul></div>"
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
            <div inner_html=move || message.with(|m| m.as_ref().map(read_out)).unwrap_or_default()></div>
        </details>
    }
}
