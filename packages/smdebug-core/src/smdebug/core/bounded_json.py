"""JSON from a run's files, parsed only if what it would build fits in a memory budget.

The files themselves are capped in size, but Python objects are far larger than the text that makes
them: ``[[],[],...]`` builds a 56-byte list for every three bytes of text, so an index file under its
256 MiB cap could ask for gigabytes. Before parsing a large document its values are counted from the
separators and brackets in the text (every value but the first follows a ``,``, a ``:`` or an opening
bracket), and each is charged what the costliest value of that kind takes; a document that may need
more than the budget is refused with :class:`JsonTooLarge`, and one that runs out of memory anyway
raises it too, rather than a bare MemoryError from inside the parser.

Ordinary run files (an index of 100,000 tensors is about 10 MB) stay far under the budget and are
parsed directly.
"""

from __future__ import annotations

import json

from smdebug.core.env_settings import env_int

#: what parsing one document may take (SMDEBUG_MAX_JSON_PARSE_BYTES)
MAX_PARSE_BYTES = env_int("SMDEBUG_MAX_JSON_PARSE_BYTES", 1 << 30, minimum=1)
_CONTAINER_BYTES = 72  # an empty list or dict, and the pointer to it
_VALUE_BYTES = 8  # the pointer to a shared value (small ints, one-character strings, true/false/null)
_MOST_PER_TEXT_BYTE = 24  # the worst ratio of the two above to the text that makes them ("[],")


class JsonTooLarge(ValueError):
    pass


def loads_bounded(raw, budget: int = None):
    """``json.loads(raw)``; :class:`JsonTooLarge` when the result could exceed ``budget`` bytes."""
    budget = MAX_PARSE_BYTES if budget is None else budget
    if len(raw) * _MOST_PER_TEXT_BYTE > budget:
        data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
        containers = data.count(b"[") + data.count(b"{")
        values = data.count(b",") + data.count(b":") + containers + 1
        need = len(data) + containers * _CONTAINER_BYTES + values * _VALUE_BYTES
        if need > budget:
            raise JsonTooLarge(
                f"parsing it could take about {need >> 20} MiB ({containers:,} arrays/objects, {values:,} values),"
                f" more than SMDEBUG_MAX_JSON_PARSE_BYTES ({budget >> 20} MiB)")
    try:
        return json.loads(raw)
    except MemoryError:
        raise JsonTooLarge("parsing it ran out of memory") from None
