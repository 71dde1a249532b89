"""PyTorch modules written the way people write them by hand, and the Keras nets they should hold.

Each torch module mirrors one Keras builder below (same layers, same order of data flow) but with the
usual hand-port choices: symmetric `padding=k//2` on stride-2 convs and nn.BatchNorm2d's default eps.
`MobileNetV2` follows torchvision's mobilenet_v2 (the real torchvision cannot be installed here: it has
no CPU build for this torch): same structure and parameter names (features.N.conv.M, classifier.1).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


# ---- ResNet-style ---------------------------------------------------------------------------------
def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: bool = True) -> nn.Sequential:
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = conv_bn(cin, cout, 3, stride)
        self.conv2 = conv_bn(cout, cout, 3, act=False)
        self.shortcut = conv_bn(cin, cout, 1, stride, act=False) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return F.relu(self.conv2(self.conv1(x)) + self.shortcut(x))


class ResNetTiny(nn.Module):
    def __init__(self, width: int = 8, classes: int = 10):
        super().__init__()
        self.stem = conv_bn(3, width, 3, 2)
        self.layer1 = Block(width, width, 1)
        self.layer2 = Block(width, 2 * width, 2)
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def keras_resnet_tiny(width: int = 8, classes: int = 10, hw=(None, None)):
    import keras
    from keras import layers as L

    def bn(x, name):
        return L.BatchNormalization(name=name)(x)

    inp = keras.Input((*hw, 3))
    x = L.ReLU()(bn(L.Conv2D(width, 3, 2, "same", use_bias=False, name="stem_conv")(inp), "stem_bn"))

    def block(x, cout, stride, name):
        y = L.ReLU()(bn(L.Conv2D(cout, 3, stride, "same", use_bias=False, name=f"{name}_c1")(x), f"{name}_b1"))
        y = bn(L.Conv2D(cout, 3, 1, "same", use_bias=False, name=f"{name}_c2")(y), f"{name}_b2")
        if stride != 1 or x.shape[-1] != cout:
            x = bn(L.Conv2D(cout, 1, stride, use_bias=False, name=f"{name}_sc")(x), f"{name}_sb")
        return L.ReLU()(L.Add()([x, y]))  # shortcut first: the module adds it second

    x = block(block(x, width, 1, "l1"), 2 * width, 2, "l2")
    out = L.Dense(classes, name="fc")(L.GlobalAveragePooling2D()(x))
    return keras.Model(inp, out)


# ---- MobileNet-style with a dense head after flatten (NHWC flatten order in TF) ---------------------
class MobileTiny(nn.Module):
    def __init__(self, classes: int = 5, groups_dw: bool = True, mid: int = 16, with_bn2: bool = True,
                 stem_act: str = "ReLU6"):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8, eps=1e-3),
                                  getattr(nn, stem_act)())
        dw = [nn.Conv2d(8, 8, 3, 2, 1, groups=8 if groups_dw else 1, bias=False)]
        dw += [nn.BatchNorm2d(8, eps=1e-3)] if with_bn2 else []
        self.dw = nn.Sequential(*dw, nn.ReLU6())
        self.pw = nn.Sequential(nn.Conv2d(8, mid, 1, bias=False), nn.BatchNorm2d(mid, eps=1e-3), nn.ReLU6())
        self.head = nn.Linear(mid * 4 * 4, classes)

    def forward(self, x):
        return self.head(torch.flatten(self.pw(self.dw(self.stem(x))), 1))


def keras_mobile_tiny(classes: int = 5):
    import keras
    from keras import layers as L

    inp = keras.Input((16, 16, 3))
    x = L.Conv2D(8, 3, 2, "same", use_bias=False, name="stem")(inp)
    x = L.ReLU(6.0)(L.BatchNormalization(name="stem_bn")(x))
    x = L.DepthwiseConv2D(3, 2, "same", use_bias=False, name="dw")(x)
    x = L.ReLU(6.0)(L.BatchNormalization(name="dw_bn")(x))
    x = L.Conv2D(16, 1, use_bias=False, name="pw")(x)
    x = L.ReLU(6.0)(L.BatchNormalization(name="pw_bn")(x))
    out = L.Dense(classes, name="head")(L.Flatten()(x))
    return keras.Model(inp, out)


# ---- the TF1 checkpoints of tests/support/tf_models.py, ported by hand -----------------------------
def conv_bn_relu6(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU6())


class MobileNetV1Tiny(nn.Module):
    """tf_models.build_mobilenet_v1_tiny at 32x32 (one depthwise conv with channel multiplier 2)."""

    def __init__(self):
        super().__init__()
        self.conv0 = conv_bn_relu6(3, 8, 3, 2)
        blocks, cin = [], 8
        for stride, cout, mult in [(1, 16, 1), (2, 24, 2), (2, 32, 1)]:
            blocks += [conv_bn_relu6(cin, cin * mult, 3, stride, groups=cin), conv_bn_relu6(cin * mult, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.logits = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        return F.softmax(self.logits(torch.flatten(self.blocks(self.conv0(x)), 1)), dim=1)


class ResNetV1Tiny(nn.Module):
    """tf_models.build_resnet_v1_tiny at 32x32: conv2d_fixed_padding (symmetric: right as written),
    max pool 3x3/2 SAME (TF pads it (0,1) at 16: the hand port's padding=1 is not)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 5, 2, 2, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.block1 = Block(8, 8, 1)
        self.block2 = Block(8, 16, 2)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.block2(self.block1(x))
        return torch.softmax(self.fc(x.flatten(1)), 1)


# ---- two same-shaped siblings: matched by where they are used, not by order -----------------------
class Siblings(nn.Module):
    def __init__(self, right_act: str = "tanh", fuse_bias: bool = True, real_init: bool = False):
        super().__init__()
        if real_init:  # reads a tensor's value in __init__: cannot be built on the meta device
            assert float(torch.ones(())) == 1.0
        self.right = nn.Conv2d(4, 4, 3, padding=1)  # defined (and run) before `left`
        self.left = nn.Conv2d(4, 4, 3, padding=1)
        self.fuse = nn.Conv2d(8, 6, 1, bias=fuse_bias)
        self.right_act = getattr(torch, right_act)

    def forward(self, x):
        r = self.right(x)
        lft = torch.sigmoid(self.left(x))
        return self.fuse(torch.cat([lft, self.right_act(r)], 1))


def keras_siblings():
    import keras
    from keras import layers as L

    inp = keras.Input((None, None, 4))
    a = L.Conv2D(4, 3, padding="same", activation="sigmoid", name="left")(inp)
    b = L.Conv2D(4, 3, padding="same", activation="tanh", name="right")(inp)
    return keras.Model(inp, L.Conv2D(6, 1, name="fuse")(L.Concatenate()([a, b])))


# ---- torchvision's mobilenet_v2, written out (names and structure as torchvision's) -----------------
def _make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class Conv2dNormActivation(nn.Sequential):
    def __init__(self, cin, cout, k=3, stride=1, groups=1):
        super().__init__(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = [Conv2dNormActivation(inp, hidden, k=1)] if expand_ratio != 1 else []
        layers += [Conv2dNormActivation(hidden, hidden, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0):
        super().__init__()
        settings = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                    [6, 320, 1, 1]]
        cin = _make_divisible(32 * width_mult)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult))
        features: list[nn.Module] = [Conv2dNormActivation(3, cin, stride=2)]
        for t, c, n, s in settings:
            cout = _make_divisible(c * width_mult)
            for i in range(n):
                features.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        features.append(Conv2dNormActivation(cin, self.last_channel, k=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


def mobilenet_v2(**kwargs) -> MobileNetV2:
    """torchvision.models.mobilenet_v2's signature (weights aside)."""
    return MobileNetV2(**kwargs)


# ---- fixtures -------------------------------------------------------------------------------------
def randomize(model, seed: int = 0):
    """Realistic random weights (Keras' initial ones make batch norm an identity and outputs tiny):
    kernels He-scaled, batch-norm statistics and scales spread out, biases small."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for layer in model.layers:
        values = []
        for var in layer.weights:
            name, shape = var.path.rsplit("/", 1)[-1], tuple(var.shape)
            if name in ("moving_variance", "gamma"):
                values.append(rng.uniform(0.5, 1.5, shape))
            elif name in ("moving_mean", "beta", "bias"):
                values.append(rng.normal(0, 0.2, shape))
            else:  # kernel / depthwise_kernel: fan-in is every axis but the last (depthwise: kh * kw)
                fan_in = int(np.prod(shape[:-1])) if "depthwise" not in name else int(np.prod(shape[:2]))
                values.append(rng.normal(0, np.sqrt(2.0 / fan_in), shape))
        if values:
            layer.set_weights([v.astype("float32") for v in values])
    return model


def keras_mobilenet_v2(alpha: float = 0.35, classes: int = 10):
    """keras.applications.MobileNetV2 at any input size, its top (global pooling + Dense) added by hand:
    Keras only builds its own top for a static input size."""
    import keras

    base = keras.applications.MobileNetV2(input_shape=(None, None, 3), alpha=alpha, weights=None, include_top=False,
                                          pooling="avg")
    return keras.Model(base.input, keras.layers.Dense(classes, name="predictions")(base.output))


# ---- transposed convolutions ---------------------------------------------------
class Upsampler(nn.Module):
    """The usual hand port of Keras' Conv2DTranspose(k=3, s=2, 'same'): padding=1, output_padding=1 gives
    the right size but keeps the full output's rows [1, 2n+1), TF keeps [0, 2n). The k=4 one is right."""

    def __init__(self, up_padding: int = 1, up_output_padding: int = 1):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.up = nn.ConvTranspose2d(8, 6, 3, 2, padding=up_padding, output_padding=up_output_padding)
        self.up2 = nn.ConvTranspose2d(6, 3, 4, 2, padding=1)

    def forward(self, x):
        return self.up2(torch.relu(self.up(torch.relu(self.conv(x)))))


def keras_upsampler():
    import keras
    from keras import layers as L

    inp = keras.Input((None, None, 4))
    x = L.Conv2D(8, 3, padding="same", activation="relu", name="conv")(inp)
    x = L.Conv2DTranspose(6, 3, strides=2, padding="same", activation="relu", name="up")(x)
    return keras.Model(inp, L.Conv2DTranspose(3, 4, strides=2, padding="same", name="up2")(x))


class Upsampler3d(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose3d(3, 2, 3, 2, padding=1, output_padding=1)

    def forward(self, x):
        return self.up(x)


def keras_upsampler_3d():
    import keras
    from keras import layers as L

    inp = keras.Input((5, 6, 7, 3))
    return keras.Model(inp, L.Conv3DTranspose(2, 3, strides=2, padding="same", name="up")(inp))


class Deconv(nn.Module):
    """TF1's tf.nn.conv2d_transpose (Conv2DBackpropInput) + bias_add, ported by hand."""

    def __init__(self, padding: int = 1, output_padding: int = 1, out_channels: int = 4):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(3, out_channels, 3, 2, padding=padding, output_padding=output_padding)

    def forward(self, x):
        return self.deconv(x)


def tf1_deconv(x, out_hw: tuple[int, int] = (14, 14), padding: str = "SAME", seed: int = 5):
    """tf.nn.conv2d_transpose to `out_hw` (stride 2, 3x3) + bias_add on an NHWC placeholder."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    kernel = tf.constant(rng.normal(0, 0.3, (3, 3, 4, 3)).astype(np.float32))
    bias = tf.constant(rng.normal(0, 0.2, 4).astype(np.float32))
    y = tf.nn.conv2d_transpose(x, kernel, [int(x.shape[0]), *out_hw, 4], strides=2, padding=padding)
    return tf.identity(tf.nn.bias_add(y, bias), name="y")


# ---- a BERT encoder as Hugging Face's BertModel writes it ------------------------
class BertEmbeddings(nn.Module):
    def __init__(self, vocab_size, hidden, max_positions, type_vocab, eps):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden)
        self.position_embeddings = nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(0.1)

    def forward(self, input_ids, token_type_ids):
        # HF slices a position_ids buffer (its own fx tracer handles that); torch.fx wants arange
        position_ids = torch.arange(input_ids.size(1)).unsqueeze(0)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads, scaled: bool = True, swap_qk: bool = False):
        super().__init__()
        self.scaled, self.swap_qk = scaled, swap_qk  # a forgotten scale; q and k in each other's places
        self.num_attention_heads, self.attention_head_size = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(0.1)

    def transpose_for_scores(self, x):
        x = x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size))
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        query = self.transpose_for_scores(self.query(hidden_states))
        key = self.transpose_for_scores(self.key(hidden_states))
        value = self.transpose_for_scores(self.value(hidden_states))
        if self.swap_qk:  # the module's `key` computes what TF's query does: paired by where it is used
            query, key = key, query
        scores = torch.matmul(query, key.transpose(-1, -2))
        if self.scaled:
            scores = scores / (self.attention_head_size ** 0.5)
        probs = self.dropout(nn.functional.softmax(scores + attention_mask, dim=-1))
        context = torch.matmul(probs, value).permute(0, 2, 1, 3).contiguous()
        return context.view(context.size()[:-2] + (self.num_attention_heads * self.attention_head_size,))


class BertSelfOutput(nn.Module):
    """BertSelfOutput (and BertOutput, with `width` the intermediate size): dense, dropout, residual LayerNorm."""

    def __init__(self, hidden, eps, width=None):
        super().__init__()
        self.dense = nn.Linear(width or hidden, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, hidden, heads, eps):
        super().__init__()
        self.self = BertSelfAttention(hidden, heads)
        self.output = BertSelfOutput(hidden, eps)

    def forward(self, hidden_states, attention_mask):
        return self.output(self.self(hidden_states, attention_mask), hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, hidden, intermediate, act):
        super().__init__()
        self.dense = nn.Linear(hidden, intermediate)
        self.intermediate_act_fn = nn.GELU(approximate="tanh" if act == "gelu_new" else "none")

    def forward(self, x):
        return self.intermediate_act_fn(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, intermediate, eps, act):
        super().__init__()
        self.attention = BertAttention(hidden, heads, eps)
        self.intermediate = BertIntermediate(hidden, intermediate, act)
        self.output = BertSelfOutput(hidden, eps, intermediate)

    def forward(self, hidden_states, attention_mask):
        attention = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(attention), attention)


class BertEncoder(nn.Module):
    def __init__(self, layers, *args):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(*args) for _ in range(layers)])

    def forward(self, hidden_states, attention_mask):
        for layer in self.layer:
            hidden_states = layer(hidden_states, attention_mask)
        return hidden_states


class BertPooler(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class BertModel(nn.Module):
    """transformers.BertModel's structure and parameter names (transformers is not installed here):
    forward(input_ids, attention_mask, token_type_ids) -> (sequence_output, pooled_output).
    BertConfig's defaults: layer_norm_eps 1e-12, hidden_act "gelu" (erf); "gelu_new" is the tanh one."""

    def __init__(self, vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=24, max_position_embeddings=16, type_vocab_size=2, layer_norm_eps=1e-12,
                 hidden_act="gelu"):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab_size, hidden_size, max_position_embeddings, type_vocab_size,
                                         layer_norm_eps)
        self.encoder = BertEncoder(num_hidden_layers, hidden_size, num_attention_heads, intermediate_size,
                                   layer_norm_eps, hidden_act)
        self.pooler = BertPooler(hidden_size)

    def forward(self, input_ids, attention_mask, token_type_ids):
        extended = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        sequence = self.encoder(self.embeddings(input_ids, token_type_ids), extended)
        return sequence, self.pooler(sequence)


class KerasStyleEncoder(nn.Module):
    """What keras_encoder below computes, written the usual PyTorch way: nn.Embedding, separate q/k/v
    nn.Linear (Keras keeps each as a (d_model, heads, head_dim) kernel), nn.LayerNorm at its default eps
    (Keras' LayerNormalization uses 1e-3) and nn.GELU."""

    def __init__(self, vocab: int = 30, width: int = 16, heads: int = 2, hidden: int = 24, eps: float = 1e-5,
                 scaled: bool = True, swap_qk: bool = False):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.norm0 = nn.LayerNorm(width, eps=eps)
        self.attn = BertSelfAttention(width, heads, scaled, swap_qk)
        self.attn_out = nn.Linear(width, width)
        self.norm1 = nn.LayerNorm(width, eps=eps)
        self.ff1 = nn.Linear(width, hidden)
        self.act = nn.GELU()
        self.ff2 = nn.Linear(hidden, width)
        self.norm2 = nn.LayerNorm(width, eps=eps)

    def forward(self, ids):
        x = self.norm0(self.embed(ids))
        zeros = torch.zeros(1, 1, 1, ids.size(1))  # no mask: BertSelfAttention adds one
        x = self.norm1(x + self.attn_out(self.attn(x, zeros)))
        return self.norm2(x + self.ff2(self.act(self.ff1(x))))


def keras_encoder(vocab: int = 30, width: int = 16, heads: int = 2, hidden: int = 24):
    import keras
    from keras import layers as L

    ids = keras.Input((None,), dtype="int32")
    x = L.LayerNormalization(name="norm0")(L.Embedding(vocab, width, name="embed")(ids))
    att = L.MultiHeadAttention(heads, width // heads, name="attn")(x, x)
    x = L.LayerNormalization(name="norm1")(L.Add()([x, att]))
    ff = L.Dense(width, name="ff2")(L.Dense(hidden, activation="gelu", name="ff1")(x))
    return keras.Model(ids, L.LayerNormalization(name="norm2")(L.Add()([x, ff])))


class MhaEncoder(nn.Module):
    """keras_encoder above with torch's own attention: nn.MultiheadAttention (one fused in_proj_weight for
    TF's separate query/key/value kernels), layer norms at Keras' eps."""

    def __init__(self, vocab: int = 30, width: int = 16, heads: int = 2, hidden: int = 24, eps: float = 1e-3):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.norm0 = nn.LayerNorm(width, eps=eps)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(width, eps=eps)
        self.ff1 = nn.Linear(width, hidden)
        self.act = nn.GELU()
        self.ff2 = nn.Linear(hidden, width)
        self.norm2 = nn.LayerNorm(width, eps=eps)

    def forward(self, ids):
        x = self.norm0(self.embed(ids))
        attended, _ = self.attn(x, x, x)
        x = self.norm1(x + attended)
        return self.norm2(x + self.ff2(self.act(self.ff1(x))))


# ---- padding in forward: timm's Conv2dSame style (a conv subclass that pads, then calls F.conv2d) --------
class Conv2dSame(nn.Conv2d):
    """TF's SAME in forward, from the runtime size (timm's Conv2dSame; `symmetric`: a wrong port padding k//2)."""

    def __init__(self, *args, symmetric: bool = False, **kwargs):
        super().__init__(*args, padding=0, **kwargs)
        self.symmetric = symmetric

    def forward(self, x):
        if self.symmetric:
            p = self.kernel_size[0] // 2
            x = nn.functional.pad(x, (p, p, p, p))
        else:
            pads = []
            for size, k, s in zip(x.shape[-2:], self.kernel_size, self.stride):
                total = max((-(-size // s) - 1) * s + k - size, 0)
                pads.append((total // 2, total - total // 2))
            x = nn.functional.pad(x, (*pads[1], *pads[0]))
        return nn.functional.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class SameNet(nn.Module):
    def __init__(self, symmetric: bool = False):
        super().__init__()
        self.conv = Conv2dSame(3, 8, 3, stride=2, symmetric=symmetric)
        self.dw = Conv2dSame(8, 8, 3, stride=2, groups=8, symmetric=symmetric)
        self.act1, self.act2 = nn.ReLU(), nn.ReLU()

    def forward(self, x):
        return self.act2(self.dw(self.act1(self.conv(x))))


def keras_same_net():
    import keras
    from keras import layers as L

    x = keras.Input((None, None, 3))
    y = L.ReLU()(L.Conv2D(8, 3, strides=2, padding="same", name="conv")(x))
    y = L.ReLU()(L.DepthwiseConv2D(3, strides=2, padding="same", name="dw")(y))
    return keras.Model(x, y)
