"""``vramfit watch`` inside a training loop: the same monitor, sampled once a step.

The CLI's ``watch`` runs beside a job and can only start a shell command or send a signal when
memory climbs; in-process, the guard calls a Python function instead (save a checkpoint, drop
the batch size), in the loop's own thread, between steps, where acting is safe.

Sampling at step ends sees the step's peak: NVML's used figure counts what PyTorch's caching
allocator holds, and the allocator keeps the step's peak blocks until ``empty_cache``.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import _native

log = logging.getLogger("vramfit")

#: Called with the crossing: ``gpu``, ``level`` ("warn" or "critical"), ``used_bytes``,
#: ``limit_bytes``, ``total_bytes``, ``reached`` and ``message`` (watch's warning line).
Handler = Callable[[Dict[str, Any]], Any]

MIB = 1 << 20


class VramGuard:
    """Samples the GPUs with ``vramfit watch``'s monitor at each :meth:`step` and acts.

    Use it as a context manager around any loop, calling ``step()`` after each optimizer step::

        with vramfit.VramGuard(on_critical=save_checkpoint,
                               predicted_bytes=plan["total_bytes"]) as guard:
            for batch in loader:
                train_step(batch)
                guard.step()

    Each crossing of a level is logged (logger ``vramfit``) as ``watch`` prints it. A level's
    handler (``on_warn``, ``on_critical``) is called when the level is *reached*: once per upward
    crossing, however many GPUs cross together, and again only after every GPU has fallen 2% of
    its memory below the level (``watch``'s rule, so hovering at a level does not fire on every
    step).

    After ``report_after`` steps (or at the end of a shorter loop) it logs, at INFO, each GPU's
    measured peak beside ``predicted_bytes`` (an estimate's ``total_bytes``); :meth:`report`
    returns the same comparison.

    ``gpus``, ``warn``, ``critical`` and ``replay`` are ``watch``'s ``--gpu``, ``--warn``,
    ``--critical`` (a share like "85%" or a size like "14000MiB") and ``--replay`` (recorded
    snapshots instead of NVML, for tests and demos). Raises :class:`vramfit.GpuUnavailableError`
    where NVML cannot be read, and ``ValueError`` for a bad level or GPU.
    """

    def __init__(
        self,
        *,
        on_warn: Optional[Handler] = None,
        on_critical: Optional[Handler] = None,
        predicted_bytes: Optional[int] = None,
        report_after: int = 3,
        gpus: Optional[Sequence[int]] = None,
        warn: str = "85%",
        critical: str = "95%",
        replay: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> None:
        for name, handler in (("on_warn", on_warn), ("on_critical", on_critical)):
            if handler is not None and not callable(handler):
                raise ValueError(f"invalid {name}: {handler!r} is not callable")
        if isinstance(report_after, bool) or not isinstance(report_after, int) or report_after < 1:
            raise ValueError(f"invalid report_after: {report_after!r} is not a number of steps")
        if predicted_bytes is not None and (
            isinstance(predicted_bytes, bool) or not isinstance(predicted_bytes, int)
        ):
            raise ValueError(
                f"invalid predicted_bytes: {predicted_bytes!r} is not a number of bytes"
            )
        self._monitor = _native.Monitor(
            gpus=None if gpus is None else list(gpus), warn=warn, critical=critical, replay=replay
        )
        self._handlers: Dict[str, Optional[Handler]] = {"warn": on_warn, "critical": on_critical}
        self.predicted_bytes = predicted_bytes
        self.report_after = report_after
        #: Steps sampled so far.
        self.steps = 0
        #: Each GPU's highest used memory seen, in bytes.
        self.peaks: Dict[int, int] = {}
        #: Every crossing that reached its level, in order.
        self.reached: List[Dict[str, Any]] = []
        self._reported = False

    @property
    def gpus(self) -> List[int]:
        """The GPUs sampled, by index."""
        return self._monitor.gpus

    def __enter__(self) -> "VramGuard":
        return self

    def __exit__(self, *exc: object) -> bool:
        self.finish()
        return False

    def finish(self) -> None:
        """Logs the comparison of peak and prediction now, if the loop ended before
        ``report_after`` steps; the context manager's exit calls it."""
        if self.steps and not self._reported:
            self._log_report()

    def step(self) -> List[Dict[str, Any]]:
        """Samples the GPUs once, logs each crossing, calls the handler of each level reached.

        Returns the crossings that reached their level in this sample.
        """
        tick = self._monitor.sample()
        for sample in tick["samples"]:
            used = sample["used_bytes"]
            if used is not None:
                self.peaks[sample["gpu"]] = max(self.peaks.get(sample["gpu"], 0), used)
            elif sample["error"]:
                log.warning("vramfit: GPU %d: %s", sample["gpu"], sample["error"])
        self.steps += 1
        reached = []
        for crossing in tick["crossed"]:
            log.warning("vramfit: %s", crossing["message"])
            if crossing["reached"]:
                reached.append(crossing)
                self.reached.append(crossing)
                handler = self._handlers[crossing["level"]]
                if handler is not None:
                    handler(crossing)
        if self.steps == self.report_after:
            self._log_report()
        return reached

    def report(self) -> List[Dict[str, Any]]:
        """Each GPU's measured peak so far beside the prediction.

        A dict per GPU: ``gpu``, ``steps``, ``peak_bytes``, ``predicted_bytes`` and
        ``error_pct`` (how far the prediction is above (+) or below (-) the peak; ``None``
        without a prediction).
        """
        rows = []
        for gpu, peak in sorted(self.peaks.items()):
            error = None
            if self.predicted_bytes is not None and peak > 0:
                error = (self.predicted_bytes - peak) / peak * 100
            rows.append(
                {
                    "gpu": gpu,
                    "steps": self.steps,
                    "peak_bytes": peak,
                    "predicted_bytes": self.predicted_bytes,
                    "error_pct": error,
                }
            )
        return rows

    def _log_report(self) -> None:
        self._reported = True
        for row in self.report():
            peak = _mib(row["peak_bytes"])
            line = f"vramfit: after {row['steps']} steps GPU {row['gpu']} peaked at {peak}"
            if row["error_pct"] is None:
                log.info("%s; no prediction given", line)
            else:
                log.info(
                    "%s; predicted %s (%+.1f%%)",
                    line,
                    _mib(row["predicted_bytes"]),
                    row["error_pct"],
                )


def _mib(size: int) -> str:
    """Bytes as whole MiB, rounded, as ``watch`` prints them."""
    return f"{round(size / MIB)} MiB"
