//! The scenario form, generated from the engine's field table: one labelled control per field,
//! in the table's groups. Inputs are uncontrolled (their value is set only when the form
//! re-renders), so typing "2.5" is never rewritten mid-keystroke; each change goes through the
//! field's own setter, and a bad value shows its message inline while the last good scenario
//! stays in effect.

use crate::components::model_picker::model_picker;
use crate::html::escape;
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::runtime::Runtime;
use vramfit_engine::scenario::{Control, Field, Group, FIELDS};
use vramfit_engine::units::SIZE_RULE;
use vramfit_engine::wire::Choice;
use vramfit_engine::workload::Mode;
use vramfit_engine::FieldError;

/// What a select shows for a choice: a catalogue entry by its name, an unset value by what it
/// means, anything else by its wire name and help.
fn option_text(choice: &Choice, catalogue: bool) -> String {
    if catalogue || choice.value.is_empty() || choice.help.is_empty() {
        if choice.help.is_empty() {
            choice.value.to_string()
        } else {
            choice.help.to_string()
        }
    } else {
        format!("{} — {}", choice.value, choice.help)
    }
}

/// A select's options, as HTML: the GPU list alone is over a hundred, and one `inner_html`
/// renders them sooner on the first screen than as typed views (docs/performance.md).
fn options(choices: &[Choice], catalogue: bool, value: &str) -> String {
    choices
        .iter()
        .map(|choice| {
            format!(
                "<option value=\"{}\"{} title=\"{}\">{}</option>",
                escape(&choice.value),
                if choice.value == value {
                    " selected"
                } else {
                    ""
                },
                escape(&choice.help),
                escape(&option_text(choice, catalogue))
            )
        })
        .collect()
}

/// The catalogue field that gets the searchable picker rather than a select.
const PICKER_KEY: &str = "model";

fn field_view(field: &'static Field) -> impl IntoView {
    let state = expect_context::<PageState>();
    let key = field.key;
    let id = format!("f-{key}");
    let error_id = format!("err-{key}");
    let value = state.scenario.with_untracked(|s| field.get(s));
    let title = match field.syntax() {
        Some(syntax) => format!("{}: {syntax}", field.help),
        None => field.help.to_string(),
    };
    let error = move || {
        state.field_errors.with(|errors| {
            errors
                .iter()
                .rev()
                .find(|e| e.field == key)
                .map(|e| e.message.clone())
        })
    };
    let on_change = move |text: String| {
        let mut outcome = Ok(());
        state.scenario.update(|s| outcome = field.edit(s, &text));
        state.field_errors.update(|errors| {
            errors.retain(|e| e.field != key);
            if let Err(message) = outcome {
                errors.push(FieldError::new(key, message));
            }
        });
    };
    let select = |choices: Vec<Choice>, catalogue: bool| {
        view! {
            <select id=id.clone() name=key title=title.clone() aria-describedby=error_id.clone()
                inner_html=options(&choices, catalogue, &value)
                on:change=move |ev| on_change(event_target_value(&ev))></select>
        }
        .into_any()
    };
    let control = match field.control() {
        Control::Text => view! {
            <input type="text" id=id.clone() name=key value=value.clone() inputmode="decimal" autocomplete="off"
                aria-describedby=error_id.clone() title=title.clone() placeholder=field.placeholder()
                aria-invalid=move || error().is_some().to_string()
                on:input=move |ev| on_change(event_target_value(&ev))/>
        }
        .into_any(),
        Control::Choices(choices) => select(choices, false),
        Control::Catalogue(choices) if key == PICKER_KEY => {
            model_picker(key, &title, field.label, &choices, &value, on_change).into_any()
        }
        Control::Catalogue(choices) => select(choices, true),
    };
    view! {
        <div class="field" class:invalid=move || error().is_some()>
            <label for=id>{field.label}</label>
            {control}
            <p class="field-error" id=error_id aria-live="polite">{error}</p>
        </div>
    }
}

/// What decides which controls the form shows: the mode, the runtime and the fields the
/// scenario is refused for, each a `Memo` so a switch re-renders only what it shows or hides.
#[derive(Clone, Copy)]
struct Shown {
    mode: Memo<Mode>,
    runtime: Memo<Runtime>,
    refused: Memo<Vec<FieldError>>,
}

impl Shown {
    /// A field is shown where it applies (the engine's rule: its modes, its runtime), and
    /// wherever the scenario is refused on its account, so the user sees what to fix (a
    /// serving runtime while training).
    fn field(self, field: &Field) -> bool {
        field.applies_to(self.mode.get(), self.runtime.get())
            || self
                .refused
                .with(|errors| errors.iter().any(|e| e.field == field.key))
    }

    fn group(self, group: Group) -> bool {
        FIELDS.iter().any(|f| f.group == group && self.field(f))
    }
}

