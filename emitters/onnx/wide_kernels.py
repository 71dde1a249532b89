"""The wide-dtype arithmetic onnxruntime's CPU kernels lack: a node computing in one is refused, named.

The IR computes in float64, float16 and int16 where TF does (convert.ir.dtypes.COMPUTED_WIDE); an onnxruntime
session with such a node fails to load (NOT_IMPLEMENTED) or its type inference rejects the handler's float32
constants. Measured against onnxruntime 1.x CPU with bench/op_graphs_run.py's dtype graphs.
"""

from __future__ import annotations

from tf_convert.convert import ir
from tf_convert.convert.errors import Unsupported

# IR op -> the wide dtypes its ONNX lowering cannot run in
MISSING: dict[str, frozenset[str]] = {
    **{op: frozenset({"float64"}) for op in (
        "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cosh", "sinh", "tan", "elu", "selu", "erf",
        "erfc", "softplus", "softsign", "hard_sigmoid")},
    "clip": frozenset({"float64", "float16", "int16"}),
    "is_inf": frozenset({"float16"}),
    "is_finite": frozenset({"float16"}),
    **{op: frozenset({"int16"}) for op in (
        "select", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
        "reduce_prod", "matmul", "pow", "cumsum", "cumprod",
        # below opset 18 the bitwise ops are lowered through BitShift, which has unsigned kernels only
        "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "left_shift", "right_shift")},
}


def missing_kernels(graph: ir.Graph) -> list[Unsupported]:
    """Every node reading or making a dtype onnxruntime has no kernel of its op for."""
    found = []
    for node in graph.nodes:
        missing = MISSING.get(node.op, frozenset())
        dtype = next((graph.tensors[t].dtype for t in [*node.inputs, node.output] if graph.tensors[t].dtype in missing),
                     None)
        if dtype is not None:
            found.append(Unsupported(node.op, node.name, f"onnxruntime has no {dtype} kernel for it: cast the "
                                     "input to float32 (or convert to torch, which computes it)"))
    return found
