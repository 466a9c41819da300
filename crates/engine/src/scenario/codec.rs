//! How each kind of scenario value is read from its wire text, written back, written as JSON,
//! and offered: a text box, a short list of choices, or a catalogue. The field table names one
//! codec per field.

use crate::gpu_catalogue::{self, GPUS};
use crate::lora::LoraTargets;
use crate::model::{self, CATALOGUE_PRESETS, PRESETS};
use crate::runtime::ContextLength;
use crate::smi::shown_in_message;
use crate::units::{format_size_exact, parse_f64, parse_size, Bytes};
use crate::wire::{Choice, Wire};
use serde_json::Value as Json;
use std::borrow::Cow;
use std::marker::PhantomData;
use vramfit_gguf::FileType;

/// Largest batch, sequence, GPU count or shape dimension accepted: far past any real run, small
/// enough that every product in the formulas stays finite in f64.
pub(crate) const MAX_COUNT: f64 = 1e7;

/// The most custom components a scenario holds.
pub const MAX_CUSTOM: usize = 16;

/// How the page offers a field, and whether `--help` lists its values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// Free text: numbers, sizes, lists.
    Text,
    /// A short list of named values: a select on the page, listed in `--help`.
    Choices(Vec<Choice>),
    /// A catalogue (models, GPUs): a select on the page, `vramfit list` on the command line.
    Catalogue(Vec<Choice>),
}

/// Reads and writes one kind of value.
pub trait Codec: Sync {
    type Value: PartialEq;

    fn parse(&self, text: &str) -> Result<Self::Value, String>;

    fn format(&self, value: &Self::Value) -> String;

    fn control(&self) -> Control {
        Control::Text
    }

    /// What the value looks like, for help texts ("24GiB, 16376MiB…").
    fn syntax(&self) -> Option<&'static str> {
        None
    }

    /// The grey text in an empty text box.
    fn placeholder(&self, default: &Self::Value) -> String {
        self.format(default)
    }

    /// A list's one URL pair or CLI flag: the item is appended. `None` for a single value, which
    /// the pair replaces as [`Codec::parse`] reads it. (The three list hooks, this one,
    /// [`Codec::items`] and [`Codec::read_json`], let every other codec share one body for each
    /// field operation.)
    fn append(&self, _list: &mut Self::Value, _text: &str) -> Option<Result<(), String>> {
        None
    }

    /// A list's items, one URL pair each. `None` for a single value: one pair of its text.
    fn items(&self, _value: &Self::Value) -> Option<Vec<String>> {
        None
    }

    /// The value in a JSON scenario: its wire text as a string, unless the codec's values are
    /// numbers, booleans or lists.
    fn write_json(&self, value: &Self::Value) -> Json {
        Json::String(self.format(value))
    }

    /// The wire text a JSON value stands for: a string as itself, a number or boolean as its JSON
    /// text.
    fn json_text<'j>(&self, json: &'j Json) -> Result<Cow<'j, str>, String> {
        scalar_text(json)
    }

    /// A list's value from a JSON scenario. `None` for a single value, which is read from its
    /// [`Codec::json_text`].
    fn read_json(&self, _json: &Json) -> Option<Result<Self::Value, String>> {
        None
    }
}

/// [`Codec::json_text`] for most codecs; one function rather than one per codec.
fn scalar_text(json: &Json) -> Result<Cow<'_, str>, String> {
    match json {
        Json::String(text) => Ok(Cow::Borrowed(text)),
        Json::Number(n) => Ok(Cow::Owned(n.to_string())),
        Json::Bool(b) => Ok(Cow::Owned(b.to_string())),
        other => Err(format!(
            "{} is not a value this field takes",
            shown_in_message(other)
        )),
    }
}

/// A whole number from 1 to [`MAX_COUNT`].
pub struct Count;

/// A whole number from 0 to [`MAX_COUNT`], where 0 means "none" (no experts, no window).
pub struct Whole;

/// A whole number of positions from 0: a RoPE table reaches past [`MAX_COUNT`] (Llama 4 Scout's
/// 10,485,760), and only its bytes, not a product of counts, are computed from it.
pub struct Positions;

/// The most positions accepted.
const MAX_POSITIONS: f64 = u32::MAX as f64;

/// The one reading of a whole number, from `min` to [`MAX_COUNT`].
fn parse_whole(text: &str, min: f64) -> Result<u32, String> {
    parse_whole_to(text, min, MAX_COUNT)
}

