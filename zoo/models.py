"""Which keras.applications models the zoo holds, at which input sizes.

Each model is built with `weights=None` and a fixed seed. Two sizes per model where the
architecture allows: the native one and an odd/even partner, because stride-2 SAME pads differ
between odd and even inputs.

The classifier head keeps its 1000-class Dense layer but ends in logits
(`classifier_activation=None`): a softmax over the near-uniform scores of an untrained network
would squash every difference below the verification threshold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ZooModel:
    name: str  # slug used by the Makefile (`make zoo-<name>`) and the cache
    keras_name: str  # keras.applications attribute
    sizes: tuple[int, ...]
    kwargs: dict[str, Any] = field(default_factory=lambda: {"classifier_activation": None})
    note: str = ""


MODELS: tuple[ZooModel, ...] = (
    ZooModel("mobilenet", "MobileNet", (224, 225)),
    ZooModel("mobilenet_v2", "MobileNetV2", (224, 225)),
    ZooModel("mobilenet_v3_small", "MobileNetV3Small", (224, 225)),
    ZooModel("mobilenet_v3_large", "MobileNetV3Large", (224, 225)),
    ZooModel("resnet50", "ResNet50", (224, 225)),
    ZooModel("resnet50_v2", "ResNet50V2", (224, 225)),
    ZooModel("efficientnet_b0", "EfficientNetB0", (224, 225)),
    ZooModel("efficientnet_v2_b0", "EfficientNetV2B0", (224, 225)),
    ZooModel("xception", "Xception", (299, 224)),
    ZooModel("inception_v3", "InceptionV3", (299, 224)),
    ZooModel("inception_resnet_v2", "InceptionResNetV2", (299, 224)),
    ZooModel("densenet121", "DenseNet121", (224, 225)),
    ZooModel("nasnet_mobile", "NASNetMobile", (224, 225)),
    ZooModel("vgg16", "VGG16", (224, 225)),
    ZooModel("convnext_tiny", "ConvNeXtTiny", (224, 225)),
)

BY_NAME = {m.name: m for m in MODELS}


def get(name: str) -> ZooModel:
    """Look a model up by slug or by its keras.applications name."""
    for m in MODELS:
        if name in (m.name, m.keras_name):
            return m
    raise KeyError(f"unknown zoo model {name!r}; known: {', '.join(BY_NAME)}")
