"""``train_data`` / ``validation_data`` of the XGBoost hook: a DMatrix, or a ``(path, content_type)`` file.

Files are parsed here rather than through XGBoost's text-URI loader (``"file?format=csv"``), which
XGBoost deprecated in 3.1. The formats are those SageMaker's XGBoost container accepts:

* libsvm (``libsvm``, ``text/libsvm``, ``text/x-libsvm``; the default when the content type is None):
  ``<label>[:<weight>] [qid:<q>] <index>:<value> ...`` per line, indices as written (0-based, like XGBoost's own
  reader), ``#`` starts a comment;
* CSV (``csv``, ``text/csv``): no header, the label in column 0, empty fields are missing values.
"""

from __future__ import annotations

import os
from typing import Optional

import numpy as np
import xgboost as xgb

from smdebug.exceptions import InvalidConfigurationError

LIBSVM_TYPES = ("libsvm", "text/libsvm", "text/x-libsvm")
CSV_TYPES = ("csv", "text/csv")


def as_dmatrix(data, what: str) -> Optional[xgb.DMatrix]:
    """``data`` as a DMatrix: None stays None; anything but a DMatrix or a (path, content_type) pair is
    an :class:`~smdebug.exceptions.InvalidConfigurationError`."""
    if data is None or isinstance(data, xgb.DMatrix):
        return data
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], (str, os.PathLike)):
        path, content_type = os.fspath(data[0]), data[1]
        return load_file(path, content_type, what)
    raise InvalidConfigurationError(
        f"{what} must be an xgboost.DMatrix or a (path, content_type) tuple with content_type one of "
        f"{', '.join(LIBSVM_TYPES + CSV_TYPES)} (None means libsvm); got {type(data).__name__}"
    )


def load_file(path: str, content_type: Optional[str], what: str = "data") -> xgb.DMatrix:
    if content_type is not None and not isinstance(content_type, str):
        raise InvalidConfigurationError(f"{what}: content_type must be a string or None, got {content_type!r}")
    ctype = (content_type or "libsvm").strip().lower().split(";")[0].strip()  # "text/csv; label_size=1"
    path = os.path.expanduser(path)
    if not os.path.isfile(path):
        raise InvalidConfigurationError(f"{what}: file {path} does not exist")
    try:
        if ctype in LIBSVM_TYPES:
            return _read_libsvm(path)
        if ctype in CSV_TYPES:
            return _read_csv(path)
    except InvalidConfigurationError:
        raise
    except (OSError, ValueError) as e:
        raise InvalidConfigurationError(f"{what}: cannot read {path} as {ctype}: {e}") from None
    raise InvalidConfigurationError(
        f"{what}: unsupported content_type {content_type!r}; use one of {', '.join(LIBSVM_TYPES + CSV_TYPES)}"
    )


def _read_csv(path: str) -> xgb.DMatrix:
    with open(path, "rb") as f:
        if not f.read(1):
            raise InvalidConfigurationError(f"{path} is empty")
    table = np.genfromtxt(path, delimiter=",", dtype=np.float32, ndmin=2, invalid_raise=True)
    if table.shape[1] < 2:
        raise InvalidConfigurationError(f"{path}: a CSV file needs the label in column 0 and at least one feature")
    labels = table[:, 0]
    if np.isnan(labels).any():
        row = int(np.flatnonzero(np.isnan(labels))[0]) + 1
        raise InvalidConfigurationError(f"{path}: row {row} has no label in column 0 (is there a header line?)")
    return xgb.DMatrix(table[:, 1:], label=labels)


def _read_libsvm(path: str) -> xgb.DMatrix:
    from scipy import sparse  # an XGBoost dependency

    labels, weights, qids, indptr, indices, values = [], [], [], [0], [], []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            try:
                label, _, weight = parts[0].partition(":")  # "<label>:<instance weight>"
                labels.append(float(label))
                if weight:
                    weights.append(float(weight))
                for item in parts[1:]:
                    key, _, value = item.partition(":")
                    if key == "qid":
                        qids.append(int(value))
                        continue
                    index = int(key)
                    if index < 0:
                        raise ValueError(f"negative feature index {index}")
                    indices.append(index)
                    values.append(float(value))
            except ValueError as e:
                raise InvalidConfigurationError(f"{path}:{lineno}: not a libsvm line ({e})") from None
            indptr.append(len(indices))
    if not labels:
        raise InvalidConfigurationError(f"{path} holds no rows")
    for name, given in (("qid", qids), ("an instance weight", weights)):
        if given and len(given) != len(labels):
            raise InvalidConfigurationError(f"{path}: {name} is given on some lines only")
    n_cols = (max(indices) + 1) if indices else 0
    matrix = sparse.csr_matrix(
        (np.asarray(values, dtype=np.float32), np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
        shape=(len(labels), n_cols),
    )
    return xgb.DMatrix(
        matrix,
        label=np.asarray(labels, dtype=np.float32),
        weight=np.asarray(weights, dtype=np.float32) if weights else None,
        qid=np.asarray(qids) if qids else None,
    )