fn parse_whole_to(text: &str, min: f64, max: f64) -> Result<u32, String> {
    let value =
        parse_f64(text.trim()).ok_or_else(|| format!("`{}` is not a whole number", text.trim()))?;
    if !value.is_finite() || value.fract() != 0.0 {
        return Err(format!("`{}` is not a whole number", text.trim()));
    }
    if value < min {
        return Err(format!("must be at least {min}"));
    }
    if value > max {
        // Written out as an integer: `{:e}` would link f64's exponent formatter into the page.
        return Err(format!("must be at most {}", max as u64));
    }
    Ok(value as u32)
}

impl Codec for Count {
    type Value = u32;

    fn parse(&self, text: &str) -> Result<u32, String> {
        parse_whole(text, 1.0)
    }

    fn format(&self, value: &u32) -> String {
        value.to_string()
    }

    fn write_json(&self, value: &u32) -> Json {
        Json::from(*value)
    }
}

impl Codec for Positions {
    type Value = u32;

    fn parse(&self, text: &str) -> Result<u32, String> {
        parse_whole_to(text, 0.0, MAX_POSITIONS)
    }

    fn format(&self, value: &u32) -> String {
        value.to_string()
    }

    fn write_json(&self, value: &u32) -> Json {
        Json::from(*value)
    }
}

impl Codec for Whole {
    type Value = u32;

    fn parse(&self, text: &str) -> Result<u32, String> {
        parse_whole(text, 0.0)
    }

    fn format(&self, value: &u32) -> String {
        value.to_string()
    }

    fn write_json(&self, value: &u32) -> Json {
        Json::from(*value)
    }
}

/// `true`/`false` (also on/off, yes/no, 1/0).
pub struct Flag;

impl Codec for Flag {
    type Value = bool;

    fn parse(&self, text: &str) -> Result<bool, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "true" | "on" | "1" | "yes" => Ok(true),
            "false" | "off" | "0" | "no" => Ok(false),
            other => Err(format!("`{other}` is not true or false")),
        }
    }

    fn format(&self, value: &bool) -> String {
        value.to_string()
    }

    fn control(&self) -> Control {
        Control::Choices(vec![Choice::new("false", ""), Choice::new("true", "")])
    }

    fn write_json(&self, value: &bool) -> Json {
        Json::Bool(*value)
    }
}

/// `max-model-len` and `ctx-size`: unset (`seq`), a whole number of tokens (from 0 where
/// `takes_zero`: llama.cpp's `-c 0`), or `auto` (also `-1`). [`Optional`] reads `auto` as unset,
/// so these fields have their own.
pub struct ContextLengthCodec {
    pub takes_zero: bool,
}

impl Codec for ContextLengthCodec {
    type Value = Option<ContextLength>;

    fn parse(&self, text: &str) -> Result<Self::Value, String> {
        match text.trim() {
            "" => Ok(None),
            "-1" => Ok(Some(ContextLength::Auto)),
            t if t.eq_ignore_ascii_case("auto") => Ok(Some(ContextLength::Auto)),
            t if self.takes_zero => Whole.parse(t).map(|n| Some(ContextLength::Tokens(n))),
            t => Count.parse(t).map(|n| Some(ContextLength::Tokens(n))),
        }
    }

    fn format(&self, value: &Self::Value) -> String {
        value.map(|v| v.to_string()).unwrap_or_default()
    }

    fn syntax(&self) -> Option<&'static str> {
        Some(if self.takes_zero {
            "16384, 0 or auto"
        } else {
            "16384, or auto (vLLM ≥ 0.14: the longest that fits)"
        })
    }

    fn placeholder(&self, _default: &Self::Value) -> String {
        "seq".to_string()
    }

    fn write_json(&self, value: &Self::Value) -> Json {
        match value {
            None => Json::Null,
            Some(ContextLength::Tokens(n)) => Json::from(*n),
            Some(ContextLength::Auto) => Json::String("auto".to_string()),
        }
    }

    fn json_text<'j>(&self, json: &'j Json) -> Result<Cow<'j, str>, String> {
        match json {
            Json::Null => Ok(Cow::Borrowed("")),
            other => scalar_text(other),
        }
    }
}

/// A runtime's release: `latest` or its version number.
pub struct ReleaseCodec;

impl Codec for ReleaseCodec {
    type Value = crate::runtime::Release;

    fn parse(&self, text: &str) -> Result<Self::Value, String> {
        crate::runtime::Release::parse(text)
    }

