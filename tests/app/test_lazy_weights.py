"""Weights stream from the checkpoint to the output: convert/ir/lazy.py, lazy bundle tensors
through the parser and passes, and the writers that read one weight at a time.

The lazy path must change nothing: a conversion with lazy weights writes the same bytes as one whose
weights were read up front; the streamed files load in their runtimes; a corrupt weight found only
when it is written is still a one-line exit 2 with nothing left behind."""

from __future__ import annotations

import io
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tests.support import tf_models
from tf_convert import app as convert
from tf_convert.app import pipeline
from tf_convert.convert.errors import UnsupportedError
from tf_convert.convert.ir import lazy
from tf_convert.convert.ir.lazy import LazyArray
from tf_convert.emitters.options import CaffeOptions, OnnxOptions
from tf_convert.parsers.tensorflow.bundle import Bundle

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(0)
BASE = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)

READS: list[int] = []


def _counted(value: np.ndarray) -> np.ndarray:
    READS.append(1)
    return value


def _lazy(value: np.ndarray) -> LazyArray:
    return LazyArray(value.shape, value.dtype, _counted, (value,))


# ---- the lazy array itself ---------------------------------------------------------------------

VIEWS = [
    ("transpose varargs", lambda a: a.transpose(3, 2, 0, 1)),
    ("transpose tuple", lambda a: a.transpose((1, 0, 2, 3))),
    ("transpose none", lambda a: a.transpose()),
    ("T", lambda a: a.T),
    ("reshape -1", lambda a: a.reshape(-1, 5)),
    ("reshape tuple", lambda a: a.reshape((6, 20))),
    ("astype", lambda a: a.astype(np.float64)),
    ("astype same", lambda a: a.astype(np.float32)),
    ("new axis", lambda a: a[:, None, :, :]),
    ("slice", lambda a: a[1:, :, ::2]),
    ("chain", lambda a: a.reshape(2, 3, 20).transpose(2, 0, 1)[:, None].astype(np.float16)),
    ("np.transpose", lambda a: np.transpose(a, (0, 2, 3, 1))),
    ("np.reshape", lambda a: np.reshape(a, (4, 30))),
]


@pytest.mark.parametrize("name,view", VIEWS, ids=[v[0] for v in VIEWS])
def test_views_are_lazy_and_equal_numpy(name, view):
    READS.clear()
    got = view(_lazy(BASE))
    want = view(BASE)
    assert isinstance(got, LazyArray) and not READS  # nothing read to know the result's shape and dtype
    assert (got.shape, got.dtype, got.ndim, got.size, got.nbytes) == (want.shape, want.dtype, want.ndim,
                                                                         want.size, want.nbytes)
    value = np.asarray(got)
    assert len(READS) == 1
    assert value.dtype == want.dtype and np.array_equal(value, want) and value.flags.c_contiguous


@pytest.mark.parametrize("shape,axes", [((3, 3, 64, 1024), (3, 2, 0, 1)), ((1000, 300), (1, 0)),
                                        ((7, 7, 41, 131), (3, 2, 0, 1)), ((1, 1, 600, 700), (3, 2, 0, 1)),
                                        ((2, 5, 300, 300), (0, 2, 3, 1))])
def test_big_transposes_are_tiled_and_equal_numpy(shape, axes):
    value = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    assert value.nbytes >= 1 << 20  # over the size where the copy goes tile by tile
    got = np.asarray(_lazy(value).transpose(axes))
    assert got.flags.c_contiguous and np.array_equal(got, value.transpose(axes))


def _read_viewed(value, view=None):
    """A recipe that reads transposed, as the checkpoint reader does: `value` reshaped, then transposed."""
    return value if view is None else np.ascontiguousarray(value.reshape(view[0]).transpose(view[1]))


