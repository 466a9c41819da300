"""vramfit: plan GPU memory (VRAM) for LLM training and serving.

The engine of the ``vramfit`` command line, built in. Each function returns the object the CLI's
``--json`` prints for the same scenario: plain dicts, lists, numbers and strings, with the same
keys (sizes in bytes, in keys ending ``_bytes``).

- :func:`estimate`: ``vramfit estimate --json``, the memory stack of one scenario.
- :func:`fit`: ``vramfit fit --json``, what fits: the largest micro-batch and sequence, the
  accumulation for a target batch, the smallest GPU; with ``gpu="auto"``, on the card NVML reads.
- :func:`probe`: ``vramfit probe --json``, what is on this machine's GPUs now.
- :class:`VramGuard`: ``vramfit watch``'s monitor inside any training loop, acting at the warn
  and critical levels; :mod:`vramfit.integrations` holds the transformers ``TrainerCallback``.

A scenario is given as keywords: the CLI's flags and the page's URL keys, ``-`` written ``_``
(``lora_rank=16``; ``**{"lora-rank": 16}`` works too). ``help(vramfit.estimate)`` lists them.
Bad input raises ``ValueError`` naming every bad field; a GPU that cannot be read raises
:class:`GpuUnavailableError` with the CLI's message.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

from . import _native
from ._native import GpuUnavailableError, Monitor
from .guard import VramGuard

__all__ = [
    "estimate",
    "fit",
    "probe",
    "Monitor",
    "VramGuard",
    "GpuUnavailableError",
]

PathLike = Union[str, "os.PathLike[str]"]


def estimate(
    *, accuracy: bool = False, replay: Optional[PathLike] = None, **scenario: Any
) -> Dict[str, Any]:
    return _native.estimate(scenario, accuracy, replay)


def fit(
    *,
    target_batch: Optional[int] = None,
    users: Optional[int] = None,
    tokens_per_s: Optional[float] = None,
    replay: Optional[PathLike] = None,
    **scenario: Any,
) -> Dict[str, Any]:
    return _native.fit(scenario, target_batch, users, tokens_per_s, replay)


def probe(*, replay: Optional[PathLike] = None) -> Dict[str, Any]:
    """What is on this machine's GPUs now, read through NVML: ``vramfit probe --json``.

    Returns a ``vramfit.snapshot/1`` document: each GPU's memory (``total_bytes``,
    ``used_bytes``, ``free_bytes``, ``reserved_bytes``), processes and MIG devices. Raises
    :class:`GpuUnavailableError` with the CLI's message where NVML cannot be read (no driver, no
    library, no permission). ``replay`` reads recorded snapshots instead (tests and demos); what
    comes from it says so in ``warnings``.
    """
    return _native.probe(replay)


_AUTO = """
gpu="auto" plans on this machine's card, read through NVML now, as from_probe reads a file;
replay, with it, reads recorded snapshots instead of NVML (tests and demos).
"""


def _field_table() -> str:
    """The scenario keywords with the CLI's help for each, from the engine's field table."""
    lines = ["Scenario keywords (the CLI's flags, `-` written `_`):"]
    for key, text in _native.keywords():
        lines.append(f"    {key.replace('-', '_')}: {text}")
    return "\n".join(lines) + "\n"


estimate.__doc__ = (
    """The memory stack of one scenario: ``vramfit estimate --json``.

Returns a ``vramfit.estimate/3`` object: ``components`` (each with ``bytes`` and ``formula``),
``total_bytes`` per GPU, ``usable_bytes``, ``headroom_bytes``, ``verdict``, and for serving
runtimes ``serving`` (the KV pool and the launch ``command``). ``accuracy=True`` adds how close
estimates of this kind of run came to published measurements of memory and, under ``speed``, of
speed (``--accuracy``).
"""
    + _AUTO
    + "\n"
    + _field_table()
)

fit.__doc__ = (
    """What fits: ``vramfit fit --json``.

For training and Transformers inference, the solver's answer: ``max_batch`` and ``max_seq`` (the
largest micro-batch and sequence that fit the usable memory, after the margin), with
``target_batch`` the ``micro_batch`` and ``grad_accum`` that reach it, ``smallest_gpu`` and the
fix-it ``ladder``. For a serving runtime, the serving plan: concurrency, the longest context for
``users`` requests, the GPUs needed for ``tokens_per_s`` each, and the launch ``command``.

``gpu="auto"`` plans on this machine's card, read through NVML (its total and what other
processes hold): ``fit(model=..., mode="qlora", gpu="auto", target_batch=32)``.
"""
    + _AUTO
    + "\n"
    + _field_table()
)
