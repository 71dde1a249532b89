"""The dtypes IR tensors may have: the one definition the parsers, the emitters and the checks read.

Every op computes in the core dtypes (float32 numbers, integer and bool token ids, masks and indices). The
wide dtypes (float64, float16, int16 and the unsigned ones) are held only where no arithmetic touches them: at
the graph's boundary, in `cast`, and through the ops that copy elements (`COPY_OPS`), so a converted model
returns TF's values in TF's dtype; any other op of a wide dtype is refused, naming the dtype and the tensor.
bfloat16 is none of them: numpy, which holds the IR's values, has no bfloat16.
"""

from __future__ import annotations

CORE_DTYPES = ("float32", "int32", "int64", "bool", "uint8", "int8")
WIDE_DTYPES = ("float64", "float16", "int16", "uint16", "uint32", "uint64")
IR_DTYPES = CORE_DTYPES + WIDE_DTYPES

# ops that move elements without computing with them: any IR dtype goes through unchanged
COPY_OPS = frozenset({"identity", "reshape", "transpose", "concat", "slice"})


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
    if op in COPY_OPS:
        mixed = next((t for t, d in inputs if d != out_dtype), None)
        if mixed is None:
            return None
        return (f"{op} of {out_dtype} and {dict(inputs)[mixed]} tensors ('{mixed}'): the converted graph's "
                f"float constants are float32; {out_dtype} goes only through casts and copies of one dtype")
    tensor = next((f"'{t}'" for t, d in inputs if d == wide), "its output")
    return (f"{op} of a {wide} tensor ({tensor}): the converted graph computes in "
            f"{', '.join(CORE_DTYPES)}; {wide} goes only through casts and copies (identity, reshape, transpose, "
            "concat, slice): cast it to float32 first")
