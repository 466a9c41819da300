//! The serving panel, for a serving runtime: the answer first (does the runtime start,
//! and how many requests of max-model-len its KV pool holds, or llama.cpp's slots), then the
//! cache, system RAM, the settings as the runtime applies them, and the plan: the answers for a
//! number of users (requests sharing a pool, or llama.cpp's slots) and the concurrency-vs-context
//! curve, and for llama.cpp also the best quant and the most GPU layers; last, the command that
//! launches it, with a copy button.

use crate::chart::{draw_concurrency, CURVE_COLOUR, HERE_COLOUR, USERS_COLOUR};
use crate::components::chart_panel::{fit_canvas, CanvasWidth};
use crate::components::command::Command;
use crate::components::legend::LineSwatch;
use crate::state::PageState;
use leptos::html::Canvas;
use leptos::prelude::*;
use vramfit_engine::estimate::{Requests, Serving, Setting};
use vramfit_engine::gpu_catalogue;
use vramfit_engine::scenario::FIELDS;
use vramfit_engine::serving_plan::{plan_serving, ServingPlan};
use vramfit_engine::units::group_thousands;
use vramfit_engine::{Estimate, Units};

/// The most users the input takes; the engine compares them as a float, so this is only a
/// sanity bound on what a person means.
const MAX_USERS: u32 = 10_000_000;

/// The concurrency, exact in data- attributes for the tests.
fn concurrency(s: &Serving, text: String) -> impl IntoView {
    view! {
        <span data-testid="max-concurrency" data-value=s.max_concurrency.to_string()
            data-context=s.context_tokens.to_string()>{text}</span>
    }
}

/// The answer line: "vLLM starts: 29.03 concurrent requests of 16,384 tokens", or the
/// runtime's own reason for refusing to start, verbatim.
fn answer(s: &Serving) -> AnyView {
    let name = s.runtime.rules().facts().name;
    let tokens = group_thousands(u64::from(s.context_tokens));
    if s.starts {
        let text = if !s.runtime.rules().facts().pools_kv() {
            // Slots are whole: `-np`.
            let slots = s.max_concurrency.round();
            let noun = if slots == 1.0 { "slot" } else { "slots" };
            format!("{slots} {noun} of {tokens} tokens")
        } else {
            format!(
                "{:.2} concurrent requests of {tokens} tokens",
                s.max_concurrency
            )
        };
        view! {
            <p class="serving-answer" data-testid="serving-answer">
                <strong>{name}" starts: "</strong>{concurrency(s, text)}
            </p>
        }
        .into_any()
    } else {
        let reason = s
            .reason
            .clone()
            .unwrap_or_else(|| format!("{name} does not say why."));
        let text = format!("{:.2} requests of {tokens} tokens fit", s.max_concurrency);
        view! {
            <div class="serving-refusal" role="alert" data-testid="serving-refusal">
                <p><strong>{name}" will not start"</strong>" ("{concurrency(s, text)}")"</p>
                <p class="reason" data-testid="serving-reason">{reason}</p>
            </div>
        }
        .into_any()
    }
}

/// One setting as applied, a default marked with where it came from.
fn setting(setting: Setting) -> impl IntoView {
    let label = FIELDS
        .iter()
        .find(|f| f.key == setting.key)
        .map_or_else(|| setting.key.clone(), |f| f.label.to_string());
    let class = setting.default_from.is_some().then_some("default");
    // A value the scenario holds needs no source, whether the user typed it or left the form's
    // own default (as the CLI's settings line writes it); a runtime's default says whose it is.
    let from = setting
        .default_from
        .map(|from| format!(" · default: {from}"));
    let key = setting.key.clone();
    view! {
        <li data-setting=key class=class>
            {label}" = "<strong>{setting.value}</strong>
            <span class="setting-from"><code>{setting.key}</code>{from}</span>
        </li>
    }
}

