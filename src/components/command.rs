//! A shell command as the page shows it: the command in a code line, and a button that copies it
//! to the clipboard and says so.

use crate::browser;
use leptos::prelude::*;

#[component]
pub fn Command(testid: &'static str, label: &'static str, command: String) -> impl IntoView {
    let copied = RwSignal::new(false);
    let text = command.clone();
    let copy = move |_| {
        browser::copy_text(&text);
        copied.set(true);
    };
    view! {
        <div class="command">
            <code data-testid=testid>{command}</code>
            <button type="button" data-testid=format!("{testid}-copy")
                aria-label=format!("Copy the {label}") on:click=copy>
                {move || if copied.get() { "Copied" } else { "Copy" }}
            </button>
        </div>
    }
}