/// A group's fields, each present only while it is shown. A hidden field keeps its value (the
/// scenario and the URL are unchanged) and shows it again when it comes back.
fn group_fields(group: Group, shown: Shown) -> impl IntoView {
    FIELDS
        .iter()
        .filter(move |f| f.group == group)
        .map(move |field| {
            let visible = Memo::new(move |_| shown.field(field));
            move || visible.get().then(|| field_view(field))
        })
        .collect_view()
}

/// A folded group: its fields are made when it is first opened, not with the page, as most of the
/// form's fields are folded. A field refused by the scenario or by an edit is made at once, so its
/// message is on the page, as the unfolded fields' are.
fn folded_group(group: Group, summary: &'static str, shown: Shown) -> impl IntoView {
    let state = expect_context::<PageState>();
    let opened = RwSignal::new(false);
    let here = move |e: &FieldError| FIELDS.iter().any(|f| f.group == group && f.key == e.field);
    let refused = move || {
        shown.refused.with(|errors| errors.iter().any(here))
            || state.field_errors.with(|errors| errors.iter().any(here))
    };
    let made = Memo::new(move |_| opened.get() || refused());
    // A details element starts closed, so its first toggle opens it.
    let on_toggle = move |_| {
        if !opened.get_untracked() {
            opened.set(true);
        }
    };
    view! {
        <details on:toggle=on_toggle>
            <summary>{summary}</summary>
            {move || made.get().then(|| group_fields(group, shown))}
        </details>
    }
}

/// One group's fields, folded inside `<details>` where the group is, and present only while the
/// group applies to the scenario.
fn group_view(group: Group, shown: Shown) -> impl IntoView {
    let applies = Memo::new(move |_| shown.group(group));
    move || {
        applies.get().then(|| match group.folded() {
            None => group_fields(group, shown).into_any(),
            Some(summary) => folded_group(group, summary, shown).into_any(),
        })
    }
}

/// One fieldset: the groups that share a legend; absent while none of them applies.
fn section(legend: &'static str, shown: Shown) -> impl IntoView {
    let groups: Vec<Group> = Group::ALL
        .iter()
        .copied()
        .filter(|g| g.legend() == legend)
        .collect();
    let any = {
        let groups = groups.clone();
        Memo::new(move |_| groups.iter().any(|&g| shown.group(g)))
    };
    let slug: String = legend
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    view! {
        <fieldset data-legend=slug class:hidden=move || !any.get()>
            <legend>{legend}</legend>
            {groups.into_iter().map(|group| group_view(group, shown)).collect_view()}
            {(legend == Group::Budget.legend()).then(|| view! { <p class="rule">"Sizes: " {SIZE_RULE} "."</p> })}
        </fieldset>
    }
}

/// The fieldsets a 1280 × 800 window shows before scrolling (model, method, precision, batch);
/// the rest, below them, render after the first paint, so the answer comes sooner.
const FIRST_SCREEN_SECTIONS: usize = 4;

#[component]
pub fn Controls() -> impl IntoView {
    let state = expect_context::<PageState>();
    let validation = Memo::new(move |_| state.scenario.with(|s| s.validate()));
    let shown = Shown {
        mode: Memo::new(move |_| state.scenario.with(|s| s.mode)),
        runtime: Memo::new(move |_| state.scenario.with(|s| s.runtime)),
        refused: validation,
    };
    let mut legends: Vec<&'static str> = Group::ALL.iter().map(|g| g.legend()).collect();
    legends.dedup();
    let below = legends.split_off(FIRST_SCREEN_SECTIONS.min(legends.len()));
    move || {
        state.form_rev.track();
        let below = below.clone();
        view! {
            <form class="controls" on:submit=|ev| ev.prevent_default()>
                {legends.iter().map(|&legend| section(legend, shown)).collect_view()}
                {move || state.painted.get().then(|| below.iter().map(|&legend| section(legend, shown)).collect_view())}
                <ValidationErrors errors=validation/>
            </form>
        }
    }
}

/// The keys an embed's compact input strip offers (`show=inputs`): what a lesson asks a reader to
/// vary.
const STRIP_KEYS: [&str; 5] = ["model", "gpu", "mode", "batch", "seq"];

/// The compact form of an embed that lists `inputs`: a few key fields in a row.
#[component]
pub fn InputStrip() -> impl IntoView {
    let state = expect_context::<PageState>();
    move || {
        state.form_rev.track();
        view! {
            <form class="controls input-strip" on:submit=|ev| ev.prevent_default()>
                {FIELDS.iter().filter(|f| STRIP_KEYS.contains(&f.key)).map(field_view).collect_view()}
            </form>
        }
    }
}

#[component]
fn ValidationErrors(errors: Memo<Vec<FieldError>>) -> impl IntoView {
    view! {
        <div class="validation" data-testid="validation" role="alert" class:hidden=move || errors.with(Vec::is_empty)>
            <p>"This combination can't be estimated; showing the last valid result:"</p>
            <ul>
                {move || errors.with(|errors| {
                    errors.iter().map(|e| view! { <li>{e.field.clone()}": "{e.message.clone()}</li> }).collect_view()
                })}
            </ul>
        </div>
    }
}
