"""atheris (libFuzzer) harness for the readers of untrusted bytes: ``python harness.py TARGET [libFuzzer args]``.

TARGET is one of ``records``, ``index``, ``collections``, ``config`` (the same targets as the hypothesis
tests, from ``targets.py``: each may raise only its documented exception). Anything else escaping a
target is a finding: atheris prints the exception and the input and exits non-zero. libFuzzer's own
limits turn a hang (``-timeout``) or unbounded memory (``-rss_limit_mb``) into findings too.

    python harness.py index CORPUS_DIR -runs=100000 -seed=1 -timeout=10 -rss_limit_mb=2048

``--write-seeds DIR`` writes the target's valid seed inputs into DIR (a starting corpus) and exits.
"""

from __future__ import annotations

import os
import sys
import tempfile

import atheris

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the tests folder

# Coverage feedback from smdebug's own code: the readers are what is being explored.
with atheris.instrument_imports(include=["smdebug"]):
    from fuzz import targets

# Each config input goes through a file, as hooks read it: in memory (/dev/shm) where there is one, so
# 100,000 inputs do not wait on a disk (ext4 flushes a truncated and rewritten file on close). Removed
# after each input: libFuzzer ends the process without running Python's clean-up.
_SHM = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
_CONFIG_FILE = os.path.join(_SHM, f"smdebug-fuzz-config-{os.getpid()}.json")


def _config(data: bytes) -> None:
    try:
        targets.fuzz_config_bytes(data, _CONFIG_FILE)
    finally:
        os.remove(_CONFIG_FILE)


# target -> (function, valid seed inputs, tokens for libFuzzer's dictionary)
TARGETS = {
    "records": (targets.fuzz_record, targets.SEED_RECORDS, []),
    "index": (targets.fuzz_index, [targets.SEED_INDEX], targets.INDEX_KEYS),
    "collections": (targets.fuzz_collections, [targets.SEED_COLLECTIONS], targets.COLLECTION_KEYS),
    "config": (_config, [targets.SEED_CONFIG], targets.CONFIG_KEYS),
}
_JSON_TOKENS = ["{", "}", "[", "]", ":", ",", "null", "true", "false", "-1", "1e309", "0.5"]


def write_seeds(name: str, folder: str) -> None:
    """``folder/corpus/seed-<i>`` (the starting corpus) and, for the JSON readers, ``folder/tokens.dict``
    (for ``-dict=``)."""
    _fn, seeds, keys = TARGETS[name]
    os.makedirs(os.path.join(folder, "corpus"), exist_ok=True)
    for i, seed in enumerate(seeds):
        with open(os.path.join(folder, "corpus", f"seed-{i}"), "wb") as f:
            f.write(seed)
    if not keys:
        return  # binary format: libFuzzer's own comparisons guide it
    tokens = [f'"{k}"' for k in keys] + _JSON_TOKENS
    with open(os.path.join(folder, "tokens.dict"), "w") as f:
        # libFuzzer's dictionary format: one quoted token a line (quotes and backslashes escaped)
        f.writelines('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"\n' for t in tokens)


def main(argv) -> None:
    if len(argv) < 2 or argv[1] not in TARGETS:
        sys.exit(f"usage: {argv[0]} {{{','.join(TARGETS)}}} [--write-seeds DIR | libFuzzer args]")
    name = argv[1]
    if len(argv) == 4 and argv[2] == "--write-seeds":
        write_seeds(name, argv[3])
        return
    target = TARGETS[name][0]
    atheris.Setup([argv[0], *argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
