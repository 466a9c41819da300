//! Answers for serving: how many requests a runtime's pool holds at a context, the longest
//! context for a number of concurrent requests, the concurrency curve the page draws, and the
//! smallest GPU or GPU count that serves a target ("32 users × 8k").

use crate::estimate::Requests;
use crate::estimate::{breakdown, speed_of, Serving};
use crate::gpu_catalogue::GPUS;
use crate::runtime::{ContextLength, Runtime};
use crate::scenario::{FieldError, Scenario};
use crate::sharding::Sharding;
use crate::solver::{largest, MAX_SEQ_SEARCHED};
use serde::{Deserialize, Serialize};
use vramfit_gguf::FileType;

/// GPU counts the count search tries: tensor parallelism in powers of two, as serving runtimes
/// require the heads to divide evenly.
const GPU_COUNTS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The shortest context on the curve.
const CURVE_START: u32 = 1024;

/// The most requests a runtime of slots is searched for (llama.cpp's `-np`).
const MAX_REQUESTS_SEARCHED: u32 = 1024;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingPlan {
    pub schema: String,
    /// Concurrent requests at the scenario's own context.
    pub max_concurrency: f64,
    pub context_tokens: u32,
    /// The concurrency asked for, and the longest context that many requests may each have.
    pub users: u32,
    pub max_context: Option<u32>,
    /// The smallest catalogue GPU, and the fewest GPUs of the chosen kind (tensor parallel),
    /// that serve `users` requests of `context_tokens` each.
    pub smallest_gpu: Option<String>,
    pub fewest_gpus: Option<u32>,
    /// (context, concurrency) from 1k tokens, doubling, while one request still fits.
    pub curve: Vec<(u32, f64)>,
    /// llama.cpp: the highest-quality file type that fits with every layer on the GPU, and the
    /// most layers (`-ngl`) of the scenario's own file type that fit.
    pub best_quant: Option<String>,
    pub max_gpu_layers: Option<u32>,
    /// With a speed target: each request's decode tokens/s asked for, the smallest catalogue GPU
    /// that serves `users` requests at that speed, and the most requests served at it.
    pub speed_target: Option<f64>,
    pub smallest_gpu_for_speed: Option<String>,
    pub most_users_at_speed: Option<u32>,
    /// With a speed target: the fewest GPUs of the scenario's kind (split as `fewest_gpus`) that
    /// serve `users` requests at that speed.
    #[serde(default)]
    pub fewest_gpus_for_speed: Option<u32>,
}

/// llama.cpp file types from the most to the least faithful, as people choose among them.
const QUANTS_BY_QUALITY: [FileType; 12] = [
    FileType::BF16,
    FileType::Q8_0,
    FileType::Q6_K,
    FileType::Q5_K_M,
    FileType::Q5_K_S,
    FileType::Q4_K_M,
    FileType::Q4_K_S,
    FileType::IQ4_XS,
    FileType::Q3_K_M,
    FileType::IQ3_XXS,
    FileType::Q2_K,
    FileType::IQ2_XXS,
];

/// The scenario fits on its GPU.
fn fits(s: &Scenario) -> bool {
    breakdown(s).is_ok_and(|b| b.verdict().fits())
}

fn serving_at(s: &Scenario) -> Option<Serving> {
    breakdown(s).ok()?.serving
}

fn with(s: &Scenario, change: impl FnOnce(&mut Scenario)) -> Scenario {
    let mut copy = s.clone();
    change(&mut copy);
    copy
}

/// Serves `users` requests of the scenario's context: it starts and the pool holds them all.
fn serves(s: &Scenario, users: u32) -> bool {
    serving_at(s).is_some_and(|v| v.starts && v.max_concurrency >= f64::from(users)) && fits(s)
}

/// The scenario set up as its runtime serves `requests` requests of `tokens` each: a pool sized
/// for that context, or a slot per request.
fn for_requests(s: &Scenario, tokens: u32, requests: u32) -> Scenario {
    with(s, |c| set_requests(c, tokens, requests))
}

fn set_requests(c: &mut Scenario, tokens: u32, requests: u32) {
    match c.runtime.rules().facts().requests {
        Requests::Pool => c.max_model_len = Some(ContextLength::Tokens(tokens)),
        Requests::Slots => {
            c.parallel = requests.max(1);
            c.ctx_size = Some(ContextLength::Tokens(tokens.saturating_mul(c.parallel)));
        }
        Requests::One => {
            c.seq = tokens;
            c.prompt = c.prompt.map(|p| p.min(tokens));
        }
    }
}

/// How many requests of `tokens` each are served at once: what the pool holds where the runtime
/// pools its cache, else the most slots that fit.
fn concurrency_at(s: &Scenario, tokens: u32) -> Option<f64> {
    if s.runtime.rules().facts().pools_kv() {
        let at = serving_at(&for_requests(s, tokens, 1))?;
        at.starts.then_some(at.max_concurrency)
    } else {
        largest(MAX_REQUESTS_SEARCHED, |n| {
            serves(&for_requests(s, tokens, n), n)
        })
        .map(f64::from)
    }
}

/// The longest context at which `users` requests fit at once, searched as the solver searches
/// sequences.
fn max_context(s: &Scenario, users: u32) -> Option<u32> {
    largest(MAX_SEQ_SEARCHED, |tokens| {
        serves(&for_requests(s, tokens, users), users)
    })
}

/// The smallest catalogue GPU that serves `users` requests.
fn smallest_gpu(s: &Scenario, users: u32) -> Option<String> {
    GPUS.iter()
        .find(|g| {
            serves(
                &with(s, |c| {
                    c.make_alike();
                    c.vram = None;
                    c.gpu = g.id.to_string();
                }),
                users,
            )
        })
        .map(|g| g.id.to_string())
}

