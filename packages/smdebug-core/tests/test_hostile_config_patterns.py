"""Patterns of the hook's JSON configuration that the hook cannot use (seventh red-team pass): one
``InvalidConfigurationError`` naming the file and the key, its message bounded.

Before: a collection's ``include_regex`` of 100,000 characters passed the configuration's check (``re``
compiles it) and the collection, which compiles a file's patterns with the bounded engine (at most 4,096
characters), raised ``SMDebugTypeError`` quoting the whole pattern: a 100 KB message (a 100 KB log line
under ``smdebug run``), not the configuration error it is. The same pattern in ``HookParameters`` was taken.
"""

from __future__ import annotations

import json

import pytest

from _support import NumpyHook


def _config(tmp_path, hook_params=None, coll_params=None):
    cfg = {"LocalPath": str(tmp_path / "run"), "HookParameters": hook_params or {}}
    if coll_params is not None:
        cfg["CollectionConfigurations"] = [{"CollectionName": "weights", "CollectionParameters": coll_params}]
    path = tmp_path / "hook.json"
    path.write_text(json.dumps(cfg))
    return str(path)


@pytest.mark.parametrize("where", ["collection", "hook"])
@pytest.mark.parametrize("pattern", ["a" * 100_000, "(" + "a" * 5000 + ")"], ids=["100k", "5k"])
def test_a_pattern_too_long_for_the_hook_is_a_configuration_error(tmp_path, where, pattern):
    from smdebug.exceptions import InvalidConfigurationError

    path = (_config(tmp_path, coll_params={"include_regex": pattern}) if where == "collection"
            else _config(tmp_path, hook_params={"include_regex": pattern}))
    with pytest.raises(InvalidConfigurationError) as info:
        NumpyHook.create_from_json_file(path)
    message = str(info.value)
    assert path in message and "include_regex" in message and "longer than 4096" in message
    assert len(message) < 1000
    assert not (tmp_path / "run").exists()


def test_patterns_the_hook_can_use_are_still_taken(tmp_path):
    path = _config(tmp_path, hook_params={"include_regex": "loss"}, coll_params={"include_regex": "^weights/" + "w?" * 100})
    hook = NumpyHook.create_from_json_file(path)
    assert "^weights/" + "w?" * 100 in hook.get_collection("weights").include_regex
    hook.close()
