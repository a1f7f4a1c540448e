"""Fixtures of the interoperability tests (marker ``interop``).

They run the ORIGINAL smdebug 1.0.34 in its own virtual environment, built once with ``uv`` at
``$SMDEBUG_ORIGINAL_VENV`` (default ``~/.cache/smdebug-tests/original-smdebug-1.0.34``) and reused
afterwards. When that environment cannot be built the tests fail: they never skip, an interop suite
that silently skips proves nothing.

Select them with ``-m interop``; leave them out with ``-m "not interop"``.
"""

from __future__ import annotations

import pytest

from interop_support import OriginalVenvError, ensure_original_python


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "interop: compatibility with the original smdebug 1.0.34 (both directions) and TensorBoard's reader",
    )


@pytest.fixture(scope="session")
def original_python() -> str:
    """Path of the python of a venv with smdebug==1.0.34 (+ numpy<2.3, protobuf==3.20.3, requests,
    pandas, psutil; no ML framework)."""
    try:
        return ensure_original_python()
    except OriginalVenvError as e:
        message = str(e)
    pytest.fail(message, pytrace=False)  # outside the except block: no chained traceback noise
