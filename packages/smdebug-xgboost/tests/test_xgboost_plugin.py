"""What smdebug-xgboost exposes beyond the skeleton: lazy re-exports and the plugin's answers."""

import importlib
import subprocess
import sys

import pytest


def test_lazy_reexports_are_the_core_objects():
    import smdebug.xgboost as smd

    expected = {
        "SaveConfig": ("smdebug.core.save_config", "SaveConfig"),
        "SaveConfigMode": ("smdebug.core.save_config", "SaveConfigMode"),
        "ReductionConfig": ("smdebug.core.reduction_config", "ReductionConfig"),
        "Collection": ("smdebug.core.collection", "Collection"),
        "CollectionKeys": ("smdebug.core.collection", "CollectionKeys"),
        "modes": ("smdebug.core.modes", "ModeKeys"),
        "create_trial": ("smdebug.trials", "create_trial"),
        "Hook": ("smdebug.xgboost.hook", "Hook"),
        "get_hook": ("smdebug.xgboost.hook", "get_hook"),
        "set_hook": ("smdebug.core.singleton", "set_hook"),
        "del_hook": ("smdebug.core.singleton", "del_hook"),
    }
    for name, (module, attr) in expected.items():
        assert getattr(smd, name) is getattr(importlib.import_module(module), attr), name
    assert set(expected) <= set(dir(smd))
    with pytest.raises(AttributeError):
        smd.NoSuchThing  # noqa: B018


def test_importing_the_package_does_not_import_xgboost():
    code = "import sys, smdebug.xgboost as smd; smd.SaveConfig; smd.create_trial; print('xgboost' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_the_framework_is_registered_with_its_hook_class():
    from smdebug.core.plugins import manager

    manager.reset_for_tests()
    try:
        info = manager.frameworks()["xgboost"]
        assert info.default_collections == ("metrics",)
        from smdebug.xgboost.hook import Hook

        assert info.load_hook_class("Hook") is Hook
        assert Hook.default_save_interval == 10 and Hook.framework_name == "xgboost"
    finally:
        manager.reset_for_tests()
