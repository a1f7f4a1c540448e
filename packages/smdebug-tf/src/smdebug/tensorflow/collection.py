"""Collections with TensorFlow helpers: ``add(tensor|variable|list)`` and ``add_keras_layer``.

Importing this module does not import TensorFlow; the helpers read names from the objects given.
"""

from __future__ import annotations

import re

from smdebug.core.collection import Collection as _CoreCollection
from smdebug.core.collection import CollectionKeys
from smdebug.core.modes import ModeKeys

IO_SUFFIX = r"(_\d+)?$"


def _name_of(arg) -> str:
    """The smdebug name of a TF/Keras object: a Keras variable's path (``dense/kernel``), a TF tensor's or
    variable's name without ``:0``, or a string as given."""
    if isinstance(arg, str):
        return arg
    path = getattr(arg, "path", None)
    if isinstance(path, str) and path:
        return path
    name = getattr(arg, "name", None)
    if isinstance(name, str) and name:
        return re.sub(r":\d+$", "", name)
    raise TypeError(f"Cannot name {type(arg).__name__} for a collection: pass a tensor, variable or name")


class Collection(_CoreCollection):
    """A collection that can also take TensorFlow objects and Keras layers."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._mode_names = {}  # ModeKeys -> set of names added with add_for_mode

    # --- TF objects ---------------------------------------------------------------------------
    def add(self, arg) -> None:
        """Add a tensor, variable (or Keras variable), a name, or a list/tuple/set of them."""
        if isinstance(arg, (list, tuple, set, frozenset)):
            for item in arg:
                self.add(item)
            return
        self.add_tensor_name(_name_of(arg))

    def add_variable(self, variable) -> None:
        self.add(variable)

    def add_tensor(self, tensor) -> None:
        self.add(tensor)

    def add_for_mode(self, arg, mode: ModeKeys = ModeKeys.GLOBAL) -> None:
        """Like :meth:`add`; ``mode`` is recorded for compatibility (the name is saved in every mode the
        collection's save config allows)."""
        if isinstance(arg, (list, tuple, set, frozenset)):
            for item in arg:
                self.add_for_mode(item, mode)
            return
        name = _name_of(arg)
        self._mode_names.setdefault(mode, set()).add(name)
        self.add_tensor_name(name)

    # --- Keras layers -------------------------------------------------------------------------
    def add_keras_layer(self, layer, inputs: bool = False, outputs: bool = True) -> None:
        """Save the inputs and/or outputs of a Keras layer (by default its outputs) in this collection:
        tensors ``<layer path>/inputs`` and ``<layer path>/outputs`` (``_<i>`` when there are several).

        ``layer`` is a Keras layer or a layer name; it is matched by its name as the last component of
        the layer path, so this works before the model is built.
        """
        name = layer if isinstance(layer, str) else getattr(layer, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"add_keras_layer expects a Keras layer or a layer name, got {layer!r}")
        prefix = r"(^|/)" + re.escape(name)
        if inputs:
            self.include(prefix + "/inputs" + IO_SUFFIX)
        if outputs:
            self.include(prefix + "/outputs" + IO_SUFFIX)


def default_collections():
    """The TensorFlow collections and their regexes (names are in the package README)."""
    return [
        # weights/biases/optimizer variables are filled with names as the hook meets the model
        Collection(CollectionKeys.WEIGHTS),
        Collection(CollectionKeys.BIASES),
        Collection(CollectionKeys.OPTIMIZER_VARIABLES),
        Collection(CollectionKeys.GRADIENTS, include_regex=["^gradients/"]),
        # Keras logs: "loss", "val_loss", "<output>_loss"; the GradientTape path's "loss"
        Collection(CollectionKeys.LOSSES, include_regex=["(^|_)loss$"]),
        # other Keras log entries, added by name as they appear
        Collection(CollectionKeys.METRICS),
        Collection(CollectionKeys.SM_METRICS),
        Collection(CollectionKeys.INPUTS, include_regex=[r"^inputs((_\d+)|/.+)?$"]),
        Collection(CollectionKeys.LABELS, include_regex=[r"^labels((_\d+)|/.+)?$"]),
        Collection(CollectionKeys.PREDICTIONS, include_regex=[r"^predictions((_\d+)|/.+)?$"]),
        # the model's outputs are its predictions
        Collection(CollectionKeys.OUTPUTS, include_regex=[r"^predictions((_\d+)|/.+)?$"]),
        # what the loss is computed from (predictions and labels), added with the loss the model was compiled
        # with (smdebug.tensorflow.losses)
        Collection(CollectionKeys.LOSS_INPUTS),
        Collection(CollectionKeys.LAYERS, include_regex=[r"/(inputs|outputs)(_\d+)?$"]),
    ]


#: collections the hook fills with names at run time; they may be empty before that without error
RUNTIME_FILLED = (
    CollectionKeys.WEIGHTS,
    CollectionKeys.BIASES,
    CollectionKeys.OPTIMIZER_VARIABLES,
    CollectionKeys.METRICS,
    CollectionKeys.SM_METRICS,
)
