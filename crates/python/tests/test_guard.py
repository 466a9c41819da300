"""VramGuard: watch's monitor in a plain loop, acting on a replayed climb as watch does."""

import logging
import re

import pytest

import vramfit
from conftest import CLIMB, cli

MIB = 1 << 20


def without_time(message: str) -> str:
    return re.sub(r" at \S+$", "", message)


def watched_crossings() -> list:
    """The crossings `vramfit watch` prints for GPU 0 of the climb, without their times."""
    out = cli("watch", "--replay", str(CLIMB), "--gpu", "0", "--interval", "20ms",
              "--duration", "400ms")
    assert out.returncode == 0, out.stderr
    lines = [l for l in out.stderr.splitlines() if re.match(r"(warning|critical): GPU", l)]
    return [without_time(l) for l in lines]


def test_the_guard_crosses_where_watch_does_and_calls_each_handler_once_per_reach():
    warned, critical = [], []
    with pytest.warns(UserWarning, match="not read from a GPU"):
        guard = vramfit.VramGuard(on_warn=warned.append, on_critical=critical.append, gpus=[0],
                                  replay=CLIMB)
    messages = []
    with guard:
        for _ in range(8):
            messages += [c["message"] for c in guard.step()]
    # 70000 MiB reaches warn, 78000 MiB critical, 60000 MiB re-arms both, 72000 MiB warns again;
    # the last frame repeats without firing.
    assert [c["used_bytes"] for c in warned] == [70000 * MIB, 72000 * MIB]
    assert [c["used_bytes"] for c in critical] == [78000 * MIB]
    assert all(c["reached"] and c["gpu"] == 0 for c in warned + critical)
    assert [without_time(m) for m in messages] == watched_crossings()
    assert guard.peaks == {0: 78000 * MIB}


def test_the_peak_is_logged_beside_the_prediction_after_the_first_steps(caplog):
    caplog.set_level(logging.INFO, logger="vramfit")
    with pytest.warns(UserWarning):
        guard = vramfit.VramGuard(predicted_bytes=72000 * MIB, report_after=4, gpus=[0],
                                  replay=CLIMB)
    for step in range(4):
        assert not [r for r in caplog.records if "peaked" in r.getMessage()], step
        guard.step()
    lines = [r.getMessage() for r in caplog.records if "peaked" in r.getMessage()]
    assert lines == [
        "vramfit: after 4 steps GPU 0 peaked at 78000 MiB; predicted 72000 MiB (-7.7%)"
    ]
    [row] = guard.report()
    assert row["peak_bytes"] == 78000 * MIB
    assert row["error_pct"] == pytest.approx((72000 - 78000) / 78000 * 100)


def test_a_short_loop_reports_when_it_ends(caplog):
    caplog.set_level(logging.INFO, logger="vramfit")
    with pytest.warns(UserWarning):
        with vramfit.VramGuard(report_after=10, gpus=[0], replay=CLIMB) as guard:
            guard.step()
            guard.step()
    lines = [r.getMessage() for r in caplog.records if "peaked" in r.getMessage()]
    assert lines == ["vramfit: after 2 steps GPU 0 peaked at 40000 MiB; no prediction given"]


def test_a_lost_gpu_is_logged_and_the_others_still_watched(caplog):
    with pytest.warns(UserWarning):
        guard = vramfit.VramGuard(replay=CLIMB)
    assert guard.gpus == [0, 1]
    for _ in range(5):
        guard.step()
    assert any("GPU 1" in r.getMessage() and "fallen off the bus" in r.getMessage()
               for r in caplog.records)
    assert guard.peaks[0] == 78000 * MIB


@pytest.mark.parametrize(
    "keywords,named",
    [({"on_warn": "save"}, "invalid on_warn"), ({"report_after": 0}, "invalid report_after"),
     ({"predicted_bytes": "8GB"}, "invalid predicted_bytes")],
)
def test_bad_arguments_are_named(keywords, named):
    with pytest.raises(ValueError, match=named):
        vramfit.VramGuard(replay=CLIMB, **keywords)
