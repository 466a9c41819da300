//! The first screen: on a visit with no scenario in the URL, one line on what the page does and
//! three starting points (fine-tune, serve, chapter 62's examples), each one history entry.

use crate::browser;
use crate::components::examples::{owned, LESSON_EXAMPLES_ID};
use crate::html::{escape, target_attribute};
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::examples::{lesson_example, STARTING_POINTS};
use vramfit_engine::Scenario;

/// The chapter 62 example the third starting point opens with: QLoRA of an 8B model on a T4.
const FIRST_LESSON: &str = "qlora-8b-t4";

#[component]
pub fn StartHere() -> impl IntoView {
    let state = expect_context::<PageState>();
    let buttons: String = STARTING_POINTS
        .iter()
        .map(|start| (start.id, start.title))
        .chain([("lesson", "Chapter 62's worked examples")])
        .map(|(id, title)| {
            format!(
                "<button type=\"button\" data-start=\"{id}\">{}</button>",
                escape(title)
            )
        })
        .collect();
    let on_click = move |ev: web_sys::MouseEvent| {
        let Some(id) = target_attribute(&ev, "data-start") else {
            return;
        };
        if id != "lesson" {
            if let Some(start) = STARTING_POINTS.iter().find(|s| s.id == id) {
                state.replace(Scenario::default(), &owned(start.pairs));
            }
            return;
        }
        if let Some(example) = lesson_example(FIRST_LESSON) {
            state.replace(Scenario::default(), &owned(example.pairs));
        }
        // Opened and brought into view in the DOM, as a click on its summary would: the list
        // stays the user's to close.
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
            <div class="buttons" inner_html=buttons on:click=on_click></div>
        </section>
    }
}
