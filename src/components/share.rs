//! Sharing: copy the link, copy an iframe embed snippet, and export/import the scenario as the
//! engine's JSON (the same serde form `vramfit estimate --json` prints under "scenario").

use crate::browser::{self, copy_text, download, href};
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::query::scenario_to_query;
use vramfit_engine::Scenario;
use wasm_bindgen::JsCast;

fn page_base() -> String {
    href()
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A scenario, or anything with one under `"scenario"` (`vramfit estimate --json` output). The
/// text is parsed once, and the object read through the engine's field table.
fn read_scenario(text: &str) -> Result<Scenario, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let object = value
        .get("scenario")
        .unwrap_or(&value)
        .as_object()
        .ok_or("not a vramfit scenario: a scenario is a JSON object")?;
    Scenario::from_json_object(object).map_err(|e| format!("not a vramfit scenario: {e}"))
}

#[component]
pub fn Share() -> impl IntoView {
    let state = expect_context::<PageState>();
    let import_error = RwSignal::new(None::<String>);
    let copy_link = move |_| copy_text(&href());
    let copy_embed = move |_| {
        let query = state.scenario.with_untracked(scenario_to_query);
        copy_text(&format!(
            "<iframe src=\"{}?embed=1&show=chart,breakdown,tables&{query}\" title=\"vramfit VRAM planner\" width=\"100%\" height=\"900\" loading=\"lazy\"></iframe>",
            page_base()
        ));
    };
    let export_json = move |_| {
        let json = state
            .scenario
            .with_untracked(|s| serde_json::to_string_pretty(s).unwrap_or_default());
        let url = format!(
            "data:application/json;charset=utf-8,{}",
            vramfit_engine::query::percent_encode(&json)
        );
        download(&url, "vramfit-scenario.json");
    };
    // The chart is the shell's; the stack as drawn is read from its canvas.
    let export_png = move |_| {
        let chart = browser::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id("memory-chart"))
            .and_then(|e| e.dyn_into::<web_sys::HtmlCanvasElement>().ok());
        if let Some(url) = chart.and_then(|c| c.to_data_url().ok()) {
            download(&url, "vramfit-memory-stack.png");
        }
    };
    let import_text = RwSignal::new(String::new());
    let import = move |_| {
        let text = import_text.get_untracked();
        match read_scenario(&text) {
            Ok(s) => match s.validate().first() {
                Some(problem) => import_error.set(Some(problem.to_string())),
                None => {
                    import_error.set(None);
                    state.replace(s, &[]);
                }
            },
            Err(message) => import_error.set(Some(message)),
        }
    };
    view! {
        <section class="panel share" aria-label="Share">
            <div class="buttons">
                <button type="button" on:click=copy_link>"Copy link"</button>
                <button type="button" on:click=copy_embed>"Copy embed code"</button>
                <button type="button" on:click=export_json>"Export JSON"</button>
                <button type="button" on:click=export_png>"Export PNG"</button>
            </div>
            <details>
                <summary>"Import scenario JSON"</summary>
                <label for="import-json">"Paste a scenario (or a vramfit estimate --json)"</label>
                <textarea id="import-json" rows="4" spellcheck="false" on:input=move |ev| import_text.set(event_target_value(&ev))></textarea>
                <button type="button" on:click=import>"Import"</button>
                <p class="field-error" role="alert">{move || import_error.get()}</p>
            </details>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_is_read_bare_or_under_scenario_and_refused_by_name() {
        let bare = read_scenario(r#"{"batch": 3, "model": "llama-3.1-8b"}"#).unwrap();
        assert_eq!(
            (bare.batch, bare.model.as_deref()),
            (3, Some("llama-3.1-8b"))
        );
        let wrapped = read_scenario(r#"{"total_bytes": 1, "scenario": {"batch": 5}}"#).unwrap();
        assert_eq!(wrapped.batch, 5);
        for (text, says) in [
            ("[1]", "a scenario is a JSON object"),
            (r#"{"batchsize": 3}"#, "unknown field `batchsize`"),
            (r#"{"batch": -3}"#, "batch: "),
            ("{", "not JSON"),
        ] {
            let error = read_scenario(text).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
    }
}
