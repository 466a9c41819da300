//! The model picker: a searchable list of the catalogue (WAI-ARIA 1.2's combobox with a listbox
//! popup). Typing filters it with the engine's `Preset::matches` (the search of `vramfit list
//! models --search`); each entry shows the total and, for a mixture of experts, active
//! parameters and the family. ArrowDown/ArrowUp/Home/End move through the shown entries, Enter
//! picks, Escape closes, Tab leaves. Picking sets the field as the select did.
//!
//! It is written as HTML once, with three event handlers on its wrapper, and its state lives in
//! the DOM (which entries are hidden, which is `aria-selected`): a typed view with reactive
//! attributes cost the page's wasm several times as much.

use crate::bridge::HubAsk;
use crate::html::escape;
use leptos::prelude::*;
use vramfit_engine::model::{params_label, preset, HubRepo};
use vramfit_engine::wire::Choice;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlInputElement};

/// What an entry says after its name: "30.53B total, 3.35B active · moe".
fn detail(id: &str) -> String {
    preset(id).map_or_else(String::new, |p| {
        let a = &p.arch;
        let active = a
            .active_param_count()
            .map_or_else(String::new, |n| format!(", {} active", params_label(n)));
        format!(
            "{} total{active} · {}",
            params_label(a.param_count()),
            a.family().as_str()
        )
    })
}

/// The input and its list. `choices` are the field's own, the unset one ("custom / by size")
/// first; `value` is the field's value.
fn markup(key: &str, title: &str, label: &str, choices: &[Choice], value: &str) -> String {
    let name = |c: &Choice| escape(if c.help.is_empty() { &c.value } else { &c.help });
    let chosen = choices
        .iter()
        .find(|c| !c.value.is_empty() && c.value == value)
        .map_or_else(String::new, name);
    let none = choices.first().map_or_else(String::new, name);
    let mut html = format!(
        "<input type=\"text\" id=\"f-{key}\" role=\"combobox\" aria-autocomplete=\"list\" \
         aria-expanded=\"false\" aria-controls=\"{key}-list\" aria-describedby=\"err-{key}\" \
         title=\"{}\" placeholder=\"{none}\" autocomplete=\"off\" spellcheck=\"false\" \
         value=\"{chosen}\" data-name=\"{chosen}\">\
         <ul role=\"listbox\" id=\"{key}-list\" aria-label=\"{}\" hidden>\
         <li role=\"option\" id=\"{key}-opt-hub\" data-hub=\"\" aria-selected=\"false\" hidden></li>",
        escape(title),
        escape(label)
    );
    for (i, c) in choices.iter().enumerate() {
        html += &format!(
            "<li role=\"option\" id=\"{key}-opt-{i}\" data-value=\"{}\" aria-selected=\"false\">{}<small>{}</small></li>",
            escape(&c.value),
            name(c),
            detail(&c.value)
        );
    }
    html + "</ul>"
}

/// The wrapper's input and list.
fn parts(wrapper: &Element) -> Option<(HtmlInputElement, Element)> {
    let input = wrapper.first_element_child()?.dyn_into().ok()?;
    Some((input, wrapper.last_element_child()?))
}

/// The entries shown for the text in the box: those `Preset::matches`, and the unset one only
/// while the box is empty. Text that names a Hub repo (`org/name`, a huggingface.co URL) also
/// offers to read it from the Hub, which happens only when that entry is picked.
fn filter(list: &Element, search: &str) {
    let entries = list.children();
    for i in 0..entries.length() {
        let Some(entry) = entries.item(i) else {
            continue;
        };
        if entry.has_attribute("data-hub") {
            let repo = HubRepo::parse(search).ok().filter(|_| search.contains('/'));
            if let Some(repo) = &repo {
                entry
                    .set_text_content(Some(&format!("Read {} from the Hugging Face Hub", repo.id)));
                let _ = entry.set_attribute("data-hub", search.trim());
            }
            let _ = entry.toggle_attribute_with_force("hidden", repo.is_none());
            continue;
        }
        let value = entry.get_attribute("data-value").unwrap_or_default();
        let shown = preset(&value).map_or(search.trim().is_empty(), |p| p.matches(search));
        let _ = entry.toggle_attribute_with_force("hidden", !shown);
    }
}

fn shown_entries(list: &Element) -> Vec<Element> {
    let entries = list.children();
    (0..entries.length())
        .filter_map(|i| entries.item(i))
        .filter(|e| !e.has_attribute("hidden"))
        .collect()
}

fn active_entry(list: &Element) -> Option<Element> {
    list.query_selector("[aria-selected=true]").ok().flatten()
}