    fn format(&self, value: &Self::Value) -> String {
        value.to_string()
    }

    fn syntax(&self) -> Option<&'static str> {
        Some("latest, 0.25, 0.25.1")
    }
}

/// A llama.cpp build: `latest` or its number.
pub struct LlamaBuildCodec;

impl Codec for LlamaBuildCodec {
    type Value = crate::runtime::LlamaBuild;

    fn parse(&self, text: &str) -> Result<Self::Value, String> {
        crate::runtime::LlamaBuild::parse(text)
    }

    fn format(&self, value: &Self::Value) -> String {
        value.to_string()
    }

    fn syntax(&self) -> Option<&'static str> {
        Some("latest, b6500")
    }
}

/// An enumerated setting, by its wire names.
pub struct Pick<E>(PhantomData<E>);

pub const fn pick<E>() -> Pick<E> {
    Pick(PhantomData)
}

impl<E: Wire + Sync> Codec for Pick<E> {
    type Value = E;

    fn parse(&self, text: &str) -> Result<E, String> {
        E::parse(text)
    }

    fn format(&self, value: &E) -> String {
        value.as_str().to_string()
    }

    fn control(&self) -> Control {
        Control::Choices(E::choices())
    }
}

/// A value that may be left unset (`auto`, or empty), meaning "derive it": `none` says from what.
pub struct Optional<C> {
    pub inner: C,
    pub none: &'static str,
}

impl<C: Codec> Codec for Optional<C> {
    type Value = Option<C::Value>;

    fn parse(&self, text: &str) -> Result<Self::Value, String> {
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("auto") {
            Ok(None)
        } else {
            self.inner.parse(trimmed).map(Some)
        }
    }

    fn format(&self, value: &Self::Value) -> String {
        value
            .as_ref()
            .map(|v| self.inner.format(v))
            .unwrap_or_default()
    }

    fn control(&self) -> Control {
        with_unset(self.inner.control(), self.none)
    }

    fn syntax(&self) -> Option<&'static str> {
        self.inner.syntax()
    }

    fn placeholder(&self, _default: &Self::Value) -> String {
        self.none.to_string()
    }

    fn write_json(&self, value: &Self::Value) -> Json {
        value
            .as_ref()
            .map_or(Json::Null, |v| self.inner.write_json(v))
    }

    /// `null` is unset, like an empty text box; a string is read like one.
    fn json_text<'j>(&self, json: &'j Json) -> Result<Cow<'j, str>, String> {
        match json {
            Json::Null => Ok(Cow::Borrowed("")),
            Json::String(text) => Ok(Cow::Borrowed(text)),
            other => self.inner.json_text(other),
        }
    }
}

/// `control` with an unset choice first, meaning `none`. One function rather than one per codec.
fn with_unset(control: Control, none: &'static str) -> Control {
    let unset = || Choice::new("", none);
    match control {
        Control::Text => Control::Text,
        Control::Choices(list) => Control::Choices(std::iter::once(unset()).chain(list).collect()),
        Control::Catalogue(list) => {
            Control::Catalogue(std::iter::once(unset()).chain(list).collect())
        }
    }
}

/// A memory size: a bare number is GiB; GB is 10^9 bytes (`units::parse_size`).
pub struct Size;

/// A short form of `units::SIZE_RULE` for help texts.
const SIZE_SYNTAX: &str = "24 (= GiB), 24GiB, 16376MiB, 24GB (10^9 bytes)";

impl Codec for Size {
    type Value = Bytes;

    fn parse(&self, text: &str) -> Result<Bytes, String> {
        parse_size(text).map_err(|e| e.0)
    }

    fn format(&self, value: &Bytes) -> String {
        format_size_exact(*value)
    }

    fn syntax(&self) -> Option<&'static str> {
        Some(SIZE_SYNTAX)
    }

    /// A whole number of bytes in JSON; a string is read as wire text (`24GiB`).
    fn write_json(&self, value: &Bytes) -> Json {
        Json::from(value.0)
    }

    fn json_text<'j>(&self, json: &'j Json) -> Result<Cow<'j, str>, String> {
        match json {
            Json::String(text) => Ok(Cow::Borrowed(text)),
            Json::Number(n) => n
                .as_u64()
                .map(|bytes| Cow::Owned(format!("{bytes}B")))
                .ok_or_else(|| format!("`{n}` is not a whole number of bytes")),
            other => Err(format!("{} is not a size", shown_in_message(other))),
        }
    }
}

