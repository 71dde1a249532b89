"""app/verify/metric.judge: every tensor judged at its own scale."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tf_convert.app.verify.metric import CANNOT_TELL, EPS32, FAILED, OK, judge, judge_across, snr_floor_db, verdict_of

SCALES = [1e-6, 1e-5, 1e-3, 1.0, 1e3, 1e6]


def _ref(scale: float, shape=(1, 4, 8, 8), seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _rounded(ref: np.ndarray, ulps: float = 4.0, seed: int = 1) -> np.ndarray:
    """What a correct float32 conversion gives: the reference off by a few rounding steps."""
    noise = np.random.default_rng(seed).uniform(-1, 1, ref.shape) * ulps * EPS32 * np.abs(ref)
    return (ref.astype(np.float64) + noise).astype(np.float32)


@pytest.mark.parametrize("scale", SCALES)
def test_float32_rounding_passes_at_every_scale(scale):
    ref = _ref(scale)
    assert judge(_rounded(ref), ref)["verdict"] == OK


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("garbage", [
    "shifted",   # every window one pixel off (what swapped pads do)
    "halved",    # half the signal
    "noise_1pct",  # RMS error 1 % of the signal everywhere
])
def test_wrong_values_fail_at_every_scale(scale, garbage):
    ref = _ref(scale)
    wrong = {"shifted": np.roll(ref, 1, axis=3), "halved": ref * 0.5,
             "noise_1pct": ref + 0.01 * _ref(scale, seed=7)}[garbage]
    result = judge(wrong, ref)
    assert result["verdict"] == FAILED and not result["passed"], result


def test_the_old_floor_of_one_is_gone():
    """max|a-b| / max(1, max|ref|) passed this: an output of size 1e-5 off by its own size."""
    ref = _ref(1e-5)
    wrong = np.roll(ref, 1, axis=3)
    assert np.max(np.abs(wrong - ref)) / max(1.0, float(np.max(np.abs(ref)))) < 1e-4  # the old metric: "OK"
    assert judge(wrong, ref)["max_rel"] > 0.5


@pytest.mark.parametrize("ref,why", [
    (np.zeros((1, 3, 4, 4), np.float32), "all zeros"),
    (np.full((1, 3, 4, 4), 0.25, np.float32), "constant 0.25"),
])
def test_a_constant_reference_cannot_tell(ref, why):
    result = judge(ref.copy(), ref)
    assert result["verdict"] == CANNOT_TELL and not result["passed"]
    assert why in result["why"]


def test_a_constant_reference_still_fails_a_wrong_value():
    ref = np.zeros((2, 3), np.float32)
    assert judge(ref + 1e-3, ref)["verdict"] == FAILED


def test_snr_floor_catches_an_error_the_peak_hides():
    """One huge value and garbage in the rest: max_rel against the peak is small, the SNR is not."""
    ref = _ref(1.0, shape=(10000,))
    ref[0] = 1e3
    wrong = ref.copy()
    wrong[1:] = -ref[1:]  # every value but the peak has the wrong sign
    result = judge(wrong, ref, rtol=1e-2)
    assert result["max_rel"] < 1e-2 and result["verdict"] == FAILED and "SNR" in result["why"]


@pytest.mark.parametrize("actual,expected,verdict", [
    ([np.inf, 1.0, 2.0], [np.inf, 1.0, 2.0], OK),       # TF's own inf, matched
    ([np.nan, 1.0, 2.0], [np.nan, 1.0, 2.0], OK),
    ([np.nan, 1.0, 2.0], [0.5, 1.0, 2.0], FAILED),      # nan where TF has a number
    ([-np.inf, 1.0, 2.0], [np.inf, 1.0, 2.0], FAILED),
])
def test_non_finite_values(actual, expected, verdict):
    result = judge(np.array(actual, np.float32), np.array(expected, np.float32))
    assert result["verdict"] == verdict, result
    if verdict == FAILED:
        assert math.isinf(result["max_rel"])


def test_rtol_stays_meaningful():
    ref = _ref(1e-5)
    off = ref * (1 + 3e-3)  # 0.3 % everywhere: SNR 50 dB
    assert judge(off, ref, rtol=1e-4)["verdict"] == FAILED
    assert judge(off, ref, rtol=1e-2)["verdict"] == OK
    assert snr_floor_db(1e-4) == 40 and snr_floor_db(1e-2) == 40 and snr_floor_db(0.5) == 20


def test_the_float32_floor_under_a_tiny_rtol_and_rtol_zero_is_exact():
    ref = _ref(1e3)
    assert judge(_rounded(ref), ref, rtol=1e-12, depth=10)["verdict"] == OK  # rounding is never an error
    assert judge(_rounded(ref), ref, rtol=0.0, depth=10)["verdict"] == FAILED  # --rtol 0: bit-identical
    assert judge(ref.copy(), ref, rtol=0.0)["verdict"] == OK


def test_verdict_of_several():
    assert verdict_of([{"verdict": OK}, {"verdict": CANNOT_TELL}]) == CANNOT_TELL
    assert verdict_of([{"verdict": FAILED}, {"verdict": CANNOT_TELL}]) == FAILED
    assert verdict_of([{"verdict": OK}]) == OK


def test_another_shape_than_tensorflows_fails():
    """A converted model that follows the input size where TF does not (a loop of fixed trip count) gives
    another shape at another size: a failed check naming both shapes, never an internal error."""
    judged = judge(np.zeros((2, 14, 4), np.float32), np.ones((2, 13, 4), np.float32))
    assert judged["verdict"] == FAILED and not judged["passed"] and math.isinf(judged["max_rel"])
    assert "(2, 14, 4) differs from TensorFlow's (2, 13, 4)" in judged["why"]


def test_a_one_element_score_is_judged_across_inputs():
    """A score has one value per input: constant on each, yet it moves between inputs; judged across them
    it passes when right and fails when off by a fraction of its own spread."""
    scores = [np.array([[s]], np.float32) for s in (0.31, 0.62, 0.47)]
    assert judge(scores[0].copy(), scores[0])["verdict"] == CANNOT_TELL  # one input alone cannot tell
    right = judge_across([s.copy() for s in scores], scores)
    assert right["verdict"] == OK and right["inputs"] == 3
    wrong = judge_across([s + np.float32(1e-3) for s in scores], scores)
    assert wrong["verdict"] == FAILED


def test_a_constant_across_every_input_still_cannot_tell():
    same = [np.full((1, 1), 0.25, np.float32) for _ in range(4)]
    judged = judge_across([s.copy() for s in same], same)
    assert judged["verdict"] == CANNOT_TELL and judged["constant"]
    assert "constant 0.25 on all 4 of the check's inputs" in judged["why"]
    assert judge_across([np.zeros((2,), np.float32)], [np.ones((3,), np.float32)])["verdict"] == FAILED
