//! "Read from the Hugging Face Hub": a repo id or huggingface.co URL (typed here, or in the model
//! picker, or given as `?hf=REPO@REV[:QUANT]`) read on the user's click, never before. The
//! engine's `RepoRead` says what to read; this panel makes the reads with `fetch`: the model API,
//! config.json and each shard's header, plain GETs with one `Range` each, so no CORS preflight;
//! the Hub redirects files to its CDN, which the CSP allows (index.html). Cancel aborts them all.
//! A GGUF repo lists its quants with their sizes; picking one reads its header. A gated repo's
//! files need an account's token, which the page never takes: it says so and offers the paste.

use crate::bridge;
use crate::browser::{self, GetFailed};
use crate::state::PageState;
use leptos::prelude::*;
use vramfit_engine::model::{HubRepo, ModelInfo, Next, Quant, RepoModel, RepoRead};

#[derive(Clone)]
enum Shown {
    Reading(String),
    Read(Vec<String>),
    Quants(HubRepo, Vec<Quant>),
    Failed(String),
}

/// What the reader gets from a failed answer, in words a user can act on.
fn failure(repo: &HubRepo, endpoint: &str, what: &str, got: &browser::Got) -> String {
    match (got.status, got.error_code.as_deref().unwrap_or("")) {
        (_, "GatedRepo") => gated(repo),
        (_, "RepoNotFound") | (401, _) => format!(
            "{} is not on {endpoint}, or it is private; the page reads public repos only (paste a private repo's config.json below)",
            repo.id
        ),
        (_, "RevisionNotFound") => format!("{} has no revision {}", repo.id, repo.revision),
        (status, _) => format!("{repo}: {what} answered HTTP {status}"),
    }
}

fn gated(repo: &HubRepo) -> String {
    format!(
        "{} is gated: its files are for accounts its owner approved, and the page never asks for a token. Accept its terms at https://huggingface.co/{}, then paste its config.json below (Paste config.json), or run the CLI with HF_TOKEN: vramfit estimate --hf {}",
        repo.id, repo.id, repo.id
    )
}

fn get_failed(endpoint: &str, e: GetFailed) -> String {
    match e {
        GetFailed::Aborted => "Cancelled.".to_string(),
        GetFailed::Unreachable => format!(
            "Cannot reach {endpoint}: this browser is offline, or a network filter blocks it. The rest of the page works without it."
        ),
        GetFailed::RangeIgnored => format!(
            "{endpoint} ignored a Range request and started sending a whole weights file; the page reads headers only, so it stopped."
        ),
    }
}

/// Makes the reads `read` asks for, all of a step's at once, until it ends.
async fn drive(
    endpoint: &str,
    repo: &HubRepo,
    mut read: RepoRead,
    signal: &web_sys::AbortSignal,
    shown: RwSignal<Option<Shown>>,
) -> Result<RepoModel, String> {
    let file_url = |f: &str| format!("{endpoint}/{}/resolve/{}/{f}", repo.id, repo.revision);
    loop {
        let fetches = match read.next_read() {
            Next::Done(result) => return result,
            Next::List => {
                let url = format!(
                    "{endpoint}/api/models/{}/revision/{}?blobs=true",
                    repo.id, repo.revision
                );
                let got = browser::get(&url, None, signal).answer(signal).await;
                let got = got.map_err(|e| get_failed(endpoint, e))?;
                if got.status != 200 {
                    return Err(failure(repo, endpoint, "the model API", &got));
                }
                let info = ModelInfo::parse(&got.body).map_err(|e| format!("{repo}: {e}"))?;
                if info.gated {
                    return Err(gated(repo));
                }
                read.listed(info.files);
                continue;
            }
            Next::Fetch(fetches) => fetches,
        };
        let what = match fetches.as_slice() {
            [one] => one.file.clone(),
            many => format!("{} headers", many.len()),
        };
        shown.set(Some(Shown::Reading(format!("Reading {what} from {repo}…"))));
        // All of them go out now; their answers are taken in order.
        let gets: Vec<_> = fetches
            .iter()
            .map(|f| browser::get(&file_url(&f.file), f.range, signal))
            .collect();
        let mut answers = Vec::with_capacity(fetches.len());
        for (fetch, got) in fetches.iter().zip(gets) {
            let got = got
                .answer(signal)
                .await
                .map_err(|e| get_failed(endpoint, e))?;
            answers.push(match (got.status, got.error_code.as_deref()) {
                (200 | 206, _) => Some(got.body),
                (404, Some("EntryNotFound")) => None,
                _ => return Err(failure(repo, endpoint, &fetch.file, &got)),
            });
        }
        read.fetched(answers);
    }
}

/// What the read is doing, what it read, the quants to pick from, or why it failed.
fn shown_view(shown: Shown, panel: Panel) -> AnyView {
    match shown {
        Shown::Reading(what) => view! {
            <p class="note" role="status" data-testid="hf-progress">
                {what}" "
                <button type="button" data-testid="hf-cancel" on:click=move |_| panel.cancel()>"Cancel"</button>
            </p>
        }
        .into_any(),
        Shown::Read(lines) => {
            let mut lines = lines.into_iter();
            let summary = lines.next().unwrap_or_default();
            let warnings = lines
                .map(|w| view! { <li class="warning">{w}</li> })
                .collect_view();
            view! {
                <div role="status" data-testid="hf-read">
                    <p class="note" data-testid="hf-summary">{summary}</p>
                    <ul class="config-warnings">{warnings}</ul>
                </div>
            }
            .into_any()
        }
        Shown::Quants(repo, quants) => {
            let buttons = quants
                .into_iter()
                .map(|q| {
                    let text = q.to_string();
                    let name = q.name;
                    let quant = name.clone();
                    view! {
                        <li>
                            <button type="button" data-quant=quant
                                on:click=move |_| panel.pick(name.clone())>{text}</button>
                        </li>
                    }
                })
                .collect_view();
            view! {
                <div role="status" data-testid="hf-quants">
                    <p class="note">{repo.id}" is a GGUF repo: pick a quantization to read its header."</p>
                    <ul class="quants">{buttons}</ul>
                </div>
            }
            .into_any()
        }
        Shown::Failed(message) => view! {
            <p class="field-error" role="alert" data-testid="hf-error">{message}</p>
        }
        .into_any(),
    }
}

