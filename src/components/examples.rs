//! One-click scenarios: chapter 62's worked examples, and the 16 GB OOM budget guide's inventory of what a desktop
//! already holds on the GPU (ticked items add up to "in use by others").

use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::examples::{DESKTOP_USAGE, LESSON_EXAMPLES};
use vramfit_engine::units::format_size_exact;
use vramfit_engine::{Bytes, Scenario};

/// The list's id: the first screen's "chapter 62" starting point opens it.
pub const LESSON_EXAMPLES_ID: &str = "lesson-examples";

#[component]
pub fn LessonExamples() -> impl IntoView {
    let state = expect_context::<PageState>();
    view! {
        <details class="panel lesson-examples" id=LESSON_EXAMPLES_ID>
            <summary>"Chapter 62 worked examples"</summary>
            <ul>
                {LESSON_EXAMPLES.iter().map(|example| {
                    let pairs: Vec<(String, String)> = example.pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                    view! {
                        <li>
                            <button type="button" data-lesson=example.id on:click=move |_| {
                                state.replace(Scenario::default(), &pairs);
                            }>{example.title}</button>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </details>
    }
}

#[component]
pub fn DesktopUsage() -> impl IntoView {
    let state = expect_context::<PageState>();
    let ticked = RwSignal::new(vec![false; DESKTOP_USAGE.len()]);
    let toggle = move |index: usize, on: bool| {
        ticked.update(|t| t[index] = on);
        let total: Bytes = ticked.with_untracked(|t| {
            DESKTOP_USAGE
                .iter()
                .zip(t)
                .filter(|(_, on)| **on)
                .map(|((_, b), _)| *b)
                .sum()
        });
        state.apply(&[("reserved".to_string(), format_size_exact(total))]);
    };
    view! {
        <details class="desktop-usage">
            <summary>"What else is on this GPU? (a typical desktop)"</summary>
            <ul>
                {DESKTOP_USAGE.iter().enumerate().map(|(i, (name, bytes))| {
                    let id = format!("desktop-{i}");
                    view! {
                        <li>
                            <input type="checkbox" id=id.clone() on:change=move |ev| toggle(i, event_target_checked(&ev))/>
                            <label for=id>{format!("{name}: {} MB", bytes.0 / 1_000_000)}</label>
                        </li>
                    }
                }).collect_view()}
            </ul>
            <p class="rule">"Ticked items set “In use by others”."</p>
        </details>
    }
}
