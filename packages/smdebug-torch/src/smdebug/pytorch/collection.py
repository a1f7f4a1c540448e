"""Collections with PyTorch helpers."""

from __future__ import annotations

import re
import weakref
from typing import Callable, Optional

from smdebug.core.collection import Collection as _CoreCollection
from smdebug.core.collection import CollectionKeys  # noqa: F401 - 1.0.x scripts import it from here


class Collection(_CoreCollection):
    """A collection that can also name modules whose inputs/outputs it should hold."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._modules = []  # (weakref to module, inputs, outputs)

    def add_module_tensors(self, module, inputs: bool = False, outputs: bool = True) -> None:
        """Save the inputs and/or outputs of ``module`` (by default its outputs) in this collection.

        The module's name is resolved when the hook registers the model, so this can be called
        before or after ``hook.register_module``.
        """
        self._modules.append((weakref.ref(module), inputs, outputs))
        self._touch()

    def _resolve_modules(self, name_of: Callable[[object], Optional[str]]) -> None:
        pending = []
        for ref, inputs, outputs in self._modules:
            module = ref()
            if module is None:
                continue
            name = name_of(module)
            if name is None:
                pending.append((ref, inputs, outputs))  # not registered yet
                continue
            if inputs:
                self.include("^" + re.escape(name) + r"_input_\d+$")
            if outputs:
                self.include("^" + re.escape(name) + r"_output_\d+$")
        self._modules = pending
