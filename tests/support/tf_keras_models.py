"""Small models built with tf_keras the way published Keras models are (GAN tutorials, CRNN, DeepSpeech,
Pix2Pix), for the Keras reader's tests. Each builder returns (model, {input name: shape with batch}) with
non-trivial batch-norm statistics; nothing is trained.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

LATENT = 8


def _keras():
    import tf_keras

    tf_keras.utils.set_random_seed(11)
    return tf_keras


def randomise(model: Any, seed: int = 0) -> None:
    """Batch-norm statistics and scales away from 0/1, in nested models too, so folding mistakes show."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if type(layer).__name__ == "BatchNormalization":
            layer.set_weights([rng.uniform(0.5, 1.5, w.shape).astype("float32") for w in layer.weights])
        elif hasattr(layer, "layers"):
            randomise(layer, seed + 1)


def dcgan_generator(K: Any) -> Any:
    """The TF DCGAN tutorial's generator, small: Dense -> BN -> LeakyReLU -> Reshape -> Conv2DTranspose x2."""
    return K.Sequential([
        K.layers.Dense(4 * 4 * 8, use_bias=False, input_shape=(LATENT,)),
        K.layers.BatchNormalization(), K.layers.LeakyReLU(),
        K.layers.Reshape((4, 4, 8)),
        K.layers.Conv2DTranspose(8, 5, strides=2, padding="same", use_bias=False),
        K.layers.BatchNormalization(), K.layers.LeakyReLU(),
        K.layers.Conv2DTranspose(3, 5, strides=2, padding="same", activation="tanh"),
    ], name="generator")


def dcgan_discriminator(K: Any) -> Any:
    return K.Sequential([
        K.layers.Conv2D(8, 5, strides=2, padding="same", input_shape=(16, 16, 3)), K.layers.LeakyReLU(0.2),
        K.layers.Dropout(0.3),
        K.layers.Conv2D(16, 5, strides=2, padding="same"), K.layers.LeakyReLU(0.2),
        K.layers.Flatten(), K.layers.Dense(1),
    ], name="discriminator")


def gan_nested() -> tuple[Any, dict]:
    """A Model holding a Model holding a Sequential (the GAN files' shape), three deep, with a layer shared
    by two calls and a frozen discriminator: tf_keras writes the Sequential's weights without its name."""
    K = _keras()
    generator, discriminator = dcgan_generator(K), dcgan_discriminator(K)
    discriminator.trainable = False
    z = K.Input((LATENT,), name="z")
    shared = K.layers.Dense(LATENT, activation="tanh", name="shared_mapping")
    mapping = K.Model(z, shared(shared(z)), name="mapping")
    z2 = K.Input((LATENT,), name="z2")
    wrapped = K.Model(z2, generator(mapping(z2)), name="wrapped_generator")
    z3 = K.Input((LATENT,), name="noise")
    gan = K.Model(z3, discriminator(wrapped(z3)), name="gan")
    randomise(gan)
    return gan, {"noise": (2, LATENT)}


def gan_generator_part() -> tuple[Any, dict]:
    """The nested generator alone as a top model (its image output), built the same way."""
    K = _keras()
    generator = dcgan_generator(K)
    z = K.Input((LATENT,), name="z")
    inner = K.Model(z, generator(z), name="inner")
    z2 = K.Input((LATENT,), name="noise")
    model = K.Model(z2, inner(z2), name="outer")
    randomise(model)
    return model, {"noise": (2, LATENT)}


BUILDERS: dict[str, Callable[[], tuple[Any, dict]]] = {
    "gan_nested": gan_nested,
    "gan_generator": gan_generator_part,
}


def with_lambda(marker: str | None = None) -> tuple[Any, dict]:
    """A Dense -> Lambda -> Dense model (the Lambda's Python bytecode is in the file); `marker`: a file the
    Lambda's code writes whenever it runs."""
    K = _keras()
    x = K.Input((6,), name="x")
    y = K.layers.Dense(4, name="dense_in")(x)
    if marker is None:
        y = K.layers.Lambda(lambda t: t * 3.0 + 1.0, name="times_three")(y)
    else:
        y = K.layers.Lambda(lambda t: (open(marker, "w").write("ran"), t * 3.0)[1], name="times_three")(y)
    return K.Model(x, K.layers.Dense(3, name="dense_out")(y), name="with_lambda"), {"x": (2, 6)}