/// The answer, the pool's figures, system RAM and the settings as applied.
#[component]
fn Figures(serving: Memo<Option<Serving>>) -> impl IntoView {
    let units = expect_context::<PageState>().units;
    let text = move |f: fn(&Serving, Units) -> String| {
        move || serving.with(|s| s.as_ref().map(|s| f(s, units.get())))
    };
    let words = Memo::new(move |_| {
        serving.with(|s| s.as_ref().map(|s| s.runtime.rules().facts().pool_words))
    });
    let blocks = Memo::new(move |_| serving.with(|s| s.as_ref().and_then(|s| s.kv_blocks)));
    let host = Memo::new(move |_| serving.with(|s| s.as_ref().and_then(|s| s.host.bytes)));
    let settings =
        move || serving.with(|s| s.as_ref().map(|s| s.settings.clone()).unwrap_or_default());
    view! {
        {move || serving.with(|s| s.as_ref().map(answer))}
        <dl class="figures">
            <dt>{move || words.get().map(|w| w.pool)}</dt>
            <dd data-testid="kv-pool" data-bytes=text(|s, _| s.kv_pool_bytes.0.to_string())>
                {text(|s, units| s.kv_pool_bytes.display(units))}
            </dd>
            <dt>{move || words.get().map(|w| w.tokens)}</dt>
            <dd data-testid="kv-tokens" data-tokens=text(|s, _| s.kv_tokens.to_string())>
                {text(|s, _| group_thousands(s.kv_tokens))}
            </dd>
            {move || blocks.get().map(|blocks| view! {
                <dt>"KV blocks"</dt>
                <dd data-testid="kv-blocks" data-blocks=blocks.to_string()>{group_thousands(blocks)}</dd>
            })}
            {move || host.get().map(|host| view! {
                <dt>"System RAM"</dt>
                <dd data-testid="host-bytes" data-bytes=host.0.to_string()>
                    {move || host.display(units.get())}
                    <HostParts serving/>
                </dd>
            })}
        </dl>
        <h3>"Settings as applied"</h3>
        <ul class="settings" data-testid="serving-settings">
            <For each=settings
                key=|s| (s.key.clone(), s.value.clone(), s.default_from.clone())
                children=setting/>
        </ul>
    }
}

/// What makes up the system RAM the runtime holds.
#[component]
fn HostParts(serving: Memo<Option<Serving>>) -> impl IntoView {
    let units = expect_context::<PageState>().units;
    let parts = move || {
        serving.with(|s| {
            s.as_ref()
                .map(|s| s.host.components.clone())
                .unwrap_or_default()
        })
    };
    view! {
        <ul class="host-parts">
            <For each=parts key=|c| (c.id.id().to_string(), c.label.clone(), c.bytes)
                children=move |c| view! {
                    <li data-host-component=c.id.id().to_string() data-bytes=c.bytes.0.to_string()>
                        {c.label}" "{move || c.bytes.display(units.get())}
                    </li>
                }/>
        </ul>
    }
}

/// The plan's answers: where the runtime places layers (llama.cpp), the best quant and the most
/// GPU layers; for a pool, the longest context, the smallest GPU and the fewest GPUs for `users`
/// requests.
fn answers(p: &ServingPlan, places_layers: bool, quant: String, gpu_name: &str) -> AnyView {
    let n = p.users;
    let context = group_thousands(u64::from(p.context_tokens));
    let max_context = match p.max_context {
        Some(tokens) => format!("{} tokens", group_thousands(u64::from(tokens))),
        None => "none: they do not fit at any context".to_string(),
    };
    let smallest = match &p.smallest_gpu {
        Some(id) => gpu_catalogue::find(id)
            .map_or(id.as_str(), |g| g.name)
            .to_string(),
        None => "none in the catalogue".to_string(),
    };
    let fewest = match p.fewest_gpus {
        Some(1) => format!("1 × {gpu_name}"),
        Some(count) => format!("{count} × {gpu_name}, tensor parallel"),
        None => "more than 64".to_string(),
    };
    let number = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    let smallest_id = p.smallest_gpu.clone().unwrap_or_default();
    let fewest_count = number(p.fewest_gpus);
    // Where the runtime places layers (llama.cpp), its best quant and most GPU layers first.
    let layers = places_layers.then(|| {
        let best = p.best_quant.clone();
        let most = p
            .max_gpu_layers
            .map_or_else(|| "none: it does not fit".to_string(), |l| l.to_string());
        view! {
            <dt>"Best quant with every layer on the GPU"</dt>
            <dd data-testid="best-quant">{best.unwrap_or_else(|| "none fits".to_string())}</dd>
            <dt>"Most GPU layers (-ngl) at "{quant}</dt>
            <dd data-testid="max-gpu-layers">{most}</dd>
        }
    });
    let requests = if n == 1 { "request" } else { "requests" };
    let users = group_thousands(u64::from(n));
    view! {
        <dl class="figures plan" data-testid="serving-plan" data-users=n.to_string()
            data-max-context=number(p.max_context)
            data-best-quant=places_layers.then(|| p.best_quant.clone().unwrap_or_default())
            data-max-gpu-layers=places_layers.then(|| number(p.max_gpu_layers))
            data-smallest-gpu=smallest_id data-fewest-gpus=fewest_count>
            {layers}
            <dt>"Longest context for "{users.clone()}" "{requests}</dt>
            <dd data-testid="max-context">{max_context}</dd>
            <dt>"Smallest GPU for "{users.clone()}" × "{context.clone()}" tokens"</dt>
            <dd data-testid="smallest-gpu-serving">{smallest}</dd>
            <dt>"Fewest GPUs for "{users}" × "{context}" tokens"</dt>
            <dd data-testid="fewest-gpus">{fewest}</dd>
        </dl>
    }
    .into_any()
}

