"""Runs scenarios under `vramfit run`, one process each, and writes one `vramfit.measurement/1`
document per scenario: what `vramfit run` measured through NVML, with the kit's `workload`
(the scenario, torch's peaks, the model and the provenance) added.

A matrix run is resumable: a scenario whose document exists is not run again, one that failed is
not retried unless asked, and `budget_s` stops starting scenarios so a run fits a time limit.
Scenarios the kit cannot run here are listed with their reason in `skipped.json`.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .plan import KIT_DIR, Plan, PlanError, missing, plan_line, unsupported

# `vramfit run`'s sampling interval: short enough to catch a step's high-water mark, which the
# caching allocator holds until the process exits.
NVML_INTERVAL = "50ms"
# `vramfit run`'s exit code when it finds no GPU library.
NO_GPU_LIBRARY = 3
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
LOG_TAIL_CHARS = 4000


class RunnerError(Exception):
    """A run that cannot go on (no NVML, no CLI): the message says what to do."""


@dataclass
class Outcome:
    measured: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    remaining: list[str] = field(default_factory=list)


def read_matrix(path: Path) -> list[dict]:
    """JSON Lines; blank lines and lines starting with `#` are skipped. Ids are unique file names."""
    lines = []
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        try:
            line = json.loads(text)
        except json.JSONDecodeError as e:
            raise PlanError(f"{path}:{number}: not JSON: {e}") from e
        if not ID.match(str(line.get("id", ""))):
            raise PlanError(f"{path}:{number}: id must be letters, digits, '.', '_' or '-'")
        lines.append(line)
    ids = [line["id"] for line in lines]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise PlanError(f"{path}: ids used twice: {', '.join(repeated)}")
    return lines


def write_json(path: Path, value) -> None:
    """Written whole or not at all: an interrupted run leaves no half document to be skipped."""
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(value, indent=1) + "\n")
    partial.replace(path)


def measure(plan: Plan, out: Path, vramfit: str, replay: Path | None = None) -> bool:
    """Runs one plan under `vramfit run`; writes `<id>.json`, or `<id>.failed.json` with the log's
    tail. True when measured."""
    work = out / ".work"
    work.mkdir(parents=True, exist_ok=True)
    plan_file, result, nvml, log = (work / f"{plan.id}.{kind}" for kind in ("plan.json", "workload.json", "nvml.json", "log"))
    for stale in (result, nvml):
        stale.unlink(missing_ok=True)
    plan_file.write_text(json.dumps(plan.to_json()))
    command = [vramfit, "run", "--interval", NVML_INTERVAL, "--out", str(nvml)]
    if replay is not None:
        command += ["--replay", str(replay)]
    command += [
        "--", sys.executable, str(KIT_DIR / "measure.py"), "step", str(plan_file), str(result),
        "--cache", str(work / "checkpoints"),
    ]
    with log.open("w") as sink:
        done = subprocess.run(command, stdout=sink, stderr=subprocess.STDOUT)
    if done.returncode == NO_GPU_LIBRARY and not nvml.exists():
        raise RunnerError(
            "vramfit run found no NVML library: measure on a machine with an NVIDIA driver "
            f"(its message: {log.read_text().strip()[-300:]})"
        )
    if done.returncode == 0 and nvml.exists() and result.exists():
        document = json.loads(nvml.read_text())
        document["workload"] = json.loads(result.read_text())
        # A replayed NVML part (the kit's own tests) is no reading of a GPU: the comparison
        # leaves its peak out.
        document["workload"]["nvml_replay"] = str(replay) if replay is not None else None
        write_json(out / f"{plan.id}.json", document)
        for used in (plan_file, result, nvml, log):
            used.unlink(missing_ok=True)
        return True
    write_json(
        out / f"{plan.id}.failed.json",
        {"id": plan.id, "exit_code": done.returncode, "command": command, "log_tail": log.read_text()[-LOG_TAIL_CHARS:]},
    )
    return False


def run_matrix(
    matrix: Path,
    out: Path,
    vramfit: str,
    budget_s: float | None = None,
    only: str | None = None,
    retry_failed: bool = False,
    replay: Path | None = None,
) -> Outcome:
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    outcome = Outcome()
    todo: list[Plan] = []
    for line in read_matrix(matrix):
        run_id = line["id"]
        if only and not fnmatch.fnmatch(run_id, only):
            continue
        if (out / f"{run_id}.json").exists():
            outcome.already.append(run_id)
            continue
        if (out / f"{run_id}.failed.json").exists() and not retry_failed:
            outcome.failed.append(run_id)
            continue
        try:
            plan = plan_line(line, vramfit)
        except PlanError as e:
            outcome.skipped.append({"id": run_id, "reason": str(e)})
            continue
        reason = unsupported(plan) or missing(plan)
        if reason:
            outcome.skipped.append({"id": run_id, "reason": reason})
        else:
            todo.append(plan)
    if only is None:
        write_json(out / "skipped.json", outcome.skipped)
    durations: list[float] = []
    for index, plan in enumerate(todo):
        expected = sum(durations) / len(durations) if durations else 0.0
        if budget_s is not None and time.monotonic() - started + expected > budget_s:
            outcome.remaining = [p.id for p in todo[index:]]
            break
        began = time.monotonic()
        ok = measure(plan, out, vramfit, replay)
        durations.append(time.monotonic() - began)
        (outcome.measured if ok else outcome.failed).append(plan.id)
        print(
            f"measure: {plan.id}: {'measured' if ok else 'FAILED (see ' + plan.id + '.failed.json)'} "
            f"in {durations[-1]:.1f}s [{index + 1}/{len(todo)}]",
            flush=True,
        )
    if not outcome.remaining:
        shutil.rmtree(out / ".work", ignore_errors=True)
    return outcome
