"""Detection heads end to end: TF graphs built as detection code builds them (an SSD-style head: a conv,
box decoding against anchors, non-max suppression, the selected boxes gathered) through the parser and
every target's real runtime against TF. Every NMS version, padded to max_output_size and not; boxes and
scores fed directly for the hard cases: overlapping boxes, equal scores (TF takes the lower index first; so
does every target), every score below the threshold (an empty selection), flipped corners and empty boxes.

Selected indices and counts must be equal to TF's; boxes and scores within 1e-6 (the decoding's exp and
conv differ from TF's by an ulp; what NMS itself returns is TF's value). MXNet takes the padded forms and
refuses a data-dependent length by name; Caffe refuses NMS by name."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tests.support import op_breadth
from tests.support.size_following import run_cli
from tf_convert import emitters, parsers
from tf_convert.app import verify
from tf_convert.convert import passes
from tf_convert.emitters.base import EmitOptions
from tf_convert.parsers.base import ParseOptions

tf = pytest.importorskip("tensorflow")
TOLERANCE = 1e-6
SIDE = 6  # the feature map: SIDE * SIDE anchors
N_ANCHORS = SIDE * SIDE


def _anchors() -> np.ndarray:
    grid = np.stack(np.meshgrid(np.arange(SIDE), np.arange(SIDE), indexing="ij"), -1).reshape(-1, 2)
    return np.concatenate([(grid + 0.5) / SIDE, np.full((N_ANCHORS, 2), 0.35)], 1).astype(np.float32)


def _decode(x):
    """An SSD head on a SIDE x SIDE feature map, one anchor per cell: deltas (dy, dx, dh, dw) and a score."""
    w = np.random.default_rng(0).uniform(-0.5, 0.5, (3, 3, 3, 5)).astype(np.float32)
    y = tf.reshape(tf.nn.conv2d(x, w, 1, "SAME"), [-1, 5])
    a, d = _anchors(), y[:, :4] * 0.1
    yc, xc = d[:, 0] * a[:, 2] + a[:, 0], d[:, 1] * a[:, 3] + a[:, 1]
    h, wd = tf.exp(d[:, 2]) * a[:, 2], tf.exp(d[:, 3]) * a[:, 3]
    return tf.stack([yc - h / 2, xc - wd / 2, yc + h / 2, xc + wd / 2], 1), tf.sigmoid(y[:, 4])


def _nms(version: str, boxes, scores, pad: bool, limit: int = 20, iou: float = 0.4, score: float = 0.5) -> dict:
    """name -> tensor: the version's outputs and the selected boxes and scores gathered."""
    raw = tf.raw_ops
    if version == "V2":
        out = {"indices": raw.NonMaxSuppressionV2(boxes=boxes, scores=scores, max_output_size=limit,
                                                  iou_threshold=iou)}
    elif version == "V3":
        out = {"indices": raw.NonMaxSuppressionV3(boxes=boxes, scores=scores, max_output_size=limit,
                                                  iou_threshold=iou, score_threshold=score)}
    elif version == "V4":
        indices, valid = raw.NonMaxSuppressionV4(boxes=boxes, scores=scores, max_output_size=limit,
                                                 iou_threshold=iou, score_threshold=score, pad_to_max_output_size=pad)
        out = {"indices": indices, "valid": valid}
    else:
        indices, picked, valid = raw.NonMaxSuppressionV5(boxes=boxes, scores=scores, max_output_size=limit,
                                                         iou_threshold=iou, score_threshold=score, soft_nms_sigma=0.0,
                                                         pad_to_max_output_size=pad)
        out = {"indices": indices, "scores": picked, "valid": valid}
    out["boxes"] = tf.gather(boxes, out["indices"])
    out["gathered"] = tf.gather(scores, out["indices"])
    return out


CASES = [("V2", False), ("V3", False), ("V4", False), ("V4", True), ("V5", False), ("V5", True)]


def _frozen(path, build, inputs: dict) -> tuple[str, list[str]]:
    """A frozen graph of `build(placeholders)` (name -> tensor); returns its path and its output tensors."""
    graph = tf.Graph()
    with graph.as_default():
        ph = {n: tf.compat.v1.placeholder(tf.float32, s, name=n) for n, s in inputs.items()}
        names = [tf.identity(t, name=name).name for name, t in build(ph).items()]
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return str(path), names