/// The command that starts the runtime as planned, or the estimate's note saying why none is
/// written.
fn launch(e: &Estimate) -> impl IntoView {
    let body = match e.serving.as_ref().and_then(|s| s.command.clone()) {
        Some(command) => {
            view! { <Command testid="launch-command" label="launch command" command/> }.into_any()
        }
        None => {
            let why = e
                .notes
                .iter()
                .find(|n| n.starts_with("No launch command"))
                .map_or(
                    "No launch command is written for this scenario.",
                    String::as_str,
                )
                .to_string();
            view! { <p class="note" data-testid="launch-none">{why}</p> }.into_any()
        }
    };
    view! { <h3>"Launch command"</h3>{body} }
}

#[component]
pub fn ServingPanel() -> impl IntoView {
    let state = expect_context::<PageState>();
    // From the last valid estimate, so an invalid edit leaves the last good answer on screen.
    let serving = Memo::new(move |_| {
        state
            .estimate
            .with(|e| e.as_ref().and_then(|e| e.serving.clone()))
    });
    let shown = Memo::new(move |_| serving.with(Option::is_some));
    let runtime = Memo::new(move |_| serving.with(|s| s.as_ref().map(|s| s.runtime)));
    // MLX serves one request at a time: no number of users to ask about, no curve.
    let one_at_a_time = Memo::new(move |_| {
        runtime
            .get()
            .is_some_and(|r| r.rules().facts().requests == Requests::One)
    });
    let places_layers = Memo::new(move |_| {
        runtime
            .get()
            .is_some_and(|r| r.rules().facts().places_layers)
    });
    let users = RwSignal::new(1u32);
    // Here rather than in the field, so an error outlives the field while llama.cpp hides it.
    let users_error = RwSignal::new(None::<String>);
    let plan = Memo::new(move |previous: Option<&Option<ServingPlan>>| {
        if !shown.get() {
            return previous.cloned().flatten();
        }
        let users = (!one_at_a_time.get()).then(|| users.get());
        match state.scenario.with(|s| plan_serving(s, users, None)) {
            Ok(plan) => Some(plan),
            Err(_) => previous.cloned().flatten(),
        }
    });
    move || {
        shown.get().then(|| {
            let title = move || {
                serving
                    .with(|s| s.as_ref().map(|s| s.runtime.rules().facts().name))
                    .map(|name| format!("Serving with {name}"))
            };
            view! {
                <section class="panel serving" aria-label="Serving" data-testid="serving"
                    data-runtime=move || serving.with(|s| s.as_ref().map(|s| s.runtime.as_str()))
                    data-starts=move || serving.with(|s| s.as_ref().map(|s| s.starts.to_string()))>
                    <h2>{title}</h2>
                    <div><Figures serving/></div>
                    {move || if one_at_a_time.get() {
                        view! { <h3>"What fits"</h3> }.into_any()
                    } else {
                        how_many_users(users, users_error).into_any()
                    }}
                    {plan_answers(plan, places_layers)}
                    {move || (!one_at_a_time.get()).then(|| concurrency_curve(plan))}
                    <div class="launch">
                        {move || state.estimate.with(|e| e.as_ref().map(launch))}
                    </div>
                </section>
            }
        })
    }
}

