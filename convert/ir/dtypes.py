"""The dtypes IR tensors may have: the one definition the parsers, the emitters and the checks read.

Every op computes in the core dtypes (float32 numbers, integer and bool token ids, masks and indices). The
wide dtypes (float64, float16, int16 and the unsigned ones) are held at the graph's boundary, in `cast`, and
through the ops that copy elements (`COPY_OPS`); float64, float16 and int16 (`COMPUTED_WIDE`) are also computed
in by the ops whose catalog row says so (`wide`: elementwise ops, reductions, matmul), with one dtype for all
their number inputs, as TF's kernels are typed. The unsigned ones are not (PyTorch has no add or comparison of
them). Any other op of a wide dtype is refused, naming the dtype and the tensor.
bfloat16 is none of them: numpy, which holds the IR's values, has no bfloat16.
"""

from __future__ import annotations

from typing import Any

from .ops import WIDE_COMPUTING

CORE_DTYPES = ("float32", "int32", "int64", "bool", "uint8", "int8")
WIDE_DTYPES = ("float64", "float16", "int16", "uint16", "uint32", "uint64")
IR_DTYPES = CORE_DTYPES + WIDE_DTYPES

# ops that move elements without computing with them: any IR dtype goes through unchanged
COPY_OPS = frozenset({"identity", "reshape", "transpose", "concat", "slice"})
# the wide dtypes the ops of the catalog's `wide` rows compute in (PyTorch and ONNX hold their arithmetic)
COMPUTED_WIDE = ("float64", "float16", "int16")


def wide_dtype_problem(op: str, inputs: list[tuple[str, str]], out_dtype: str) -> str | None:
    """Why an `op` node reading `inputs` ((tensor, dtype) pairs) and giving `out_dtype` cannot be held, or None:
    a wide dtype outside a cast or a copy, or a copy mixing dtypes (a float64 tensor joined to a float32
    constant: float constants are the IR's float32)."""
    dtypes = [d for _, d in inputs] + [out_dtype]
    wide = next((d for d in dtypes if d in WIDE_DTYPES), None)
    if wide is None:
        return None
    if op == "cast" and len(inputs) == 1:
        return None
    if op in WIDE_COMPUTING and all(d in COMPUTED_WIDE for d in dtypes if d in WIDE_DTYPES):
        numbers = {d for _, d in inputs if d != "bool"}
        if len(numbers) <= 1:
            return None
        return (f"{op} of {' and '.join(sorted(numbers))} tensors: TF's kernels compute in one dtype; "
                "cast the inputs to one dtype first")
    if op in COPY_OPS:
        mixed = next((t for t, d in inputs if d != out_dtype), None)
        if mixed is None:
            return None
        return (f"{op} of {out_dtype} and {dict(inputs)[mixed]} tensors ('{mixed}'): the converted graph's "
                f"float constants are float32; {out_dtype} goes only through casts and copies of one dtype")
    tensor = next((f"'{t}'" for t, d in inputs if d == wide), "its output")
    return (f"{op} of a {wide} tensor ({tensor}): the converted graph computes in "
            f"{', '.join(CORE_DTYPES + COMPUTED_WIDE)}; {wide} goes only through casts and copies (identity, "
            "reshape, transpose, concat, slice): cast it to float32 first")


def computes_wide(graph: Any) -> bool:
    """Whether an op of `graph` (an ir.Graph) other than a constant computes in a wide dtype. The fusing passes
    keep float32 parameters, so such a graph gets only those that keep every dtype (convert.passes.runner)."""
    return any(node.op in WIDE_COMPUTING and node.op != "const"
               and any(graph.tensors[t].dtype in COMPUTED_WIDE for t in [*node.inputs, node.output])
               for node in graph.nodes)
