"""One-operator `.tflite` files written with the schema's own builders (the `tflite` package, flatbuffers): the
kernels TFLite's converter no longer writes from Keras or TF models (UNIDIRECTIONAL_SEQUENCE_RNN, RNN, the
bidirectional ones), as the schema defines them, so that TFLite's interpreter runs them as the reference."""
from __future__ import annotations

import flatbuffers
import numpy as np
import tflite


def one_operator(builtin: str, options: str, option_values: dict, tensors: list[tuple], inputs: list[int],
                 outputs: list[int], op_inputs: list[int]) -> bytes:
    """A model of one subgraph running one operator. tensors: (name, shape, float32 value or None, is_variable);
    op_inputs may hold -1 (an optional input left out); options: the options table's name (SequenceRNNOptions)
    and option_values its fields by accessor name."""
    b = flatbuffers.Builder(1024)

    def ints(start, values):
        start(b, len(values))
        for v in reversed(values):
            b.PrependInt32(v)
        return b.EndVector()

    buffers = [None] + [t[2] for t in tensors if t[2] is not None]
    buffer_offsets = []
    for data in buffers:
        raw = None
        if data is not None:
            raw = b.CreateNumpyVector(np.frombuffer(np.ascontiguousarray(data, np.float32).tobytes(), np.uint8))
        tflite.BufferStart(b)
        if raw is not None:
            tflite.BufferAddData(b, raw)
        buffer_offsets.append(tflite.BufferEnd(b))
    tensor_offsets, k = [], 1
    for name, shape, value, variable in tensors:
        n = b.CreateString(name)
        s = ints(tflite.TensorStartShapeVector, list(shape))
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, s)
        tflite.TensorAddType(b, tflite.TensorType.FLOAT32)
        tflite.TensorAddName(b, n)
        tflite.TensorAddBuffer(b, k if value is not None else 0)
        k += value is not None
        tflite.TensorAddIsVariable(b, bool(variable))
        tensor_offsets.append(tflite.TensorEnd(b))
    getattr(tflite, f"{options}Start")(b)
    for key, v in option_values.items():
        getattr(tflite, f"{options}Add{key}")(b, v)
    opts = getattr(tflite, f"{options}End")(b)
    oi, oo = ints(tflite.OperatorStartInputsVector, op_inputs), ints(tflite.OperatorStartOutputsVector, outputs)
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, 0)
    tflite.OperatorAddInputs(b, oi)
    tflite.OperatorAddOutputs(b, oo)
    tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, options))
    tflite.OperatorAddBuiltinOptions(b, opts)
    operator = tflite.OperatorEnd(b)

    def table_vector(start, items):
        start(b, len(items))
        for item in reversed(items):
            b.PrependUOffsetTRelative(item)
        return b.EndVector()

    tv = table_vector(tflite.SubGraphStartTensorsVector, tensor_offsets)
    si, so = ints(tflite.SubGraphStartInputsVector, inputs), ints(tflite.SubGraphStartOutputsVector, outputs)
    ov = table_vector(tflite.SubGraphStartOperatorsVector, [operator])
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tv)
    tflite.SubGraphAddInputs(b, si)
    tflite.SubGraphAddOutputs(b, so)
    tflite.SubGraphAddOperators(b, ov)
    sub = tflite.SubGraphEnd(b)
    code = getattr(tflite.BuiltinOperator, builtin)
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddBuiltinCode(b, code)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
    tflite.OperatorCodeAddVersion(b, 1)
    opcode = tflite.OperatorCodeEnd(b)
    codes = table_vector(tflite.ModelStartOperatorCodesVector, [opcode])
    subs = table_vector(tflite.ModelStartSubgraphsVector, [sub])
    bufs = table_vector(tflite.ModelStartBuffersVector, buffer_offsets)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes)
    tflite.ModelAddSubgraphs(b, subs)
    tflite.ModelAddBuffers(b, bufs)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def rnn_file(kind: str, n=2, t=5, f=3, u=4, major=False, activation=4, merge=False, clip=0.0,
             variant: str = "") -> bytes:
    """A recurrent kernel's file: kind rnn, seq_rnn, bi_rnn, uni_lstm or bi_lstm (activation: the schema's
    ActivationFunctionType, 4 TANH, 1 RELU; clip: an LSTM's cell_clip); its state in variable tensors. A
    uni_lstm `variant` adds what the schema allows besides: peephole, projection, layer_norm, or cifg (no input
    gate)."""
    rng = np.random.default_rng(1)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    def ys(units: int) -> tuple[int, ...]:
        return (t, n, units) if major else (n, t, units)

    xs = (t, n, f) if major else (n, t, f)
    if kind == "rnn":
        tensors = [("x", (n, f), None, False), ("w", (u, f), w(u, f), False), ("r", (u, u), w(u, u), False),
                   ("b", (u,), w(u), False), ("h", (n, u), None, True), ("y", (n, u), None, False)]
        return one_operator("RNN", "RNNOptions", {"FusedActivationFunction": activation}, tensors, [0], [5],
                            [0, 1, 2, 3, 4])
    if kind == "seq_rnn":
        tensors = [("x", xs, None, False), ("w", (u, f), w(u, f), False), ("r", (u, u), w(u, u), False),
                   ("b", (u,), w(u), False), ("h", (n, u), None, True), ("y", ys(u), None, False)]
        return one_operator("UNIDIRECTIONAL_SEQUENCE_RNN", "SequenceRNNOptions",
                            {"FusedActivationFunction": activation, "TimeMajor": major}, tensors, [0], [5],
                            [0, 1, 2, 3, 4])
    if kind == "bi_rnn":
        tensors = [("x", xs, None, False)]
        for side in ("fw", "bw"):
            tensors += [(f"{side}_w", (u, f), w(u, f), False), (f"{side}_r", (u, u), w(u, u), False),
                        (f"{side}_b", (u,), w(u), False), (f"{side}_h", (n, u), None, True)]
        outs = [("y", ys(2 * u), None, False)] if merge else [("y_fw", ys(u), None, False),
                                                              ("y_bw", ys(u), None, False)]
        tensors += outs
        return one_operator("BIDIRECTIONAL_SEQUENCE_RNN", "BidirectionalSequenceRNNOptions",
                            {"FusedActivationFunction": activation, "TimeMajor": major, "MergeOutputs": merge},
                            tensors, [0], list(range(9, 9 + len(outs))), list(range(9)) + [-1, -1, -1])
    # LSTMs
    tensors = [("x", xs, None, False)]
    def add(name: str, shape: tuple[int, ...], value: np.ndarray | None, variable: bool = False) -> int:
        tensors.append((name, shape, value, variable))
        return len(tensors) - 1

    def side(tag: str) -> tuple[list[int], list[int]]:
        """Inputs 1-17 of the unidirectional kernel (gates i, f, c, o; no peepholes or projection), the states."""
        inputs = [add(f"{tag}_wi{g}", (u, f), w(u, f)) for g in "ifco"]
        inputs += [add(f"{tag}_wr{g}", (u, u), w(u, u)) for g in "ifco"] + [-1] * 3
        inputs += [add(f"{tag}_b{g}", (u,), w(u)) for g in "ifco"] + [-1, -1]
        return inputs, [add(f"{tag}_h", (n, u), None, True), add(f"{tag}_c", (n, u), None, True)]
    fw, fw_state = side("fw")
    if kind == "uni_lstm":
        norms = [-1] * 4
        if variant == "peephole":
            fw[8:11] = [add(f"peephole_{g}", (u,), w(u)) for g in "ifo"]
        elif variant == "projection":
            fw[15] = add("projection", (u, u), w(u, u))
        elif variant == "layer_norm":
            norms = [add(f"norm_{g}", (u,), w(u)) for g in "ifco"]
        elif variant == "cifg":
            fw[0] = fw[4] = fw[11] = -1  # the input gate's input and recurrent weights and its bias
        out = add("y", ys(u), None)
        return one_operator("UNIDIRECTIONAL_SEQUENCE_LSTM", "UnidirectionalSequenceLSTMOptions",
                            {"FusedActivationFunction": activation, "TimeMajor": major, "CellClip": clip}, tensors,
                            [0], [out], [0] + fw + fw_state + norms)
    bw, bw_state = side("bw")
    first = len(tensors)
    outs = [("y", ys(2 * u), None, False)] if merge else [("y_fw", ys(u), None, False), ("y_bw", ys(u), None, False)]
    tensors += outs
    return one_operator("BIDIRECTIONAL_SEQUENCE_LSTM", "BidirectionalSequenceLSTMOptions",
                        {"FusedActivationFunction": activation, "TimeMajor": major, "MergeOutputs": merge,
                         "CellClip": clip}, tensors, [0], list(range(first, first + len(outs))),
                        [0] + fw + bw + fw_state + bw_state + [-1] * 9)
