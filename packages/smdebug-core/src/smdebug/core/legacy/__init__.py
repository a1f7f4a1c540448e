"""Adapters behind the module paths and names of smdebug 1.0.x that are not part of the modern API.

Scripts and notebooks written for smdebug 1.0.x import more than its documented surface
(``smdebug.core.reader.FileReader``, ``smdebug.core.writer.FileWriter``, ``smdebug.core.utils``,
``smdebug.core.config_constants``, ``smdebug.core.access_layer``...). Those names keep working, as thin
adapters over this package's own storage, format, hook and trial code: nothing here re-implements
them. Each legacy module says at its top what it maps to; docs/compatibility.md lists them all and the
few places where they behave differently from 1.0.x on purpose.

The modules under this package hold the adapters for legacy names that live inside modern modules
(``FileWriter`` in ``smdebug.core.writer``, ``IndexFileLocationUtils`` in ``smdebug.core.locations``,
the 1.0.x functions of ``smdebug.core.json_config``, the legacy hook methods); those modules re-export
them lazily, so the modern code paths never import them. New code should use the API the README
teaches.
"""
