//! What the page lays out, read from the URL: the full page or an embed (`embed=1`), and which
//! panels (`show=`). An embed that lists panels renders exactly those; an unknown name is
//! reported on the page, never dropped silently.

use vramfit_engine::query::parse_query;

/// A panel `show=` can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Panel {
    /// The form; in an embed that lists it, a compact strip of the key fields.
    Inputs,
    /// The total, the verdict and the headroom.
    Summary,
    Chart,
    Curves,
    Breakdown,
    Solver,
    Tables,
    /// "Your GPU right now": planning on pasted nvidia-smi output.
    Gpu,
    /// "Measured vs predicted".
    Measured,
    /// A serving runtime's pool, concurrency and answers.
    Serving,
    /// How fast: prefill, decode and output tokens/s, and llama-bench's run against them.
    Speed,
    /// "How accurate is this?": the published runs like this one against the planner.
    Accuracy,
}

impl Panel {
    pub const ALL: [Panel; 12] = [
        Panel::Inputs,
        Panel::Summary,
        Panel::Chart,
        Panel::Curves,
        Panel::Breakdown,
        Panel::Solver,
        Panel::Tables,
        Panel::Gpu,
        Panel::Measured,
        Panel::Serving,
        Panel::Speed,
        Panel::Accuracy,
    ];

    /// Its name in `show=`.
    pub fn name(self) -> &'static str {
        match self {
            Panel::Inputs => "inputs",
            Panel::Summary => "summary",
            Panel::Chart => "chart",
            Panel::Curves => "curves",
            Panel::Breakdown => "breakdown",
            Panel::Solver => "solver",
            Panel::Tables => "tables",
            Panel::Gpu => "gpu",
            Panel::Measured => "measured",
            Panel::Serving => "serving",
            Panel::Speed => "speed",
            Panel::Accuracy => "accuracy",
        }
    }
}

/// The result panels the page shows when `show=` does not choose.
const DEFAULT_RESULTS: [Panel; 8] = [
    Panel::Serving,
    Panel::Chart,
    Panel::Speed,
    Panel::Curves,
    Panel::Breakdown,
    Panel::Accuracy,
    Panel::Tables,
    Panel::Solver,
];

#[derive(Clone)]
pub struct Layout {
    pub embed: bool,
    /// The panels `show=` names, if it names any.
    listed: Option<Vec<Panel>>,
    /// What `show=` names that is no panel.
    pub unknown: Vec<String>,
}

impl Layout {
    pub fn from_query(query: &str) -> Layout {
        let pairs = parse_query(query);
        let get = |key: &str| {
            pairs
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let embed = matches!(get("embed"), Some("1" | "true"));
        let mut listed = Vec::new();
        let mut unknown = Vec::new();
        for name in get("show").unwrap_or_default().split(',').map(str::trim) {
            match Panel::ALL.into_iter().find(|p| p.name() == name) {
                Some(panel) => listed.push(panel),
                None if name.is_empty() => {}
                None => unknown.push(name.to_string()),
            }
        }
        Layout {
            embed,
            listed: (!listed.is_empty()).then_some(listed),
            unknown,
        }
    }

    /// Whether `panel` is on the page. An embed that lists panels has exactly those. Otherwise
    /// the form and the summary are always there, the GPU and measured panels on the full page
    /// only (they remember nothing in an embed), and `show=` picks among the other results.
    pub fn shows(&self, panel: Panel) -> bool {
        match (&self.listed, self.embed) {
            (Some(listed), true) => listed.contains(&panel),
            (listed, embed) => match panel {
                Panel::Inputs | Panel::Summary => true,
                Panel::Gpu | Panel::Measured => !embed,
                _ => listed
                    .as_deref()
                    .unwrap_or(&DEFAULT_RESULTS)
                    .contains(&panel),
            },
        }
    }

    /// Whether the whole form is shown (with the pastes and chapter 62's examples), rather than
    /// the compact strip of an embed that lists `inputs`.
    pub fn whole_form(&self) -> bool {
        !self.embed || self.listed.is_none()
    }

    /// The line that names each unknown panel and the ones there are.
    pub fn unknown_message(&self) -> Option<String> {
        if self.unknown.is_empty() {
            return None;
        }
        let names: Vec<&str> = Panel::ALL.iter().map(|p| p.name()).collect();
        Some(format!(
            "no panel named {}; show= takes {}",
            self.unknown.join(", "),
            names.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(query: &str) -> Vec<&'static str> {
        let layout = Layout::from_query(query);
        Panel::ALL
            .into_iter()
            .filter(|&p| layout.shows(p))
            .map(Panel::name)
            .collect()
    }

    #[test]
    fn an_embed_that_lists_panels_shows_exactly_those() {
        assert_eq!(
            shown("?embed=1&show=chart,breakdown"),
            ["chart", "breakdown"]
        );
        assert_eq!(shown("?embed=1&show=inputs"), ["inputs"]);
        assert_eq!(shown("?embed=true&show=summary, gpu"), ["summary", "gpu"]);
        for panel in Panel::ALL {
            assert_eq!(
                shown(&format!("?embed=1&show={}", panel.name())),
                [panel.name()]
            );
        }
        let strip = Layout::from_query("?embed=1&show=inputs,summary");
        assert!(!strip.whole_form());
    }

    #[test]
    fn without_show_an_embed_is_as_before_and_the_full_page_has_everything() {
        let default = [
            "inputs",
            "summary",
            "chart",
            "curves",
            "breakdown",
            "solver",
            "tables",
            "serving",
            "speed",
            "accuracy",
        ];
        assert_eq!(shown("?embed=1"), default);
        assert_eq!(shown("?embed=1&show="), default);
        assert!(Layout::from_query("?embed=1").whole_form());
        assert_eq!(shown("?model=llama-3.1-8b").len(), default.len() + 2);
        // On the full page, show= picks among the results; the form and GPU panels stay.
        assert_eq!(
            shown("?show=chart"),
            ["inputs", "summary", "chart", "gpu", "measured"]
        );
        assert!(Layout::from_query("?show=chart").whole_form());
    }

    #[test]
    fn unknown_panels_are_named() {
        let layout = Layout::from_query("?embed=1&show=chart,charts,,bogus");
        assert_eq!(layout.unknown, ["charts", "bogus"]);
        let message = layout.unknown_message().unwrap();
        assert!(message.starts_with("no panel named charts, bogus; show= takes inputs, summary"));
        assert_eq!(
            Layout::from_query("?embed=1&show=chart").unknown_message(),
            None
        );
    }
}
