//! The usable budget and the verdict: one rule for the estimate, the solver and the ladder.

use crate::scenario::{Resolved, Scenario};
use crate::units::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Fits,
    Tight,
    Oom,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Fits => "fits",
            Verdict::Tight => "tight",
            Verdict::Oom => "oom",
        }
    }

    /// True unless out of memory: a tight run still runs.
    pub fn fits(self) -> bool {
        self != Verdict::Oom
    }
}

/// What one GPU offers a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Per-GPU memory the card reports.
    pub capacity: Bytes,
    /// Capacity less memory in use by others and the safety margin.
    pub usable: Bytes,
    /// The share of usable memory (`tight`, in percent) above which the verdict is tight.
    pub tight_threshold: Bytes,
    /// On a unified device, the memory the CPU and GPU share less `reserved` and `margin`:
    /// what is offloaded to the CPU stays in it.
    pub shared_usable: Option<Bytes>,
}

impl Budget {
    pub fn new(s: &Scenario, r: &Resolved) -> Budget {
        let usable = r
            .capacity
            .saturating_sub(s.reserved)
            .saturating_sub(s.margin);
        let shared = match (r.custom_vram, r.gpu) {
            (None, Some(gpu)) => gpu.shared_memory(),
            _ => None,
        };
        Budget {
            capacity: r.capacity,
            usable,
            tight_threshold: Bytes::from_f64(usable.as_f64() * s.tight / 100.0),
            shared_usable: shared.map(|m| m.saturating_sub(s.reserved).saturating_sub(s.margin)),
        }
    }

    pub fn verdict(&self, total: Bytes) -> Verdict {
        if total > self.usable {
            Verdict::Oom
        } else if total > self.tight_threshold {
            Verdict::Tight
        } else {
            Verdict::Fits
        }
    }

    /// Usable less total; negative when it does not fit.
    pub fn headroom(&self, total: Bytes) -> i64 {
        i64::try_from(self.usable.0)
            .unwrap_or(i64::MAX)
            .saturating_sub(i64::try_from(total.0).unwrap_or(i64::MAX))
    }
}
