//! The page's first module: owns the scenario signal, keeps it in the URL, shows the form and the
//! answer, and leaves a slot for each panel the URL asks for (`layout.rs`) that the panels module
//! fills once the answer is painted.
//! Derived state (the estimate) is memoised from the scenario alone.

use crate::bridge::{self, HubAsk};
use crate::browser;
use crate::components::{
    chart_panel::ChartPanel,
    controls::{Controls, InputStrip},
    start::StartHere,
    summary::Summary,
};
use crate::layout::{Layout, Panel};
use crate::slot::{self, Slot};
use crate::state::{Module, PageState};
use leptos::prelude::*;
use std::cell::Cell;
use std::rc::Rc;
use vramfit_engine::examples::lesson_example;
use vramfit_engine::query::{parse_query, scenario_from_query, scenario_to_query};
use vramfit_engine::{estimate_memory, FieldError, Scenario};

/// The URL's scenario. `?lesson=<id>` starts from one of chapter 62's worked examples; the URL's
/// own keys then override it (the page rewrites the URL with every field explicit).
fn page_scenario(query: &str) -> (Scenario, Vec<FieldError>) {
    let lesson = parse_query(query)
        .into_iter()
        .find(|(k, _)| k == "lesson")
        .map(|(_, v)| v);
    let (mut scenario, mut warnings) = scenario_from_query(query);
    if let Some(id) = lesson {
        match lesson_example(&id) {
            Some(example) => {
                let (from_lesson, _) = Scenario::from_pairs(example.pairs.iter().copied());
                let mut merged = from_lesson;
                for (key, value) in scenario.to_pairs() {
                    let _ = merged.set(key, &value);
                }
                scenario = merged;
            }
            None => warnings.push(FieldError::new(
                "lesson",
                format!("no chapter 62 example named `{id}`"),
            )),
        }
    }
    (scenario, warnings)
}

/// The scenario the page opens on: the URL's, with the saved calibration on the full page. A
/// saved calibration never overrides the URL's own `context`.
fn opening_scenario(query: &str, layout: &Layout) -> (Scenario, Vec<FieldError>) {
    let (mut scenario, warnings) = page_scenario(query);
    let url_sets_context = parse_query(query).iter().any(|(k, _)| k == "context");
    if !layout.embed && !url_sets_context {
        if let Some(saved) = browser::saved_correction() {
            let _ = scenario.set("context", &saved);
        }
    }
    (scenario, warnings)
}

/// Keeps the URL, the panels module and the scenario one: every change of the scenario rewrites
/// the URL and is announced, going back or forward in history reads the scenario (and the URL's
/// warnings) from it again, and a change the panels ask for is made here.
fn sync_with_url(state: PageState, url_warnings: RwSignal<Vec<FieldError>>) {
    let PageState {
        scenario, form_rev, ..
    } = state;
    Effect::new(move |_| {
        let query = scenario.with(scenario_to_query);
        bridge::announce_scenario(&query);
        // The address bar can wait for the frame: writing it costs about 1 ms an edit.
        set_timeout(
            move || browser::set_query(&query, false),
            std::time::Duration::ZERO,
        );
    });
    bridge::on_change(move |change| {
        let base = match change.base {
            Some(query) => scenario_from_query(&query).0,
            None => scenario.get_untracked(),
        };
        state.replace(base, &change.changes);
    });
    let on_popstate = move |_: web_sys::PopStateEvent| {
        let (s, w) = page_scenario(&browser::query());
        scenario.set(s);
        url_warnings.set(w);
        form_rev.update(|r| *r += 1);
    };
    let _ = window_event_listener(leptos::ev::popstate, on_popstate);
}

/// Mounts the shell; once its first frame is painted, loads the panels module if the page left
/// it a slot, or else marks the page whole.
pub fn start() {
    browser::install_panic_banner();
    browser::mark("vramfit:start");
    let query = browser::query();
    let layout = Layout::from_query(&query);
    let (initial, warnings) = opening_scenario(&query, &layout);
    let state = PageState::new(Module::Shell, initial, estimate_memory);
    leptos::mount::mount_to_body(move || view! { <App state layout warnings query/> });
    // The first estimate is rendered synchronously during the mount.
    browser::mark("vramfit:first-result");
    let has_slots = !slot::in_document().is_empty();
    let done = Rc::new(Cell::new(false));
    browser::after_first_paint(move || {
        if done.replace(true) {
            return;
        }
        state.painted.set(true);
        if has_slots {
            bridge::load_panels();
        } else {
            // What the paint released renders in microtasks; a task queued now runs after it.
            set_timeout(
                || browser::mark("vramfit:page-mounted"),
                std::time::Duration::ZERO,
            );
        }
    });
}