/// A memory size above 0: a GPU's capacity.
pub struct Capacity;

impl Codec for Capacity {
    type Value = Bytes;

    fn parse(&self, text: &str) -> Result<Bytes, String> {
        match Size.parse(text)? {
            Bytes(0) => Err("must be more than 0".to_string()),
            bytes => Ok(bytes),
        }
    }

    fn format(&self, value: &Bytes) -> String {
        Size.format(value)
    }

    fn syntax(&self) -> Option<&'static str> {
        Some(SIZE_SYNTAX)
    }

    fn write_json(&self, value: &Bytes) -> Json {
        Size.write_json(value)
    }

    fn json_text<'j>(&self, json: &'j Json) -> Result<Cow<'j, str>, String> {
        Size.json_text(json)
    }
}

/// A percentage above 0 and at most 100; a trailing `%` is allowed.
pub struct Percent;

impl Codec for Percent {
    type Value = f64;

    fn parse(&self, text: &str) -> Result<f64, String> {
        let percent = parse_f64(text.trim().trim_end_matches('%'))
            .ok_or_else(|| format!("`{}` is not a percentage", text.trim()))?;
        if !(percent > 0.0 && percent <= 100.0) {
            return Err("must be a percentage above 0 and at most 100".to_string());
        }
        Ok(percent)
    }

    fn format(&self, value: &f64) -> String {
        format!("{value}")
    }

    fn write_json(&self, value: &f64) -> Json {
        Json::from(*value)
    }
}

/// A number above 0 and at most `max`: a share as the runtimes' flags take it ([`FRACTION`]),
/// or a multiplier ([`FACTOR`]).
pub struct Positive {
    max: f64,
    /// An example that says what the number means, for the error message.
    example: &'static str,
}

pub const FRACTION: Positive = Positive {
    max: 1.0,
    example: "0.9 is 90%",
};

pub const FACTOR: Positive = Positive {
    max: 64.0,
    example: "1.25 pads by a quarter",
};

/// A bandwidth in GB/s (10⁹ bytes per second), as datasheets print it.
pub const NETWORK_GBIT_S: Positive = Positive {
    max: 1_000_000.0,
    example: "1600 is eight 200 Gb/s ports",
};

pub const BANDWIDTH_GB_S: Positive = Positive {
    max: 100_000.0,
    example: "89.6 is dual-channel DDR5-5600",
};

impl Codec for Positive {
    type Value = f64;

    fn parse(&self, text: &str) -> Result<f64, String> {
        let value =
            parse_f64(text.trim()).ok_or_else(|| format!("`{}` is not a number", text.trim()))?;
        if !(value > 0.0 && value <= self.max) {
            return Err(format!(
                "must be above 0 and at most {} ({})",
                self.max, self.example
            ));
        }
        Ok(value)
    }

    fn format(&self, value: &f64) -> String {
        format!("{value}")
    }

    fn write_json(&self, value: &f64) -> Json {
        Json::from(*value)
    }
}

/// A llama.cpp file type by its `llama-quantize` name (`Q4_K_M`), in any letter case.
pub struct GgufFileType;

impl Codec for GgufFileType {
    type Value = FileType;

    fn parse(&self, text: &str) -> Result<FileType, String> {
        FileType::from_name(text).ok_or_else(|| {
            let names: Vec<&str> = FileType::ALL.iter().map(|t| t.name()).collect();
            format!(
                "`{}` is not a llama.cpp file type: {}",
                text.trim(),
                names.join(", ")
            )
        })
    }

    fn format(&self, value: &FileType) -> String {
        value.name().to_string()
    }

    fn control(&self) -> Control {
        Control::Choices(
            FileType::ALL
                .iter()
                .map(|t| Choice::new(t.name(), t.description()))
                .collect(),
        )
    }
}

/// A GGUF file's tensor bytes by block, as [`model::FileWeights::format`] writes them.
pub struct GgufTensors;

impl Codec for GgufTensors {
    type Value = model::FileWeights;

    fn parse(&self, text: &str) -> Result<model::FileWeights, String> {
        model::FileWeights::parse(text)
    }

    fn format(&self, value: &model::FileWeights) -> String {
        value.format()
    }

    fn syntax(&self) -> Option<&'static str> {
        Some("token_embd,output,block… in bytes, as --gguf FILE sets it")
    }
}

/// A checkpoint's tensor bytes by part, as [`model::CheckpointWeights::format`] writes them.
pub struct CheckpointTensors;

