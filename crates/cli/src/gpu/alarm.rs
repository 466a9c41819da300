//! The monitor's judgements, without IO: when a GPU's used memory crosses the warn or critical
//! level, when a level is reached for the GPUs watched (which is when actions fire), when it is
//! re-armed, and the sentences `watch` and `run` tell them in. Carrying the actions out is
//! `actions.rs`'s; steady growth is the engine's (`vramfit_engine::growth`).
//!
//! **The rule.** Each GPU has a latch per level. It is set when the GPU's used memory reaches the
//! level (used ≥ limit): a crossing, announced on stderr. It is cleared, re-arming the level on
//! that GPU, only when used memory falls below the level by [`REARM_SHARE`] of the GPU's memory
//! (of the limit, when the GPU's size is unknown). Without that hysteresis a run hovering at the
//! level would warn, and checkpoint, on every other sample: NVML's used figure moves by allocator
//! segments (PyTorch's c10/cuda/CUDACachingAllocator.cpp maps 2 MiB blocks for small allocations,
//! 20 MiB ones for mid-sized) and by other processes' small allocations. A drop of 2% (328 MiB on
//! a 16 GiB card, 1.6 GiB on an 80 GB one) is memory really given back (an evaluation ended, a
//! cache was emptied), so the next climb is a new event.
//!
//! A level is *reached* when a GPU's latch is set while no other watched GPU's is. The actions
//! fire then, once however many GPUs cross together: a job over eight GPUs crosses on all eight
//! in the same sample and wants one emergency checkpoint, not eight. The level is re-armed for
//! actions when every GPU's latch has cleared. A GPU that cannot be read keeps its latch as it
//! was: its memory is unknown, not low.

use vramfit_engine::growth::Growth;
use vramfit_engine::measurement::Level;

use super::units::{human_duration, mib, share, Threshold};

/// How far below a level, as a share of the GPU's memory, used memory must fall to re-arm it.
pub const REARM_SHARE: f64 = 0.02;

/// The warn and critical levels' latches over the watched GPUs.
#[derive(Debug, Clone)]
pub struct Alarms {
    thresholds: [Threshold; 2],
    /// Each GPU's latch per level, in [`Level::ALL`]'s order.
    latches: Vec<(u32, [bool; 2])>,
}

/// A GPU's used memory reaching a level it was re-armed for.
#[derive(Debug, Clone, PartialEq)]
pub struct Crossing {
    pub gpu: u32,
    pub level: Level,
    pub threshold: Threshold,
    /// The level on this GPU, in bytes.
    pub limit: u64,
    pub used: u64,
    pub total: Option<u64>,
    /// No other GPU was at this level: the level is reached, and its actions fire.
    pub reached: bool,
}

impl Alarms {
    /// Alarms at `warn` and `critical`, every latch clear.
    pub fn new(warn: Threshold, critical: Threshold) -> Alarms {
        Alarms {
            thresholds: [warn, critical],
            latches: Vec::new(),
        }
    }

    pub fn threshold(&self, level: Level) -> Threshold {
        self.thresholds[level as usize]
    }

    /// One readable sample of `gpu`: `used` bytes of a GPU of `total` bytes (when known). Returns
    /// the levels it crossed, warn before critical.
    pub fn observe(&mut self, gpu: u32, used: u64, total: Option<u64>) -> Vec<Crossing> {
        let position = match self.latches.iter().position(|(g, _)| *g == gpu) {
            Some(position) => position,
            None => {
                self.latches.push((gpu, [false; 2]));
                self.latches.len() - 1
            }
        };
        let mut crossings = Vec::new();
        for level in Level::ALL {
            let threshold = self.thresholds[level as usize];
            // A share of an unknown total is no level at all on this GPU.
            let Some(limit) = threshold.limit_bytes(total) else {
                continue;
            };
            let latched = self.latches[position].1[level as usize];
            if !latched && used >= limit {
                let reached = self.latches.iter().all(|(_, l)| !l[level as usize]);
                self.latches[position].1[level as usize] = true;
                crossings.push(Crossing {
                    gpu,
                    level,
                    threshold,
                    limit,
                    used,
                    total,
                    reached,
                });
            } else if latched && used < rearm_below(limit, total) {
                self.latches[position].1[level as usize] = false;
            }
        }
        crossings
    }
}