def _ssd(ph) -> dict:
    boxes, scores = _decode(ph["image"])
    return {f"{v}_{'pad' if p else 'cut'}_{k}": t for v, p in CASES for k, t in _nms(v, boxes, scores, p).items()}


def _direct(ph) -> dict:
    return {f"{v}_{'pad' if p else 'cut'}_{k}": t for v, p in (("V3", False), ("V4", True), ("V5", True))
            for k, t in _nms(v, ph["boxes"], ph["scores"], p, limit=8, iou=0.5, score=0.3).items()}


def _compare(got, want) -> float:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape == (1,) and want.shape == ():  # MXNet 1.x returns a 0-d result as (1,)
        got = got.reshape(())
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "iu":
        return float(np.any(got != want))
    return verify.metrics(got, want)["max_rel"]


def _every_target(pb: str, names: list[str], input_sets: list[list[np.ndarray]], tmp_path) -> dict:
    """target -> {output: worst error over the sets}, or {output: refusal hint} where the target refuses it."""
    graph = passes.run_default_passes(parsers.parse(pb, ParseOptions(outputs=names)))
    expected = [parsers.run_reference(pb, graph, inputs) for inputs in input_sets]
    found = {}
    for target in emitters.TARGETS:
        taken, refused = op_breadth.target_split(graph, target)
        found[target] = dict(refused)
        if not taken:
            continue
        sub = op_breadth.trimmed(graph, taken)
        emitter, out = emitters.get(target), tmp_path / target
        out.mkdir()
        emitter.emit(sub, out, EmitOptions())
        feeds = [[inputs[graph.inputs.index(n)] for n in sub.inputs] for inputs in input_sets]
        if target == "mxnet":  # one MXNet process for every set
            from tf_convert.emitters.mxnet.runtime import run_many

            results = run_many([(out, fed) for fed in feeds])
        else:
            results = [emitter.run(out, fed) for fed in feeds]
        for actual, want in zip(results, expected):
            for name, got in zip(sub.outputs, actual):
                case = op_breadth.case_of(sub, name)
                error = _compare(got, want[graph.outputs.index(name)])
                found[target][case] = max(error, found[target].get(case, 0.0))
    return found


def _check(found: dict, outputs: list[str]) -> None:
    print(json.dumps(found, indent=1))
    cases = {name.split(":")[0] for name in outputs}
    assert all(set(found[target]) == cases for target in emitters.TARGETS), found
    for target in ("torch", "onnx"):
        assert all(isinstance(e, float) and e <= TOLERANCE for e in found[target].values()), found[target]
    for case, e in found["mxnet"].items():  # padded: exact; a data-dependent length: refused by name
        if "_pad_" in case or case.endswith("_valid"):
            assert isinstance(e, float) and e <= TOLERANCE, (case, e)
        else:
            assert isinstance(e, str) and "data" in e and "pad" in e, (case, e)
    assert found["caffe"] and all(isinstance(e, str) for e in found["caffe"].values()), found["caffe"]


def test_ssd_head_every_nms_version_every_target(tmp_path):
    pb, names = _frozen(tmp_path / "ssd.pb", _ssd, {"image": [1, SIDE, SIDE, 3]})
    # fed in the IR's layout (NCHW)
    image = np.random.default_rng(0).standard_normal((1, 3, SIDE, SIDE)).astype(np.float32)
    _check(_every_target(pb, names, [[image]], tmp_path), names)


def _hard_inputs() -> list[list[np.ndarray]]:
    rng = np.random.default_rng(3)
    base = rng.uniform(0, 0.5, (12, 2)).astype(np.float32)
    clusters = np.concatenate([base, base + 0.3], 1)
    clusters[6:] = clusters[:6] + rng.uniform(-0.02, 0.02, (6, 4)).astype(np.float32)  # near-copies overlap
    distinct = rng.permutation(12).astype(np.float32) / 12 + 0.3
    flipped = clusters.copy()
    flipped[::2] = flipped[::2][:, [2, 3, 0, 1]]  # the other two corners: TF sorts them
    flipped[3] = [0.1, 0.1, 0.1, 0.4]  # empty: IoU 0 with everything
    return [
        [clusters, distinct],  # overlapping boxes, distinct scores
        [clusters, np.full(12, 0.5, np.float32)],  # every score equal: TF's order is by index
        [clusters, np.round(distinct * 4) / 4],  # some equal, some on the threshold
        [clusters, distinct - 0.7],  # every score below the threshold: nothing selected
        [flipped, distinct],
    ]