/// Makes `entry` the active one (`None`: none), as `aria-activedescendant` says.
fn set_active(input: &Element, list: &Element, entry: Option<&Element>) {
    if let Some(previous) = active_entry(list) {
        let _ = previous.set_attribute("aria-selected", "false");
    }
    match entry {
        Some(entry) => {
            let _ = entry.set_attribute("aria-selected", "true");
            let _ = input.set_attribute("aria-activedescendant", &entry.id());
            entry.scroll_into_view_with_bool(false);
        }
        None => {
            let _ = input.remove_attribute("aria-activedescendant");
        }
    }
}

fn set_open(input: &Element, list: &Element, open: bool) {
    let _ = list.toggle_attribute_with_force("hidden", !open);
    let _ = input.set_attribute("aria-expanded", if open { "true" } else { "false" });
}

/// Closes the list, every entry shown again for the next time, and puts the chosen model's name
/// back in the box.
fn close(input: &HtmlInputElement, list: &Element) {
    set_active(input, list, None);
    set_open(input, list, false);
    filter(list, "");
    input.set_value(&input.get_attribute("data-name").unwrap_or_default());
}

/// Acts on a chosen entry: the Hub entry asks the Hub panel to read the typed repo, any other
/// sets the field to its value.
fn choose_entry(
    hub: Option<HubAsk>,
    pick: impl Fn(String),
    input: &HtmlInputElement,
    list: &Element,
    entry: &Element,
) {
    if let Some(text) = entry.get_attribute("data-hub") {
        close(input, list);
        if let Some(hub) = hub {
            hub.ask(&text);
        }
        return;
    }
    let name = entry.first_child().and_then(|n| n.text_content());
    let value = entry.get_attribute("data-value").unwrap_or_default();
    let shown = if value.is_empty() { None } else { name };
    // close() shows the chosen name, so it is set first.
    let _ = input.set_attribute("data-name", shown.as_deref().unwrap_or_default());
    close(input, list);
    pick(value);
}

/// The picker for the catalogue field `key`; `pick` sets the field to a choice's value.
pub fn model_picker(
    key: &'static str,
    title: &str,
    label: &str,
    choices: &[Choice],
    value: &str,
    pick: impl Fn(String) + Copy + 'static,
) -> impl IntoView {
    let hub = use_context::<HubAsk>();
    let choose = move |input: &HtmlInputElement, list: &Element, entry: &Element| {
        choose_entry(hub, pick, input, list, entry)
    };
    let on_keydown = move |ev: web_sys::KeyboardEvent| {
        let Some((input, list)) = ev.current_target().and_then(|w| parts(w.unchecked_ref())) else {
            return;
        };
        let shown = shown_entries(&list);
        let at = active_entry(&list).and_then(|a| shown.iter().position(|e| *e == a));
        let open = !list.has_attribute("hidden");
        let last = shown.len().saturating_sub(1);
        let to = match ev.key().as_str() {
            "ArrowDown" => at.map_or(0, |p| (p + 1).min(last)),
            "ArrowUp" => at.map_or(last, |p| p.saturating_sub(1)),
            "Home" if open => 0,
            "End" if open => last,
            "Enter" => {
                if let Some(entry) = active_entry(&list) {
                    ev.prevent_default();
                    choose(&input, &list, &entry);
                }
                return;
            }
            "Escape" => return close(&input, &list),
            _ => return,
        };
        ev.prevent_default();
        set_open(&input, &list, true);
        set_active(&input, &list, shown.get(to));
    };
    let on_input = move |ev: web_sys::Event| {
        if let Some((input, list)) = ev.current_target().and_then(|w| parts(w.unchecked_ref())) {
            filter(&list, &input.value());
            set_active(&input, &list, None);
            set_open(&input, &list, true);
        }
    };
    // A press on the box opens the list. One in the list keeps the focus in the box (so its
    // scroll bar does not close it), and one on an entry picks it.
    let on_mousedown = move |ev: web_sys::MouseEvent| {
        let Some((input, list)) = ev.current_target().and_then(|w| parts(w.unchecked_ref())) else {
            return;
        };
        let Some(target) = ev.target().and_then(|t| t.dyn_into::<Element>().ok()) else {
            return;
        };
        if !list.contains(Some(&target)) {
            return set_open(&input, &list, true);
        }
        ev.prevent_default();
        if let Some(entry) = target.closest("[role=option]").ok().flatten() {
            choose(&input, &list, &entry);
        }
    };
    let on_focusout = move |ev: web_sys::FocusEvent| {
        if let Some((input, list)) = ev.current_target().and_then(|w| parts(w.unchecked_ref())) {
            close(&input, &list);
        }
    };
    view! {
        <div class="picker" inner_html=markup(key, title, label, choices, value)
            on:keydown=on_keydown on:input=on_input on:mousedown=on_mousedown on:focusout=on_focusout></div>
    }
}
