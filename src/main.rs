//! vramfit's page: a Leptos client-side app. It turns form fields and the URL into a `Scenario`,
//! and the engine's answer into a breakdown, a chart, a verdict, the solver and the tables.

mod app;
mod browser;
mod chart;
mod components;

fn main() {
    browser::install_panic_banner();
    leptos::mount::mount_to_body(app::App);
}
