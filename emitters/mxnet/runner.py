"""Runs converted MXNet models in real MXNet 1.9.1. Executed by `.venv-mxnet/bin/python`, never
imported by the converter (it needs mxnet and numpy < 1.24, and nothing from this repository).

usage: runner.py JOBS.json RESULTS.jsonl
       runner.py -       (the two paths then come as two lines on stdin: a runner started before its jobs
                          are known imports mxnet meanwhile; stdin closed without them: it ends)

JOBS.json is a list of jobs; one JSON line per job is appended to RESULTS.jsonl as it finishes
(so a crash in one model loses nothing before it):
  {"kind": "run", "prefix": ".../model", "inputs": "in.npz", "out": ".../out", "modes": ["gluon", "module"],
   "bench": 0, "weights": null}
                      -> {"ok": true, "outputs": {"gluon": "out-gluon.npz", ...}, "ms": {...}, "best_ms": {...}}
     "weights", when given, is the .params file's index ([[name, shape, dtype, offset], ...], made by the
     converter's emitters/mxnet/params.index): the weights are then read one array at a time (see _streamed)
  {"kind": "internals", "prefix": ..., "inputs": "in.npz", "names": [...], "out": "x.npz"}
                      -> {"names": [the ones found]}, their values (module-style bind) in x.npz in order
  {"kind": "load", "path": "x.params", "out": "x.npz"}   -> mx.nd.load, arrays saved as npz
  {"kind": "save", "arrays": "x.npz", "out": "x.params"} -> mx.nd.save of the npz's arrays (in order)
  {"kind": "tojson", "path": "model-symbol.json", "out": "x.json"} -> mx.sym.load(path).tojson()
"""

import contextlib
import gc
import json
import os
import sys
import time
import traceback

import mxnet as mx
import numpy as np


def _data_names(prefix, weights=None):
    """Graph inputs in declared order: variables without a parameter value, as written."""
    with open(prefix + "-symbol.json") as f:
        doc = json.load(f)
    stored = [w[0] for w in weights] if weights is not None else mx.nd.load(prefix + "-0000.params")
    params = {k.split(":", 1)[1] for k in stored}
    return [n["name"] for n in doc["nodes"] if n["op"] == "null" and n["name"] not in params]


def _fed(prefix, sym, arrays, weights=None):
    declared = _data_names(prefix, weights)
    if len(declared) != len(arrays):
        raise ValueError(f"model declares {len(declared)} inputs {declared}, got {len(arrays)} arrays")
    used = set(sym.list_inputs())
    return [(n, a) for n, a in zip(declared, arrays) if n in used]


_BLOCK = 4096  # O_DIRECT's alignment of offsets, lengths and memory


def _aligned(size):
    raw = np.empty(size + _BLOCK, np.uint8)
    start = -raw.ctypes.data % _BLOCK
    return raw[start:start + size]


def _open_direct(path):
    """(fd, direct?): the file opened around the page cache where the file system allows it."""
    try:
        return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0)), bool(getattr(os, "O_DIRECT", 0))
    except OSError:
        return os.open(path, os.O_RDONLY), False


def _read_span(fd, buffer, start, length):
    """Bytes [start, start + length) of the file into buffer[:length] (fewer at its end); the count read."""
    done = 0
    while done < length:
        got = os.preadv(fd, [memoryview(buffer)[done:length]], start + done)
        if not got:
            break
        done += got
    return done