impl Codec for CheckpointTensors {
    type Value = model::CheckpointWeights;

    fn parse(&self, text: &str) -> Result<model::CheckpointWeights, String> {
        model::CheckpointWeights::parse(text)
    }

    fn format(&self, value: &model::CheckpointWeights) -> String {
        value.format()
    }

    fn syntax(&self) -> Option<&'static str> {
        Some("format,embed,head,vision,mtp,block… in bytes, as --hf or --model-dir sets it")
    }
}

/// A parameter count: `8B`, `1.1B`, `135M`, `8e9`.
pub struct ParamCount;

impl Codec for ParamCount {
    type Value = f64;

    fn parse(&self, text: &str) -> Result<f64, String> {
        model::parse_param_count(text)
    }

    fn format(&self, value: &f64) -> String {
        model::format_param_count(*value)
    }

    fn syntax(&self) -> Option<&'static str> {
        Some("8B, 1.1B, 135M, 8e9")
    }

    fn write_json(&self, value: &f64) -> Json {
        Json::from(*value)
    }
}

/// A model preset id, written back as the catalogue spells it.
pub struct ModelId;

impl Codec for ModelId {
    type Value = String;

    fn parse(&self, text: &str) -> Result<String, String> {
        model::preset(text)
            .map(|p| p.id.to_string())
            .ok_or_else(|| format!("unknown model `{}`; see `vramfit list models`", text.trim()))
    }

    fn format(&self, value: &String) -> String {
        value.clone()
    }

    fn control(&self) -> Control {
        Control::Catalogue(
            PRESETS[..CATALOGUE_PRESETS]
                .iter()
                .map(|p| Choice::new(p.id, p.name))
                .collect(),
        )
    }
}

/// A GPU catalogue id.
pub struct GpuId;

impl Codec for GpuId {
    type Value = String;

    fn parse(&self, text: &str) -> Result<String, String> {
        gpu_catalogue::find(text)
            .map(|g| g.id.to_string())
            .ok_or_else(|| format!("unknown GPU `{}`; see `vramfit list gpus`", text.trim()))
    }

    fn format(&self, value: &String) -> String {
        value.clone()
    }

    fn control(&self) -> Control {
        Control::Catalogue(GPUS.iter().map(|g| Choice::new(g.id, g.name)).collect())
    }
}

/// The most GPUs a device list or a split names: past any one machine's slots.
pub const MAX_DEVICES: usize = 16;

/// The items of a comma-separated list, each trimmed; an empty item or more than
/// [`MAX_DEVICES`] is an error.
fn list_items(text: &str) -> Result<Vec<&str>, String> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if items.len() > MAX_DEVICES {
        return Err(format!("at most {MAX_DEVICES} GPUs"));
    }
    if items.iter().any(|i| i.is_empty()) {
        return Err(format!("`{}` has an empty item", text.trim()));
    }
    Ok(items)
}

/// GPUs one by one, as catalogue ids: `rtx-4090,rtx-3090`. Empty: every GPU is `gpu`.
pub struct GpuList;

impl Codec for GpuList {
    type Value = Vec<String>;

    fn parse(&self, text: &str) -> Result<Vec<String>, String> {
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        list_items(text)?
            .into_iter()
            .map(|id| GpuId.parse(id))
            .collect()
    }

    fn format(&self, value: &Vec<String>) -> String {
        value.join(",")
    }

    fn syntax(&self) -> Option<&'static str> {
        Some("GPU ids, comma-separated: rtx-4090,rtx-3090")
    }

    fn placeholder(&self, _default: &Vec<String>) -> String {
        "every GPU is gpu".to_string()
    }
}

/// llama.cpp's `--tensor-split`: one non-negative proportion per GPU, `3,1`.
pub struct Proportions;

impl Codec for Proportions {
    type Value = Vec<f64>;

    fn parse(&self, text: &str) -> Result<Vec<f64>, String> {
        let parts = list_items(text)?
            .into_iter()
            .map(|p| {
                parse_f64(p)
                    .filter(|v| v.is_finite() && *v >= 0.0 && *v <= MAX_COUNT)
                    .ok_or_else(|| format!("`{p}` is not a proportion (a number from 0)"))
            })
            .collect::<Result<Vec<f64>, String>>()?;
        // llama.cpp reads all zeros as no split given; say so rather than split by nothing.
        if parts.iter().all(|p| *p == 0.0) {
            return Err(
                "every proportion is 0; leave it unset to split by free memory".to_string(),
            );
        }
        Ok(parts)
    }

