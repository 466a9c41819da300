//! llama.cpp's `--fit` (`common_params_fit_impl`, common/fit.cpp, read at llama.cpp@0c1e57098,
//! the commit llama-cpp-python 0.3.36 vendors; added by PR #16653, December 2025, and on by
//! default since (`common_params::fit_params = true`, common/common.h): from build 7437, as
//! `llamacpp_rules.rs` cites). At start llama.cpp
//! measures its buffers with the user's settings and changes only what the user left unset:
//!
//! 1. If the GPU keeps `--fit-target` (1024 MiB, `fit_params_target`) free, nothing changes.
//! 2. With `-c` left out (`ctx-size=auto`; before PR #19070 also `-c 0`), the context shrinks from
//!    the trained one towards `--fit-ctx` (4096 a stream, `fit_params_min_ctx`) by linear
//!    interpolation of the buffers at both ends, rounded down to 256 × streams; if that leaves
//!    the margin, the fit ends there, else the context is 4096 a stream and the layers move. A
//!    context given with `-c` is kept ("context size set by user … no change").
//! 3. A user's `-ngl`, tensor split or tensor overrides (`--n-cpu-moe` is one) abort the fit:
//!    llama.cpp loads as asked, and fails if that does not fit.
//! 4. A dense model: the most layers, the output layer counted first, whose buffers leave the
//!    margin ("filling dense layers back-to-front").
//! 5. A mixture of experts: every layer on the GPU with its routed experts in system RAM; if that
//!    leaves a surplus, layers take their experts back until the margin is reached, else fewer
//!    layers as for a dense model.
//!
//! The prediction replays every step on this estimate's buffers, on one GPU (on several, step 2
//! keeps a margin of its own and the later steps split by measurement: neither is replayed).
//! llama.cpp puts the experts of the last layers in system RAM where `--n-cpu-moe` names the
//! first; for layers of one shape the bytes are the same. Its last step, part of one more layer's
//! FFN on the GPU, is not replayed.

use super::llamacpp;
use super::llamacpp_rules::Rules;
use super::Deployment;
use crate::estimate::stack::Stack;
use crate::runtime::{ContextLength, LlamaBuild, OffloadOutput};
use crate::scenario::{Resolved, Scenario};
use crate::units::{Bytes, MIB};

/// `--fit-target`'s default: what llama.cpp leaves free on each GPU.
pub const FIT_TARGET: Bytes = Bytes(1024 * MIB);

/// `--fit-ctx`'s default: the shortest context step 2 shrinks to.
pub const FIT_MIN_CTX: u32 = 4096;

/// What `--fit` changed, and the note that says so.
pub(super) struct Fitted {
    pub scenario: Scenario,
    pub note: String,
}

/// What `--fit` would choose for this scenario, whose stack came to `pushed` on `stack` (the
/// stack before llama.cpp's buffers), or `None` when it keeps the scenario as given. `notes`
/// takes what the prediction cannot follow.
pub(super) fn choose(
    s: &Scenario,
    r: &Resolved,
    d: &Deployment,
    stack: &Stack,
    pushed: Bytes,
    notes: &mut Vec<String>,
) -> Option<Fitted> {
    let free = d
        .cuda_total
        .saturating_sub(s.context)
        .saturating_sub(s.reserved);
    let target = free.saturating_sub(FIT_TARGET).as_f64();
    let buffers = |c: &Scenario| {
        let mut trial = stack.trial();
        llamacpp::push(c, r, d, &mut trial);
        trial.total().saturating_sub(s.context).as_f64()
    };
    if pushed.saturating_sub(s.context).as_f64() <= target {
        return None;
    }
    if s.fit.is_none()
        && s.offload_output == Some(OffloadOutput::Last)
        && s.llama_cpp_build == LlamaBuild::Latest
    {
        notes.push("offload-output=last describes builds before PR #18148 (after b7445), and --fit is on from b7437 (PR #16653): for an older build, set llama-cpp-build, which then leaves --fit off, or fit=false.".to_string());
    }
    if s.gpus > 1 {
        notes.push("--fit splits the layers over several GPUs by its own measurements (and shrinks an unset context by a margin of its own): the estimate keeps llama.cpp's split by free memory and the context as set.".to_string());
        return None;
    }
    let mut s = s.clone();
    let used = pushed.saturating_sub(s.context).as_f64();
    let shrunk = shrink_context(&mut s, r, used, target, &buffers).map(|(most, fits)| {
        let cells = s.ctx_size.and_then(ContextLength::tokens).unwrap_or(most);
        let note = format!(
            "--fit shrinks the context from {most} to {cells} cells to leave {} MiB free.",
            FIT_TARGET.0 / MIB
        );
        (note, fits)
    });
    let placed = match shrunk {
        Some((note, true)) => return Some(Fitted { scenario: s, note }),
        Some((note, false)) => Some(note),
        None => None,
    };
    if let Some(flag) = user_placement(&s) {
        notes.push(format!(
            "--fit leaves the placement alone when {flag} is given (\"already set by user … abort\"): llama.cpp loads as asked."
        ));
        return placed.map(|note| Fitted { scenario: s, note });
    }
    let layers = r.arch.layers;
    let fits = |c: &Scenario| buffers(c) <= target;
    let fitted = if r.arch.moe.is_moe() {
        fit_experts(&s, layers, &fits)
    } else {
        fit_layers(&s, layers, &fits)
    };
    let moved = placement_note(&fitted);
    Some(Fitted {
        scenario: fitted,
        note: match placed {
            Some(context) => format!("{context} {moved}"),
            None => moved,
        },
    })
}