def _streamed(path, weights):
    """(name, NDArray) for each array of a .params file, one at a time: what mx.nd.load reads, without the
    whole file in memory at once. mx.nd.load holds every array before a loader copies them in (MXNet
    itself then holds the weights 2-3x); a large model is read this way instead. The converter
    wrote the file around the page cache, and it is read back the same way (O_DIRECT: reading 2.6 GB
    through the cache took 5.6 s, 4.9 of them system CPU; around it 1.9 s), each array into one reused
    buffer (a fresh one per array cost a page fault per 4 KB). An array is valid only until the next is
    read: a caller keeps a copy, made before it asks for the next."""
    sizes = [int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize for _, shape, dtype, _ in weights]
    buffer = _aligned(max(sizes, default=0) + 2 * _BLOCK)
    fd, direct = _open_direct(path)
    try:
        for (name, shape, dtype, offset), size in zip(weights, sizes):
            start = offset - offset % _BLOCK if direct else offset
            length = -(-(offset + size - start) // _BLOCK) * _BLOCK if direct else size
            try:
                got = _read_span(fd, buffer, start, length)
            except OSError:  # the file system took O_DIRECT at open but refuses the read
                if not direct:
                    raise
                os.close(fd)
                fd, direct = os.open(path, os.O_RDONLY), False
                start, length = offset, size
                got = _read_span(fd, buffer, start, length)
            if got < offset + size - start:
                raise ValueError(f"{path}: array {name!r} is truncated")
            value = buffer[offset - start:offset - start + size].view(np.dtype(dtype)).reshape(shape)
            yield name, mx.nd.from_numpy(value, zero_copy=True)
    finally:
        os.close(fd)


def _imported_block(prefix, input_names, weights):
    """mx.gluon.SymbolBlock.imports; with `weights`, the same steps with ParameterDict.load_dict given one
    streamed array at a time, and its missing-parameter check made once all are in."""
    params_file = prefix + "-0000.params"
    if weights is None:
        return mx.gluon.SymbolBlock.imports(prefix + "-symbol.json", input_names, params_file, ctx=mx.cpu())
    net = mx.gluon.SymbolBlock(mx.sym.load(prefix + "-symbol.json"), [mx.sym.var(n) for n in input_names])
    params = net.collect_params()
    params.setattr("grad_req", "null")  # inference: no gradient buffer beside each weight (imports makes them)
    loaded = set()
    for name, value in _streamed(params_file, weights):
        params.load_dict({name: value}, mx.cpu(), allow_missing=True, filename=params_file, cast_dtype=True,
                         dtype_source="saved")
        key = name.split(":", 1)[1]
        params[key].data().wait_to_read()  # copied before the buffer is read into again
        loaded.add(key)
        del value
    missing = [n for n in params.keys() if n not in loaded]
    if missing:
        raise ValueError(f"Parameter {missing[0]!r} is missing in file: {params_file}")
    return net


def _gluon(prefix, arrays, backend=None, weights=None, shared=None):
    """mx.gluon.SymbolBlock.imports, hybridized as a deployed model runs; with `backend="MKLDNN"` as
    Intel's CPU deployment guide runs it: the subgraph backend fuses conv + act as mx.mod.Module does by
    default (plain hybridize does not; it is ~4x slower on one thread). With `weights`, the block's
    parameters are put in `shared` under the file's names, for the Module run after it (_bound)."""
    sym = mx.sym.load(prefix + "-symbol.json")
    fed = _fed(prefix, sym, arrays, weights)
    net = _imported_block(prefix, [n for n, _ in fed], weights)
    if weights is not None and shared is not None and not backend:
        params = net.collect_params()
        shared.update((name, params[name.split(":", 1)[1]].data()) for name, *_ in weights)
    data = [mx.nd.array(a, dtype=a.dtype) for _, a in fed]
    if backend:
        net.optimize_for(*data, backend=backend, static_alloc=True, static_shape=True)
    else:
        net.hybridize(static_alloc=True, static_shape=True)

    def forward():
        out = net(*data)
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        return [o.asnumpy() for o in out]

    return forward


def _module(prefix, arrays, weights=None, shared=None):
    """mx.mod.Module, bound and given the checkpoint's parameters. Module keeps a copy of every parameter
    beside its executor's, and its default MKLDNN subgraph fusion a third: with `weights` (a large model)
    the arrays are bound once, straight into the graph executor Module binds (Symbol.bind), without the
    fusion (see _bound)."""
    if weights is not None:
        return _bound(prefix, arrays, weights, shared)
    sym, arg_params, aux_params = mx.model.load_checkpoint(prefix, 0)
    fed = _fed(prefix, sym, arrays)
    mod = mx.mod.Module(sym, data_names=[n for n, _ in fed], label_names=None, context=mx.cpu())
    # Module slices data along a batch axis and wants it equal on every input; an input whose
    # leading dim differs (a broadcast operand) gets a layout without one
    batch = fed[0][1].shape[0] if fed and fed[0][1].ndim else None
    descs = [mx.io.DataDesc(n, a.shape, dtype=a.dtype, layout="N" if a.ndim and a.shape[0] == batch else "")
             for n, a in fed]
    mod.bind(data_shapes=descs, for_training=False)
    mod.set_params(arg_params, aux_params, allow_missing=False, allow_extra=False)
    batch = mx.io.DataBatch(data=[mx.nd.array(a, dtype=a.dtype) for _, a in fed])

    def forward():
        mod.forward(batch, is_train=False)
        return [o.asnumpy() for o in mod.get_outputs()]

    return forward


@contextlib.contextmanager
def _unfused():
    """Executors bound inside run without MKLDNN's subgraph fusion (MXNet reads the variable at bind time)."""
    previous = os.environ.get("MXNET_SUBGRAPH_BACKEND")
    os.environ["MXNET_SUBGRAPH_BACKEND"] = "NONE"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("MXNET_SUBGRAPH_BACKEND")
        else:
            os.environ["MXNET_SUBGRAPH_BACKEND"] = previous


def _bound(prefix, arrays, weights, shared=None):
    """The streamed arrays bound into one graph executor. Where the Gluon run before it read them (`shared`),
    its arrays are bound: the same bytes of the same file, read once, and MKLDNN's reorder of every conv
    weight made once (for 2.6 GB: a second read 1.8-4.4 s and a first forward 3 s, against 0.4 s)."""
    sym = mx.sym.load(prefix + "-symbol.json")
    fed = _fed(prefix, sym, arrays, weights)
    stored = {"arg": {}, "aux": {}}
    for name, value in _kept(prefix + "-0000.params", weights, shared or {}):
        kind, key = name.split(":", 1)
        stored[kind][key] = value
    args = dict(stored["arg"], **{n: mx.nd.array(a, dtype=a.dtype) for n, a in fed})
    expected, given = set(sym.list_arguments()) | set(sym.list_auxiliary_states()), set(args) | set(stored["aux"])
    # what Module.set_params(allow_missing=False, allow_extra=False) refuses
    for what, names in (("is missing in", expected - given), ("is not used by the symbol, found in", given - expected)):
        if names:
            raise ValueError(f"Parameter {sorted(names)[0]!r} {what} {prefix}-0000.params")
    # unfused: MKLDNN's subgraph convs keep a reordered copy of every weight (a second copy of the model)
    with _unfused():
        exe = sym.bind(mx.cpu(), args={n: args[n] for n in sym.list_arguments()},
                       aux_states={n: stored["aux"][n] for n in sym.list_auxiliary_states()}, grad_req="null")

    def forward():
        return [o.asnumpy() for o in exe.forward(is_train=False)]

    return forward


def _kept(path, weights, shared):
    """(name, NDArray) of each array of the file: `shared`'s where it has them all, else copies of _streamed's."""
    if all(name in shared for name, *_ in weights):
        yield from ((name, shared[name]) for name, *_ in weights)
        return
    for name, value in _streamed(path, weights):
        kept = value.copy()
        kept.wait_to_read()  # copied before the buffer is read into again
        yield name, kept


MODES = {"gluon": _gluon, "module": _module,
         "gluon-fused": lambda prefix, arrays, weights=None, shared=None: _gluon(prefix, arrays, "MKLDNN", weights)}


def _run(job):
    with np.load(job["inputs"]) as f:
        arrays = [f[f"arr_{i}"] for i in range(len(f.files))]
    outputs, ms, best = {}, {}, {}
    shared = {}  # a streamed model's arrays, read by its Gluon run, bound by its Module run
    for mode in job["modes"]:
        forward = MODES[mode](job["prefix"], arrays, weights=job.get("weights"), shared=shared)
        result = forward()
        path = f"{job['out']}-{mode}.npz"
        np.savez(path, *result)
        outputs[mode] = path
        if job.get("bench"):
            # on one thread MXNet computes in this process alone: its CPU time is steadier than wall
            # time on a shared machine (as bench/run.py times the other runtimes)
            clock = time.process_time if os.environ.get("OMP_NUM_THREADS") == "1" else time.perf_counter
            times = []
            for _ in range(int(job["bench"])):
                t0 = clock()
                forward()
                times.append((clock() - t0) * 1000)
            ms[mode] = float(np.median(times))
            best[mode] = float(np.min(times))
        del forward, result  # this mode's runtime goes before the next mode's (a streamed model's arrays stay shared)
        gc.collect()
    shared.clear()
    return {"outputs": outputs, "ms": ms, "best_ms": best}


def _load(job):
    arrays = mx.nd.load(job["path"])
    names = list(arrays) if isinstance(arrays, dict) else [str(i) for i in range(len(arrays))]
    values = arrays.values() if isinstance(arrays, dict) else arrays
    np.savez(job["out"], **{n: v.asnumpy() for n, v in zip(names, values)})
    return {"names": names}


def _save(job):
    with np.load(job["arrays"]) as f:
        names = json.loads(job["names"]) if "names" in job else list(f.files)
        arrays = {n: mx.nd.array(f[k], dtype=f[k].dtype) for n, k in zip(names, f.files)}
    mx.nd.save(job["out"], arrays)
    return {}


def _tojson(job):
    with open(job["out"], "w") as f:
        f.write(mx.sym.load(job["path"]).tojson())
    return {}


def _internals(job):
    """Every requested internal output (`<node>_output`) of one forward pass, via get_internals()."""
    with np.load(job["inputs"]) as f:
        arrays = [f[f"arr_{i}"] for i in range(len(f.files))]
    sym, arg_params, aux_params = mx.model.load_checkpoint(job["prefix"], 0)
    internals = sym.get_internals()
    available = set(internals.list_outputs())
    names = [n for n in job["names"] if n in available]
    if not names:
        np.savez(job["out"])
        return {"names": []}
    group = mx.sym.Group([internals[n] for n in names])
    args = dict(arg_params)
    args.update({n: mx.nd.array(a, dtype=a.dtype) for n, a in _fed(job["prefix"], sym, arrays)})
    needed = group.list_arguments()
    # MKLDNN's conv+relu fusion hands out the conv's values as the relu's once both are heads
    # (measured on 1.9.1): bind the exposed graph without subgraph fusion
    with _unfused():
        exe = group.bind(mx.cpu(), args={n: args[n] for n in needed},
                         aux_states={n: aux_params[n] for n in group.list_auxiliary_states()}, grad_req="null")
        outs = exe.forward(is_train=False)
    np.savez(job["out"], *[o.asnumpy() for o in outs])
    return {"names": names}


KINDS = {"internals": _internals, "run": _run, "load": _load, "save": _save, "tojson": _tojson}


def main(jobs_path, results_path):
    with open(jobs_path) as f:
        jobs = json.load(f)
    with open(results_path, "w") as out:
        for job in jobs:
            try:
                record = dict(KINDS[job["kind"]](job), ok=True)
            except Exception as exc:  # noqa: BLE001 - one broken model must not hide the others' results
                record = {"ok": False, "error": f"{type(exc).__name__}: {exc}".strip()[-4000:],
                          "traceback": traceback.format_exc()[-4000:]}
            out.write(json.dumps(record) + "\n")
            out.flush()


if __name__ == "__main__":
    paths = sys.argv[1:3] if sys.argv[1] != "-" else [sys.stdin.readline().strip(), sys.stdin.readline().strip()]
    if all(paths):
        main(*paths)
    # the results are written and closed: end without unloading MXNet module by module (0.1-0.25 s the
    # converter waits for). This file runs in MXNet's own environment: no tf_convert helper here.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
