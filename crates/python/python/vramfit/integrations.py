"""vramfit in training frameworks: a transformers ``TrainerCallback`` that acts on memory.

``vramfit.integrations.TrainerCallback`` samples the GPUs with ``vramfit watch``'s monitor at the
end of each step (:class:`vramfit.VramGuard`), logs the measured peak beside the prediction after
the first steps, and when a level is reached saves a checkpoint through the Trainer, stops
training, or calls your function: the emergency checkpoint, in-process, without signals.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Union

try:
    import transformers
except ImportError as e:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "vramfit.integrations.TrainerCallback needs transformers: pip install transformers"
    ) from e

from .guard import VramGuard

log = logging.getLogger("vramfit")

#: What a level may do: "log" (only the warning line), "save" (a checkpoint through the
#: Trainer, at the end of this step), "stop" (save, then end training), or a function called
#: with the crossing.
Action = Union[str, Callable[[Dict[str, Any]], Any], None]

ACTIONS = ("log", "save", "stop")


class TrainerCallback(transformers.TrainerCallback):
    """Guards a transformers ``Trainer`` (or TRL's ``SFTTrainer``) against running out of memory.

    ::

        trainer = Trainer(..., callbacks=[
            vramfit.integrations.TrainerCallback(
                on_critical="save", predicted_bytes=vramfit.estimate(**s)["total_bytes"])])

    ``on_warn`` (default "log") and ``on_critical`` (default "save") say what to do when the
    level is reached: "log", "save" (``control.should_save``: the Trainer writes
    ``checkpoint-<step>`` as at a scheduled save), "stop" (save, then
    ``control.should_training_stop``), or a function called with the crossing. The other keywords
    are :class:`vramfit.VramGuard`'s; the guard is ``self.guard``.

    One process per machine: under DDP each rank would act on its own sample, and a save is a
    collective operation, so the ranks could disagree on it.
    """

    def __init__(
        self,
        *,
        on_warn: Action = "log",
        on_critical: Action = "save",
        **guard: Any,
    ) -> None:
        self._actions = {
            "warn": _checked("on_warn", on_warn),
            "critical": _checked("on_critical", on_critical),
        }
        # The guard's keywords pass through whole, so its defaults and checks stay its own.
        self.guard = VramGuard(**guard)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        for crossing in self.guard.step():
            action = self._actions[crossing["level"]]
            if callable(action):
                action(crossing)
            elif action in ("save", "stop"):
                log.warning(
                    "vramfit: %s level reached at step %d: saving a checkpoint%s",
                    crossing["level"],
                    state.global_step,
                    " and stopping" if action == "stop" else "",
                )
                control.should_save = True
                control.should_training_stop = control.should_training_stop or action == "stop"
        return control

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        self.guard.finish()
        return control


def _checked(name: str, action: Action) -> Action:
    if action is None or callable(action) or action in ACTIONS:
        return action
    raise ValueError(
        f"invalid {name}: {action!r}; use one of {', '.join(map(repr, ACTIONS))} or a function"
    )
