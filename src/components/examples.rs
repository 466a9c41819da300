//! One-click scenarios: chapter 62's worked examples, and the 16 GB OOM budget guide's inventory of what a desktop
//! already holds on the GPU (ticked items add up to "in use by others").

use crate::html::{escape, target_attribute};
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::examples::{lesson_example, DESKTOP_USAGE, LESSON_EXAMPLES};
use vramfit_engine::units::format_size_exact;
use vramfit_engine::{Bytes, Scenario};
use wasm_bindgen::JsCast;
use web_sys::Element;

/// The list's id: the first screen's "chapter 62" starting point opens it.
pub const LESSON_EXAMPLES_ID: &str = "lesson-examples";

/// A table's `key=value` pairs as a change list for [`PageState::replace`].
pub fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[component]
pub fn LessonExamples() -> impl IntoView {
    let state = expect_context::<PageState>();
    let items: String = LESSON_EXAMPLES
        .iter()
        .map(|example| {
            format!(
                "<li><button type=\"button\" data-lesson=\"{}\">{}</button></li>",
                example.id,
                escape(example.title)
            )
        })
        .collect();
    let on_click = move |ev: web_sys::MouseEvent| {
        let example = target_attribute(&ev, "data-lesson").and_then(|id| lesson_example(&id));
        if let Some(example) = example {
            state.replace(Scenario::default(), &owned(example.pairs));
        }
    };
    view! {
        <details class="panel lesson-examples" id=LESSON_EXAMPLES_ID>
            <summary>"Chapter 62 worked examples"</summary>
            <ul inner_html=items on:click=on_click></ul>
        </details>
    }
}

#[component]
pub fn DesktopUsage() -> impl IntoView {
    let state = expect_context::<PageState>();
    let items: String = DESKTOP_USAGE
        .iter()
        .enumerate()
        .map(|(i, (name, bytes))| {
            format!(
                "<li><input type=\"checkbox\" id=\"desktop-{i}\"><label for=\"desktop-{i}\">{}: {} MB</label></li>",
                escape(name),
                bytes.0 / 1_000_000
            )
        })
        .collect();
    // The ticked boxes are the state: their items add up to "in use by others".
    let on_change = move |ev: web_sys::Event| {
        let Some(list) = ev
            .current_target()
            .and_then(|t| t.dyn_into::<Element>().ok())
        else {
            return;
        };
        let ticked = |i: usize| {
            list.query_selector(&format!("#desktop-{i}:checked"))
                .ok()
                .flatten()
                .is_some()
        };
        let total: Bytes = DESKTOP_USAGE
            .iter()
            .enumerate()
            .filter(|(i, _)| ticked(*i))
            .map(|(_, (_, b))| *b)
            .sum();
        state.apply(&[("reserved".to_string(), format_size_exact(total))]);
    };
    view! {
        <details class="desktop-usage">
            <summary>"What else is on this GPU? (a typical desktop)"</summary>
            <ul inner_html=items on:change=on_change></ul>
            <p class="rule">"Ticked items set “In use by others”."</p>
        </details>
    }
}