def test_overlaps_ties_and_empty_selections_every_target(tmp_path):
    pb, names = _frozen(tmp_path / "nms.pb", _direct, {"boxes": [12, 4], "scores": [12]})
    _check(_every_target(pb, names, _hard_inputs(), tmp_path), names)


@pytest.mark.slow  # two CLI runs, one with TF's reference child (make test-detect-audio)
@pytest.mark.skipif(not os.environ.get("CONVERT_HEADS_FULL"), reason="CONVERT_HEADS_FULL=1 (make test-detect-audio)")
def test_cli_declares_and_verifies_a_data_dependent_length(tmp_path):
    def build(ph):
        boxes, scores = _decode(ph["image"])
        return {"selected": _nms("V3", boxes, scores, False)["boxes"]}

    pb, _ = _frozen(tmp_path / "head.pb", build, {"image": [1, SIDE, SIDE, 3]})
    out = tmp_path / "out"
    run = run_cli("tf2onnx", pb, "-o", str(out), "--verify", "--outputs", "selected")
    assert run.returncode == 0, run.stderr + run.stdout
    doc = json.loads((out / "conversion.json").read_text())
    (output,) = doc["outputs"]
    assert output["length"] == {"axis": 0, "depends_on_data": True, "at_most": 20}
    assert doc["verify"]["passed"]
    import onnx

    dim = onnx.load(str(out / "model.onnx")).graph.output[0].type.tensor_type.shape.dim[0]
    assert dim.dim_param and not dim.dim_value
    mx = run_cli("tf2mxnet", pb, "-o", str(tmp_path / "mx"), "--outputs", "selected")
    assert mx.returncode == 3 and "pad_to_max_output_size" in mx.stderr, mx.stderr


# ---- soft-NMS (NonMaxSuppressionV5, soft_nms_sigma > 0): PyTorch exact, every other target refuses by name --
# (sigma, padded, iou_threshold): iou_threshold plays no part in TF's soft-NMS, 0.5 checks that it stays so
SOFT = [(sigma, pad, iou) for sigma in (0.5, 0.1) for pad in (False, True) for iou in (1.0, 0.5)]


def _soft(ph) -> dict:
    out = {}
    for sigma, pad, iou in SOFT:
        indices, scores, valid = tf.raw_ops.NonMaxSuppressionV5(
            boxes=ph["boxes"], scores=ph["scores"], max_output_size=8, iou_threshold=iou, score_threshold=0.2,
            soft_nms_sigma=sigma, pad_to_max_output_size=pad)
        tag = f"soft{sigma}_{'pad' if pad else 'cut'}_iou{iou}".replace(".", "")
        out.update({f"{tag}_indices": indices, f"{tag}_scores": scores, f"{tag}_valid": valid})
    return out


def _soft_inputs() -> list[list[np.ndarray]]:
    rng = np.random.default_rng(7)
    sets = []
    for k in range(6):
        base = rng.uniform(0, 0.5, (12, 2)).astype(np.float32)
        boxes = np.concatenate([base, base + rng.uniform(0.1, 0.4, (12, 2)).astype(np.float32)], 1)
        boxes[6:] = boxes[:6] + rng.uniform(-0.05, 0.05, (6, 4)).astype(np.float32)  # near-copies overlap
        scores = rng.uniform(0, 1, 12).astype(np.float32)
        if k % 2:  # some equal scores: TF takes the lower index first
            scores = (np.round(scores * 4) / 4).astype(np.float32)
        sets.append([boxes, scores])
    return sets


