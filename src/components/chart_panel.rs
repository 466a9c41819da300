//! The chart panel: the canvas, its legend, compare mode (up to 4 bars, including chapter 62's
//! three attempts in one click) and PNG export. Drawing itself lives in `crate::chart`.

use crate::browser;
use crate::components::legend::BudgetLegend;
use crate::palette::{component_colour, Rgb, Theme};
use crate::stack_chart::{draw, Bar};
use crate::state::PageState;
use leptos::html::Canvas;
use leptos::prelude::*;
use vramfit_engine::examples::{lesson_example, LESSON_ATTEMPTS};
use vramfit_engine::{estimate_memory, Estimate, Scenario};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::HtmlCanvasElement;

const MAX_BARS: usize = 4;

fn dark_mode() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .map(|m| m.matches())
        .unwrap_or(false)
}

/// A canvas's CSS width as a `ResizeObserver` last reported it. A redraw after an edit that read
/// `clientWidth` instead would force a layout of the edited page first (about 1 ms a canvas);
/// only the first draw, before the observer has reported, reads it.
#[derive(Clone, Copy)]
pub struct CanvasWidth(RwSignal<Option<i32>>);

impl CanvasWidth {
    /// Observes the canvas once it is mounted; a new width redraws whatever read [`Self::of`].
    pub fn observe(canvas_ref: NodeRef<Canvas>) -> CanvasWidth {
        let width = RwSignal::new(None);
        Effect::new(move |observing: Option<bool>| {
            if observing == Some(true) {
                return true;
            }
            let Some(canvas) = canvas_ref.get() else {
                return false;
            };
            let observed = canvas.clone();
            let on_resize = Closure::<dyn FnMut(JsValue, web_sys::ResizeObserver)>::new(
                move |_, observer: web_sys::ResizeObserver| {
                    // A panel that is gone (a runtime switch rebuilds the serving panel) has
                    // disposed of its signal: stop observing its canvas.
                    let Some(known) = width.try_get_untracked() else {
                        return observer.disconnect();
                    };
                    // Read after layout, where the observer is called, it forces none.
                    let measured = Some(observed.client_width());
                    if measured != known {
                        width.set(measured);
                    }
                },
            );
            if let Ok(observer) = web_sys::ResizeObserver::new(on_resize.as_ref().unchecked_ref()) {
                observer.observe(&canvas);
            }
            // The observer calls it until the panel is gone (above).
            on_resize.forget();
            true
        });
        CanvasWidth(width)
    }

    /// The width, tracked.
    fn of(self, canvas: &HtmlCanvasElement) -> i32 {
        self.0.get().unwrap_or_else(|| {
            let measured = canvas.client_width();
            self.0.update_untracked(|w| *w = Some(measured));
            measured
        })
    }
}

/// Sizes the canvas to its CSS width (at least `min_width`) × `css_height` in device pixels, and
/// returns the page's colours for it, light or dark as the page is, at the screen's pixel ratio.
pub fn fit_canvas(
    canvas: &HtmlCanvasElement,
    width: CanvasWidth,
    min_width: i32,
    css_height: f64,
) -> Theme {
    let theme = page_theme();
    let css_width = f64::from(width.of(canvas).max(min_width));
    canvas.set_width((css_width * theme.scale) as u32);
    canvas.set_height((css_height * theme.scale) as u32);
    theme
}

/// The page's colours for a chart, light or dark as the page is, at the screen's pixel ratio.
fn page_theme() -> Theme {
    let scale = web_sys::window()
        .map(|w| w.device_pixel_ratio())
        .unwrap_or(1.0)
        .max(1.0);
    if dark_mode() {
        Theme {
            background: Rgb(24, 26, 31),
            foreground: Rgb(230, 230, 230),
            scale,
        }
    } else {
        Theme {
            background: Rgb(255, 255, 255),
            foreground: Rgb(20, 20, 20),
            scale,
        }
    }
}

/// The stack's legend: the budget lines, then a swatch per component.
#[component]
fn StackLegend() -> impl IntoView {
    let state = expect_context::<PageState>();
    let budget = Memo::new(move |_| {
        state.estimate.with(|e| {
            e.as_ref()
                .map(|e| [e.capacity_bytes, e.usable_bytes, e.tight_threshold_bytes])
        })
    });
    // An SVG fill, not an inline style: the page's CSP forbids style attributes.
    let swatches = move || {
        state.estimate.with(|e| {
            e.iter()
                .flat_map(|e| &e.components)
                .map(|c| {
                    view! {
                        <li>
                            <svg class="swatch" width="12" height="12" aria-hidden="true">
                                <rect width="12" height="12" rx="2" fill=component_colour(&c.id).css()></rect>
                            </svg>
                            {c.label.clone()}
                        </li>
                    }
                })
                .collect_view()
        })
    };
    view! {
        <ul class="legend">
            <BudgetLegend values=budget/>
            {swatches}
        </ul>
    }
}

