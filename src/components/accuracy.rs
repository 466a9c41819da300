//! "How accurate is this?": for the scenario's kind of run, how close the engine came to the
//! published measurements and runtime logs of runs like it, and for each of its speed figures
//! the held-out published speeds of its speed kind (or the broader kind the engine widens it to).
//! build.rs computes each kind's panel and each speed kind's row with the engine functions
//! `cargo xtask accuracy` and `vramfit estimate --accuracy` use; the page picks the ones for the
//! result on screen, the speed kinds by the engine's `speed_picks`.

use crate::html::escape;
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::accuracy::{speed_picks, RunKind};
use vramfit_engine::Estimate;

/// Each kind of run's key and its panel, as build.rs writes them.
const PANELS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/accuracy.rs"));

/// Each speed kind's name, its held-out rows and its table row's cells after the kind, as
/// build.rs writes them.
const SPEED: &[(&str, usize, &str)] = include!(concat!(env!("OUT_DIR"), "/speed_accuracy.rs"));

const SPEED_HEAD: &str = r#"<table data-testid="accuracy-speed-table"><thead><tr><th scope="col">Figure</th><th scope="col">Runs like this</th><th scope="col">Rows</th><th scope="col">Median error</th><th scope="col">Worst error</th><th scope="col">Inside the band</th></tr></thead><tbody>"#;

/// The speed part of the panel: a row per figure the published speeds of the runtime measure,
/// and the notes on kinds widened or unmeasured.
fn speed_html(e: &Estimate) -> String {
    let find = |name: &str| SPEED.iter().find(|g| g.0 == name);
    let (picks, none) = speed_picks(e, &|name| find(name).map_or(0, |g| g.1));
    let mut html = String::from(
        r#"<p>Speeds of runs like this one, held out from the fit of every constant, against this planner:</p>"#,
    );
    if !picks.is_empty() {
        html += SPEED_HEAD;
        for pick in &picks {
            if let Some((_, _, cells)) = find(&pick.shown) {
                html += &format!(
                    r#"<tr data-testid="accuracy-speed" data-figure="{}" data-kind="{}"><th scope="row">{}</th><td>{}</td>{cells}</tr>"#,
                    pick.figure,
                    escape(&pick.kind),
                    pick.label,
                    escape(&pick.shown)
                );
            }
        }
        html += "</tbody></table>";
    }
    let notes = picks.iter().filter_map(|p| p.note.as_ref()).chain(&none);
    for note in notes {
        html += &format!(
            r#"<p class="note" data-testid="accuracy-speed-note">{}</p>"#,
            escape(note)
        );
    }
    html
}

#[component]
pub fn AccuracyPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    // The kind of the result on screen: the last good estimate's scenario.
    let panel = Memo::new(move |_| {
        state.estimate.with(|e| {
            let e = e.as_ref()?;
            let kind = RunKind::of(&e.scenario)?;
            let memory = PANELS.iter().find(|(key, _)| *key == kind.key())?.1;
            Some(format!("{memory}{}", speed_html(e)))
        })
    });
    view! {
        <section class="panel accuracy" aria-label="How accurate is this?">
            <h2>"How accurate is this?"</h2>
            <div inner_html=move || panel.get().unwrap_or_default()></div>
        </section>
    }
}