_read_viewed.reads_transposed = True
FOLDED = [lambda a: a.T, lambda a: a.transpose(1, 0, 2) if a.ndim == 3 else a.T, lambda a: a.reshape(-1),
          lambda a: a.reshape(a.shape[0], -1), lambda a: a.reshape(2, 3, 4, 10) if a.shape == (6, 4, 10) else a,
          lambda a: a.reshape(*a.shape[:-1], 2, a.shape[-1] // 2) if a.shape[-1] % 2 == 0 < a.shape[-1] - 2 else a]


def test_transposes_and_splitting_reshapes_fold_into_a_recipe_that_reads_transposed():
    """Every chain of transposes and reshapes equals numpy's; those that only split axes stay one read."""
    import itertools

    value = np.random.default_rng(1).standard_normal((6, 4, 10)).astype(np.float32)
    for chain in itertools.product(FOLDED, repeat=3):
        got, want = LazyArray(value.shape, value.dtype, _read_viewed, (value, None)), value
        for step in chain:
            got, want = step(got), step(want)
        assert got.shape == want.shape and np.array_equal(np.asarray(got), want)
    fc = LazyArray((392, 16), np.float32, _read_viewed, (np.zeros((392, 16), np.float32), None))
    assert fc.T.reshape(16, 7, 7, 8).transpose(0, 3, 1, 2)._fn is _read_viewed  # a flattened fc weight


def test_operators_compute_like_ndarray():
    a = _lazy(BASE)
    assert np.array_equal(a == BASE, np.ones(BASE.shape, bool))
    assert np.array_equal(a * 2, BASE * 2) and np.array_equal(2 * a, BASE * 2) and np.array_equal(-a, -BASE)
    assert np.array_equal(BASE + a, BASE * 2)
    assert float(_lazy(np.float32(1.5))) == 1.5 and _lazy(np.arange(3)).tolist() == [0, 1, 2]
    assert np.shape(a) == BASE.shape and np.ndim(a) == 4 and len(a) == 2


def test_apply_is_eager_without_lazy_arguments_and_pickles():
    assert isinstance(lazy.apply(np.add, BASE, 1.0, shape=BASE.shape, dtype=np.float32), np.ndarray)
    folded = lazy.apply(np.multiply, _lazy(BASE), 3.0, shape=BASE.shape, dtype=np.float32)
    assert isinstance(folded, LazyArray)
    again = pickle.loads(pickle.dumps(folded))
    assert np.array_equal(np.asarray(again), BASE * 3.0)
    import copy

    assert copy.deepcopy(folded) is folded  # immutable: copies share it


def test_reshape_errors_like_numpy():
    with pytest.raises(ValueError):
        _lazy(BASE).reshape(7, -1)
    with pytest.raises(ValueError):
        _lazy(BASE).reshape(-1, -1)


# ---- torch's file, written tensor by tensor ---------------------------------------------------------

STATE = {
    "a.weight": RNG.standard_normal((4, 3, 3, 3)).astype(np.float32),
    "a.bias": RNG.standard_normal(4).astype(np.float32),
    "b.count": np.arange(6, dtype=np.int64).reshape(2, 3),
    "b.mask": RNG.random((2, 2)) > 0.5,
    "c.half": RNG.standard_normal(5).astype(np.float16),
    "c.double": RNG.standard_normal(3),
    "c.bf16": RNG.standard_normal(4).astype(ml_dtypes.bfloat16),
    "d.scalar": np.array(2.5, np.float32),
    "d.empty": np.zeros((0, 3), np.float32),
}


def test_state_dict_file_loads_as_torch_saves_it(tmp_path):
    """Our own zip writer: not torch.save's bytes, but the same tensors through torch.load."""
    torch = pytest.importorskip("torch")
    from tf_convert.emitters.torch.state_file import save_state_dict

    (tmp_path / "streamed").mkdir()
    (tmp_path / "saved").mkdir()  # same file name: torch names the archive's folder after it
    save_state_dict(tmp_path / "streamed" / "model.pt", {k: _lazy(v) for k, v in STATE.items()})
    def as_torch(v):
        v = np.asarray(v).copy(order="C")
        bf16 = v.dtype.name == "bfloat16"  # numpy's bfloat16 is no dtype torch.from_numpy knows
        return torch.from_numpy(v.view(np.uint16)).view(torch.bfloat16) if bf16 else torch.from_numpy(v)

    torch.save({k: as_torch(v) for k, v in STATE.items()},
               tmp_path / "saved" / "model.pt")
    saved = torch.load(tmp_path / "saved" / "model.pt", weights_only=True)
    for mmap in (False, True):
        loaded = torch.load(tmp_path / "streamed" / "model.pt", weights_only=True, mmap=mmap)
        assert list(loaded) == list(STATE)
        for k, want in saved.items():
            assert loaded[k].dtype == want.dtype and loaded[k].shape == want.shape and torch.equal(loaded[k], want)


def test_mxnet_params_stream_the_same_bytes(tmp_path):
    from tf_convert.emitters.mxnet import params

    arrays = {"arg:w": STATE["a.weight"], "arg:b": STATE["a.bias"], "aux:s": np.array(1.0, np.float32)}
    params.save(tmp_path / "x.params", {k: _lazy(v) for k, v in arrays.items()})
    assert (tmp_path / "x.params").read_bytes() == params.encode(arrays)
    decoded = params.decode((tmp_path / "x.params").read_bytes())
    assert all(np.array_equal(decoded[k], np.atleast_1d(v)) for k, v in arrays.items())


# ---- conversions: lazy vs eager ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def resnet(tmp_path_factory):
    return tf_models.build_resnet_v1_tiny(tmp_path_factory.mktemp("lazy_resnet"))


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory):
    return tf_models.build_mobilenet_v1_tiny(tmp_path_factory.mktemp("lazy_mobilenet"), input_hw=(32, 32))


def _copy_ckpt(model: dict, where: Path) -> Path:
    shutil.copytree(model["ckpt_dir"], where)
    return where / "model.ckpt"


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "conversion.json"}


