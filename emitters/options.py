"""Each target's options, one dataclass per target: the single definition the `tf2<target>` flags,
the batch manifest keys and the emitters all read. Light on purpose (no framework imports), so that
`convert --help` can build its flags from here.

A field becomes a CLI flag `--<name with dashes>`; its metadata gives the help text and, where
they apply, `choices` or an inclusive `range`. Fields with `cli=False` are test hooks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tf_convert.convert.targets import TARGETS, PlanOptions

MIN_OPSET, MAX_OPSET, DEFAULT_OPSET = 13, 21, 17
STATIC_SHAPES_HELP = ("Bake the pads for the conversion size; the model then refuses other input sizes "
                      "(default: a size-free network computes TF's SAME pads from the runtime size).")


def option(default: Any, help: str, *, choices: tuple[str, ...] | None = None,
           range: tuple[int, int] | None = None, cli: bool = True) -> Any:
    """A dataclass field with what the CLI and the manifest need to know about it."""
    meta = {"help": help, "choices": choices, "range": range, "cli": cli}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class TargetOptions:
    TARGET: ClassVar[str] = ""
    COMMAND_HELP: ClassVar[str] = ""  # what `convert tf2<target>` writes
    # Test hooks not worth a flag ('onnx_external_data_threshold', 'mxnet_affine').
    extra: dict = option({}, "test hooks", cli=False)

    def plan_options(self) -> PlanOptions:
        """What of these options the padding plans read (convert.padding): the fields both name, the target,
        and the `conv_lowering` test hook."""
        shared = {f.name for f in dataclasses.fields(PlanOptions)} & {f.name for f in dataclasses.fields(self)}
        return PlanOptions(self.TARGET, conv_lowering=self.extra.get("conv_lowering"),
                           **{name: getattr(self, name) for name in shared})


@dataclass(frozen=True)
class TorchOptions(TargetOptions):
    TARGET: ClassVar[str] = "torch"
    COMMAND_HELP: ClassVar[str] = "Write model.py (an nn.Module) + model.pt (its state_dict)."
    nhwc: bool = option(False, "Keep TF's NHWC layout at the model's inputs and outputs.")
    static_shapes: bool = option(False, STATIC_SHAPES_HELP)


CAFFE_DIALECTS = ("bvlc", "opencv")


@dataclass(frozen=True)
class CaffeOptions(TargetOptions):
    TARGET: ClassVar[str] = "caffe"
    COMMAND_HELP: ClassVar[str] = "Write deploy.prototxt + model.caffemodel (BVLC layers; verified in OpenCV DNN)."
    caffe_pad: str = option("auto", "Asymmetric conv pads: a pad layer group, zero taps added to the kernel, a "
                            "larger symmetric pad with the extra outputs sliced (shift), or whichever of these was "
                            "measured fastest in OpenCV for the layer's kind (auto); all BVLC. 'opencv' writes four "
                            "pad values in the layer: free in OpenCV DNN, but BVLC Caffe rejects the file (kept as "
                            "an alias: it implies --caffe-dialect opencv).",
                            choices=("auto", "layer", "kernel", "shift", "opencv"))
    caffe_dialect: str = option("bvlc", "Which Caffe reads the files: 'bvlc' writes BVLC Caffe's layers only (any "
                                "Caffe runs them); 'opencv' also writes OpenCV DNN 4.x's own layers where they are "
                                "exact (Permute, Resize, four-sided conv pads): OpenCV DNN loads the files, BVLC "
                                "Caffe does not. --verify runs OpenCV DNN either way.", choices=CAFFE_DIALECTS)

    def __post_init__(self) -> None:
        # one switch for OpenCV's extensions: four pad values are one of them (--caffe-pad opencv, the older
        # spelling, asks for the dialect), and in that dialect they are the free lowering of asymmetric pads
        if self.caffe_pad == "opencv":
            object.__setattr__(self, "caffe_dialect", "opencv")
        elif self.caffe_pad == "auto" and self.caffe_dialect == "opencv":
            object.__setattr__(self, "caffe_pad", "opencv")


@dataclass(frozen=True)
class MxnetOptions(TargetOptions):
    TARGET: ClassVar[str] = "mxnet"
    COMMAND_HELP: ClassVar[str] = "Write model-symbol.json + model-0000.params (MXNet 1.x)."


@dataclass(frozen=True)
class OnnxOptions(TargetOptions):
    TARGET: ClassVar[str] = "onnx"
    COMMAND_HELP: ClassVar[str] = "Write model.onnx."
    opset: int = option(DEFAULT_OPSET, "ONNX opset.", range=(MIN_OPSET, MAX_OPSET))
    static_shapes: bool = option(False, STATIC_SHAPES_HELP)


_BY_TARGET = {cls.TARGET: cls for cls in (TorchOptions, CaffeOptions, MxnetOptions, OnnxOptions)}
OPTIONS: dict[str, type[TargetOptions]] = {target: _BY_TARGET[target] for target in TARGETS}  # the catalog's TARGETS



def _every_field() -> list[tuple[str, str, Any]]:
    """(name, type, field) of every target's options, once each (static_shapes is torch's and ONNX's)."""
    fields: dict[str, dataclasses.Field] = {}
    for cls in OPTIONS.values():
        for f in dataclasses.fields(cls):
            fields.setdefault(f.name, f)
    fields["extra"] = fields.pop("extra")  # the test hooks last
    return [(name, f.type, field(default=f.default, default_factory=f.default_factory, metadata=f.metadata))
            for name, f in fields.items()]


