//! The first screen: on a visit with no scenario in the URL, one line on what the page does and
//! three starting points (fine-tune, serve, chapter 62's examples), each one history entry.

use crate::browser;
use crate::components::examples::{owned, LESSON_EXAMPLES_ID};
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::examples::{lesson_example, STARTING_POINTS};
use vramfit_engine::Scenario;

/// The chapter 62 example the third starting point opens with: QLoRA of an 8B model on a T4.
const FIRST_LESSON: &str = "qlora-8b-t4";

#[component]
pub fn StartHere() -> impl IntoView {
    let state = expect_context::<PageState>();
    let starts = STARTING_POINTS
        .iter()
        .map(|start| {
            let pairs = start.pairs;
            view! {
                <button type="button" data-start=start.id
                    on:click=move |_| state.replace(Scenario::default(), &owned(pairs))>
                    {start.title}
                </button>
            }
        })
        .collect_view();
    let open_lessons = move |_| {
        if let Some(example) = lesson_example(FIRST_LESSON) {
            state.replace(Scenario::default(), &owned(example.pairs));
        }
        // The list is the panels module's: opened and brought into view in the DOM, as a click
        // on its summary would, so it stays the user's to close.
        let list = browser::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(LESSON_EXAMPLES_ID));
        if let Some(list) = list {
            let _ = list.set_attribute("open", "");
            list.scroll_into_view();
        }
    };
    view! {
        <section class="start" aria-label="Start here">
            <p>
                "How much GPU memory does a model need to train or serve, and will it fit? Below: fully fine-tuning an 8B model on an RTX 4090. Change any field, or start from:"
            </p>
            <div class="buttons">
                {starts}
                <button type="button" data-start="lesson" on:click=open_lessons>
                    "Chapter 62's worked examples"
                </button>
            </div>
        </section>
    }
}
