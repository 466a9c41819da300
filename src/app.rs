//! The page shell: owns the scenario signal, keeps it in the URL, and lays out the panels.
//! Derived state (the estimate, the solver, the tables) is memoised from the scenario alone.

use crate::browser;
use crate::components::{
    breakdown::Breakdown,
    chart_panel::ChartPanel,
    config_paste::ConfigPaste,
    controls::Controls,
    curves_panel::CurvesPanel,
    examples::{DesktopUsage, LessonExamples},
    gguf_drop::GgufDrop,
    gpu_now::GpuNow,
    measured::MeasuredPanel,
    serving_panel::ServingPanel,
    share::Share,
    solver_panel::SolverPanel,
    summary::Summary,
    tables_panel::TablesPanel,
};
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

struct Layout {
    embed: bool,
    show: Vec<String>,
}

fn layout_from_query(query: &str) -> Layout {
    let pairs = parse_query(query);
    let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let embed = matches!(get("embed").as_deref(), Some("1" | "true"));
    let show = get("show")
        .map(|s| s.split(',').map(|p| p.trim().to_string()).collect())
        .unwrap_or_else(|| {
            [
                "serving",
                "chart",
                "curves",
                "breakdown",
                "tables",
                "solver",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        });
    Layout { embed, show }
}

#[component]
pub fn App() -> impl IntoView {
    let query = browser::query();
    let (mut initial, warnings) = page_scenario(&query);
    let layout = layout_from_query(&query);
    // A saved calibration applies only to the full page, and never overrides the URL.
    let url_sets_context = parse_query(&query).iter().any(|(k, _)| k == "context");
    if !layout.embed && !url_sets_context {
        if let Some(saved) = browser::saved_correction() {
            let _ = initial.set("context", &saved);
        }
    }
    let state = PageState::new(initial);
    let url_warnings = RwSignal::new(warnings);
    provide_context(state);
    let PageState {
        scenario, form_rev, ..
    } = state;

    Effect::new(move |_| {
        let query = scenario.with(scenario_to_query);
        browser::set_query(&query, false);
    });
    browser::report_height_to_parent();
    let on_popstate = move |_: web_sys::PopStateEvent| {
        let (s, w) = page_scenario(&browser::query());
        scenario.set(s);
        url_warnings.set(w);
        form_rev.update(|r| *r += 1);
    };
    let _ = window_event_listener(leptos::ev::popstate, on_popstate);

    let shows = move |section: &str| layout.show.iter().any(|s| s == section);
    let embed = layout.embed;
    let (serving, chart, breakdown, tables, solver) = (
        shows("serving"),
        shows("chart"),
        shows("breakdown"),
        shows("tables"),
        shows("solver"),
    );
    view! {
        <div class="page" class:embed=embed>
            {(!embed).then(|| view! {
                <header class="site-header">
                    <h1>"vramfit"</h1>
                    <p class="tagline">"Will it fit? GPU memory for LLM training and inference, computed in your browser."</p>
                </header>
            })}
            <UrlWarnings warnings=url_warnings/>
            <main class="layout">
                <section class="inputs" aria-label="Scenario">
                    <Controls/>
                    <ConfigPaste/>
                    <GgufDrop/>
                    <DesktopUsage/>
                </section>
                <section class="results" aria-label="Result">
                    <LessonExamples/>
                    <Summary/>
                    {(!embed).then(|| view! { <Share/> })}
                    {serving.then(|| view! { <ServingPanel/> })}
                    {chart.then(|| view! { <ChartPanel/> })}
                    {shows("curves").then(|| view! { <CurvesPanel/> })}
                    {breakdown.then(|| view! { <Breakdown/> })}
                    {solver.then(|| view! { <SolverPanel/> })}
                    {(!embed).then(|| view! { <GpuNow/> })}
                    {(!embed).then(|| view! { <MeasuredPanel/> })}
                </section>
            </main>
            {tables.then(|| view! { <TablesPanel/> })}
            {(!embed).then(|| view! {
                <footer class="site-footer">
                    "Runs entirely in your browser; nothing is sent anywhere. GB = 10"<sup>"9"</sup>" bytes, GiB = 2"<sup>"30"</sup>" bytes."
                </footer>
            })}
        </div>
    }
}

#[component]
fn UrlWarnings(warnings: RwSignal<Vec<FieldError>>) -> impl IntoView {
    view! {
        <div data-testid="url-warnings" class="url-warnings" role="status" class:hidden=move || warnings.with(Vec::is_empty)>
            <ul>
                {move || warnings.get().into_iter().map(|w| view! {
                    <li data-param=w.field.clone()>"Ignored URL parameter " <code>{w.field.clone()}</code> ": " {w.message.clone()} " (default used)"</li>
                }).collect_view()}
            </ul>
        </div>
    }
}
