"""Why the TF ops no target can hold are refused: strings, sets and hash tables (the reason the user sees, exit
3, in place of "no converter")."""

from __future__ import annotations

import re

_STRINGS = ("a string op: no target holds string tensors; convert from where the strings have become numbers "
            "(--inputs at the token ids)")
_SETS = "a set operation: its result's length is decided by the data (and its output is a SparseTensor): " \
        "no target's static graph holds it"
_TABLES = ("a hash table (a vocabulary lookup) of string keys or values, or not filled from constants of the graph: "
           "a table held as graph state, which no target holds (a constant numeric table converts); convert from "
           "where its ids are (--inputs at the looked-up ids)")

# (pattern on the TF op name, why)
_REASONS = (
    (r"^(String|Regex|StaticRegex|Substr|AsString|Unicode|ReduceJoin|DecodeBase64|EncodeBase64)", _STRINGS),
    (r"^(DenseToDense|DenseToSparse|SparseToSparse)SetOperation$|^SetSize$", _SETS),
    (r"^(HashTable|MutableHashTable|MutableDenseHashTable|LookupTable|InitializeTable|AnonymousHashTable|"
     r"AnonymousMutable)", _TABLES),
)


def refusal_reason(op_type: str) -> str | None:
    """Why `op_type` is refused, for the ops no target can hold; None for the others."""
    return next((why for pattern, why in _REASONS if re.search(pattern, op_type)), None)