def test_soft_nms_exact_on_torch_refused_elsewhere(tmp_path):
    pb, names = _frozen(tmp_path / "soft.pb", _soft, {"boxes": [12, 4], "scores": [12]})
    found = _every_target(pb, names, _soft_inputs(), tmp_path)
    print(json.dumps(found, indent=1))
    cases = {name.split(":")[0] for name in names}
    assert set(found["torch"]) == cases and all(e == 0.0 for e in found["torch"].values()), found["torch"]
    for target in set(emitters.TARGETS) - {"torch"}:
        assert set(found[target]) == cases, (target, found[target])
        for e in found[target].values():  # Caffe refuses an int32 output first (no integer blobs)
            assert isinstance(e, str) and ("soft-NMS" in e or target == "caffe" and "int32" in e), (target, e)


# case -> (build(boxes, scores), words of the parser's refusal): what has no exact form is refused by name
REFUSALS = {
    "negative_soft_nms_sigma": (lambda b, s: tf.raw_ops.NonMaxSuppressionV5(
        boxes=b, scores=s, max_output_size=5, iou_threshold=0.5, score_threshold=0.0, soft_nms_sigma=-0.5)[0],
        "soft_nms_sigma -0.5 < 0"),
    "sum_of_a_selection": (lambda b, s: tf.reduce_sum(tf.gather(s, tf.image.non_max_suppression(b, s, 5))),
                           "depends on the data"),
    "runtime_threshold": (lambda b, s: tf.image.non_max_suppression(b, s, 5, iou_threshold=tf.reduce_max(s)),
                          "must be a constant"),
    "crop_of_a_uint8_image": (lambda b, s: tf.image.crop_and_resize(
        tf.cast(b[None, :, :, None] * 100, tf.uint8), b, tf.zeros([6], tf.int32), [2, 2]), "float32 only"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refused_by_name(case, tmp_path):
    from tf_convert.convert.errors import UnsupportedError

    build, words = REFUSALS[case]
    pb, names = _frozen(tmp_path / "m.pb", lambda ph: {"out": build(ph["boxes"], ph["scores"])},
                        {"boxes": [6, 4], "scores": [6]})
    with pytest.raises(UnsupportedError) as err:
        parsers.parse(pb, ParseOptions(outputs=names))
    assert err.value.exit_code == 3 and words in str(err.value), str(err.value)


# ---- CropAndResize: ROI pooling of a detection head --------------------------------------------------
N_ROIS = 7
# name -> (crop_size, method, extrapolation_value)
CROPS = {"bilinear": ((5, 4), "bilinear", 0.0), "nearest": ((3, 6), "nearest", -1.5),
         "bilinear_1x1": ((1, 1), "bilinear", 0.25), "nearest_1x3": ((1, 3), "nearest", 0.0)}


def _roi_pool(tmp_path) -> tuple[str, list[str]]:
    """Two images through a conv; every ROI cropped from its feature map by each of CROPS, then a max-pool
    over the crop as a second-stage head would; and the same crops of the image itself (raw_: no conv
    before them, so every target must return TF's values bit for bit)."""
    graph = tf.Graph()
    with graph.as_default():
        image = tf.compat.v1.placeholder(tf.float32, [2, 9, 11, 3], name="image")
        boxes = tf.compat.v1.placeholder(tf.float32, [N_ROIS, 4], name="boxes")
        index = tf.compat.v1.placeholder(tf.int32, [N_ROIS], name="box_index")
        w = np.random.default_rng(1).uniform(-0.5, 0.5, (3, 3, 3, 4)).astype(np.float32)
        features = tf.nn.conv2d(image, w, 1, "SAME")
        names = []
        for case, (size, method, fill) in CROPS.items():
            crop = tf.image.crop_and_resize(features, boxes, index, size, method=method, extrapolation_value=fill)
            names.append(tf.identity(crop, name=case).name)
            names.append(tf.identity(tf.reduce_max(crop, [1, 2]), name=f"{case}_pooled").name)
            raw = tf.image.crop_and_resize(image, boxes, index, size, method=method, extrapolation_value=fill)
            names.append(tf.identity(raw, name=f"raw_{case}").name)
    path = tmp_path / "roi.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    return str(path), names


def _roi_inputs(graph) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(5)
    inside = rng.uniform(0, 1, (N_ROIS, 4)).astype(np.float32)  # corners in either order (flipped crops)
    outside = rng.uniform(-0.4, 1.4, (N_ROIS, 4)).astype(np.float32)  # partly off the image: extrapolated
    outside[0] = [-0.5, -0.5, -0.1, -0.2]  # wholly off it
    exact = np.float32([[0, 0, 1, 1], [0.25, 0.5, 0.75, 1], [1, 1, 0, 0], [0.5, 0.5, 0.5, 0.5],
                        [0, 0.1, 0.125, 0.2], [0.375, 0, 1, 0.5], [0.2, 0.3, 0.2, 0.3]])  # on pixel centres, degenerate
    index = np.int32([0, 1, 1, 0, 1, 0, 1])
    sets = []
    for b in (inside, outside, exact):
        feed = {"boxes": b, "box_index": index}
        sets.append([feed.get(n, rng.standard_normal(graph.shape(n)).astype(np.float32)) for n in graph.inputs])
    return sets


def test_crop_and_resize_roi_pooling_every_target(tmp_path):
    pb, names = _roi_pool(tmp_path)
    graph = passes.run_default_passes(parsers.parse(pb, ParseOptions(outputs=names)))
    found = _every_target(pb, names, _roi_inputs(graph), tmp_path)
    print(json.dumps(found, indent=1))
    cases = {name.split(":")[0] for name in names}
    for target in ("torch", "onnx", "mxnet"):  # the crop itself exact; the conv before it within an ulp or two
        assert set(found[target]) == cases, found[target]
        assert all(e == 0.0 for c, e in found[target].items() if c.startswith("raw_")), found[target]
        assert all(e <= TOLERANCE for e in found[target].values()), found[target]
    assert set(found["caffe"]) == cases and all(isinstance(e, str) for e in found["caffe"].values()), found["caffe"]


@pytest.mark.slow  # a CLI run with TF's reference child and MXNet's (make test-detect-audio)
@pytest.mark.skipif(not os.environ.get("CONVERT_HEADS_FULL"), reason="CONVERT_HEADS_FULL=1 (make test-detect-audio)")
def test_cli_verify_takes_mxnets_0d_count_as_0d(tmp_path):
    """MXNet 1.x returns the 0-d count as shape (1,): --verify compares its one value with TF's, not the
    shapes. (A single value is constant by nature: the metric's verdict on it is 'cannot tell'.)"""
    def build(ph):
        indices, valid = tf.raw_ops.NonMaxSuppressionV4(
            boxes=ph["boxes"], scores=ph["scores"], max_output_size=6, iou_threshold=0.5, score_threshold=0.2,
            pad_to_max_output_size=True)
        return {"selected": indices, "valid": valid}

    pb, _ = _frozen(tmp_path / "count.pb", build, {"boxes": [12, 4], "scores": [12]})
    run = run_cli("tf2mxnet", pb, "-o", str(tmp_path / "mx"), "--verify", "--outputs", "selected,valid")
    assert "differs from TensorFlow" not in run.stderr, run.stderr
    assert run.returncode == 0 or "cannot tell" in run.stderr and "valid" in run.stderr, run.stderr


# ---- CombinedNonMaxSuppression: per-class NMS, then the best across classes --------------------------
N_CLASSES = 4


def _combined(boxes, scores, pad: bool, clip: bool, per_class: int, total: int, score: float) -> dict:
    out = tf.image.combined_non_max_suppression(boxes, scores, per_class, total, iou_threshold=0.45,
                                                score_threshold=score, pad_per_class=pad, clip_boxes=clip)
    return dict(zip(("boxes", "scores", "classes", "valid"), out))


# name -> (pad_per_class, clip_boxes, max_output_size_per_class, max_total_size, score_threshold)
COMBINED = {"pad_clip": (True, True, 3, 20, 0.3), "nopad_clip": (False, True, 4, 9, 0.3),
            "pad_noclip": (True, False, 5, 6, float("-inf")), "nopad_long": (False, False, 2, 30, 0.5)}


def _ssd_classes(ph) -> dict:
    """An SSD head with N_CLASSES sigmoid scores per anchor; boxes shared by the classes (q = 1) and one box
    per class (q = N_CLASSES, as Faster R-CNN's second stage)."""
    w = np.random.default_rng(2).uniform(-0.5, 0.5, (3, 3, 3, 4 + 5 * N_CLASSES)).astype(np.float32)
    y = tf.reshape(tf.nn.conv2d(ph["image"], w, 1, "SAME"), [1, N_ANCHORS, -1])
    a = _anchors()[None]
    d = y[..., :4] * 0.1
    yc, xc = d[..., 0] * a[..., 2] + a[..., 0], d[..., 1] * a[..., 3] + a[..., 1]
    h, wd = tf.exp(d[..., 2]) * a[..., 2], tf.exp(d[..., 3]) * a[..., 3]
    shared = tf.stack([yc - h, xc - wd, yc + h, xc + wd], -1)[:, :, None]  # wide: they overlap
    scores = tf.sigmoid(y[..., 4:4 + N_CLASSES] * 2)
    own = shared + tf.reshape(y[..., 4 + N_CLASSES:] * 0.05, [1, N_ANCHORS, N_CLASSES, 4])
    out = {}
    # every configuration with CONVERT_HEADS_FULL=1 (MXNet's lowering is some hundred nodes per box and output)
    chosen = COMBINED if os.environ.get("CONVERT_HEADS_FULL") else {"pad_clip": COMBINED["pad_clip"]}
    for case, (pad, clip, per_class, total, score) in chosen.items():
        for name, boxes in (("shared", shared), ("own", own)):
            out.update({f"{case}_{name}_{k}": t for k, t in _combined(boxes, scores, pad, clip, per_class, total,
                                                                         score).items()})
    return out


def _check_combined(found: dict, outputs: list[str]) -> None:
    print(json.dumps(found, indent=1))
    cases = {name.split(":")[0] for name in outputs}
    assert all(set(found[target]) == cases for target in emitters.TARGETS), found
    for target in ("torch", "onnx", "mxnet"):
        assert all(isinstance(e, float) and e <= TOLERANCE for e in found[target].values()), found[target]
    assert all(isinstance(e, str) for e in found["caffe"].values()), found["caffe"]  # NMS or an op before it


def test_combined_nms_ssd_head_every_target(tmp_path):
    pb, names = _frozen(tmp_path / "combined.pb", _ssd_classes, {"image": [1, SIDE, SIDE, 3]})
    rng = np.random.default_rng(4)
    images = [rng.standard_normal((1, 3, SIDE, SIDE)).astype(np.float32) for _ in range(2)]
    _check_combined(_every_target(pb, names, [[x] for x in images], tmp_path), names)


def _combined_direct(ph) -> dict:
    out = {}
    for case, (pad, clip, per_class, total, score) in COMBINED.items():
        out.update({f"{case}_{k}": t for k, t in _combined(ph["boxes"], ph["scores"], pad, clip, per_class, total,
                                                            score).items()})
    return out


def _combined_inputs() -> list[list[np.ndarray]]:
    """Two images of 12 overlapping boxes, scores distinct across every class and image (TF sorts with
    std::sort, whose order of equal scores is not defined); one set with every score below the thresholds."""
    (clusters, distinct), *_ = _hard_inputs()
    boxes = np.stack([clusters, clusters[::-1] * 1.2 - 0.1])[:, :, None]  # (2, 12, 1, 4), some off [0, 1]
    scores = (np.random.default_rng(6).permutation(2 * 12 * 3).reshape(2, 12, 3) / 72 + 0.2).astype(np.float32)
    low = np.full_like(scores, 0.25) - scores / 100  # below 0.3 and 0.5 (not below -inf)
    boxes = boxes.transpose(0, 3, 1, 2)  # fed in the IR's layout (a 4-D input is NCHW there)
    return [[boxes, scores], [boxes, low]]


def test_combined_nms_overlaps_and_empty_selections_every_target(tmp_path):
    pb, names = _frozen(tmp_path / "combined_direct.pb", _combined_direct,
                        {"boxes": [2, 12, 1, 4], "scores": [2, 12, 3]})
    _check_combined(_every_target(pb, names, _combined_inputs(), tmp_path), names)


# ---- sizes computed from the data: top-k of a runtime k, Where, boolean_mask, gather_nd ------------------
def _data_sized(ph) -> dict:
    """Top-k with k = how many scores pass a threshold (as a head keeps its confident boxes), the boxes
    gathered by the result."""
    boxes, scores = ph["boxes"], ph["scores"]
    k = tf.reduce_sum(tf.cast(scores > 0.5, tf.int32))
    top = tf.math.top_k(scores, k)
    confident = scores > 0.5
    grid = tf.reshape(boxes, [6, 8])
    return {"topk_values": top.values, "topk_indices": top.indices, "topk_boxes": tf.gather(boxes, top.indices),
            "where": tf.where(confident), "where_2d": tf.where(grid > 0.4),
            "boolean_mask": tf.boolean_mask(boxes, confident), "boolean_mask_2d": tf.boolean_mask(grid, grid > 0.4),
            "gather_nd": tf.gather_nd(grid, tf.where(grid > 0.4)),
            "gather_nd_rows": tf.gather_nd(boxes, tf.where(confident)),
            "where_nhwc": tf.where(ph["image"] > 0.3)}


def _check_data_sized(found: dict, outputs: list[str]) -> None:
    print(json.dumps(found, indent=1))
    cases = {name.split(":")[0] for name in outputs}
    assert all(set(found[target]) == cases for target in emitters.TARGETS), found
    for target in ("torch", "onnx"):
        assert all(isinstance(e, float) and e <= TOLERANCE for e in found[target].values()), found[target]
    assert all(isinstance(e, str) and "depends on the data" in e for e in found["mxnet"].values()), found["mxnet"]
    assert all(isinstance(e, str) for e in found["caffe"].values()), found["caffe"]


def test_sizes_computed_from_the_data_every_target(tmp_path):
    pb, names = _frozen(tmp_path / "sized.pb", _data_sized, {"boxes": [12, 4], "scores": [12], "image": [1, 3, 4, 2]})
    (clusters, distinct), *_ = _hard_inputs()
    image = np.random.default_rng(7).uniform(0, 0.6, (1, 2, 3, 4)).astype(np.float32)  # fed NCHW
    sets = [[clusters, distinct, image], [clusters - 1, distinct - 0.7, image - 1],  # some; none
            [clusters, np.round(distinct * 4) / 4, image], [clusters + 1, distinct + 0.5, image + 1]]  # ties; all
    _check_data_sized(_every_target(pb, names, sets, tmp_path), names)


def test_combined_nms_equal_scores_across_classes_every_target(tmp_path):
    """Equal scores in different classes: TF's sort of the selections (std::sort) leaves their order undefined;
    torch, ONNX and MXNet take the lower class first. Every class has the same distinct scores, so each class's
    selection is defined: the counts are TF's, and where every selection is kept, so are the rows, as a set."""
    pb, names = _frozen(tmp_path / "ties.pb", _combined_direct, {"boxes": [2, 12, 1, 4], "scores": [2, 12, 3]})
    (boxes, scores), _ = _combined_inputs()
    tied = [boxes, np.repeat(scores[:, :, :1], 3, axis=2)]
    graph = passes.run_default_passes(parsers.parse(pb, ParseOptions(outputs=names)))
    expected = dict(zip(graph.outputs, parsers.run_reference(pb, graph, tied)))

    def rows(found: dict, case: str) -> list:
        picked = [np.asarray(found[graph.outputs[names.index(f"{case}_{k}:0")]])
                  for k in ("boxes", "scores", "classes")]
        table = np.concatenate([picked[0], picked[1][..., None], picked[2][..., None]], -1)
        return [sorted(map(tuple, image)) for image in table]

    for target in ("torch", "onnx", "mxnet"):
        out = tmp_path / target
        out.mkdir()
        emitters.get(target).emit(graph, out, EmitOptions())
        got = dict(zip(graph.outputs, emitters.get(target).run(out, tied)))
        for case, (*_, total, _) in COMBINED.items():
            valid = graph.outputs[names.index(f"{case}_valid:0")]
            assert np.array_equal(got[valid], expected[valid]), (target, case)
            if np.all(expected[valid] < total):  # every selection kept: the same rows
                assert rows(got, case) == rows(expected, case), (target, case)
