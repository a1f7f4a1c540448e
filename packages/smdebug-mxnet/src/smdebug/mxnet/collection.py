"""Collections with MXNet Gluon helpers."""

from __future__ import annotations

import re
import weakref

from smdebug.core.collection import Collection as _CoreCollection
from smdebug.core.collection import CollectionKeys  # noqa: F401 - 1.0.x scripts import it from here


class Collection(_CoreCollection):
    """A collection that can also name Gluon blocks whose inputs/outputs it should hold."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._blocks = []  # (weakref to block, inputs, outputs)

    def add_block_tensors(self, block, inputs: bool = False, outputs: bool = True) -> None:
        """Save the inputs and/or outputs of ``block`` (by default its outputs) in this collection:
        ``<block.name>_input_<i>`` / ``<block.name>_output_<i>``.

        The block does not have to be registered itself: register its model with
        ``hook.register_block(net)``. The hook attaches a forward hook to the block when the
        collection is first used. In a hybridized network only the registered block's own
        inputs/outputs can be seen (see the package README).
        """
        self._blocks.append((weakref.ref(block), inputs, outputs))
        self._touch()

    def _resolve_blocks(self) -> None:
        for ref, inputs, outputs in self._blocks:
            block = ref()
            if block is None:
                continue
            name = re.escape(block.name)
            if inputs:
                self.include("^" + name + r"_input_\d+$")
            if outputs:
                self.include("^" + name + r"_output_\d+$")
        self._blocks = []
