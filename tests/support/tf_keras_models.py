"""Small models built with tf_keras the way published Keras models are (GAN tutorials, CRNN, DeepSpeech,
Pix2Pix; the GAN with Keras 3 too), for the Keras reader's tests. Each builder returns (model, {input name:
shape with batch}) with non-trivial batch-norm statistics; nothing is trained.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

LATENT = 8


def _keras(library: str = "tf_keras"):
    import importlib

    keras = importlib.import_module(library)
    keras.utils.set_random_seed(11)
    return keras


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


def gan_nested(library: str = "tf_keras") -> tuple[Any, dict]:
    """A Model holding a Model holding a Sequential (the GAN files' shape), three deep, with a layer shared
    by two calls and a frozen discriminator: tf_keras writes the Sequential's weights without its name."""
    K = _keras(library)
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


def crnn() -> tuple[Any, dict]:
    """A text-recognition CRNN: conv/BN/pool blocks, the height folded into features, two bidirectional LSTMs and
    a per-step softmax over the characters (the head a CTC loss trains)."""
    K = _keras()
    image = K.Input((16, 32, 1), name="image")
    y = image
    for filters in (8, 16):
        y = K.layers.Conv2D(filters, 3, padding="same", use_bias=False)(y)
        y = K.layers.BatchNormalization()(y)
        y = K.layers.Activation("relu")(y)
        y = K.layers.MaxPooling2D((2, 2))(y)
    y = K.layers.Permute((2, 1, 3))(y)  # (width, height, channels): one step per column
    y = K.layers.Reshape((8, 4 * 16))(y)
    y = K.layers.Dense(16, activation="relu")(y)
    y = K.layers.Bidirectional(K.layers.LSTM(8, return_sequences=True))(y)
    y = K.layers.Bidirectional(K.layers.LSTM(8, return_sequences=True), merge_mode="sum")(y)
    model = K.Model(image, K.layers.Dense(11, activation="softmax", name="chars")(y), name="crnn")
    randomise(model)
    return model, {"image": (2, 16, 32, 1)}


def deepspeech() -> tuple[Any, dict]:
    """DeepSpeech 2 small: 2-D convs over (time, frequency) spectrograms, frequency folded, bidirectional GRUs
    (reset_after, the TF2 default), a time-distributed dense and a per-step softmax."""
    K = _keras()
    spec = K.Input((12, 16), name="spectrogram")
    y = K.layers.Reshape((12, 16, 1))(spec)
    y = K.layers.Conv2D(4, (5, 7), strides=(1, 2), padding="same", use_bias=False)(y)
    y = K.layers.BatchNormalization()(y)
    y = K.layers.ReLU()(y)
    y = K.layers.Conv2D(4, (3, 5), strides=(1, 2), padding="same", use_bias=False)(y)
    y = K.layers.BatchNormalization()(y)
    y = K.layers.ReLU()(y)
    y = K.layers.Reshape((12, 4 * 4))(y)
    y = K.layers.Bidirectional(K.layers.GRU(8, return_sequences=True, reset_after=True), merge_mode="concat")(y)
    y = K.layers.Dropout(0.5)(y)
    y = K.layers.TimeDistributed(K.layers.Dense(16, activation="relu"))(y)
    model = K.Model(spec, K.layers.Dense(9, activation="softmax")(y), name="deepspeech")
    randomise(model)
    return model, {"spectrogram": (2, 12, 16)}


def pix2pix() -> tuple[Any, dict]:
    """The pix2pix U-Net generator (TF tutorial), 32x32: downsample (Conv2D, BN, LeakyReLU), upsample
    (Conv2DTranspose, BN, Dropout, ReLU) blocks in Sequentials, concatenated skips, a tanh head."""
    K = _keras()
    init = K.initializers.RandomNormal(0.0, 0.02)

    def down(filters, batchnorm=True):
        block = K.Sequential()
        block.add(K.layers.Conv2D(filters, 4, strides=2, padding="same", kernel_initializer=init, use_bias=False))
        if batchnorm:
            block.add(K.layers.BatchNormalization())
        block.add(K.layers.LeakyReLU())
        return block

    def up(filters, dropout=False):
        block = K.Sequential()
        block.add(K.layers.Conv2DTranspose(filters, 4, strides=2, padding="same", kernel_initializer=init,
                                           use_bias=False))
        block.add(K.layers.BatchNormalization())
        if dropout:
            block.add(K.layers.Dropout(0.5))
        block.add(K.layers.ReLU())
        return block

    inputs = K.layers.Input(shape=[32, 32, 3], name="input_image")
    x, skips = inputs, []
    for block in (down(8, batchnorm=False), down(16), down(16), down(16)):
        x = block(x)
        skips.append(x)
    for block, skip in zip((up(16, dropout=True), up(16), up(8)), reversed(skips[:-1])):
        x = K.layers.Concatenate()([block(x), skip])
    last = K.layers.Conv2DTranspose(3, 4, strides=2, padding="same", kernel_initializer=init, activation="tanh")
    model = K.Model(inputs, last(x), name="pix2pix_generator")
    randomise(model)
    return model, {"input_image": (2, 32, 32, 3)}


def dcgan() -> tuple[Any, dict]:
    """The DCGAN tutorial's generator on its own (Sequential, Conv2DTranspose)."""
    model = dcgan_generator(_keras())
    randomise(model)
    return model, {"dense_input": (2, LATENT)}


def siamese() -> tuple[Any, dict]:
    """A Sequential tower called inside a nested Model on two inputs and once more at the top level, and a
    Dense shared by two calls: every call reads the one set of weights."""
    K = _keras()
    tower = K.Sequential([K.layers.Conv2D(4, 3, input_shape=(8, 8, 3)), K.layers.BatchNormalization(),
                          K.layers.ReLU(), K.layers.GlobalAveragePooling2D()], name="encoder")
    x = K.Input((8, 8, 3))
    inner = K.Model(x, tower(x), name="tower")
    a, b = K.Input((8, 8, 3), name="a"), K.Input((8, 8, 3), name="b")
    d = K.layers.Subtract()([inner(a), inner(b)])
    head = K.layers.Dense(4, name="head")
    y = K.layers.Concatenate()([head(d), head(K.layers.Multiply()([d, d])), tower(a)])
    model = K.Model([a, b], y, name="siamese")
    randomise(model)
    return model, {"a": (2, 8, 8, 3), "b": (2, 8, 8, 3)}


BUILDERS: dict[str, Callable[[], tuple[Any, dict]]] = {
    "gan_nested": gan_nested,
    "gan_generator": gan_generator_part,
    "gan_nested_keras3": lambda: gan_nested("keras"),
    "dcgan": dcgan,
    "crnn": crnn,
    "deepspeech": deepspeech,
    "pix2pix": pix2pix,
    "siamese": siamese,
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
