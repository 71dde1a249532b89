"""The one judgement of a converted tensor against TensorFlow's: used by --verify, `convert verify`,
`--layers`, batch, the zoo and the bench.

Every tensor is judged against its own scale, never against a constant: an output of size 1e-5 gets
the same scrutiny as one of size 1e3.

  max_rel    max|a-b| / max|ref|                          (the relative error at the tensor's own scale)
  floor      ROUNDING * eps32 * max|ref| * sqrt(depth)    (what float32 rounding alone can reach there)
  tolerance  max(rtol * max|ref|, floor)                  (--rtol, but never below float32's own noise;
                                                          --rtol 0 asks for bit-identical outputs)
  snr_db     10 log10(mean ref^2 / mean (a-b)^2)          must also reach snr_floor_db(rtol)

verdict: "ok" (within tolerance and above the SNR floor), "failed", or "cannot tell" -- the reference
is all zeros or one constant value, so the comparison cannot distinguish a right model from a wrong
one; that is reported, never counted as OK.

An output that is one constant on one input (a score: one element) may still move with the input:
`judge_across` judges it over all of the check's inputs at once, its values on every input as one tensor
(the scale and spread are those across inputs), and "cannot tell" then means constant on all of them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)  # 1.19e-7
# float32 error of a correct conversion, in units of eps32 * max|ref| * sqrt(depth) (bench/float32_noise.py):
# TF's own float32 output is up to 47 units from exact float64 arithmetic on EfficientNetV2-B0 (SE gates,
# randomised BN; the worst zoo model), 6.5 on ResNet50, 0.6 on MobileNetV2. Two correct float32 results can be
# twice that apart: 98 units between torch and TF there (the zoo's worst of 480 conversions). 160 leaves 1.6x
# room; at the default rtol the floor decides past depth ~28 ops.
ROUNDING = 160.0
# the noise power a pass may have, relative to the signal: 40 dB = RMS error 1 % of the RMS signal at the
# default rtol, never looser than 20 dB (a 10 % error) whatever --rtol says.
SNR_FLOOR_DB = 40.0
SNR_FLOOR_MIN_DB = 20.0

OK, FAILED, CANNOT_TELL = "ok", "failed", "cannot tell"


def snr_floor_db(rtol: float) -> float:
    """The SNR a pass needs at this rtol: 40 dB at 1e-4 and below; a looser rtol lowers it to -20 log10(rtol),
    never below 20 dB (an error comparable to the signal never passes)."""
    loose = -20.0 * math.log10(rtol) if rtol > 0 else SNR_FLOOR_DB
    return max(SNR_FLOOR_MIN_DB, min(SNR_FLOOR_DB, loose))


def rounding_floor(scale: float, depth: int = 1) -> float:
    """The largest error float32 rounding alone gives a tensor of peak `scale`, `depth` ops from the input."""
    return ROUNDING * EPS32 * scale * math.sqrt(max(1, depth))


def judge(actual: np.ndarray, expected: np.ndarray, rtol: float = 1e-4, depth: int = 1,
          same_dtype: bool = False) -> dict[str, Any]:
    """The metrics and the verdict for one tensor (see the module doc). `passed` is verdict == "ok".
    Another shape than TF's fails (at another input size a model may follow the size where TF does not);
    with `same_dtype` (a model's output against TF's), so does another dtype.
    Non-finite values must sit where TF has the same ones."""
    if actual.shape != expected.shape:
        why = f"shape {tuple(actual.shape)} differs from TensorFlow's {tuple(expected.shape)}"
        return _mismatch(expected, rtol, why)
    if same_dtype and actual.dtype != expected.dtype:
        return _mismatch(expected, rtol, f"dtype {actual.dtype} differs from TensorFlow's {expected.dtype}")
    a = np.asarray(actual, np.float64)
    b = np.asarray(expected, np.float64)
    same_special = (a == b) | (np.isnan(a) & np.isnan(b))  # inf == inf; nan where TF has nan
    finite = np.isfinite(b)
    with np.errstate(invalid="ignore"):  # inf - inf: decided by same_special
        diff = np.where(same_special, 0.0, np.abs(a - b))
    diff[~np.isfinite(diff)] = math.inf
    max_abs = float(np.max(diff, initial=0.0))
    ref = b[finite]
    scale = float(np.max(np.abs(ref), initial=0.0))
    spread = float(np.max(ref) - np.min(ref)) if ref.size else 0.0
    fin_diff = diff[finite & np.isfinite(diff)]
    noise = float(np.mean(fin_diff**2)) if fin_diff.size else 0.0
    signal = float(np.mean(ref**2)) if ref.size else 0.0
    if math.isinf(max_abs):
        noise = math.inf
    floor = rounding_floor(scale, depth)
    if expected.dtype == np.float16:  # a float16 model rounds each op to float16: a unit or two of its last place
        floor = max(floor, 2 * float(np.finfo(np.float16).eps) * scale * math.sqrt(max(1, depth)))
    tolerance = max(rtol * scale, floor) if rtol > 0 else 0.0  # 0: exactly TF's values, nothing forgiven
    snr = None if noise == 0 else (-math.inf if math.isinf(noise) or signal == 0 else 10 * math.log10(signal / noise))
    psnr = None if noise == 0 else (-math.inf if math.isinf(noise) or scale == 0 else 10 * math.log10(scale**2 / noise))
    need_snr = snr_floor_db(rtol)
    if max_abs > tolerance or (snr is not None and snr < need_snr):
        verdict, why = FAILED, _why_failed(max_abs, tolerance, snr, need_snr)
    elif b.size == 0:  # an empty tensor holds no values: its shape (checked above) is all there is to match
        verdict, why = OK, ""
    elif scale == 0:
        verdict, why = CANNOT_TELL, "TensorFlow's value is all zeros on the check's input"
    elif spread <= floor:
        verdict, why = CANNOT_TELL, f"TensorFlow's value is the constant {float(ref.flat[0]):.6g} on the check's input"
    else:
        verdict, why = OK, ""
    return {
        "max_abs": max_abs,
        "max_rel": max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf),
        "snr_db": None if snr is None else (snr if math.isinf(snr) else round(snr, 2)),
        "psnr_db": None if psnr is None else (psnr if math.isinf(psnr) else round(psnr, 2)),
        "scale": scale,
        "floor": floor,
        "tolerance": tolerance,
        "snr_floor_db": need_snr,
        "verdict": verdict,
        "why": why,
        "passed": verdict == OK,
    }


def judge_across(actuals: list[np.ndarray], expecteds: list[np.ndarray], rtol: float = 1e-4,
                 depth: int = 1, same_dtype: bool = False) -> dict[str, Any]:
    """One tensor judged over several inputs: `actuals[k]` and `expecteds[k]` its values on the k-th input,
    judged as one tensor (judge), so an output that is constant on each input but moves between them (a
    one-element score) is judged at the scale of its values across them. `inputs`: how many."""
    for actual, expected in zip(actuals, expecteds):
        if actual.shape != expected.shape or (same_dtype and actual.dtype != expected.dtype):
            return {**judge(actual, expected, rtol, depth, same_dtype), "inputs": len(expecteds)}
    result = judge(np.concatenate([np.ravel(a) for a in actuals]),
                   np.concatenate([np.ravel(e) for e in expecteds]), rtol, depth)
    if result["verdict"] == CANNOT_TELL:
        result["why"] = result["why"].replace("on the check's input", f"on all {len(expecteds)} of the check's inputs")
        result["constant"] = True  # TF's value does not move with the input: no comparison can tell
    return {**result, "inputs": len(expecteds)}


def _mismatch(expected: np.ndarray, rtol: float, why: str) -> dict[str, Any]:
    """The failed row of a tensor that is not TF's at all (another shape or dtype): no value is compared."""
    scale = float(np.max(np.abs(np.asarray(expected, np.float64)), initial=0.0))
    return {"max_abs": math.inf, "max_rel": math.inf, "snr_db": -math.inf, "psnr_db": -math.inf, "scale": scale,
            "floor": 0.0, "tolerance": 0.0, "snr_floor_db": snr_floor_db(rtol), "verdict": FAILED, "passed": False,
            "why": why}


def _why_failed(max_abs: float, tolerance: float, snr: float | None, need_snr: float) -> str:
    if max_abs > tolerance:
        return f"max|a-b| {max_abs:.3g} > tolerance {tolerance:.3g}"
    return f"SNR {snr:.1f} dB < {need_snr:.0f} dB"


def worst(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The row that decides: a failure before a cannot-tell before an OK, then the largest max_rel."""
    rank = {FAILED: 2, CANNOT_TELL: 1, OK: 0}
    return max(rows, key=lambda r: (rank[r["verdict"]], r["max_rel"]))


def verdict_of(rows: list[dict[str, Any]]) -> str:
    """One verdict for several judged tensors: failed if any failed, cannot tell if any could not tell."""
    verdicts = {r["verdict"] for r in rows}
    return FAILED if FAILED in verdicts else CANNOT_TELL if CANNOT_TELL in verdicts else OK
