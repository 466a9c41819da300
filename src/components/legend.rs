//! Legend entries the panels' charts share: a line's swatch, a point's swatch, and the budget
//! lines with their values. The colours are SVG attributes: the page's CSP forbids inline styles.

use crate::palette::{Rgb, BUDGET_LINES};
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::Bytes;

/// A line's swatch in `colour`, `stroke` pixels thick.
#[component]
pub fn LineSwatch(colour: String, stroke: &'static str) -> impl IntoView {
    view! {
        <svg class="swatch" width="16" height="12" aria-hidden="true">
            <line x1="0" y1="6" x2="16" y2="6" stroke=colour stroke-width=stroke></line>
        </svg>
    }
}

/// A legend entry for a kind of point: a dot in `colour`, then `text`.
#[component]
pub fn DotEntry(colour: Rgb, text: &'static str) -> impl IntoView {
    view! {
        <li>
            <svg class="swatch" width="12" height="12" aria-hidden="true">
                <circle cx="6" cy="6" r="5" fill=colour.css()></circle>
            </svg>
            {text}
        </li>
    }
}

/// The capacity, usable and tight entries, each with its value, once there are values: the
/// stack and the what-if curves draw the same three lines.
#[component]
pub fn BudgetLegend(values: Memo<Option<[Bytes; 3]>>) -> impl IntoView {
    let state = expect_context::<PageState>();
    let known = Memo::new(move |_| values.with(Option::is_some));
    move || {
        known.get().then(|| {
            BUDGET_LINES
                .iter()
                .enumerate()
                .map(|(i, line)| {
                    let colour = line
                        .colour
                        .map_or_else(|| "currentColor".to_string(), Rgb::css);
                    let value = move || values.get().map(|v| v[i].display(state.units.get()));
                    view! {
                        <li data-line=line.name>
                            <LineSwatch colour stroke="2"/>
                            {line.name}" "{value}
                        </li>
                    }
                })
                .collect_view()
        })
    }
}
