"""Fixtures of the browser tests (marker ``browser``): Debian's headless Chromium.

The ``chromium`` fixture finds the browser, or installs Debian's ``chromium`` package with apt-get when
it is missing and the tests run as root (what CI does; one pytest-xdist worker installs, the others
wait). Set ``SMDEBUG_NO_APT=1`` to forbid the installation, ``SMDEBUG_CHROMIUM=/path`` to use another
binary. Where it can be neither found nor installed the tests are skipped with the reason; a failed
installation fails them.

Select them with ``-m browser``; leave them out with ``-m "not browser"``.
"""

from __future__ import annotations

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "browser: renders HTML output in headless Chromium (installed with apt-get when missing)")


@pytest.fixture(scope="session")
def chromium() -> str:
    import os
    import shutil

    from _cli_runs import find_chromium, install_chromium

    found = find_chromium()
    if found:
        return found
    if os.environ.get("SMDEBUG_NO_APT"):
        pytest.skip("chromium is not installed and SMDEBUG_NO_APT is set (apt-get install -y chromium)")
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("chromium is not installed and apt-get cannot run here as root (apt-get install -y chromium)")
    try:
        return install_chromium()
    except (RuntimeError, OSError) as e:
        message = str(e)
    pytest.fail(f"could not install chromium: {message}", pytrace=False)