/// The scenario on `n` GPUs of its kind (the smallest of unlike `devices`), split by tensor
/// parallelism unless it names another split.
fn on_gpus(s: &Scenario, n: u32) -> Scenario {
    with(s, |c| {
        c.make_alike();
        c.gpus = n;
        if n > 1
            && !matches!(
                c.sharding,
                Sharding::Tensor | Sharding::Pipeline | Sharding::Expert
            )
        {
            c.sharding = Sharding::Tensor;
        }
    })
}

/// The fewest GPUs of the scenario's kind that serve `users` requests.
fn fewest_gpus(s: &Scenario, users: u32) -> Option<u32> {
    GPU_COUNTS
        .into_iter()
        .find(|&n| serves(&on_gpus(s, n), users))
}

/// The fewest GPUs of the scenario's kind that serve `users` requests with each decoding at
/// `target` tokens/s: more ranks read less each, but all-reduce more often.
fn fewest_gpus_for_speed(s: &Scenario, users: u32, target: f64) -> Option<u32> {
    GPU_COUNTS.into_iter().find(|&n| {
        let on = on_gpus(s, n);
        serves(&on, users) && fast_enough(&on, users, target)
    })
}

/// Each request decodes at `target` tokens/s or faster with `users` requests at once.
fn fast_enough(s: &Scenario, users: u32, target: f64) -> bool {
    let at = with(s, |c| c.concurrency = Some(users));
    speed_of(&at).is_ok_and(|speed| speed.is_some_and(|v| v.decode_tokens_per_s >= target))
}

/// The speed answers: the smallest GPU that serves `users` requests of `tokens` at `target`
/// tokens/s each, and the most requests of `tokens` the scenario's GPU serves at that speed
/// (speed falls as requests are added, so the count is searched as the solver searches).
fn speed_answers(
    s: &Scenario,
    (users, tokens): (u32, u32),
    target: f64,
) -> (Option<String>, Option<u32>) {
    let smallest = GPUS
        .iter()
        .find(|g| {
            let on = with(s, |c| {
                c.make_alike();
                c.vram = None;
                c.gpu = g.id.to_string();
            });
            serves(&on, users) && fast_enough(&on, users, target)
        })
        .map(|g| g.id.to_string());
    let held = concurrency_at(s, tokens).unwrap_or(0.0).floor() as u32;
    let most = (held > 0)
        .then(|| largest(held, |n| fast_enough(s, n, target)))
        .flatten();
    (smallest, most)
}

/// The serving answers for a runtime scenario; `users` defaults to one request, and a speed
/// target (each request's decode tokens/s) adds the speed answers.
pub fn plan_serving(
    s: &Scenario,
    users: Option<u32>,
    speed_target: Option<f64>,
) -> Result<ServingPlan, Vec<FieldError>> {
    let here = breakdown(s)?.serving.ok_or_else(|| {
        vec![FieldError::new(
            "runtime",
            format!(
                "serving answers need a serving runtime: {}",
                Runtime::names_where(|f| f.serves)
            ),
        )]
    })?;
    let asked = users.map(|n| n.max(1));
    let users = asked.unwrap_or(1);
    // The answers ask what holds every layer left to the runtime on the GPU, so llama.cpp's
    // --fit, which would move layers to system RAM instead, stays off while they search; and
    // they ask for requests of this plan's context, so a context left to the runtime (vLLM's
    // `auto`, llama.cpp's trained or fitted one) is pinned at what it is here.
    let fixed = with(s, |c| {
        c.fit = Some(false);
        let requests = here.max_concurrency.floor().max(1.0) as u32;
        set_requests(c, here.context_tokens, requests);
    });
    let s = &fixed;
    // `users` requests of this context, each in a slot of its own where the runtime has slots;
    // without a number of users, the scenario as it is, its slots too.
    let served = match asked {
        Some(n) => for_requests(s, here.context_tokens, n),
        None => s.clone(),
    };
    let smallest_gpu = smallest_gpu(&served, users);
    let fewest_gpus = fewest_gpus(&served, users);
    let curve = std::iter::successors(Some(CURVE_START), |t| t.checked_mul(2))
        .take_while(|&t| t <= MAX_SEQ_SEARCHED)
        .map_while(|tokens| Some((tokens, concurrency_at(s, tokens)?)))
        .collect();
    let places_layers = s.runtime.rules().facts().places_layers;
    let best_quant = QUANTS_BY_QUALITY
        .into_iter()
        .filter(|_| places_layers)
        .find(|&quant| {
            fits(&with(s, |c| {
                c.quant = quant;
                c.n_gpu_layers = None;
            }))
        })
        .map(|q| q.name().to_string());
    let layers = s.resolve().map_or(0, |r| r.arch.layers);
    let max_gpu_layers = (0..=layers + 1)
        .rev()
        .filter(|_| places_layers)
        .find(|&n| fits(&with(s, |c| c.n_gpu_layers = Some(n))));
    let (smallest_gpu_for_speed, most_users_at_speed) = match speed_target {
        Some(target) => speed_answers(&served, (users, here.context_tokens), target),
        None => (None, None),
    };
    let fewest_gpus_for_speed =
        speed_target.and_then(|target| fewest_gpus_for_speed(&served, users, target));
    Ok(ServingPlan {
        schema: "vramfit.serving-plan/1".to_string(),
        max_concurrency: here.max_concurrency,
        context_tokens: here.context_tokens,
        users,
        max_context: max_context(s, users),
        smallest_gpu,
        fewest_gpus,
        curve,
        best_quant,
        max_gpu_layers,
        speed_target,
        smallest_gpu_for_speed,
        most_users_at_speed,
        fewest_gpus_for_speed,
    })
}
