"""Readable, unique Python identifiers from IR names (TF scope names like `block1/conv/Conv2D`)."""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable

# The last scope component TF gives an op by default (Conv2D, BiasAdd, Relu6, AddV2_1, ...).
_TF_OP_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*(_\d+)?$")
# ... and the lowercase names tf.nn / Keras 3 give theirs (`conv/depthwise`, `conv1/convolution`).
_TF_LOWER_OP_NAMES = {
    "depthwise", "convolution", "conv2d", "conv2d_transpose", "separable_conv2d", "batchnorm",
    "truediv", "add", "sub", "mul", "matmul", "biasadd", "bias_add", "identity", "reshape",
    "transpose", "concat", "pad", "mean", "max", "softmax", "sigmoid", "relu", "relu6", "tanh",
}


def _is_op_name(part: str) -> bool:
    return bool(_TF_OP_NAME.match(part)) or re.sub(r"_\d+$", "", part) in _TF_LOWER_OP_NAMES


# What an nn.Module already has (dir(torch.nn.Module) of torch 2.13 without the dunders, and the
# `training` flag every instance sets): a layer attribute of one of these names would shadow it. Kept
# here, not read from torch, so that writing model.py needs no torch (tests check it against torch's).
MODULE_ATTRIBUTES = frozenset({
    "T_destination", "_apply", "_call_impl", "_compiled_call_impl", "_get_backward_hooks",
    "_get_backward_pre_hooks", "_get_name", "_load_from_state_dict", "_maybe_warn_non_full_backward_hook",
    "_named_members", "_register_load_state_dict_pre_hook", "_register_state_dict_hook",
    "_replicate_for_data_parallel", "_save_to_state_dict", "_slow_forward", "_version", "_wrapped_call_impl",
    "add_module", "apply", "bfloat16", "buffers", "call_super_init", "children", "compile", "cpu", "cuda",
    "double", "dump_patches", "eval", "extra_repr", "float", "forward", "get_buffer", "get_extra_state",
    "get_parameter", "get_submodule", "half", "ipu", "load_state_dict", "modules", "mtia", "named_buffers",
    "named_children", "named_modules", "named_parameters", "parameters", "register_backward_hook",
    "register_buffer", "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_full_backward_pre_hook", "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook",
    "register_module", "register_parameter", "register_state_dict_post_hook", "register_state_dict_pre_hook",
    "requires_grad_", "set_extra_state", "set_submodule", "share_memory", "state_dict", "to", "to_empty",
    "train", "training", "type", "xpu", "zero_grad",
})

# Names the generated file itself uses, plus builtins it calls.
_ALWAYS_RESERVED = {"self", "torch", "nn", "math", "float", "int", "super", "tuple", "list", "Model", "load"}


def identifier(text: str, fallback: str = "t") -> str:
    s = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_").lower()
    s = re.sub(r"_+", "_", s)
    if not s:
        s = fallback
    if s[0].isdigit():
        s = f"{fallback}_{s}"
    return s


def _scope_parts(name: str) -> list[str]:
    name = re.sub(r":\d+$", "", name)  # tensor names: "input:0"
    return [p for p in name.split("/") if p]


def _collapse(parts: list[str]) -> list[str]:
    """Drop a scope the next component repeats (Keras nesting: `stem/stem_conv` -> `stem_conv`)."""
    return [p for p, q in zip(parts, parts[1:] + [""]) if not (q == p or q.startswith(p + "_"))]


def common_scope(names: Iterable[str], share: float = 0.8) -> str:
    """The leading scopes (`MobilenetV1/`) that nearly every name shares, kept out of identifiers.

    "Nearly": a converted graph often has one or two nodes outside the model's scope (an output
    `Identity`); they keep their names. A stripped name keeps at least a scope and an op.
    """
    split = [_scope_parts(n) for n in names]
    prefix: list[str] = []
    while split:
        depth = len(prefix)
        heads = [p[depth] for p in split if p[:depth] == prefix and len(p) >= depth + 3]
        if not heads:
            break
        head = max(set(heads), key=heads.count)
        if heads.count(head) < share * len(split):
            break
        prefix.append(head)
    return "".join(f"{p}/" for p in prefix)


class Namer:
    """Hands out identifiers; each is reserved together with `<id>_<suffix>` for `suffixes`."""

    def __init__(self, reserved: Iterable[str] = (), suffixes: Iterable[str] = (), strip: str = ""):
        self.strip = strip
        self.taken = set(_ALWAYS_RESERVED) | set(reserved) | set(keyword.kwlist) | set(keyword.softkwlist)
        self.suffixes = tuple(suffixes)

    def _free(self, base: str) -> bool:
        return all(n not in self.taken for n in (base, *(f"{base}_{s}" for s in self.suffixes)))

    def _take(self, candidates: list[str]) -> str:
        for c in candidates:
            if self._free(c):
                break
        else:
            base, i = candidates[0], 1
            while not self._free(f"{base}_{i}"):
                i += 1
            c = f"{base}_{i}"
        self.taken.add(c)
        self.taken.update(f"{c}_{s}" for s in self.suffixes)
        return c

    def name(self, ir_name: str, fallback: str = "t") -> str:
        """`block1/conv/Conv2D` -> `block1_conv` (or `block1_conv_conv2d` if that is taken)."""
        if self.strip and ir_name.startswith(self.strip):
            ir_name = ir_name[len(self.strip):]
        parts = _scope_parts(ir_name)
        full = identifier("_".join(_collapse(parts)), fallback)
        if len(parts) > 1 and _is_op_name(parts[-1]):
            return self._take([identifier("_".join(_collapse(parts[:-1])), fallback), full])
        return self._take([full])