/// Scenarios drawn beside this one, each with its bar's label.
type Compared = Vec<(String, Scenario)>;

/// Adds `scenario` to the compared ones, dropping the oldest so the chart keeps at most
/// `MAX_BARS` bars with this scenario's own.
fn add_to_compare(list: &mut Compared, scenario: Scenario) {
    if list.len() + 1 >= MAX_BARS {
        list.remove(0);
    }
    let label = format!("{} {}", scenario.get("mode"), scenario.get("weights"));
    list.push((label.trim().to_string(), scenario));
}

/// Chapter 62's attempts: the earlier ones to compare, each labelled by its title's first
/// clause, and the last one's settings, which become the scenario.
fn lesson_attempts() -> Option<(Compared, Vec<(String, String)>)> {
    let attempts: Vec<_> = LESSON_ATTEMPTS
        .iter()
        .filter_map(|id| lesson_example(id))
        .collect();
    let (last, earlier) = attempts.split_last()?;
    let compared = earlier
        .iter()
        .map(|e| {
            (
                e.title.split(',').next().unwrap_or(e.id).to_string(),
                Scenario::from_pairs(e.pairs.iter().copied()).0,
            )
        })
        .collect();
    let settings = last
        .pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Some((compared, settings))
}

/// The chart's bars: the compared scenarios, then this one.
fn bars<'a>(compared: &'a [(String, Estimate)], current: &'a Estimate) -> Vec<Bar<'a>> {
    let mut bars: Vec<Bar> = compared
        .iter()
        .map(|(label, e)| Bar {
            label: label.clone(),
            estimate: e,
        })
        .collect();
    bars.push(Bar {
        label: "this scenario".to_string(),
        estimate: current,
    });
    bars
}

#[component]
pub fn ChartPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    let canvas_ref = NodeRef::<Canvas>::new();
    let width = CanvasWidth::observe(canvas_ref);
    let compare = RwSignal::new(Compared::new());
    // Recomputed only when the list changes; a changed list is never the same bars.
    let compared = Memo::new_with_compare(
        move |_| {
            compare.with(|list| {
                list.iter()
                    .filter_map(|(label, s)| estimate_memory(s).ok().map(|e| (label.clone(), e)))
                    .collect::<Vec<_>>()
            })
        },
        |_, _| true,
    );
    let draw_error = RwSignal::new(None::<String>);

    Effect::new(move |_| {
        let Some(canvas) = canvas_ref.get() else {
            return;
        };
        let current = state.estimate.get();
        let units = state.units.get();
        let others = compared.get();
        let Some(current) = current else { return };
        let theme = fit_canvas(&canvas, width, 320, 320.0);
        draw_error.set(draw(&canvas, &bars(&others, &current), units, &theme).err());
        // `cargo xtask bench-web` times input → this mark.
        browser::mark("vramfit:chart-drawn");
    });

    let add_current = move |_| {
        let current = state.scenario.get_untracked();
        compare.update(|list| add_to_compare(list, current));
    };
    let lesson = move |_| {
        if let Some((earlier, last)) = lesson_attempts() {
            compare.set(earlier);
            state.replace(Scenario::default(), &last);
        }
    };
    view! {
        <section class="panel chart" aria-label="Memory stack chart">
            <h2>"Chart"</h2>
            <canvas id="memory-chart" node_ref=canvas_ref role="img"
                aria-label="Stacked bar of the memory components against the GPU's capacity, usable and tight lines"></canvas>
            <p class="field-error">{move || draw_error.get()}</p>
            <StackLegend/>
            <div class="buttons">
                <button type="button" on:click=add_current>"Add to compare"</button>
                <button type="button" on:click=lesson data-testid="lesson-attempts">"Chapter 62's three attempts"</button>
                <button type="button" on:click=move |_| compare.set(Vec::new())>"Clear compare"</button>
            </div>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::{add_to_compare, Compared, MAX_BARS};
    use vramfit_engine::Scenario;

    #[test]
    fn compare_keeps_room_for_this_scenario() {
        let mut list = Compared::new();
        for _ in 0..MAX_BARS + 2 {
            add_to_compare(&mut list, Scenario::default());
        }
        assert_eq!(list.len(), MAX_BARS - 1);
    }
}
