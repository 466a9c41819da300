//! One-click scenarios: chapter 62's worked examples, and the 16 GB OOM budget guide's inventory of what a desktop
//! already holds on the GPU (ticked items add up to "in use by others").

use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::examples::{DESKTOP_USAGE, LESSON_EXAMPLES};
use vramfit_engine::units::format_size_exact;
use vramfit_engine::{Bytes, Scenario};

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
    let items = LESSON_EXAMPLES
        .iter()
        .map(|example| {
            let pairs = example.pairs;
            view! {
                <li>
                    <button type="button" data-lesson=example.id
                        on:click=move |_| state.replace(Scenario::default(), &owned(pairs))>
                        {example.title}
                    </button>
                </li>
            }
        })
        .collect_view();
    view! {
        <details class="panel lesson-examples" id=LESSON_EXAMPLES_ID>
            <summary>"Chapter 62 worked examples"</summary>
            <ul>{items}</ul>
        </details>
    }
}

#[component]
pub fn DesktopUsage() -> impl IntoView {
    let state = expect_context::<PageState>();
    // Which items are ticked; together they are "in use by others".
    let ticked = RwSignal::new(vec![false; DESKTOP_USAGE.len()]);
    let total = Memo::new(move |_| {
        ticked.with(|ticked| {
            DESKTOP_USAGE
                .iter()
                .zip(ticked)
                .filter(|(_, &on)| on)
                .map(|((_, bytes), _)| *bytes)
                .sum::<Bytes>()
        })
    });
    let items = DESKTOP_USAGE
        .iter()
        .enumerate()
        .map(|(i, (name, bytes))| {
            let id = format!("desktop-{i}");
            let on_change = move |ev| {
                let on = event_target_checked(&ev);
                ticked.update(|t| t[i] = on);
                state.apply(&[(
                    "reserved".to_string(),
                    format_size_exact(total.get_untracked()),
                )]);
            };
            view! {
                <li>
                    <input type="checkbox" id=id.clone()
                        prop:checked=move || ticked.with(|t| t[i]) on:change=on_change/>
                    <label for=id>{*name}": "{bytes.0 / 1_000_000}" MB"</label>
                </li>
            }
        })
        .collect_view();
    view! {
        <details class="desktop-usage">
            <summary>"What else is on this GPU? (a typical desktop)"</summary>
            <ul>{items}</ul>
            <p class="rule">"Ticked items set “In use by others”."</p>
        </details>
    }
}
