"""`--into`'s read-back of parameters the module uses only through a computation TF folded away (pure torch, no
TF: seconds). A table gathered at a constant index (Swin's relative position bias) is recovered from the folded
constant by replaying the module's own selection; a computation that is not a selection is refused. A weight-normed
conv (Wav2Vec2's positional conv) gets g and v that give TF's kernel back. A parameter forward never reads is
found."""

from __future__ import annotations

import numpy as np
import pytest

from tf_convert.app.into_module import derive, record, trace, transforms
from tf_convert.app.into_module.layers import Layer
from tf_convert.app.into_module.mismatch import ArchitectureMismatch
from tf_convert.convert.errors import UnsupportedError

torch = pytest.importorskip("torch")
nn = torch.nn


class RelativeBias(nn.Module):
    """Scores plus a bias gathered from a table at a constant index (Swin's), then `how` applied to it."""

    def __init__(self, how: str = "select"):
        super().__init__()
        self.table = nn.Parameter(torch.randn(7, 2))
        coords = torch.arange(4)
        self.register_buffer("index", (coords[:, None] - coords[None, :] + 3).reshape(-1), persistent=False)
        self.unused = nn.Parameter(torch.randn(3))
        self.how = how

    def forward(self, scores):
        bias = self.table[self.index].view(4, 4, 2).permute(2, 0, 1).contiguous().unsqueeze(0)
        if self.how == "scale":
            bias = bias * 2
        return scores + bias


def _recorded(model):
    return record.record(model, [torch.zeros(3, 2, 4, 4)], lambda *a: AssertionError(a))


def _selected(recorded) -> Layer:
    owners = trace._owners(recorded)
    add = next(n for n in recorded.graph.nodes if n.op == "call_function" and record.canonical(n.target) == "add")
    return trace._selected_term(add, recorded, owners)


def test_a_table_gathered_at_a_constant_index_is_read_back_from_the_folded_constant():
    model = RelativeBias().eval()
    recorded = _recorded(model)
    layer = _selected(recorded)
    assert layer is not None and layer.attrs["param"] == "table" and layer.shape == (1, 2, 4, 4)
    want = np.random.default_rng(0).standard_normal((7, 2)).astype(np.float32)
    folded = want[model.index.numpy()].reshape(4, 4, 2).transpose(2, 0, 1)[None]  # what TF's graph adds
    tensor, param = layer.attrs["selected"]
    got = derive.parameter_value(recorded, model, tensor, param, "table", folded, "bias")
    np.testing.assert_array_equal(got, want)


def test_a_computation_on_the_table_is_refused():
    model = RelativeBias("scale").eval()
    recorded = _recorded(model)
    layer = _selected(recorded)
    tensor, param = layer.attrs["selected"]
    with pytest.raises(ArchitectureMismatch, match="computes from its entries"):
        derive.parameter_value(recorded, model, tensor, param, "table", np.zeros((1, 2, 4, 4), np.float32), "bias")


def test_one_entry_with_two_values_in_tf_is_refused():
    model = RelativeBias().eval()
    recorded = _recorded(model)
    tensor, param = _selected(recorded).attrs["selected"]
    folded = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)  # the diagonal's entries differ
    with pytest.raises(ArchitectureMismatch, match="different values"):
        derive.parameter_value(recorded, model, tensor, param, "table", folded, "bias")


def test_a_parameter_forward_never_reads_is_found():
    assert trace.unread_parameters(_recorded(RelativeBias().eval())) == {"unused"}


def test_weight_norm_gets_g_and_v_that_give_the_kernel_back():
    conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 6, 5, groups=2), name="weight", dim=2)
    kernel = np.random.default_rng(1).standard_normal((6, 2, 5)).astype(np.float32)
    values = {"conv.weight": kernel, "conv.bias": np.zeros(6, np.float32)}
    records = [{"parameter": "conv.weight", "shape": [6, 2, 5], "tf": "k", "transform": "as is"}]
    layer = Layer("conv", "conv", [], {}, (), conv)
    transforms.parametrized(values, records, [(layer, layer)])
    assert sorted(values) == ["conv.bias", "conv.parametrizations.weight.original0",
                              "conv.parametrizations.weight.original1"]
    conv.load_state_dict({k.removeprefix("conv."): torch.from_numpy(v) for k, v in values.items()})
    np.testing.assert_allclose(conv.weight.detach().numpy(), kernel, rtol=1e-6, atol=1e-7)
    assert [r["parameter"] for r in records] == ["conv.parametrizations.weight.original0",
                                                 "conv.parametrizations.weight.original1"]


def test_another_parametrization_is_refused_naming_the_module():
    class Doubled(nn.Module):
        def forward(self, w):
            return w * 2

    linear = nn.Linear(3, 3)
    nn.utils.parametrize.register_parametrization(linear, "weight", Doubled())
    layer = Layer("head", "linear", [], {}, (), linear)
    with pytest.raises(UnsupportedError, match="head"):
        transforms.parametrized({"head.weight": np.zeros((3, 3), np.float32)}, [], [(layer, layer)])


class MaskedRelativeBias(RelativeBias):
    """Swin's shifted windows in transformers 5: the bias plus a constant shift mask (0 or -100, built from `arange`
    in forward), added to the scores as one tensor. TF adds the mask apart, a constant read through."""

    def forward(self, scores):
        bias = self.table[self.index].view(4, 4, 2).permute(2, 0, 1).contiguous().unsqueeze(0)
        region = (torch.arange(4) >= 2).float()
        mask = (region[None, :] - region[:, None]).ne(0).float() * -100.0
        return scores + (bias + mask[None, None].expand(3, 1, 4, 4))


def test_a_constant_mask_added_to_the_selection_is_taken_apart():
    model = MaskedRelativeBias().eval()
    recorded = _recorded(model)
    layer = _selected(recorded)
    assert layer is not None and layer.attrs["param"] == "table" and layer.shape == (1, 2, 4, 4)
    want = np.random.default_rng(1).standard_normal((7, 2)).astype(np.float32)
    folded = want[model.index.numpy()].reshape(4, 4, 2).transpose(2, 0, 1)[None]
    tensor, param = layer.attrs["selected"]
    np.testing.assert_array_equal(derive.parameter_value(recorded, model, tensor, param, "table", folded, "bias"), want)


@pytest.mark.parametrize("shifts, dims, want", [
    ((-1, -1), (1, 2), ((4, 3), (4, 3))),
    (2, 1, ((4, 2),)),
    ((4, 1), (1, 2), ((4, 1),)),  # a whole turn moves nothing
])
def test_torch_roll_is_one_roll_layer_by_axis_sizes(shifts, dims, want):
    class Roll(nn.Module):
        def forward(self, x):
            return torch.roll(x * 2, shifts=shifts, dims=dims)

    recorded = record.record(Roll().eval(), [torch.zeros(2, 4, 4, 3)], lambda *a: AssertionError(a))
    rolls = [layer for layer in trace.torch_layers(recorded).layers.values() if layer.kind == "roll"]
    assert [r.attrs["shifts"] for r in rolls] == [want]
