"""The Keras layer table: one handler per Keras layer class (ops from keras.ops as 'ops.<Class>').

A handler takes a `Call` and returns the IR tensors the layer outputs, in Keras order.
"""

from tf_convert.convert.registry import OpTable

TABLE = OpTable("keras")


def table_key(layer: dict) -> str:
    """keras.ops operations (``x + 3.0`` in a functional model) share class names with layers.

    `.keras` configs name their module; legacy `.h5` configs do not, but an operation's config
    holds nothing but its name, while a layer's always carries more (trainable, dtype, ...).
    """
    class_name, module = layer["class_name"], layer.get("module")
    if module and module.startswith("keras.src.ops"):
        return f"ops.{class_name}"
    if module is None and f"ops.{class_name}" in TABLE and (
            set(layer.get("config", {})) <= {"name"} or class_name not in TABLE):  # e.g. Any(axis=-1): no layer
        return f"ops.{class_name}"
    return class_name


MODEL_MODULES = {"Functional": "keras.src.models.functional", "Sequential": "keras"}


def restore_ops_modules(config: dict) -> None:
    """Put back the module legacy .h5 configs drop from keras.ops operations (in place).

    Without it Keras itself reloads `x + 3.0` as an `Add` *layer* and fails; with it
    `keras.models.model_from_json` rebuilds the model as the .keras format would.
    """
    if not config.get("module") and config.get("class_name") in MODEL_MODULES:
        config["module"] = MODEL_MODULES[config["class_name"]]
    for layer in config.get("config", {}).get("layers", []):
        if "layers" in layer.get("config", {}):
            restore_ops_modules(layer)
        elif table_key(layer).startswith("ops.") and not layer.get("module"):
            layer["module"] = "keras.src.ops.numpy"
            layer["registered_name"] = layer["class_name"]
