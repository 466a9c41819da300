//! The scenario form: one labelled control per engine key, grouped as the planner thinks about
//! them. Inputs are uncontrolled (their value is set only when the form re-renders), so typing
//! "2.5" is never rewritten mid-keystroke; each change goes through `Scenario::set`, and a bad value
//! shows its message inline while the last good scenario stays in effect.

use crate::app::PageState;
use leptos::prelude::*;
use vramfit_engine::gpu::GPUS;
use vramfit_engine::model::{CATALOGUE_PRESETS, PRESETS};
use vramfit_engine::precision::*;
use vramfit_engine::units::SIZE_RULE;
use vramfit_engine::FieldError;

enum Kind {
    Text { hint: &'static str },
    Select(Vec<(String, String)>),
}

fn choices(values: impl IntoIterator<Item = &'static str>) -> Kind {
    Kind::Select(
        values
            .into_iter()
            .map(|v| (v.to_string(), v.to_string()))
            .collect(),
    )
}

fn optional_dtype() -> Kind {
    let mut options = vec![(String::new(), "auto".to_string())];
    options.extend(
        Dtype::ALL
            .iter()
            .map(|d| (d.as_str().to_string(), d.as_str().to_string())),
    );
    Kind::Select(options)
}

fn field(key: &'static str, label: &'static str, kind: Kind) -> impl IntoView {
    let state = expect_context::<PageState>();
    let id = format!("f-{key}");
    let error_id = format!("err-{key}");
    let value = state.scenario.with_untracked(|s| {
        if key == "custom" {
            s.custom
                .iter()
                .map(|c| {
                    format!(
                        "{}:{}",
                        c.name,
                        vramfit_engine::units::format_size_exact(c.bytes)
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        } else {
            s.get(key)
        }
    });
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
        state.scenario.update(|s| {
            outcome = if key == "custom" {
                s.set_custom_list(&text)
            } else {
                s.set(key, &text)
            }
        });
        state.field_errors.update(|errors| {
            errors.retain(|e| e.field != key);
            if let Err(e) = outcome {
                errors.push(e);
            }
        });
    };
    let control = match kind {
        Kind::Text { hint } => view! {
            <input type="text" id=id.clone() name=key value=value inputmode="decimal" autocomplete="off"
                aria-describedby=error_id.clone() title=hint placeholder=hint
                aria-invalid=move || error().is_some().to_string()
                on:input=move |ev| on_change(event_target_value(&ev))/>
        }
        .into_any(),
        Kind::Select(options) => view! {
            <select id=id.clone() name=key aria-describedby=error_id.clone() on:change=move |ev| on_change(event_target_value(&ev))>
                {options.into_iter().map(|(v, text)| {
                    let selected = v == value;
                    view! { <option value=v selected=selected>{text}</option> }
                }).collect_view()}
            </select>
        }
        .into_any(),
    };
    view! {
        <div class="field" class:invalid=move || error().is_some()>
            <label for=id>{label}</label>
            {control}
            <p class="field-error" id=error_id aria-live="polite">{error}</p>
        </div>
    }
}

#[component]
pub fn Controls() -> impl IntoView {
    let state = expect_context::<PageState>();
    let validation = Memo::new(move |_| state.scenario.with(|s| s.validate()));
    move || {
        state.form_rev.track();
        let mut models = vec![(String::new(), "custom / by size".to_string())];
        models.extend(
            PRESETS[..CATALOGUE_PRESETS]
                .iter()
                .map(|p| (p.id.to_string(), p.name.to_string())),
        );
        let gpus = GPUS
            .iter()
            .map(|g| (g.id.to_string(), g.name.to_string()))
            .collect();
        let methods = Kind::Select(vec![
            (
                "detailed".to_string(),
                "detailed (matches real GPUs)".to_string(),
            ),
            (
                "lesson".to_string(),
                "lesson (chapter 62 formula)".to_string(),
            ),
        ]);
        view! {
            <form class="controls" on:submit=|ev| ev.prevent_default()>
                <fieldset>
                    <legend>"Model"</legend>
                    {field("model", "Preset", Kind::Select(models))}
                    {field("params", "Parameters", Kind::Text { hint: "e.g. 8B, 135M (overrides the preset's count)" })}
                    <details>
                        <summary>"Architecture"</summary>
                        {field("layers", "Layers", Kind::Text { hint: "from preset" })}
                        {field("hidden", "Hidden size", Kind::Text { hint: "from preset" })}
                        {field("heads", "Attention heads", Kind::Text { hint: "from preset" })}
                        {field("kv-heads", "KV heads (GQA)", Kind::Text { hint: "from preset" })}
                        {field("head-dim", "Head dim", Kind::Text { hint: "hidden / heads" })}
                        {field("ffn", "FFN (intermediate)", Kind::Text { hint: "from preset" })}
                        {field("vocab", "Vocabulary", Kind::Text { hint: "from preset" })}
                    </details>
                </fieldset>
                <fieldset>
                    <legend>"Method"</legend>
                    {field("mode", "Mode", choices(Mode::ALL.iter().map(|m| m.as_str())))}
                    {field("method", "Formula", methods)}
                    {field("lora-rank", "LoRA rank", Kind::Text { hint: "16" })}
                    {field("lora-targets", "LoRA targets", Kind::Text { hint: "q,v or all" })}
                    {field("lora-dropout", "LoRA dropout", choices(["false", "true"]))}
                </fieldset>
                <fieldset>
                    <legend>"Precision & optimizer"</legend>
                    {field("weights", "Weights", optional_dtype())}
                    {field("optimizer", "Optimizer", choices(Optimizer::ALL.iter().map(|o| o.as_str())))}
                    <details>
                        <summary>"More precision"</summary>
                        {field("grads", "Gradients", optional_dtype())}
                        {field("act-dtype", "Activations", optional_dtype())}
                        {field("kv-dtype", "KV cache", optional_dtype())}
                        {field("master-weights", "fp32 master weights", Kind::Select(vec![
                            (String::new(), "auto".to_string()), ("true".to_string(), "on".to_string()), ("false".to_string(), "off".to_string())]))}
                        {field("double-quant", "NF4 double quantization", choices(["false", "true"]))}
                        {field("chunked-loss", "Chunked loss", choices(["false", "true"]))}
                    </details>
                </fieldset>
                <fieldset>
                    <legend>"Batch & sequence"</legend>
                    {field("batch", "Micro-batch", Kind::Text { hint: "1" })}
                    {field("seq", "Sequence length", Kind::Text { hint: "2048" })}
                    {field("grad-accum", "Gradient accumulation", Kind::Text { hint: "1" })}
                    {field("checkpointing", "Checkpointing", choices(Checkpointing::ALL.iter().map(|c| c.as_str())))}
                    {field("attention", "Attention", choices(Attention::ALL.iter().map(|a| a.as_str())))}
                    <details>
                        <summary>"Dropout"</summary>
                        {field("dropout", "Hidden-state dropout", choices(["false", "true"]))}
                        {field("attention-dropout", "Attention dropout", choices(["false", "true"]))}
                    </details>
                </fieldset>
                <fieldset>
                    <legend>"GPU & budget"</legend>
                    {field("gpu", "GPU", Kind::Select(gpus))}
                    {field("vram", "Custom VRAM per GPU", Kind::Text { hint: SIZE_RULE })}
                    {field("gpus", "GPUs", Kind::Text { hint: "1" })}
                    {field("sharding", "Sharding", choices(Sharding::ALL.iter().map(|s| s.as_str())))}
                    {field("offload", "CPU offload", choices(Offload::ALL.iter().map(|o| o.as_str())))}
                    {field("reserved", "In use by others", Kind::Text { hint: SIZE_RULE })}
                    {field("margin", "Safety margin", Kind::Text { hint: SIZE_RULE })}
                    {field("context", "CUDA context", Kind::Text { hint: "512MiB with lazy loading; measure yours with vramfit probe" })}
                    <p class="rule">"Sizes: " {SIZE_RULE} "."</p>
                    {field("units", "Units", Kind::Select(vec![("gb".to_string(), "GB (10⁹ bytes)".to_string()), ("gib".to_string(), "GiB (2³⁰ bytes)".to_string())]))}
                </fieldset>
                <fieldset>
                    <legend>"Extras"</legend>
                    {field("custom", "Custom component", Kind::Text { hint: "name:size; name:size, e.g. RSSM dynamics:500MiB" })}
                </fieldset>
                <ValidationErrors errors=validation/>
            </form>
        }
    }
}

#[component]
fn ValidationErrors(errors: Memo<Vec<FieldError>>) -> impl IntoView {
    view! {
        <div class="validation" data-testid="validation" role="alert" class:hidden=move || errors.with(Vec::is_empty)>
            <p>"This combination can't be estimated; showing the last valid result:"</p>
            <ul>{move || errors.get().into_iter().map(|e| view! { <li>{e.field} ": " {e.message}</li> }).collect_view()}</ul>
        </div>
    }
}
