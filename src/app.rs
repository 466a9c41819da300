//! The page shell: owns the scenario signal, keeps it in the URL, and lays out the panels the
//! URL asks for (`layout.rs`).
//! Derived state (the estimate, the solver, the tables) is memoised from the scenario alone.

use crate::browser;
use crate::components::{
    accuracy::AccuracyPanel,
    breakdown::Breakdown,
    chart_panel::ChartPanel,
    config_paste::ConfigPaste,
    controls::{Controls, InputStrip},
    curves_panel::CurvesPanel,
    examples::{DesktopUsage, LessonExamples},
    gguf_drop::GgufDrop,
    gpu_now::GpuNow,
    hub_read::{HubAsk, HubRead},
    measured::MeasuredPanel,
    serving_panel::ServingPanel,
    share::Share,
    solver_panel::SolverPanel,
    speed_panel::SpeedPanel,
    start::StartHere,
    summary::Summary,
    tables_panel::TablesPanel,
};
use crate::html::escape;
use crate::layout::{Layout, Panel};
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::examples::lesson_example;
use vramfit_engine::query::{parse_query, scenario_from_query, scenario_to_query};
use vramfit_engine::{FieldError, Scenario};

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

/// Keeps the URL and the scenario one: every change of the scenario rewrites the URL, and going
/// back or forward in history reads the scenario (and the URL's warnings) from it again.
fn sync_with_url(state: PageState, url_warnings: RwSignal<Vec<FieldError>>) {
    let PageState {
        scenario, form_rev, ..
    } = state;
    Effect::new(move |_| {
        let query = scenario.with(scenario_to_query);
        browser::set_query(&query, false);
    });
    let on_popstate = move |_: web_sys::PopStateEvent| {
        let (s, w) = page_scenario(&browser::query());
        scenario.set(s);
        url_warnings.set(w);
        form_rev.update(|r| *r += 1);
    };
    let _ = window_event_listener(leptos::ev::popstate, on_popstate);
}

/// True once the first screen is painted, when the panels below it mount; marks
/// `vramfit:page-mounted` after them.
fn painted_signal() -> RwSignal<bool> {
    let painted = RwSignal::new(false);
    browser::after_first_paint(move || {
        if !painted.get_untracked() {
            painted.set(true);
            // They mount in microtasks after this task; a task queued now runs after them.
            set_timeout(
                || browser::mark("vramfit:page-mounted"),
                std::time::Duration::ZERO,
            );
        }
    });
    painted
}

#[component]
pub fn App() -> impl IntoView {
    let query = browser::query();
    let layout = Layout::from_query(&query);
    let (initial, warnings) = opening_scenario(&query, &layout);
    // A first visit: no scenario and no page keys in the URL.
    let first_screen = !layout.embed && parse_query(&query).is_empty();
    let state = PageState::new(initial);
    let url_warnings = RwSignal::new(warnings);
    provide_context(state);
    provide_context(HubAsk(RwSignal::new((0, String::new()))));
    sync_with_url(state, url_warnings);
    browser::report_height_to_parent();

    let shows = |panel| layout.shows(panel);
    // The panels below the first screen (from the curves on, and the tables) mount once it is
    // painted, so the first frame, the answer, costs only what it shows.
    let below = layout.clone();
    let painted = painted_signal();
    let embed = layout.embed;
    let whole_form = layout.whole_form();
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
                            <HubRead/>
                            <ConfigPaste/>
                            <GgufDrop/>
                            <DesktopUsage/>
                        </section>
                    }.into_any()
                } else {
                    view! { <section class="inputs" aria-label="Scenario"><InputStrip/></section> }.into_any()
                })}
                <section class="results" aria-label="Result">
                    {shows(Panel::Summary).then(|| view! { <Summary/> })}
                    {(!embed).then(|| view! { <Share/> })}
                    {whole_form.then(|| view! { <LessonExamples/> })}
                    {shows(Panel::Serving).then(|| view! { <ServingPanel/> })}
                    {shows(Panel::Chart).then(|| view! { <ChartPanel/> })}
                    {move || painted.get().then(|| {
                        let shows = |panel| below.shows(panel);
                        view! {
                            {shows(Panel::Speed).then(|| view! { <SpeedPanel/> })}
                            {shows(Panel::Curves).then(|| view! { <CurvesPanel/> })}
                            {shows(Panel::Breakdown).then(|| view! { <Breakdown/> })}
                            {shows(Panel::Accuracy).then(|| view! { <AccuracyPanel/> })}
                            {shows(Panel::Solver).then(|| view! { <SolverPanel/> })}
                            {shows(Panel::Gpu).then(|| view! { <GpuNow/> })}
                            {shows(Panel::Measured).then(|| view! { <MeasuredPanel/> })}
                        }
                    })}
                </section>
            </main>
            {shows(Panel::Tables).then_some(move || painted.get().then(|| view! { <TablesPanel/> }))}
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
            <ul inner_html=move || {
                let panels = unknown_panels.as_deref().map(|message| {
                    format!("<li data-param=\"show\">Ignored in <code>show</code>: {}</li>", escape(message))
                });
                warnings.with(|warnings| {
                    panels.into_iter().chain(warnings.iter().map(|w| {
                        let field = escape(&w.field);
                        format!(
                            "<li data-param=\"{field}\">Ignored URL parameter <code>{field}</code>: {} (default used)</li>",
                            escape(&w.message)
                        )
                    }))
                    .collect::<String>()
                })
            }></ul>
        </div>
    }
}