    fn format(&self, value: &Vec<f64>) -> String {
        let parts: Vec<String> = value.iter().map(|p| p.to_string()).collect();
        parts.join(",")
    }

    fn syntax(&self) -> Option<&'static str> {
        Some("one proportion per GPU: 3,1")
    }
}

/// LoRA target projections: `q,v`, `q_proj,v_proj` or `all`.
pub struct Targets;

impl Codec for Targets {
    type Value = LoraTargets;

    fn parse(&self, text: &str) -> Result<LoraTargets, String> {
        LoraTargets::parse(text)
    }

    fn format(&self, value: &LoraTargets) -> String {
        value.to_wire()
    }

    fn syntax(&self) -> Option<&'static str> {
        Some("q,k,v,o,gate,up,down or all")
    }
}

/// A named extra allocation (the 16 GB OOM budget guide's "RSSM dynamics: ~500 MB").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomComponent {
    pub name: String,
    pub bytes: Bytes,
}

/// Custom components: each URL pair or flag adds one `name:size`; the page's text box holds them
/// all as `name:size; name:size`.
pub struct Customs;

impl Customs {
    fn one(text: &str) -> Result<CustomComponent, String> {
        let (name, size) = text
            .rsplit_once(':')
            .ok_or_else(|| format!("`{text}` should be name:size, e.g. RSSM dynamics:500MiB"))?;
        let name = name.trim();
        if name.is_empty() || name.len() > 64 {
            return Err("a custom component needs a name of 1 to 64 characters".to_string());
        }
        Ok(CustomComponent {
            name: name.to_string(),
            bytes: Size.parse(size)?,
        })
    }

    fn too_many() -> String {
        format!("at most {MAX_CUSTOM} custom components")
    }

    /// Each component as `name:size`.
    fn texts(list: &[CustomComponent]) -> Vec<String> {
        list.iter()
            .map(|c| format!("{}:{}", c.name, format_size_exact(c.bytes)))
            .collect()
    }

    fn from_json(json: &Json) -> Result<Vec<CustomComponent>, String> {
        let items = json.as_array().ok_or_else(|| {
            format!(
                "{} is not a list of {{name, bytes}}",
                shown_in_message(json)
            )
        })?;
        if items.len() > MAX_CUSTOM {
            return Err(Customs::too_many());
        }
        items
            .iter()
            .map(|item| {
                let name = item.get("name").and_then(Json::as_str);
                let bytes = item.get("bytes").and_then(Json::as_u64);
                match (name, bytes) {
                    (Some(name), Some(bytes)) => Customs::one(&format!("{name}:{bytes}B")),
                    _ => Err(format!(
                        "{} is not {{\"name\": …, \"bytes\": …}}",
                        shown_in_message(item)
                    )),
                }
            })
            .collect()
    }
}

impl Codec for Customs {
    type Value = Vec<CustomComponent>;

    fn parse(&self, text: &str) -> Result<Self::Value, String> {
        let list = text
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(Customs::one)
            .collect::<Result<Vec<_>, _>>()?;
        if list.len() > MAX_CUSTOM {
            return Err(Customs::too_many());
        }
        Ok(list)
    }

    fn format(&self, value: &Self::Value) -> String {
        Customs::texts(value).join("; ")
    }

    fn syntax(&self) -> Option<&'static str> {
        Some("name:size, e.g. RSSM dynamics:500MiB")
    }

    fn placeholder(&self, _default: &Self::Value) -> String {
        "name:size; name:size".to_string()
    }

    fn append(&self, list: &mut Self::Value, text: &str) -> Option<Result<(), String>> {
        Some(if list.len() >= MAX_CUSTOM {
            Err(Customs::too_many())
        } else {
            Customs::one(text).map(|custom| list.push(custom))
        })
    }

    fn items(&self, value: &Self::Value) -> Option<Vec<String>> {
        Some(Customs::texts(value))
    }

    /// `[{"name": "RSSM dynamics", "bytes": 524288000}]`.
    fn write_json(&self, value: &Self::Value) -> Json {
        Json::Array(
            value
                .iter()
                .map(|c| serde_json::json!({"name": c.name, "bytes": c.bytes.0}))
                .collect(),
        )
    }

    fn read_json(&self, json: &Json) -> Option<Result<Self::Value, String>> {
        Some(Customs::from_json(json))
    }
}
