"""TensorFlow helpers shared by the hooks: conversion to numpy, names, flattening, reductions."""

from __future__ import annotations

import re
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf


def _strings_to_str(arr: np.ndarray) -> np.ndarray:
    """TensorFlow string tensors come back as arrays of ``bytes``; smdebug stores text."""
    if arr.dtype.kind in ("O", "S"):
        flat = [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in arr.reshape(-1).tolist()]
        return np.array(flat, dtype=str).reshape(arr.shape)
    return arr


def to_numpy(value) -> Optional[np.ndarray]:
    """A host numpy copy of a TensorFlow/Keras tensor or variable, or None if ``value`` is not one."""
    if isinstance(value, tf.IndexedSlices):
        value = tf.convert_to_tensor(value)
    if isinstance(value, tf.SparseTensor):
        value = tf.sparse.to_dense(value)
    if isinstance(value, tf.RaggedTensor):
        value = value.to_tensor()
    if isinstance(value, tf.distribute.DistributedValues):
        value = value.experimental_local_results()[0] if hasattr(value, "experimental_local_results") \
            else tf.distribute.get_strategy().experimental_local_results(value)[0]
    if not (tf.is_tensor(value) or isinstance(value, tf.Variable) or _is_keras_variable(value)):
        return None
    dtype = getattr(value, "dtype", None)
    if dtype is not None and str(getattr(dtype, "name", dtype)) == "bfloat16":
        value = tf.cast(value, tf.float32)  # numpy has no bfloat16
    try:
        arr = value.numpy()
    except AttributeError:
        arr = tf.convert_to_tensor(value).numpy()
    arr = np.asarray(arr)
    if arr.dtype.name == "bfloat16":
        arr = arr.astype(np.float32)
    return _strings_to_str(arr)


def _is_keras_variable(value) -> bool:
    module = type(value).__module__ or ""
    return module.startswith("keras") and hasattr(value, "numpy") and hasattr(value, "path")


def is_concrete_tensor(value) -> bool:
    """A real (eager or graph) TensorFlow tensor, not a symbolic Keras tensor or None."""
    return isinstance(value, (tf.Tensor, tf.Variable, tf.IndexedSlices)) or (
        tf.is_tensor(value) and not type(value).__name__ == "KerasTensor"
    )


def flatten_tensors(value) -> List:
    """Every TensorFlow tensor in a (nested) structure of tensors, lists, tuples and dicts, in order."""
    out = []
    for item in tf.nest.flatten(value, expand_composites=False):
        if item is not None and is_concrete_tensor(item):
            out.append(item)
    return out


def structure_names(base: str, value) -> Iterator[Tuple[str, object]]:
    """Names for the tensors of a model input/label/prediction structure.

    One tensor: ``base``; a list/tuple: ``base_<i>``; a dict: ``base/<key>`` (nested keys joined by
    ``/``), so a multi-input functional model's inputs are ``inputs/<input name>``.
    """
    if value is None:
        return
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            yield from structure_names(f"{base}/{key}", value[key])
        return
    if isinstance(value, (list, tuple)):
        items = [v for v in value if v is not None]
        if len(items) == 1:
            yield from structure_names(base, items[0])
            return
        for i, item in enumerate(items):
            yield from structure_names(f"{base}_{i}", item)
        return
    if is_concrete_tensor(value):
        yield base, value


def variable_name(var) -> str:
    """The name smdebug gives a variable: its Keras 3 path (``dense/kernel``), else the TF variable name
    without the ``:0`` output suffix."""
    path = getattr(var, "path", None)
    if isinstance(path, str) and path:
        return path
    name = getattr(var, "name", None) or str(var)
    return re.sub(r":\d+$", "", name)


def is_bias(var_name: str) -> bool:
    return var_name.rsplit("/", 1)[-1] == "bias"


# --------------------------------------------------------------------------------------------------
# reductions on the tensor's device (one definition with smdebug.core.reductions)
# --------------------------------------------------------------------------------------------------
def _op(x, op: str):
    if op == "min":
        return tf.reduce_min(x)
    if op == "max":
        return tf.reduce_max(x)
    if op == "mean":
        return tf.reduce_mean(x)
    if op == "sum":
        return tf.reduce_sum(x)
    if op == "prod":
        return tf.reduce_prod(x)
    if op == "std":
        return tf.math.reduce_std(x)
    if op == "variance":
        return tf.math.reduce_variance(x)
    if op == "l1":
        return tf.reduce_sum(tf.abs(x))
    if op == "l2":
        return tf.norm(tf.reshape(x, [-1]), ord=2)
    raise ValueError(f"Unknown reduction {op!r}")


def device_reductions(value, ops: Sequence[Tuple[str, bool]]) -> Optional[Dict[Tuple[str, bool], np.ndarray]]:
    """``{(op, abs): value}`` computed by TensorFlow where the tensor lives, for floating-point tensors
    whose reductions smdebug defines the same way; None lets the core compute them from a host copy."""
    if not (tf.is_tensor(value) or isinstance(value, tf.Variable)) or not tf.executing_eagerly():
        return None
    if any(op not in ("min", "max", "mean", "sum", "prod", "std", "variance", "l1", "l2") for op, _ in ops):
        return None
    try:
        x = tf.convert_to_tensor(value)
    except (TypeError, ValueError):
        return None
    if not x.dtype.is_floating or x.shape.num_elements() == 0:
        return None
    if x.dtype in (tf.float16, tf.bfloat16):
        x = tf.cast(x, tf.float32)
    results = tf.stack([tf.cast(_op(tf.abs(x) if is_abs else x, op), x.dtype) for op, is_abs in ops]).numpy()
    return {key: results[i] for i, key in enumerate(ops)}


def does_tf_support_mixed_precision_training() -> bool:
    """1.0.x's check for the Keras mixed-precision API (TensorFlow 2.1 and later). Every TensorFlow this
    plugin supports (2.16+) has it: ``keras.mixed_precision.set_global_policy("mixed_float16")``; the
    hook saves the float16 tensors and the unscaled gradients of such models."""
    major, minor = (int(part) for part in tf.__version__.split(".")[:2])
    return (major, minor) >= (2, 1)