#[component]
fn App(
    state: PageState,
    layout: Layout,
    warnings: Vec<FieldError>,
    query: String,
) -> impl IntoView {
    // A first visit: no scenario and no page keys in the URL.
    let first_screen = !layout.embed && parse_query(&query).is_empty();
    let url_warnings = RwSignal::new(warnings);
    provide_context(state);
    sync_with_url(state, url_warnings);
    browser::report_height_to_parent();

    let shows = |panel| layout.shows(panel);
    // A slot for each panel the panels module fills: what the first screen does not need.
    let slot_for = |panel, slot: Slot| shows(panel).then(|| slot.view());
    let embed = layout.embed;
    let whole_form = layout.whole_form();
    if whole_form {
        provide_context(HubAsk);
    }
    view! {
        <div class="page" class:embed=embed>
            {(!embed).then(|| view! {
                <header class="site-header">
                    <h1>"vramfit"</h1>
                    <p class="tagline">"Will it fit? GPU memory for LLM training and inference, computed in your browser."</p>
                </header>
            })}
            {first_screen.then(|| view! { <StartHere/> })}
            <UrlWarnings warnings=url_warnings unknown_panels=layout.unknown_message()/>
            <main class="layout" class:single=!whole_form>
                {shows(Panel::Inputs).then(|| if whole_form {
                    view! {
                        <section class="inputs" aria-label="Scenario">
                            <Controls/>
                            {Slot::HubRead.view()}
                            {Slot::ConfigPaste.view()}
                            {Slot::GgufDrop.view()}
                            {Slot::DesktopUsage.view()}
                        </section>
                    }.into_any()
                } else {
                    view! { <section class="inputs" aria-label="Scenario"><InputStrip/></section> }.into_any()
                })}
                <section class="results" aria-label="Result">
                    {shows(Panel::Summary).then(|| view! { <Summary/> })}
                    {(!embed).then(|| Slot::Share.view())}
                    {whole_form.then(|| Slot::LessonExamples.view())}
                    {slot_for(Panel::Serving, Slot::Serving)}
                    {shows(Panel::Chart).then(|| view! { <ChartPanel/> })}
                    {slot_for(Panel::Speed, Slot::Speed)}
                    {slot_for(Panel::Curves, Slot::Curves)}
                    {slot_for(Panel::Breakdown, Slot::Breakdown)}
                    {slot_for(Panel::Accuracy, Slot::Accuracy)}
                    {slot_for(Panel::Solver, Slot::Solver)}
                    {slot_for(Panel::Gpu, Slot::Gpu)}
                    {slot_for(Panel::Measured, Slot::Measured)}
                </section>
            </main>
            {slot_for(Panel::Tables, Slot::Tables)}
            {(!embed).then(|| view! {
                <footer class="site-footer">
                    "Runs entirely in your browser; nothing is sent anywhere, and the Hugging Face Hub is asked only when you click Read. GB = 10"<sup>"9"</sup>" bytes, GiB = 2"<sup>"30"</sup>" bytes."
                </footer>
            })}
        </div>
    }
}

/// What the URL asked for that the page ignored: scenario fields it could not read, and panels
/// `show=` names that do not exist.
#[component]
fn UrlWarnings(
    warnings: RwSignal<Vec<FieldError>>,
    unknown_panels: Option<String>,
) -> impl IntoView {
    let none = {
        let no_panels = unknown_panels.is_none();
        move || no_panels && warnings.with(Vec::is_empty)
    };
    view! {
        <div data-testid="url-warnings" class="url-warnings" role="status" class:hidden=none>
            <ul>
                {unknown_panels.map(|message| view! {
                    <li data-param="show">"Ignored in "<code>"show"</code>": "{message}</li>
                })}
                {move || warnings.with(|warnings| {
                    warnings
                        .iter()
                        .map(|w| view! {
                            <li data-param=w.field.clone()>
                                "Ignored URL parameter "<code>{w.field.clone()}</code>": "{w.message.clone()}" (default used)"
                            </li>
                        })
                        .collect_view()
                })}
            </ul>
        </div>
    }
}