def test_checkpoint_weights_stay_lazy_through_parse_and_passes(resnet):
    from tf_convert.convert.passes import run_default_passes
    from tf_convert.parsers.tensorflow import parse

    graph = run_default_passes(parse(resnet["ckpt"]))
    weights = [n.params["weight"] for n in graph.nodes if "weight" in n.params]
    assert weights and all(isinstance(w, LazyArray) for w in weights)


@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet", "caffe", "ir"])
@pytest.mark.parametrize("model", ["resnet", "mobilenet"])
def test_lazy_and_eager_conversions_write_the_same_bytes(request, tmp_path, monkeypatch, model, target):
    import tf_convert.parsers.tensorflow as tf_parser

    source = request.getfixturevalue(model)["ckpt"]
    convert_to = getattr(convert, f"tf2{target}")
    convert_to(source, tmp_path / "out-lazy")  # (test_cli and test_training_graphs verify lazy conversions)
    with monkeypatch.context() as m:  # every variable read at once, as before weights were streamed
        m.setattr(Bundle, "lazy", Bundle.read)
        m.setattr(tf_parser, "_FROZEN_CACHE", type(tf_parser._FROZEN_CACHE)())  # parse again
        convert_to(source, tmp_path / "out-eager")
    lazy_files, eager_files = _files(tmp_path / "out-lazy"), _files(tmp_path / "out-eager")
    assert list(lazy_files) == list(eager_files)
    for name in lazy_files:
        assert lazy_files[name] == eager_files[name], name


