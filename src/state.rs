//! The page's shared state, given to every panel through context: the scenario (the URL's
//! truth), the derived estimate, and the two ways a button changes the scenario. Each module has
//! its own: the shell's owns the scenario, the panels' follows it (`bridge.rs`).

use crate::{bridge, browser};
use leptos::prelude::*;
use vramfit_engine::query::scenario_to_query;
use vramfit_engine::{Estimate, FieldError, Scenario, Units};

/// An estimate or every invalid field, as the engine's estimate functions give them.
pub type Computed = Result<Estimate, Vec<FieldError>>;

/// Which module a state lives in, which decides how a button's change is made.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Module {
    /// Changes the scenario, the URL and history itself.
    Shell,
    /// Asks the shell, and follows the scenario the shell then announces.
    Panels,
}

#[derive(Clone, Copy)]
pub struct PageState {
    module: Module,
    pub scenario: RwSignal<Scenario>,
    /// Bumped when the scenario changes from outside the form (URL, ladder, import), so the
    /// uncontrolled inputs re-render with the new values without fighting the user's typing.
    pub form_rev: RwSignal<u32>,
    pub field_errors: RwSignal<Vec<FieldError>>,
    /// The last valid estimate: on an invalid combination the last good result stays on screen.
    pub estimate: Memo<Option<Estimate>>,
    /// True once the first screen has been painted: what is below it renders after (the shell's
    /// lower fieldsets); the panels module starts after it, so its own is true from the start.
    pub painted: RwSignal<bool>,
    /// The unit family every size on the page is shown in. Read it where it is tracked, so a
    /// switch redraws every panel.
    pub units: Memo<Units>,
}

impl PageState {
    /// A module's state, its estimate made by `compute`: the shell shows no formula and passes
    /// `estimate_memory`, so its module links no speed model or command writer and writes no
    /// formula text.
    pub fn new(module: Module, initial: Scenario, compute: fn(&Scenario) -> Computed) -> PageState {
        let scenario = RwSignal::new(initial);
        PageState {
            module,
            scenario,
            form_rev: RwSignal::new(0),
            field_errors: RwSignal::new(Vec::new()),
            painted: RwSignal::new(module == Module::Panels),
            // A new scenario is taken as a new estimate without comparing the two: an edit
            // nearly always changes it, and the comparison would cost the shell its code.
            estimate: Memo::new_with_compare(
                move |previous: Option<&Option<Estimate>>| match scenario.with(compute) {
                    Ok(e) => Some(e),
                    Err(_) => previous.cloned().flatten(),
                },
                |_, _| true,
            ),
            units: Memo::new(move |_| scenario.with(|s| s.units)),
        }
    }

    /// The scenario runs under a serving runtime (the last valid estimate's): its pool fills its
    /// budget, so the serving panel answers what fits, and the solver and the curves step aside.
    pub fn serving_runtime(&self) -> bool {
        self.estimate
            .with(|e| e.as_ref().is_some_and(|e| e.serving.is_some()))
    }

    /// Applies `key=value` changes from a button, recording a history entry. A change the
    /// scenario refuses is shown at its field, and the field keeps its last good value.
    pub fn apply(&self, changes: &[(String, String)]) {
        match self.module {
            Module::Shell => self.replace(self.scenario.get_untracked(), changes),
            Module::Panels => bridge::ask_change(None, changes),
        }
    }

    /// Resets the scenario to `base`, then applies `changes`: one history entry, one update.
    pub fn replace(&self, base: Scenario, changes: &[(String, String)]) {
        if self.module == Module::Panels {
            return bridge::ask_change(Some(&scenario_to_query(&base)), changes);
        }
        let mut next = base;
        let mut refused = Vec::new();
        for (k, v) in changes {
            if let Err(e) = next.set(k, v) {
                refused.push(e);
            }
        }
        browser::set_query(&scenario_to_query(&next), true);
        self.scenario.set(next);
        self.field_errors.set(refused);
        self.form_rev.update(|r| *r += 1);
    }
}
