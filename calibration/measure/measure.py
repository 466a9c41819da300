#!/usr/bin/env python3
"""The measurement kit's command line (calibration/measure/README.md):

  measure.py run   [--matrix FILE] [--out DIR] [--budget-s N] [--only GLOB] [--retry-failed]
  measure.py one   --export FILE --config CONFIG --id ID [--attention eager|sdpa|flash] [--out DIR]
  measure.py plan  [--matrix FILE]     each line's plan or skip reason, nothing run
  measure.py matrix                    rewrite matrix.jsonl from vramfit_measure/matrix.py
  measure.py step  PLAN RESULT --cache DIR   (what `vramfit run` runs for one scenario)

`run` exits 75 while the budget leaves scenarios for the next call, then 1 if any failed, else 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vramfit_measure.plan import KIT_DIR, REPO, PlanError, missing, plan_export, plan_line, unsupported, vramfit_bin  # noqa: E402
from vramfit_measure.runner import RunnerError, measure, read_matrix, run_matrix  # noqa: E402

MATRIX = KIT_DIR / "matrix.jsonl"
OUT = REPO / "calibration" / "measured"
# sysexits' EX_TEMPFAIL: call again to go on.
MORE_TO_DO = 75


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="measure.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a matrix, skipping what is already measured")
    run.add_argument("--matrix", type=Path, default=MATRIX)
    run.add_argument("--out", type=Path, default=OUT)
    run.add_argument("--budget-s", type=float, help="start no scenario that would end after this many seconds")
    run.add_argument("--only", help="only the ids matching this glob")
    run.add_argument("--retry-failed", action="store_true")
    run.add_argument("--nvml-replay", type=Path, help=argparse.SUPPRESS)
    one = commands.add_parser("one", help="measure one scenario exported by `vramfit estimate --config ... --json`")
    one.add_argument("--export", type=Path, required=True)
    one.add_argument("--config", required=True)
    one.add_argument("--id", required=True)
    one.add_argument("--attention", choices=("eager", "sdpa", "flash"))
    one.add_argument("--out", type=Path, default=OUT)
    one.add_argument("--nvml-replay", type=Path, help=argparse.SUPPRESS)
    plan = commands.add_parser("plan", help="each matrix line's plan or skip reason")
    plan.add_argument("--matrix", type=Path, default=MATRIX)
    commands.add_parser("matrix", help="rewrite matrix.jsonl")
    step = commands.add_parser("step", help=argparse.SUPPRESS)
    step.add_argument("plan", type=Path)
    step.add_argument("result", type=Path)
    step.add_argument("--cache", type=Path, required=True)
    args = parser.parse_args(argv)

    if args.command == "step":
        from vramfit_measure import step as step_module

        step_module.main(args.plan, args.result, args.cache)
        return 0
    if args.command == "matrix":
        from vramfit_measure.matrix import write_matrix

        count = write_matrix(MATRIX)
        print(f"measure: wrote {count} scenarios to {MATRIX.relative_to(REPO)}")
        return 0
    vramfit = vramfit_bin()
    if args.command == "plan":
        for line in read_matrix(args.matrix):
            try:
                p = plan_line(line, vramfit)
                reason = unsupported(p) or missing(p)
                shape = f"{p.layers}/{p.published_layers} layers of {Path(p.config_file).name}"
                print(f"{p.id}: {'skip: ' + reason if reason else 'run'} ({shape}, {p.attention})")
            except PlanError as e:
                print(f"{line['id']}: cannot plan: {e}")
        return 0
    if args.command == "one":
        p = plan_export(json.loads(args.export.read_text()), args.config, vramfit, args.id, args.attention)
        reason = unsupported(p) or missing(p)
        if reason:
            print(f"measure: {p.id}: not run: {reason}", file=sys.stderr)
            return 1
        args.out.mkdir(parents=True, exist_ok=True)
        return 0 if measure(p, args.out, vramfit, args.nvml_replay) else 1
    outcome = run_matrix(args.matrix, args.out, vramfit, args.budget_s, args.only, args.retry_failed, args.nvml_replay)
    print(
        f"measure: {len(outcome.measured)} measured now, {len(outcome.already)} before, "
        f"{len(outcome.skipped)} skipped (skipped.json), {len(outcome.failed)} failed, "
        f"{len(outcome.remaining)} left for the next call"
    )
    if outcome.remaining:
        return MORE_TO_DO
    return 1 if outcome.failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (PlanError, RunnerError) as e:
        print(f"measure: {e}", file=sys.stderr)
        sys.exit(2)