def test_onnx_external_data_streams_checkpoint_weights(resnet, tmp_path):
    """The > 2 GB branch (threshold forced to 0): weights go straight to model.onnx.data, and the model
    still equals TF (verify runs onnxruntime on it)."""
    out = tmp_path / "out"
    req = pipeline.Request(Path(resnet["ckpt"]), "onnx", out, verify=True,
                           options=OnnxOptions(extra={"onnx_external_data_threshold": 0}))
    record = pipeline.run(req).doc
    assert record["files"][:2] == ["model.onnx", "model.onnx.data"] and record["verify"]["passed"]
    weights = sum(os.path.getsize(p) for p in Path(resnet["ckpt_dir"]).glob("model.ckpt.data-*"))
    assert (out / "model.onnx").stat().st_size < 20_000 < weights <= (out / "model.onnx.data").stat().st_size
    import onnx

    model = onnx.load(str(out / "model.onnx"), load_external_data=False)
    external = [t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert external and all(int(dict((e.key, e.value) for e in t.external_data)["offset"]) % 4096 == 0
                            for t in external)


def test_caffe_refuses_a_model_over_its_limit_before_writing(resnet, tmp_path):
    out = tmp_path / "out"
    req = pipeline.Request(Path(resnet["ckpt"]), "caffe", out, options=CaffeOptions(extra={"caffemodel_limit": 1000}))
    with pytest.raises(UnsupportedError) as e:
        pipeline.run(req)
    assert e.value.exit_code == 3 and "\n" not in str(e.value)
    assert "at most 2 GB" in str(e.value) and "onnx, torch or mxnet" in str(e.value)
    assert not out.exists() and not list(tmp_path.glob(".out*"))


@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet"])
def test_corrupt_weight_found_when_written_is_exit_2(resnet, tmp_path, target):
    """The crc of a conv weight is checked only when its bytes are read, i.e. by the writer: still one
    line naming the shard, exit 2, and no output directory (nor its temporary one) left."""
    prefix = _copy_ckpt(resnet, tmp_path / "ckpt")
    with Bundle(prefix) as bundle:
        entry = bundle._entries["block2/conv2/weights"]
    shard = Path(f"{prefix}.data-00000-of-00001")
    data = bytearray(shard.read_bytes())
    data[entry.offset + entry.size // 2] ^= 0x10
    shard.write_bytes(bytes(data))
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", "from tf_convert import cli; cli.main()", f"tf2{target}", str(prefix),
                           "-o", str(out)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("convert: error:") and "crc32c mismatch in tensor 'block2/conv2/weights'" in lines[-1]
    assert "data-00000-of-00001" in lines[-1] and "Traceback" not in done.stderr
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["ckpt"]


# ---- memory: the largest tensor, not the model (slow: builds a 0.5 GB checkpoint) ----------------------

_BUILD = textwrap.dedent("""
    import os, sys
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import tensorflow as tf
    layers, channels, prefix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    graph = tf.Graph()
    with graph.as_default():
        y = tf.compat.v1.placeholder(tf.float32, (1, 16, 16, channels), name="input")
        for i in range(layers):
            w = tf.compat.v1.get_variable(f"conv{i}/weights", (3, 3, channels, channels),
                                          initializer=tf.compat.v1.random_normal_initializer(0, 0.01, seed=i))
            b = tf.compat.v1.get_variable(f"conv{i}/biases", (channels,), initializer=tf.compat.v1.zeros_initializer())
            stride = 2 if i in (layers // 3, 2 * layers // 3) else 1
            y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(y, w, stride, "SAME"), b))
        tf.identity(y, name="output")
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(sess, prefix)
""")


def _peak_rss(args: list[str], cwd: Path) -> tuple[int, int, str]:
    """(exit code, peak RSS in bytes, stderr) of one process (os.wait4: this child only)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024, proc.stderr.read().decode()


@pytest.mark.slow
@pytest.mark.skipif(not (os.environ.get("CONVERT_MEMORY_TEST") or os.environ.get("CONVERT_FULL_MATRIX")),
                    reason="builds a 0.5 GB checkpoint: make test-memory (CONVERT_MEMORY_TEST=1) or make test-full")
@pytest.mark.parametrize("target", ["torch", "onnx", "mxnet"])
def test_peak_memory_follows_the_largest_tensor(tmp_path_factory, target):
    root = tmp_path_factory.getbasetemp() / "lazy_big"
    prefix = root / "model.ckpt"
    if not Path(f"{prefix}.index").exists():  # 14 convs 3x3x1024x1024: 37.7 MB each, 528 MB in all
        root.mkdir(exist_ok=True)
        subprocess.run([sys.executable, "-c", _BUILD, "14", "1024", str(prefix)], check=True,
                       env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    model = sum(p.stat().st_size for p in root.glob("model.ckpt.data-*"))
    out = root / f"out-{target}"
    shutil.rmtree(out, ignore_errors=True)
    code, peak, err = _peak_rss([sys.executable, "-c", "from tf_convert import cli; cli.main()", f"tf2{target}",
                                 str(prefix), "-o", str(out)], root)
    assert code == 0, err
    # the imports (TF for the graph, torch) take ~0.5 GB; before weights were streamed the peak was ~4 GB (8x the model)
    assert peak < 1.2 * 2**30, f"peak RSS {peak / 2**20:.0f} MB for a {model / 2**20:.0f} MB checkpoint"
    shutil.rmtree(out)


def test_streamed_onnx_is_one_model_to_every_reader(resnet, tmp_path):
    """model.onnx written initializer by initializer parses as one graph in onnx and onnxruntime."""
    import onnx

    convert.tf2onnx(resnet["ckpt"], tmp_path / "out")
    data = (tmp_path / "out" / "model.onnx").read_bytes()
    model = onnx.ModelProto()
    model.ParseFromString(data)
    onnx.checker.check_model(model, full_check=True)
    assert len({t.name for t in model.graph.initializer}) == len(model.graph.initializer) > 10
    buffer = io.BytesIO(model.SerializeToString())
    assert onnx.load(buffer).graph.initializer == model.graph.initializer
