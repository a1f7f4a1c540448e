"""smdebug-rules skeleton: packaging and discovery of the built-in rule pack."""

import importlib.metadata as metadata
import subprocess
import sys
from pathlib import Path

import pytest

DIST = "smdebug-rules"
GROUP = "smdebug.rules"
EP_NAME = "builtin"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def plugins():
    from smdebug.core.plugins import manager

    manager.reset_for_tests()
    yield manager
    manager.reset_for_tests()


def test_entry_point_is_declared_by_the_distribution():
    eps = [ep for ep in metadata.entry_points(group=GROUP) if ep.name == EP_NAME]
    assert len(eps) == 1, eps
    assert eps[0].value == "smdebug.rules.plugin"
    assert eps[0].dist.metadata["Name"] == DIST


def test_version_comes_from_the_package():
    import smdebug.rules

    assert smdebug.rules.__version__ == metadata.version(DIST) == "0.1.0"


def test_requirements_pin_core_by_range():
    requires = metadata.requires(DIST) or []
    core = [r for r in requires if r.startswith("smdebug-core")]
    assert core and "<1" in core[0] and "==" not in core[0]


def test_does_not_ship_the_smdebug_namespace_init():
    assert not (PACKAGE_ROOT / "src" / "smdebug" / "__init__.py").exists()


def test_pack_is_loaded_and_registers_its_rules(plugins):
    status = {s.name: s for s in plugins.plugin_report() if s.group == GROUP}[EP_NAME]
    assert status.status == "loaded", status
    assert status.distribution == DIST
    ours = sorted(name for name in plugins.rules() if plugins.rule_plugin(name) == EP_NAME)
    assert "VanishingGradient" in ours and "ExplodingTensor" in ours


def test_entry_point_module_is_light():
    code = (
        "import sys, smdebug.rules.plugin as p; "
        "heavy = [m for m in ('numpy', 'pandas', 'torch', 'tensorflow') if m in sys.modules]; "
        "print(heavy, len(p.RULES))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    heavy, count = out.stdout.strip().splitlines()[-1].rsplit(" ", 1)
    assert heavy == "[]" and int(count) >= 5  # rules are listed as strings, nothing imported
