"""smdebug-torch skeleton: packaging, discovery, and an entry-point module that never imports torch."""

import importlib
import importlib.metadata as metadata
import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

DIST = "smdebug-torch"
GROUP = "smdebug.frameworks"
EP_NAME = "pytorch"
MODULE = "smdebug.pytorch"
FRAMEWORK_IMPORT = "torch"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]

# Run in a child process: makes `import torch` fail even where PyTorch is installed.
BLOCK_FRAMEWORK = """
import sys

class _BlockFramework:
    def find_spec(self, name, path=None, target=None):
        if name == 'torch' or name.startswith('torch' + "."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None

sys.meta_path.insert(0, _BlockFramework())
"""


@pytest.fixture
def plugins():
    from smdebug.core.plugins import manager

    manager.reset_for_tests()
    yield manager
    manager.reset_for_tests()


def test_entry_point_is_declared_by_the_distribution():
    eps = [ep for ep in metadata.entry_points(group=GROUP) if ep.name == EP_NAME]
    assert len(eps) == 1, eps
    assert eps[0].value == MODULE + ".plugin"
    assert eps[0].dist.metadata["Name"] == DIST


def test_version_comes_from_the_package():
    package = importlib.import_module(MODULE)
    assert package.__version__ == metadata.version(DIST) == "0.1.0"


def test_requirements_pin_core_by_range_and_name_the_framework_in_an_extra():
    requires = metadata.requires(DIST) or []
    core = [r for r in requires if r.startswith("smdebug-core")]
    assert core and "<1" in core[0] and "==" not in core[0]
    framework = [r for r in requires if re.search(r"extra\s*==\s*['\"]framework['\"]", r)]
    assert framework and all(r.startswith(FRAMEWORK_IMPORT) for r in framework), requires


def test_does_not_ship_the_smdebug_namespace_init():
    # smdebug/__init__.py belongs to smdebug-core; a copy here would overwrite it on install.
    assert not (PACKAGE_ROOT / "src" / "smdebug" / "__init__.py").exists()


def test_entry_point_module_imports_and_registers_without_the_framework():
    code = BLOCK_FRAMEWORK + textwrap.dedent(
        f"""
        import importlib, json
        plugin = importlib.import_module({MODULE + ".plugin"!r})
        importlib.import_module({MODULE!r})
        found = []
        plugin.smdebug_register_frameworks(register=found.append)
        from smdebug.core.plugins import manager
        status = {{s.name: s for s in manager.plugin_report() if s.group == {GROUP!r}}}[{EP_NAME!r}]
        print(json.dumps({{
            "framework_import": plugin.FRAMEWORK_IMPORT,
            "registered": [f.to_dict() for f in found],
            "status": status.status,
            "detail": status.detail,
            "imported": sorted(m for m in sys.modules if m.split(".")[0] == {FRAMEWORK_IMPORT!r}),
        }}))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["framework_import"] == FRAMEWORK_IMPORT
    assert result["imported"] == []
    assert result["status"] == "skipped" and FRAMEWORK_IMPORT in result["detail"]
    [info] = result["registered"]
    assert info["name"] == EP_NAME and info["module"] == MODULE and info["import_name"] == FRAMEWORK_IMPORT
    assert info["hook_classes"] and all(v.startswith(MODULE + ".") for v in info["hook_classes"].values())


def test_discovery_follows_the_framework_being_installed(plugins):
    status = {s.name: s for s in plugins.plugin_report() if s.group == GROUP}[EP_NAME]
    assert status.distribution == DIST and status.version == "0.1.0"
    if importlib.util.find_spec(FRAMEWORK_IMPORT) is None:
        assert status.status == "skipped", status
        assert FRAMEWORK_IMPORT in status.detail
        assert EP_NAME not in plugins.frameworks()
    else:
        assert status.status == "loaded", status
        info = plugins.frameworks()[EP_NAME]
        assert info.module == MODULE and info.import_name == FRAMEWORK_IMPORT
        assert plugins.framework_plugin(EP_NAME) == EP_NAME