/// The users a pool's plan is for. While the input holds no valid number, `users` keeps the
/// last one and `error` says what the field takes.
fn how_many_users(users: RwSignal<u32>, error: RwSignal<Option<String>>) -> impl IntoView {
    let on_input = move |ev| {
        let text = event_target_value(&ev);
        match text.trim().parse::<u32>() {
            Ok(n) if (1..=MAX_USERS).contains(&n) => {
                users.set(n);
                error.set(None);
            }
            _ => error.set(Some(format!(
                "a whole number of users from 1 to {}",
                group_thousands(u64::from(MAX_USERS))
            ))),
        }
    };
    let invalid = move || error.with(Option::is_some);
    view! {
        <h3>"How many users"</h3>
        <div class="field" class:invalid=invalid>
            <label for="f-users">"Concurrent users"</label>
            <input type="number" id="f-users" min="1" step="1" inputmode="numeric"
                value=users.get_untracked().to_string() aria-describedby="err-users"
                aria-invalid=move || invalid().to_string()
                on:input=on_input/>
            <p class="field-error" id="err-users" aria-live="polite">{move || error.get()}</p>
        </div>
    }
}

/// The plan's answers, for the scenario's quant (where the runtime places layers) and GPU.
fn plan_answers(plan: Memo<Option<ServingPlan>>, places_layers: Memo<bool>) -> impl IntoView {
    let state = expect_context::<PageState>();
    let gpu_name = Memo::new(move |_| {
        state
            .estimate
            .with(|e| e.as_ref().map(|e| e.gpu_name.clone()).unwrap_or_default())
    });
    let quant = Memo::new(move |_| {
        if places_layers.get() {
            state.scenario.with(|s| s.get("quant"))
        } else {
            String::new()
        }
    });
    let answers = move || {
        let gpu_name = gpu_name.get();
        plan.with(|p| {
            p.as_ref()
                .map(|p| answers(p, places_layers.get(), quant.get(), &gpu_name))
        })
    };
    view! { <div>{answers}</div> }
}

/// A pool's concurrency against context, drawn from the plan, with its legend.
fn concurrency_curve(plan: Memo<Option<ServingPlan>>) -> impl IntoView {
    let canvas_ref = NodeRef::<Canvas>::new();
    let width = CanvasWidth::observe(canvas_ref);
    let draw_error = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let Some(canvas) = canvas_ref.get() else {
            return;
        };
        let Some(plan) = plan.get() else { return };
        let theme = fit_canvas(&canvas, width, 240, 260.0);
        let here = Some((plan.context_tokens, plan.max_concurrency));
        let users = Some(f64::from(plan.users));
        draw_error.set(draw_concurrency(canvas, &plan.curve, here, users, &theme).err());
    });
    let context = move || {
        plan.with(|p| {
            p.as_ref()
                .map(|p| group_thousands(u64::from(p.context_tokens)))
        })
    };
    let users = move || {
        plan.with(|p| {
            p.as_ref().map(|p| {
                let noun = if p.users == 1 { "user" } else { "users" };
                format!("{} {noun}", group_thousands(u64::from(p.users)))
            })
        })
    };
    view! {
        <h3>"Concurrency vs context"</h3>
        <canvas id="serving-curve" node_ref=canvas_ref role="img"
            aria-label="Concurrent requests that fit at each context length, with this scenario's context marked"></canvas>
        <p class="field-error">{move || draw_error.get()}</p>
        <ul class="legend">
            <li><LineSwatch colour=CURVE_COLOUR.css() stroke="3"/>"requests that fit at each context"</li>
            <li><LineSwatch colour=HERE_COLOUR.css() stroke="3"/>"this scenario: "{context}" tokens"</li>
            <li><LineSwatch colour=USERS_COLOUR.css() stroke="3"/>{users}</li>
        </ul>
    }
}