/// What `--fit` placed: the layers it kept on the GPU, and the layers whose routed experts it
/// keeps in system RAM.
fn placement_note(fitted: &Scenario) -> String {
    match (fitted.n_gpu_layers, fitted.n_cpu_moe) {
        (Some(ngl), 0) => format!(
            "--fit (on by default) moves layers to system RAM to leave {} MiB free: -ngl {ngl}.",
            FIT_TARGET.0 / MIB
        ),
        (Some(ngl), moe) => format!(
            "--fit (on by default) keeps {moe} layers' routed experts in system RAM and puts {ngl} layers on the GPU to leave {} MiB free (counted here as --n-cpu-moe {moe}).",
            FIT_TARGET.0 / MIB
        ),
        (None, moe) => format!(
            "--fit (on by default) keeps {moe} layers' routed experts in system RAM to leave {} MiB free (counted here as --n-cpu-moe {moe}).",
            FIT_TARGET.0 / MIB
        ),
    }
}

/// Step 2 on one GPU, as common/fit.cpp computes it: with `-c` left out, the context goes from
/// the trained one (`n_ctx_max`) towards `--fit-ctx` by linear interpolation of the buffers
/// measured at both ends, rounded down to 256 cells a stream; if even `--fit-ctx` leaves no
/// margin, it is that and the layers move too. `used` is the buffers at the trained context,
/// `target` what may be used. Returns the trained cells it shrank from and whether the shrunk
/// context alone leaves the margin (`--fit` then stops).
fn shrink_context(
    s: &mut Scenario,
    r: &Resolved,
    used: f64,
    target: f64,
    buffers: &dyn Fn(&Scenario) -> f64,
) -> Option<(u32, bool)> {
    if !Rules::new(s.llama_cpp_build).fit_shrinks(s.ctx_size) {
        return None;
    }
    let streams = if s.kv_unified { 1 } else { s.parallel.max(1) };
    let most = llamacpp::context(s, &r.arch).cells;
    let least = FIT_MIN_CTX.saturating_mul(streams);
    if most <= least {
        return None;
    }
    s.ctx_size = Some(ContextLength::Tokens(least));
    let used_least = buffers(s);
    if target <= used_least {
        return Some((most, false));
    }
    // llama.cpp's integer arithmetic in bytes: the share of the span the target reaches.
    let span = f64::from(most - least);
    let reach = ((target - used_least) / (used - used_least) * span).floor();
    let cells = least + reach.clamp(0.0, span) as u32;
    let align = 256 * streams;
    s.ctx_size = Some(ContextLength::Tokens((cells - cells % align).max(least)));
    Some((most, true))
}

/// The flag of a placement the user gave, which makes `--fit` abort.
fn user_placement(s: &Scenario) -> Option<&'static str> {
    if s.n_gpu_layers.is_some() {
        Some("-ngl")
    } else if s.n_cpu_moe > 0 {
        Some("--n-cpu-moe")
    } else if s.gpus > 1 && s.tensor_split.is_some() {
        Some("--tensor-split")
    } else {
        None
    }
}

/// Step 4: the most GPU layers (blocks and the output layer) that leave the margin, 0 if none.
fn fit_layers(s: &Scenario, layers: u32, fits: &dyn Fn(&Scenario) -> bool) -> Scenario {
    let with = |n: u32| {
        let mut c = s.clone();
        c.n_gpu_layers = Some(n);
        c
    };
    let most = largest(0, layers + 1, |n| fits(&with(n)));
    with(most.unwrap_or(0))
}

/// Step 5: with every layer's routed experts in system RAM, either the fewest layers whose experts
/// stay there, or, when even that leaves no surplus, the most layers on the GPU as step 4.
fn fit_experts(s: &Scenario, layers: u32, fits: &dyn Fn(&Scenario) -> bool) -> Scenario {
    let with = |n: u32| {
        let mut c = s.clone();
        c.n_cpu_moe = n;
        c
    };
    if !fits(&with(layers)) {
        return fit_layers(&with(layers), layers, fits);
    }
    // The fewest expert layers in system RAM is the most layers keeping theirs.
    let kept = largest(0, layers, |k| fits(&with(layers - k))).unwrap_or(0);
    with(layers - kept)
}

/// The largest `n` in `low..=high` for which `ok` holds, where it holds up to some point and not
/// beyond: llama.cpp's search converges to the same layer.
fn largest(low: u32, high: u32, ok: impl Fn(u32) -> bool) -> Option<u32> {
    if !ok(low) {
        return None;
    }
    let (mut yes, mut no) = (low, high + 1);
    while no - yes > 1 {
        let mid = yes + (no - yes) / 2;
        if ok(mid) {
            yes = mid;
        } else {
            no = mid;
        }
    }
    Some(yes)
}

#[cfg(test)]
mod tests {
    use super::largest;

    #[test]
    fn largest_finds_the_last_value_that_holds() {
        assert_eq!(largest(0, 33, |n| n <= 20), Some(20));
        assert_eq!(largest(0, 33, |_| true), Some(33));
        assert_eq!(largest(0, 33, |_| false), None);
        assert_eq!(largest(5, 5, |_| true), Some(5));
    }
}
