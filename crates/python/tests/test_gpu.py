"""probe() and fit(gpu="auto") read the card through the CLI's NVML code, and fail as it does."""

import pytest

import vramfit
from conftest import CLIMB, H100, cli, cli_json, nvml_loads

no_driver = pytest.mark.skipif(
    nvml_loads(), reason="NVML loads here: the no-driver path is not taken"
)


@no_driver
def test_probe_without_a_driver_raises_the_clis_error():
    out = cli("probe", "--json")
    assert out.returncode == 3
    with pytest.raises(vramfit.GpuUnavailableError) as raised:
        vramfit.probe()
    assert str(raised.value) + "\n" == out.stderr.removeprefix("vramfit: ")
    assert "nvidia-smi | vramfit parse-smi" in str(raised.value)


@no_driver
def test_fit_on_the_card_without_a_driver_raises_the_same_error():
    with pytest.raises(vramfit.GpuUnavailableError) as raised:
        vramfit.fit(model="llama-3.1-8b", mode="qlora", gpu="auto", target_batch=16)
    assert str(raised.value) + "\n" == cli("probe").stderr.removeprefix("vramfit: ")


def test_probe_of_a_replay_equals_the_clis():
    probed = vramfit.probe(replay=H100)
    assert probed == cli_json("probe", "--json", "--replay", str(H100))
    # As in the CLI's document, the mark of a replay is the first of its warnings.
    assert probed["warnings"][0] == f"replayed from {H100}, not read from a GPU"


def test_fit_on_the_card_plans_as_from_probe_does():
    scenario = {"model": "llama-3.1-8b", "mode": "qlora", "seq": 2048}
    with pytest.warns(UserWarning, match="not read from a GPU"):
        plan = vramfit.fit(gpu="auto", replay=H100, target_batch=32, **scenario)
    expected = cli_json(
        "fit", "--json", "--from-probe", str(H100), "--target-batch", "32",
        "--model", "llama-3.1-8b", "--mode", "qlora", "--seq", "2048",
    )
    assert plan == expected
    # The card's own memory, less what its three processes hold, minus the margin.
    assert plan["micro_batch"] * plan["grad_accum"] >= 32
    default = vramfit.fit(target_batch=32, **scenario)
    assert plan["usable_bytes"] != default["usable_bytes"]


def test_a_gpu_that_is_not_there_is_a_value_error():
    with pytest.raises(ValueError, match="there is no GPU 7"):
        vramfit.Monitor(gpus=[7], replay=CLIMB)


def test_bad_levels_name_the_level():
    with pytest.raises(ValueError, match="invalid warn:"):
        vramfit.Monitor(warn="85", replay=CLIMB)
    with pytest.raises(ValueError, match="invalid critical:"):
        vramfit.Monitor(critical="lots", replay=CLIMB)
