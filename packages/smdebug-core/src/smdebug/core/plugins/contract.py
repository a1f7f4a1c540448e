"""A reusable contract test for framework plugins: packaging, discovery and lazy imports.

A framework plugin's test suite subclasses :class:`FrameworkPluginContract` and sets the class
attributes; pytest then runs every check against that plugin (third-party plugins can do the same)::

    class TestPluginContract(FrameworkPluginContract):
        DIST, EP_NAME, MODULE, FRAMEWORK_IMPORT = "smdebug-torch", "pytorch", "smdebug.pytorch", "torch"
        TEST_FILE = __file__

Imports pytest, so it is only for test suites.
"""

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


def _block_framework(framework: str) -> str:
    """Code that makes ``import <framework>`` fail in a child process even where it is installed."""
    return textwrap.dedent(
        f"""
        import sys

        class _BlockFramework:
            def find_spec(self, name, path=None, target=None):
                if name == {framework!r} or name.startswith({framework!r} + "."):
                    raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)", name=name)
                return None

        sys.meta_path.insert(0, _BlockFramework())
        """
    )


class FrameworkPluginContract:
    DIST: str = ""
    GROUP: str = "smdebug.frameworks"
    EP_NAME: str = ""
    MODULE: str = ""
    FRAMEWORK_IMPORT: str = ""
    VERSION: str = "0.1.0"
    #: ``__file__`` of the subclass's test module (its package root is two levels up)
    TEST_FILE: str = ""

    def package_root(self) -> Path:
        return Path(self.TEST_FILE).resolve().parents[1]

    @pytest.fixture
    def plugins(self):
        from smdebug.core.plugins import manager

        manager.reset_for_tests()
        yield manager
        manager.reset_for_tests()

    def test_entry_point_is_declared_by_the_distribution(self):
        eps = [ep for ep in metadata.entry_points(group=self.GROUP) if ep.name == self.EP_NAME]
        assert len(eps) == 1, eps
        assert eps[0].value == self.MODULE + ".plugin"
        assert eps[0].dist.metadata["Name"] == self.DIST

    def test_version_comes_from_the_package(self):
        package = importlib.import_module(self.MODULE)
        assert package.__version__ == metadata.version(self.DIST) == self.VERSION

    def test_requirements_pin_core_by_range_and_name_the_framework_in_an_extra(self):
        requires = metadata.requires(self.DIST) or []
        core = [r for r in requires if r.startswith("smdebug-core")]
        assert core and "<1" in core[0] and "==" not in core[0]
        framework = [r for r in requires if re.search(r"extra\s*==\s*['\"]framework['\"]", r)]
        # the framework itself, and possibly what it needs to import (MXNet 1.9: numpy<1.24)
        assert framework and any(r.startswith(self.FRAMEWORK_IMPORT) for r in framework), requires

    def test_does_not_ship_the_smdebug_namespace_init(self):
        # smdebug/__init__.py belongs to smdebug-core; a copy here would overwrite it on install.
        assert not (self.package_root() / "src" / "smdebug" / "__init__.py").exists()

    def test_entry_point_module_imports_and_registers_without_the_framework(self):
        code = _block_framework(self.FRAMEWORK_IMPORT) + textwrap.dedent(
            f"""
            import importlib, json
            plugin = importlib.import_module({self.MODULE + ".plugin"!r})
            importlib.import_module({self.MODULE!r})
            found = []
            plugin.smdebug_register_frameworks(register=found.append)
            from smdebug.core.plugins import manager
            status = {{s.name: s for s in manager.plugin_report() if s.group == {self.GROUP!r}}}[{self.EP_NAME!r}]
            print(json.dumps({{
                "framework_import": plugin.FRAMEWORK_IMPORT,
                "registered": [f.to_dict() for f in found],
                "status": status.status,
                "detail": status.detail,
                "imported": sorted(m for m in sys.modules if m.split(".")[0] == {self.FRAMEWORK_IMPORT!r}),
            }}))
            """
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert result["framework_import"] == self.FRAMEWORK_IMPORT
        assert result["imported"] == []
        assert result["status"] == "skipped" and self.FRAMEWORK_IMPORT in result["detail"]
        [info] = result["registered"]
        assert info["name"] == self.EP_NAME and info["module"] == self.MODULE and info["import_name"] == self.FRAMEWORK_IMPORT
        assert info["hook_classes"] and all(v.startswith(self.MODULE + ".") for v in info["hook_classes"].values())

    def test_discovery_follows_the_framework_being_installed(self, plugins):
        status = {s.name: s for s in plugins.plugin_report() if s.group == self.GROUP}[self.EP_NAME]
        assert status.distribution == self.DIST and status.version == self.VERSION
        if importlib.util.find_spec(self.FRAMEWORK_IMPORT) is None:
            assert status.status == "skipped", status
            assert self.FRAMEWORK_IMPORT in status.detail
            assert self.EP_NAME not in plugins.frameworks()
        else:
            assert status.status == "loaded", status
            info = plugins.frameworks()[self.EP_NAME]
            assert info.module == self.MODULE and info.import_name == self.FRAMEWORK_IMPORT
            assert plugins.framework_plugin(self.EP_NAME) == self.EP_NAME
