"""A plugin installed without its framework: ``smd.Hook`` says what to install, not just "No module named"."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from smdebug.core.plugins.missing import PLUGIN_PACKAGES, MissingFrameworkError, missing_framework_error

#: plugin module -> a name that needs the framework
HOOKS = {"smdebug.pytorch": "Hook", "smdebug.tensorflow": "KerasHook", "smdebug.mxnet": "Hook",
         "smdebug.xgboost": "Hook"}


def _without_framework():
    out = []
    for module, attr in HOOKS.items():
        plugin = PLUGIN_PACKAGES[module]
        if importlib.util.find_spec(module) is None:
            continue  # the plugin itself is not installed here
        if any(importlib.util.find_spec(f) is None for f in plugin.framework_imports):
            out.append((module, attr))
    return out


def test_hook_without_its_framework_says_what_to_install():
    cases = _without_framework()
    if not cases:  # the core session installs every plugin and no framework: this never happens there
        pytest.skip("every installed plugin has its framework here")
    for module, attr in cases:
        plugin = PLUGIN_PACKAGES[module]
        with pytest.raises(MissingFrameworkError) as info:
            getattr(importlib.import_module(module), attr)
        text = str(info.value)
        assert text.startswith(f"{module}.{attr} needs {plugin.framework}, which is not installed"), text
        assert f"pip install {plugin.framework_install}" in text
        assert f"pip install --find-links dist '{plugin.distribution}[framework]'" in text
        assert isinstance(info.value, ModuleNotFoundError)  # `except ImportError` still catches it


def test_other_missing_modules_keep_their_error():
    other = ModuleNotFoundError("No module named 'yaml'", name="yaml")
    assert missing_framework_error(other, "smdebug.pytorch.Hook") is other
    torch_missing = ModuleNotFoundError("No module named 'torch'", name="torch")
    assert missing_framework_error(torch_missing, "smdebug.rules.Rule") is torch_missing  # no framework there
    hint = missing_framework_error(ModuleNotFoundError("No module named 'mxnet'", name="mxnet"), "smdebug.mxnet.Hook")
    assert "pip install 'mxnet>=1.9,<2' 'numpy<1.24'" in str(hint)
