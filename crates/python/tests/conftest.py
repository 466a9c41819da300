"""What the tests share: the CLI they compare against, and the CLI's GPU replay fixtures.

``VRAMFIT_BIN`` names the ``vramfit`` binary built from the same checkout (``cargo xtask
test-python`` sets it); the Python results must equal its ``--json`` output.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
GPU_FIXTURES = REPO / "crates" / "cli" / "tests" / "fixtures" / "gpu"
#: GPU 0 climbs 1 → 40000 → 70000 → 78000 → 60000 → 72000 MiB of an H100's 81559 MiB (warn
#: at 85% = 69326 MiB, critical at 95% = 77481 MiB); GPU 1 is lost from the fifth frame on.
CLIMB = GPU_FIXTURES / "replay-watch-climb-gpu1-lost.json"
H100 = GPU_FIXTURES / "replay-h100-probe.json"


def vramfit_bin() -> str:
    path = os.environ.get("VRAMFIT_BIN")
    if not path:
        pytest.fail("VRAMFIT_BIN must name the vramfit binary (cargo xtask test-python sets it)")
    return path


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([vramfit_bin(), *args], capture_output=True, text=True, check=False)


def cli_json(*args: str):
    """The CLI's ``--json`` output for ``args``, which must succeed."""
    out = cli(*args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def flags(scenario: dict) -> list:
    """Python keywords as the CLI's flags: ``lora_rank=16`` is ``--lora-rank 16``."""
    args = []
    for key, value in scenario.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            text = str(v).lower() if isinstance(v, bool) else str(v)
            args += [f"--{key.replace('_', '-')}", text]
    return args


def nvml_loads() -> bool:
    """Whether this machine has NVML, where the no-driver checks cannot run."""
    return cli("probe").returncode != 3
