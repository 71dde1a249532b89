"""What every parser takes."""

from __future__ import annotations

from dataclasses import dataclass, field

# graph.metadata key: whether Keras may load the source's Lambda bytecode when the reference runs it
# (False only where the user passed --no-safe-mode on that very command); absent means True
SAFE_MODE = "keras_safe_mode"


@dataclass
class ParseOptions:
    # Source tensor/layer names; None = auto-detect (placeholders / sinks) and report the choice.
    inputs: list[str] | None = None
    outputs: list[str] | None = None
    # Shape per input in the *source* layout (e.g. NHWC (1, 224, 224, 3)). A single entry with
    # key "" applies to the only input. Unknown batch defaults to 1.
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # `--set NAME=VALUE`: values for scalar placeholders (training flags such as is_training).
    settings: dict[str, str] = field(default_factory=dict)
    # `--use-ema`: ExponentialMovingAverage shadow variables instead of the raw weights.
    use_ema: bool = False
    # `--no-safe-mode`: Keras's safe_mode=False (Lambda layers' Python bytecode may be loaded and run).
    safe_mode: bool = True
    # `--input-layout nchw|nhwc`: a rank-4 input's layout; None: NHWC unless the graph transposes it to NHWC first.
    input_layout: str | None = None
    # Filled in by the parser: what each training -> inference pass did (for conversion.json).
    records: list[dict] = field(default_factory=list)
    # Filled in by the parser for the CLI to print (e.g. "inputs auto-detected: input:0").
    notes: list[str] = field(default_factory=list)