/// The `hf` key of the page's URL, which fills the box (and reads nothing).
fn url_repo() -> String {
    vramfit_engine::query::parse_query(&browser::query())
        .into_iter()
        .find(|(k, _)| k == "hf")
        .map(|(_, v)| v)
        .unwrap_or_default()
}

/// The panel's state, shared by its handlers and its reads.
#[derive(Clone, Copy)]
struct Panel {
    state: PageState,
    /// What the box holds.
    repo: RwSignal<String>,
    shown: RwSignal<Option<Shown>>,
    quants: StoredValue<Option<(HubRepo, Vec<Quant>)>>,
    abort: StoredValue<Option<web_sys::AbortController>>,
    /// Each read's number: a read that a later one replaced shows nothing.
    current: StoredValue<u32>,
}

impl Panel {
    fn cancel(self) {
        if let Some(controller) = self.abort.get_value() {
            controller.abort();
        }
    }

    /// Reads `repo` (or, given, these GGUF shards of it), replacing any read under way.
    fn start(self, repo: HubRepo, files: Option<Vec<String>>) {
        self.cancel();
        let Ok(controller) = web_sys::AbortController::new() else {
            return;
        };
        self.abort.set_value(Some(controller.clone()));
        let id = self.current.get_value().wrapping_add(1);
        self.current.set_value(id);
        let endpoint = browser::hub_endpoint();
        let read = match &files {
            Some(files) => RepoRead::gguf(&repo.to_string(), files),
            None => RepoRead::new(&repo.to_string(), repo.quant.as_deref()),
        };
        let asking = format!("Asking {endpoint} about {}…", repo.id);
        self.shown.set(Some(Shown::Reading(asking)));
        leptos::task::spawn_local(async move {
            let signal = controller.signal();
            let result = drive(&endpoint, &repo, read, &signal, self.shown).await;
            if self.current.get_value() == id {
                self.abort.set_value(None);
                self.finish(repo, result);
            }
        });
    }

    fn finish(self, repo: HubRepo, result: Result<RepoModel, String>) {
        match result {
            Ok(RepoModel::Quants(list)) => {
                self.quants.set_value(Some((repo.clone(), list.clone())));
                self.shown.set(Some(Shown::Quants(repo, list)));
            }
            Ok(model) => {
                browser::set_page_key("hf", Some(&repo.to_string()));
                let changes: Vec<(String, String)> = model
                    .pairs()
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect();
                self.state.apply(&changes);
                self.shown.set(Some(Shown::Read(model.messages())));
            }
            Err(message) => self.shown.set(Some(Shown::Failed(message))),
        }
    }

    /// Reads what the box names.
    fn read_box(self) {
        match self.repo.with_untracked(|value| HubRepo::parse(value)) {
            Ok(repo) => self.start(repo, None),
            Err(e) => self.shown.set(Some(Shown::Failed(e))),
        }
    }

    /// A quant of the listed GGUF repo: its file's header.
    fn pick(self, name: String) {
        let Some((mut repo, list)) = self.quants.get_value() else {
            return;
        };
        let files = list.into_iter().find(|q| q.name == name).map(|q| q.files);
        repo.quant = Some(name);
        self.start(repo, files);
    }
}

#[component]
pub fn HubRead() -> impl IntoView {
    let initial = url_repo();
    let open = !initial.is_empty();
    let panel = Panel {
        state: expect_context::<PageState>(),
        repo: RwSignal::new(initial),
        shown: RwSignal::new(None),
        quants: StoredValue::new(None),
        abort: StoredValue::new(None),
        current: StoredValue::new(0),
    };
    let details = NodeRef::<leptos::html::Details>::new();
    // The model picker's "Read … from the Hugging Face Hub": the user asked, so read.
    bridge::on_hub_ask(move |value| {
        if let Some(details) = details.get_untracked() {
            details.set_open(true);
        }
        panel.repo.set(value);
        panel.read_box();
    });
    let on_keydown = move |ev: web_sys::KeyboardEvent| {
        if ev.key() == "Enter" {
            panel.read_box();
        }
    };
    let shown = panel.shown;
    view! {
        <details class="hub-read" data-testid="hub-read" open=open node_ref=details>
            <summary>"Read from the Hugging Face Hub"</summary>
            <div>
                <label for="hf-repo">
                    "A repo id (org/name, @revision, :QUANT for a GGUF repo) or a huggingface.co URL. Only config.json and the headers are read, when you ask."
                </label>
                <div class="hub-row">
                    <input type="text" id="hf-repo" data-testid="hf-repo" autocomplete="off"
                        spellcheck="false" placeholder="Qwen/Qwen3-30B-A3B"
                        bind:value=panel.repo on:keydown=on_keydown/>
                    <button type="button" data-testid="hf-read" on:click=move |_| panel.read_box()>
                        "Read from the Hub"
                    </button>
                </div>
            </div>
            <div>{move || shown.get().map(|shown| shown_view(shown, panel))}</div>
        </details>
    }
}
