"""Every TFLite builtin without a handler, and why: the one table the refusal message (exit 3) and the
test that walks the schema's `BuiltinOperator` enum read (a builtin has a handler or a reason here)."""

from __future__ import annotations

_STATE = ("state kept between invocations (variables, hash tables): a converted model is a function of its "
          "inputs only")
_RANDOM = "random numbers: no two runtimes draw the same ones"
_DATA_LENGTH = "its output's length depends on the data (the targets' graphs have fixed shapes)"
_COMPLEX = "complex numbers: no target holds them"
_LEGACY_TEXT = "a legacy text-hashing operator: no target has it"
_NOT_YET = "no converter yet"

REFUSED: dict[str, str] = {
    **dict.fromkeys(("ASSIGN_VARIABLE", "READ_VARIABLE", "VAR_HANDLE", "CALL_ONCE", "HASHTABLE", "HASHTABLE_FIND",
                     "HASHTABLE_IMPORT", "HASHTABLE_LOOKUP", "HASHTABLE_SIZE"), _STATE),
    **dict.fromkeys(("RANDOM_STANDARD_NORMAL", "RANDOM_UNIFORM", "MULTINOMIAL"), _RANDOM),
    **dict.fromkeys(("UNIQUE", "WHERE", "NON_MAX_SUPPRESSION_V4", "NON_MAX_SUPPRESSION_V5"), _DATA_LENGTH),
    "LSTM": ("TFLite's one-step LSTM kernel (the converter writes UNIDIRECTIONAL_SEQUENCE_LSTM, which converts): "
             "not converted; convert the Keras or TF model"),
    "SVDF": ("a singular-value-decomposition filter keeping its memory in a variable tensor (streaming keyword "
             "spotters): not converted"),
    **dict.fromkeys(("COMPLEX_ABS", "REAL", "IMAG", "RFFT2D"), _COMPLEX),
    **dict.fromkeys(("LSH_PROJECTION", "SKIP_GRAM", "CONCAT_EMBEDDINGS", "EMBEDDING_LOOKUP_SPARSE"), _LEGACY_TEXT),
    "CALL": "a call of another subgraph outside IF: not converted yet",
    "CUSTOM": "not an operator: a custom operator is named by its own code",
    "DELEGATE": "not an operator: a delegate's placeholder, written only inside a running interpreter",
    "PLACEHOLDER_FOR_GREATER_OP_CODES": "not an operator: the schema's marker for codes above 127",
    "FAKE_QUANT": "quantization-aware training's fake quantization: convert the float model",
    "BITCAST": "a reinterpretation of bytes as another type: no target has it",
    "RANK": "the rank is static in the converted graph: TFLite's converter folds it",
    **dict.fromkeys(("ADD_N", "ATAN2", "BATCH_TO_SPACE_ND", "BITWISE_XOR", "BROADCAST_ARGS", "BUCKETIZE", "CONV_3D",
                     "CONV_3D_TRANSPOSE", "DILATE", "DYNAMIC_UPDATE_SLICE", "EMBEDDING_LOOKUP", "FILL", "FLOOR_DIV",
                     "FLOOR_MOD", "L2_NORMALIZATION", "L2_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION", "MATRIX_DIAG",
                     "MATRIX_SET_DIAG", "ONE_HOT", "RANGE", "REDUCE_ALL", "REDUCE_ANY", "REDUCE_WINDOW",
                     "REVERSE_SEQUENCE", "RIGHT_SHIFT", "SCATTER_ND", "SEGMENT_SUM", "SPACE_TO_BATCH_ND",
                     "SPARSE_TO_DENSE", "TOPK_V2", "UNSORTED_SEGMENT_MAX", "UNSORTED_SEGMENT_MIN",
                     "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_SUM", "ZEROS_LIKE"), _NOT_YET),
}

# every builtin whose name starts so: one reason for the family
REFUSED_PREFIXES: dict[str, str] = {
    "STABLEHLO_": "a StableHLO operator (a model lowered through StableHLO): not converted; convert the source model",
}


def reason(name: str) -> str | None:
    """Why builtin `name` has no converter; None when the table does not know it."""
    if name in REFUSED:
        return REFUSED[name]
    return next((why for prefix, why in REFUSED_PREFIXES.items() if name.startswith(prefix)), None)