# Every target's options in one bag (the batch worker builds this); emitters take `options_for(target, ...)`
# of it. Made from the per-target dataclasses above, the definition (defaults included).
EmitOptions = dataclasses.make_dataclass("EmitOptions", _every_field())
EmitOptions.__module__ = __name__


@dataclass(frozen=True)
class OptionSpec:
    """One user-facing option of a target: what a flag or a manifest key needs."""

    name: str  # field name (manifest key); the flag is --name-with-dashes
    type: type
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    range: tuple[int, int] | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def option_specs(target: str) -> list[OptionSpec]:
    """The user-facing options of `target` (names, types, defaults, choices/ranges, help)."""
    cls = OPTIONS[target]
    types = {"bool": bool, "int": int, "str": str, "float": float}
    specs = []
    for f in dataclasses.fields(cls):
        if not f.metadata.get("cli", False):
            continue
        specs.append(OptionSpec(f.name, types[str(f.type)], f.default, f.metadata["help"],
                                f.metadata.get("choices"), f.metadata.get("range")))
    return specs


def all_option_specs() -> dict[str, OptionSpec]:
    """Every target's options by name (flat, as the batch manifest keys them: nhwc, caffe_pad, opset)."""
    return {spec.name: spec for target in TARGETS for spec in option_specs(target)}


def check(spec: OptionSpec, value: Any) -> None:
    """Raise ValueError (one line, what to do) when `value` is outside the option's choices/range."""
    if spec.choices is not None and value not in spec.choices:
        raise ValueError(f"{spec.flag} {value!r}: choose one of {', '.join(spec.choices)}")
    if spec.range is not None and not spec.range[0] <= int(value) <= spec.range[1]:
        raise ValueError(f"{spec.flag} {value}: choose a value from {spec.range[0]} to {spec.range[1]}")


def validate(options: TargetOptions) -> None:
    """Raise ValueError when a field is outside its choices/range (the CLI checks these itself)."""
    for spec in option_specs(options.TARGET):
        check(spec, getattr(options, spec.name))


def options_for(target: str, values: Any = None) -> TargetOptions:
    """`target`'s options from None (defaults), a mapping, its own dataclass, or any object with
    matching attributes (the all-targets `EmitOptions` the batch worker builds); other targets'
    keys are ignored."""
    cls = OPTIONS[target]
    if isinstance(values, cls):
        return values
    if values is None:
        return cls()
    get = values.get if isinstance(values, Mapping) else (lambda k, d=None: getattr(values, k, d))
    kwargs = {}
    for f in dataclasses.fields(cls):
        value = get(f.name, None)
        if value is not None:
            kwargs[f.name] = dict(value) if f.name == "extra" else value
    return cls(**kwargs)
