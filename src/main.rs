//! vramfit's page: a Leptos client-side app. It turns form fields and the URL into a `Scenario`,
//! and the engine's answer into a breakdown, a chart, a verdict, the solver and the tables.

mod app;
mod browser;
mod chart;
mod components;
mod html;
mod layout;
mod state;

fn main() {
    browser::install_panic_banner();
    browser::mark("vramfit:start");
    leptos::mount::mount_to_body(app::App);
    // The first estimate is rendered synchronously during the mount.
    browser::mark("vramfit:first-result");
}