/// The used memory under which a level at `limit` re-arms on a GPU of `total` bytes.
fn rearm_below(limit: u64, total: Option<u64>) -> u64 {
    let margin = (total.unwrap_or(limit) as f64 * REARM_SHARE).round() as u64;
    limit.saturating_sub(margin)
}

impl Crossing {
    /// `warning: GPU 0 VRAM 70000 MiB / 81559 MiB (86%) crossed the warn threshold 85% (69326 MiB)
    /// at 2026-…Z`; `critical: …` for the critical level.
    pub fn message(&self, timestamp: &str) -> String {
        let share = share(self.used, self.total);
        let label = match self.level {
            Level::Warn => "warning",
            Level::Critical => "critical",
        };
        let total = self
            .total
            .map(|t| format!(" / {}", mib(t)))
            .unwrap_or_default();
        format!(
            "{label}: GPU {} VRAM {}{total}{share} crossed the {} threshold {} at {timestamp}",
            self.gpu,
            mib(self.used),
            self.level.name(),
            self.threshold.describe(Some(self.limit))
        )
    }
}

/// `used memory grows 1200 MiB/min over the last 120 samples; at this rate it reaches the
/// critical level (77481 MiB) in 3m 2.0s`.
pub fn growth_sentence(growth: &Growth) -> String {
    let rate = (growth.bytes_per_minute / vramfit_engine::units::MIB as f64).round();
    let head = format!(
        "used memory grows {rate} MiB/min over the last {} samples",
        growth.samples
    );
    match (growth.critical_bytes, growth.time_to_critical_ms) {
        (Some(limit), Some(0)) => format!(
            "{head}; it is at the critical level ({}) already",
            mib(limit)
        ),
        (Some(limit), Some(ms)) => format!(
            "{head}; at this rate it reaches the critical level ({}) in {}",
            mib(limit),
            human_duration(std::time::Duration::from_millis(ms))
        ),
        _ => format!("{head}; the critical level is unknown (a share of an unknown total)"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::units::MIB;
    use super::*;

    const TOTAL: u64 = 16376 * MIB;

    fn alarms() -> Alarms {
        Alarms::new(Threshold::Percent(85.0), Threshold::Bytes(15_000 * MIB))
    }

    /// The levels crossed by one sample of `gpu` at `used_mib`, with whether each was reached.
    fn feed(a: &mut Alarms, gpu: u32, used_mib: u64) -> Vec<(Level, bool)> {
        a.observe(gpu, used_mib * MIB, Some(TOTAL))
            .into_iter()
            .map(|c| (c.level, c.reached))
            .collect()
    }

    #[test]
    fn a_level_fires_once_per_upward_crossing() {
        let mut a = alarms();
        let warn_at = 13920; // 85% of 16376 MiB, rounded up
        assert!(feed(&mut a, 0, 100).is_empty());
        assert_eq!(feed(&mut a, 0, warn_at), [(Level::Warn, true)]);
        assert!(feed(&mut a, 0, 14000).is_empty());
        assert_eq!(feed(&mut a, 0, 15000), [(Level::Critical, true)]);
        assert!(feed(&mut a, 0, 15500).is_empty());
        // Both levels re-armed by a real drop, then crossed together.
        assert!(feed(&mut a, 0, 100).is_empty());
        assert_eq!(
            feed(&mut a, 0, 16000),
            [(Level::Warn, true), (Level::Critical, true)]
        );
    }

    #[test]
    fn hovering_at_a_level_does_not_refire() {
        let mut a = alarms();
        // Warn is at 85% of 16376 MiB = 13919.6 MiB, and re-arms 2% of 16376 MiB (327.5 MiB)
        // below it: under 13592.1 MiB.
        assert_eq!(feed(&mut a, 0, 13920), [(Level::Warn, true)]);
        for used in [13900, 13925, 13600, 13930, 13593, 14000] {
            assert!(feed(&mut a, 0, used).is_empty(), "{used} MiB fired again");
        }
        assert!(feed(&mut a, 0, 13592).is_empty(), "falling never fires");
        assert_eq!(feed(&mut a, 0, 13920), [(Level::Warn, true)]);
    }

    #[test]
    fn starting_above_a_level_counts_as_crossing() {
        let mut a = alarms();
        assert_eq!(feed(&mut a, 0, 14000), [(Level::Warn, true)]);
    }

    #[test]
    fn gpus_crossing_together_reach_the_level_once() {
        let mut a = alarms();
        assert_eq!(feed(&mut a, 0, 14000), [(Level::Warn, true)]);
        assert_eq!(feed(&mut a, 1, 14000), [(Level::Warn, false)]);
        // GPU 0 re-arms and crosses again while GPU 1 is still up: no new reach.
        assert!(feed(&mut a, 0, 1000).is_empty());
        assert_eq!(feed(&mut a, 0, 14000), [(Level::Warn, false)]);
        // Once every GPU has re-armed, the next crossing reaches the level again.
        assert!(feed(&mut a, 0, 1000).is_empty());
        assert!(feed(&mut a, 1, 1000).is_empty());
        assert_eq!(feed(&mut a, 1, 14000), [(Level::Warn, true)]);
    }

    #[test]
    fn a_share_of_an_unknown_total_is_no_level() {
        let mut a = alarms();
        let crossed = a.observe(0, 15_000 * MIB, None);
        assert_eq!(crossed.len(), 1);
        assert_eq!(crossed[0].level, Level::Critical);
        // Without a total the margin is 2% of the limit: 300 MiB under 15000 MiB.
        assert!(a.observe(0, 14_701 * MIB, None).is_empty());
        assert!(a.observe(0, 15_000 * MIB, None).is_empty());
        assert!(a.observe(0, 14_699 * MIB, None).is_empty());
        assert_eq!(a.observe(0, 15_000 * MIB, None).len(), 1);
    }

    #[test]
    fn crossings_read_as_before() {
        let mut a = alarms();
        let c = a.observe(0, 16000 * MIB, Some(TOTAL));
        assert_eq!(
            c[0].message("g"),
            "warning: GPU 0 VRAM 16000 MiB / 16376 MiB (98%) crossed the warn threshold 85% \
             (13920 MiB) at g"
        );
        assert_eq!(
            c[1].message("g"),
            "critical: GPU 0 VRAM 16000 MiB / 16376 MiB (98%) crossed the critical threshold \
             15000 MiB at g"
        );
    }

    #[test]
    fn growth_is_told_with_its_time_to_critical() {
        let growth = Growth {
            bytes_per_minute: 1200.4 * MIB as f64,
            samples: 120,
            span_ms: 59_500,
            fitted_used_bytes: 70_000 * MIB,
            critical_bytes: Some(77_481 * MIB),
            time_to_critical_ms: Some(374_050),
        };
        assert_eq!(
            growth_sentence(&growth),
            "used memory grows 1200 MiB/min over the last 120 samples; at this rate it reaches \
             the critical level (77481 MiB) in 6m 14.1s"
        );
        let there = Growth {
            time_to_critical_ms: Some(0),
            ..growth.clone()
        };
        assert!(
            growth_sentence(&there).ends_with("it is at the critical level (77481 MiB) already")
        );
        let unknown = Growth {
            critical_bytes: None,
            time_to_critical_ms: None,
            ..growth
        };
        assert!(growth_sentence(&unknown)
            .ends_with("the critical level is unknown (a share of an unknown total)"));
    }
}
