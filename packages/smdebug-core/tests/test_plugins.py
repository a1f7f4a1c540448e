"""The plugin system: discovery through real entry points, fault tolerance, registries and queries."""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import json
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import numpy as np
import pytest

from smdebug.core.plugins import CommandInfo, FrameworkInfo, RuleInfo, WorkerInfo, hookimpl

FW = "smdebug.frameworks"
RULES = "smdebug.rules"


def uid(prefix: str) -> str:
    """A unique module/plugin name: modules stay in sys.modules, so tests never reuse one."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def framework_plugin_source(fw_name: str, framework_import: str = "numpy", extra: str = "") -> str:
    return f"""
        from smdebug.core.plugins import FrameworkInfo, hookimpl

        FRAMEWORK_IMPORT = {framework_import!r}

        @hookimpl
        def smdebug_register_frameworks(register):
            register(FrameworkInfo(name={fw_name!r}, module="smdebug_{fw_name}", import_name=FRAMEWORK_IMPORT,
                                   hook_classes={{"Hook": "smdebug_{fw_name}.hook:Hook"}}))
        {extra}
    """


def status_of(manager, name, group=FW):
    matches = [s for s in manager.plugin_report() if s.name == name and s.group == group]
    assert len(matches) == 1, manager.plugin_report()
    return matches[0]


# --------------------------------------------------------------------------------------------------
# laziness and idempotency
# --------------------------------------------------------------------------------------------------
def test_import_smdebug_discovers_nothing_and_stays_light():
    code = """
import json, sys
import smdebug
after_import = {m: m in sys.modules for m in ("pluggy", "numpy", "smdebug.core.plugins.manager")}
from smdebug.core.plugins import manager
before = manager.plugins_loaded()
manager.frameworks()
print(json.dumps({"after_import": after_import, "before": before, "after": manager.plugins_loaded()}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["after_import"] == {"pluggy": False, "numpy": False, "smdebug.core.plugins.manager": False}
    assert result["before"] is False
    assert result["after"] is True


def test_reset_leaves_discovery_pending(fresh_plugins):
    assert not fresh_plugins.plugins_loaded()
    fresh_plugins.get_plugin_manager(load=False)
    assert not fresh_plugins.plugins_loaded()
    fresh_plugins.get_plugin_manager()
    assert fresh_plugins.plugins_loaded()


def test_discovery_runs_once_even_from_many_threads(fresh_plugins, fake_dist, monkeypatch):
    name = uid("once")
    fake_dist.make("fake-once", {FW: {name: f"{name}_mod"}}, {f"{name}_mod.py": framework_plugin_source(name)})
    calls = []
    real = importlib.metadata.entry_points

    def counting(*args, **kwargs):
        calls.append(kwargs.get("group"))
        return real(*args, **kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    results = []
    threads = [threading.Thread(target=lambda: results.append(fresh_plugins.frameworks())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [FW, RULES]  # one discovery: one read per group
    assert all(name in r for r in results)
    fresh_plugins.load_plugins()
    fresh_plugins.frameworks()
    assert calls == [FW, RULES]
    fresh_plugins.load_plugins(force=True)
    assert calls == [FW, RULES, FW, RULES]
    assert status_of(fresh_plugins, name).status == "loaded"


# --------------------------------------------------------------------------------------------------
# fault tolerance
# --------------------------------------------------------------------------------------------------
def test_plugin_for_a_missing_framework_is_skipped_quietly(fresh_plugins, fake_dist, plugin_log):
    name = uid("nofw")
    fake_dist.make(
        "fake-nofw",
        {FW: {name: f"{name}_mod"}},
        {f"{name}_mod.py": framework_plugin_source(name, framework_import="no_such_framework_" + name)},
    )
    st = status_of(fresh_plugins, name)
    assert st.status == "skipped"
    assert "no_such_framework_" + name in st.detail
    assert st.distribution == "fake-nofw" and st.version == "1.0" and st.target == f"{name}_mod"
    assert name not in fresh_plugins.frameworks()
    assert plugin_log.warnings == []
    assert any(name in m for m in plugin_log.debug)
    assert "no_such_framework_" + name not in sys.modules


def test_plugin_missing_a_dependency_is_skipped_at_debug_level(fresh_plugins, fake_dist, plugin_log):
    name = uid("nodep")
    fake_dist.make("fake-nodep", {FW: {name: f"{name}_mod"}}, {f"{name}_mod.py": f"import dep_{name}\n"})
    st = status_of(fresh_plugins, name)
    assert st.status == "skipped" and f"dep_{name}" in st.detail
    assert plugin_log.warnings == []


def test_broken_plugin_is_reported_and_the_others_still_load(fresh_plugins, fake_dist, plugin_log):
    broken, good = uid("broken"), uid("good")
    fake_dist.make(
        "fake-broken",
        {FW: {broken: f"{broken}_mod"}},
        {f"{broken}_mod.py": "raise RuntimeError('plugin exploded on import')\n"},
        site="first",
    )
    fake_dist.make("fake-good", {FW: {good: f"{good}_mod"}}, {f"{good}_mod.py": framework_plugin_source(good)})
    st = status_of(fresh_plugins, broken)
    assert st.status == "failed"
    assert "RuntimeError" in st.detail and "plugin exploded on import" in st.detail
    assert status_of(fresh_plugins, good).status == "loaded"
    assert good in fresh_plugins.frameworks()
    [warning] = [w for w in plugin_log.warnings if broken in w]
    assert "fake-broken" in warning and "plugin exploded on import" in warning


def test_entry_point_to_a_module_that_does_not_exist_is_a_failure(fresh_plugins, fake_dist, plugin_log):
    name = uid("ghost")
    fake_dist.make("fake-ghost", {FW: {name: f"{name}_pkg.plugin"}})
    st = status_of(fresh_plugins, name)
    assert st.status == "failed" and "ModuleNotFoundError" in st.detail
    assert any(name in w for w in plugin_log.warnings)


def test_plugin_failing_in_its_register_hook_is_failed_and_unregistered(fresh_plugins, fake_dist, plugin_log):
    name = uid("badreg")
    source = """
        from smdebug.core.plugins import hookimpl

        @hookimpl
        def smdebug_register_frameworks(register):
            register("not a FrameworkInfo")

        @hookimpl
        def smdebug_tensor_to_numpy(value):
            return [42]
    """
    fake_dist.make("fake-badreg", {FW: {name: f"{name}_mod"}}, {f"{name}_mod.py": source})
    st = status_of(fresh_plugins, name)
    assert st.status == "failed" and "TypeError" in st.detail and "FrameworkInfo" in st.detail
    assert fresh_plugins.get_plugin_manager().get_plugin(name) is None
    assert any(name in w for w in plugin_log.warnings)
    with pytest.raises(TypeError):  # its tensor hook is gone with it
        fresh_plugins.tensor_to_numpy(object())


@pytest.mark.parametrize(
    "body, expected",
    [
        ("@hookimpl\ndef smdebug_regster_frameworks(register):\n    pass\n", "smdebug_regster_frameworks"),
        ("@hookimpl\ndef smdebug_tensor_to_numpy(value, device):\n    return None\n", "device"),
    ],
    ids=["unknown-hook", "bad-signature"],
)
def test_plugin_with_invalid_hooks_is_failed(fresh_plugins, fake_dist, plugin_log, body, expected):
    name = uid("invalid")
    source = "from smdebug.core.plugins import hookimpl\n\n" + body
    fake_dist.make("fake-invalid", {FW: {name: f"{name}_mod"}}, {f"{name}_mod.py": source})
    st = status_of(fresh_plugins, name)
    assert st.status == "failed" and expected in st.detail
    assert fresh_plugins.get_plugin_manager().get_plugin(name) is None
    fresh_plugins.get_plugin_manager().check_pending()  # nothing invalid left registered


def test_framework_outside_the_declared_range_is_skipped_before_import(fresh_plugins, fake_dist):
    pytest.importorskip("packaging")
    name, fw_dist = uid("range"), uid("fwdist")
    fake_dist.make(fw_dist, {}, version="1.5")
    fake_dist.make(
        "fake-range",
        {FW: {name: f"{name}_mod"}},
        {f"{name}_mod.py": "raise AssertionError('must not be imported')\n"},
        requires=[f'{fw_dist}>=2.0; extra == "framework"'],
    )
    st = status_of(fresh_plugins, name)
    assert st.status == "skipped"
    assert "1.5" in st.detail and ">=2.0" in st.detail


# --------------------------------------------------------------------------------------------------
# environment switches
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def two_plugins(fake_dist):
    a, b = uid("alpha"), uid("beta")
    fake_dist.make("fake-alpha", {FW: {a: f"{a}_mod"}}, {f"{a}_mod.py": framework_plugin_source(a)})
    fake_dist.make("fake-beta", {FW: {b: f"{b}_mod"}}, {f"{b}_mod.py": framework_plugin_source(b)})
    return a, b


def test_disable_by_entry_point_name(fresh_plugins, two_plugins, monkeypatch):
    a, b = two_plugins
    monkeypatch.setenv("SMDEBUG_DISABLE_PLUGINS", f"something-else, {a}")
    assert status_of(fresh_plugins, a).status == "disabled"
    assert "SMDEBUG_DISABLE_PLUGINS" in status_of(fresh_plugins, a).detail
    assert status_of(fresh_plugins, b).status == "loaded"
    assert set(fresh_plugins.frameworks()) & {a, b} == {b}
    assert f"{a}_mod" not in sys.modules  # a disabled plugin is never imported


def test_disable_by_distribution_name_and_wildcard(fresh_plugins, two_plugins, monkeypatch):
    a, b = two_plugins
    monkeypatch.setenv("SMDEBUG_DISABLE_PLUGINS", "FAKE_BETA")  # names are normalised like pip's
    assert status_of(fresh_plugins, b).status == "disabled"
    assert status_of(fresh_plugins, a).status == "loaded"
    monkeypatch.setenv("SMDEBUG_DISABLE_PLUGINS", "*")
    fresh_plugins.load_plugins(force=True)
    assert {s.status for s in fresh_plugins.plugin_report() if s.group != "runtime"} == {"disabled"}
    assert fresh_plugins.frameworks() == {}


def test_allow_list(fresh_plugins, two_plugins, monkeypatch):
    a, b = two_plugins
    monkeypatch.setenv("SMDEBUG_LOAD_PLUGINS", b)
    report = fresh_plugins.plugin_report()
    assert {s.name for s in report if s.status == "loaded"} == {b}
    assert "SMDEBUG_LOAD_PLUGINS" in status_of(fresh_plugins, a).detail
    monkeypatch.setenv("SMDEBUG_LOAD_PLUGINS", "")  # set but empty: load none
    fresh_plugins.load_plugins(force=True)
    assert not [s for s in fresh_plugins.plugin_report() if s.status == "loaded"]
    monkeypatch.delenv("SMDEBUG_LOAD_PLUGINS")
    fresh_plugins.load_plugins(force=True)
    assert {a, b} <= set(fresh_plugins.frameworks())


def test_disabled_name_is_blocked_for_code_registration_too(fresh_plugins, two_plugins, monkeypatch):
    a, _ = two_plugins
    monkeypatch.setenv("SMDEBUG_DISABLE_PLUGINS", a)
    pm = fresh_plugins.get_plugin_manager()
    assert pm.is_blocked(a)
    monkeypatch.delenv("SMDEBUG_DISABLE_PLUGINS")
    fresh_plugins.load_plugins(force=True)
    assert not pm.is_blocked(a) and status_of(fresh_plugins, a).status == "loaded"


def test_set_blocked_before_discovery(fresh_plugins, two_plugins):
    a, _ = two_plugins
    fresh_plugins.get_plugin_manager(load=False).set_blocked(a)
    assert status_of(fresh_plugins, a).status == "disabled"


# --------------------------------------------------------------------------------------------------
# registries and duplicates
# --------------------------------------------------------------------------------------------------
def test_duplicate_framework_from_entry_points_first_wins(fresh_plugins, fake_dist, plugin_log):
    first, second, fw = uid("first"), uid("second"), uid("dupfw")
    # the site created last is first on sys.path, so it is discovered first
    fake_dist.make("fake-second", {FW: {second: f"{second}_mod"}}, {f"{second}_mod.py": framework_plugin_source(fw)},
                   site="later")
    fake_dist.make("fake-first", {FW: {first: f"{first}_mod"}}, {f"{first}_mod.py": framework_plugin_source(fw)},
                   site="earlier")
    assert fresh_plugins.framework_plugin(fw) == first
    [warning] = [w for w in plugin_log.warnings if fw in w]
    assert second in warning and first in warning


def test_duplicate_names_registered_by_code_first_wins(fresh_plugins, plugin_log):
    class Pack:
        def __init__(self, target):
            self.target = target

        @hookimpl
        def smdebug_register_rules(self, register):
            register(RuleInfo(name="SameRule", target=self.target, pack="p"))

    pm = fresh_plugins.get_plugin_manager()
    pm.register(Pack("a.mod:First"), name="pack-a")
    pm.register(Pack("b.mod:Second"), name="pack-b")
    assert fresh_plugins.rules()["SameRule"].target == "a.mod:First"
    assert fresh_plugins.rule_plugin("SameRule") == "pack-a"
    assert any("pack-b" in w and "SameRule" in w for w in plugin_log.warnings)
    pm.unregister(name="pack-a")  # the registry follows (un)registration
    assert fresh_plugins.rules()["SameRule"].target == "b.mod:Second"


def test_rule_pack_entry_points(fresh_plugins, fake_dist):
    pack = uid("pack")
    source = f"""
        from smdebug.core.plugins import RuleInfo, hookimpl

        @hookimpl
        def smdebug_register_rules(register):
            register(RuleInfo(name="{pack}Rule", target="collections:OrderedDict", pack="{pack}",
                              description="a rule"))
    """
    fake_dist.make("fake-pack", {RULES: {pack: f"{pack}_mod"}}, {f"{pack}_mod.py": source})
    st = status_of(fresh_plugins, pack, group=RULES)
    assert st.status == "loaded"
    info = fresh_plugins.rules()[f"{pack}Rule"]
    assert info.pack == pack and fresh_plugins.rule_plugin(info.name) == pack
    from collections import OrderedDict

    assert info.load() is OrderedDict


def test_runtime_plugins_appear_in_the_report(fresh_plugins):
    class Inline:
        @hookimpl
        def smdebug_register_frameworks(self, register):
            register(FrameworkInfo(name="inlinefw", module="m", import_name="m"))

    fresh_plugins.get_plugin_manager().register(Inline(), name="inline-plugin")
    st = status_of(fresh_plugins, "inline-plugin", group="runtime")
    assert st.status == "loaded"
    assert fresh_plugins.framework_plugin("inlinefw") == "inline-plugin"


# --------------------------------------------------------------------------------------------------
# tensor_to_numpy
# --------------------------------------------------------------------------------------------------
class Boxed:
    def __init__(self, payload):
        self.payload = payload


class BoxPlugin:
    @hookimpl
    def smdebug_tensor_to_numpy(self, value):
        if isinstance(value, Boxed):
            return np.asarray(value.payload, dtype=np.float32)
        return None


def test_tensor_to_numpy_fast_paths(fresh_plugins):
    arr = np.arange(3)
    assert fresh_plugins.tensor_to_numpy(arr) is arr
    assert fresh_plugins.tensor_to_numpy(np.float16(2.5)).dtype == np.float16
    assert fresh_plugins.tensor_to_numpy(3).tolist() == 3
    assert fresh_plugins.tensor_to_numpy(True).dtype == np.bool_
    assert fresh_plugins.tensor_to_numpy([[1, 2], [3, 4]]).shape == (2, 2)
    assert fresh_plugins.tensor_to_numpy((1.0, 2.0)).tolist() == [1.0, 2.0]
    assert not fresh_plugins.plugins_loaded()  # none of these needed plugins


def test_tensor_to_numpy_asks_plugins(fresh_plugins):
    fresh_plugins.get_plugin_manager().register(BoxPlugin(), name="box")
    out = fresh_plugins.tensor_to_numpy(Boxed([1, 2, 3]))
    assert out.dtype == np.float32 and out.tolist() == [1.0, 2.0, 3.0]


def test_tensor_to_numpy_uses_the_array_protocol_last(fresh_plugins):
    class ArrayLike:
        def __array__(self, dtype=None, copy=None):
            return np.ones(2)

    assert fresh_plugins.tensor_to_numpy(ArrayLike()).tolist() == [1.0, 1.0]


def test_tensor_to_numpy_unknown_type_is_a_clear_type_error(fresh_plugins):
    with pytest.raises(TypeError, match=r"Boxed.*numpy.*no installed plugin") as info:
        fresh_plugins.tensor_to_numpy(Boxed([1]))
    assert "smdebug plugins" in str(info.value)


# --------------------------------------------------------------------------------------------------
# detect_worker
# --------------------------------------------------------------------------------------------------
def test_detect_worker_defaults_to_a_single_worker(fresh_plugins, monkeypatch):
    monkeypatch.setenv("SMDEBUG_LOAD_PLUGINS", "")
    assert fresh_plugins.detect_worker() == WorkerInfo(0, 1, "worker_0")
    assert fresh_plugins.detect_worker("pytorch").name == "worker_0"


def test_detect_worker_asks_plugins_with_the_framework(fresh_plugins):
    asked = []

    class Runtime:
        @hookimpl
        def smdebug_detect_worker(self, framework):
            asked.append(framework)
            return WorkerInfo(rank=3, size=8) if framework == "myfw" else None

    fresh_plugins.get_plugin_manager().register(Runtime())
    assert fresh_plugins.detect_worker("myfw") == WorkerInfo(3, 8, "worker_3")
    assert fresh_plugins.detect_worker("other").size == 1
    assert asked == ["myfw", "other"]


@pytest.mark.parametrize("answer", ["raise", "nonsense", "bad-rank"])
def test_detect_worker_survives_bad_plugins(fresh_plugins, plugin_log, answer):
    class Bad:
        @hookimpl
        def smdebug_detect_worker(self, framework):
            if answer == "raise":
                raise RuntimeError("runtime not reachable")
            if answer == "nonsense":
                return "worker seven"
            return type("W", (), {"rank": 5, "size": 2})()

    fresh_plugins.get_plugin_manager().register(Bad())
    assert fresh_plugins.detect_worker("x") == WorkerInfo(0, 1)
    assert plugin_log.warnings


# --------------------------------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------------------------------
def test_worker_info_defaults_and_validation():
    assert WorkerInfo(2, 4).name == "worker_2"
    assert WorkerInfo(np.int64(1), np.int32(2)).rank == 1
    for bad in [(-1, 2), (2, 2), (0, 0), (0.5, 2), (True, 2), (0, 1, "")]:
        with pytest.raises(ValueError):
            WorkerInfo(*bad)


def test_framework_info_is_read_only_and_resolves_lazily():
    hooks = {"Hook": "collections:OrderedDict"}
    info = FrameworkInfo("fw", "smdebug.fw", "fw", hook_classes=hooks, default_collections=["losses"])
    hooks["Other"] = "x:y"
    assert dict(info.hook_classes) == {"Hook": "collections:OrderedDict"}
    assert info.default_collections == ("losses",)
    with pytest.raises(TypeError):
        info.hook_classes["Hook"] = "a:b"
    from collections import OrderedDict

    assert info.load_hook_class() is OrderedDict
    with pytest.raises(KeyError, match="no hook class 'Keras'"):
        info.load_hook_class("Keras")
    assert hash(info) == hash(FrameworkInfo("fw", "smdebug.fw", "fw", hook_classes=dict(info.hook_classes),
                                            default_collections=("losses",)))
    for kwargs in [dict(name=""), dict(name="a b"), dict(hook_classes={"Hook": "no-colon"}),
                   dict(default_collections="losses")]:
        with pytest.raises(ValueError):
            FrameworkInfo(**{"name": "fw", "module": "m", "import_name": "m", **kwargs})


def test_rule_info_validation():
    with pytest.raises(ValueError):
        RuleInfo("r", "not a target", "p")
    with pytest.raises(ValueError):
        RuleInfo("r", "m:C", "")
    with pytest.raises(ImportError, match="no attribute"):
        RuleInfo("r", "collections:NoSuchClass", "p").load()


def test_command_info_validation():
    assert CommandInfo("my-cmd", "pkg.mod", "help").to_dict() == {"name": "my-cmd", "module": "pkg.mod", "help": "help"}
    for args in [("My", "m"), ("a b", "m"), ("-x", "m"), ("ok", "not a module"), ("ok", "m:attr"), ("ok", "")]:
        with pytest.raises(ValueError):
            CommandInfo(*args)
    with pytest.raises(ModuleNotFoundError):
        CommandInfo("ok", "smdebug_no_such_module").load()
    with pytest.raises(AttributeError, match="no add_arguments"):
        CommandInfo("ok", "json").load()  # a module, but not a command


def test_commands_registered_by_code_and_clashes(fresh_plugins, smdebug_log):
    from smdebug.core.plugins import hookimpl

    class Pack:
        def __init__(self, *names):
            self.names = names

        @hookimpl
        def smdebug_register_commands(self, register):
            for name in self.names:
                register(CommandInfo(name, "smdebug.cli.ls_cmd", f"{name} help"))

    fresh_plugins.get_plugin_manager().register(Pack("alpha", "beta"), name="first-pack")
    fresh_plugins.get_plugin_manager().register(Pack("beta"), name="second-pack")
    commands = fresh_plugins.commands()
    assert {"alpha", "beta"} <= set(commands)
    assert fresh_plugins.command_plugin("beta") == "first-pack"  # the first to claim a name keeps it
    assert any("registers command 'beta', which plugin 'first-pack' registered first" in m for m in smdebug_log.warnings)


def test_hookspecs_are_documented():
    from smdebug.core.plugins import hookspecs

    specs = [f for n, f in vars(hookspecs).items() if n.startswith("smdebug_") and callable(f)]
    assert {f.__name__ for f in specs} == {
        "smdebug_register_frameworks",
        "smdebug_register_rules",
        "smdebug_register_commands",
        "smdebug_tensor_to_numpy",
        "smdebug_detect_worker",
        "smdebug_recommended_collections",
        "smdebug_hook_created",
        "smdebug_step_end",
        "smdebug_hook_closed",
    }
    for spec in specs:
        for param in inspect.signature(spec).parameters:
            assert f":param {param}:" in (spec.__doc__ or ""), (spec.__name__, param)
    pm = importlib.import_module("smdebug.core.plugins.manager").SmdebugPluginManager()
    assert pm.hook.smdebug_tensor_to_numpy.spec.opts["firstresult"]
    assert pm.hook.smdebug_detect_worker.spec.opts["firstresult"]
    assert not pm.hook.smdebug_register_frameworks.spec.opts["firstresult"]


# --------------------------------------------------------------------------------------------------
# the missing-plugin finder
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def restore_meta_path():
    saved = list(sys.meta_path)
    yield
    sys.meta_path[:] = saved


def test_finder_is_installed_once_at_the_end(restore_meta_path):
    import smdebug  # noqa: F401 - installs it
    from smdebug.core.plugins.missing import MissingPluginFinder, install_missing_plugin_finder

    ours = [f for f in sys.meta_path if isinstance(f, MissingPluginFinder)]
    assert len(ours) == 1
    assert install_missing_plugin_finder() is ours[0]
    assert len([f for f in sys.meta_path if isinstance(f, MissingPluginFinder)]) == 1


def test_finder_names_the_distribution_to_install(restore_meta_path):
    from smdebug.core.plugins.missing import MissingPlugin, MissingPluginError, MissingPluginFinder

    module = f"smdebug.{uid('fakeplugin')}"
    sys.meta_path.append(MissingPluginFinder({module: MissingPlugin("smdebug-fake", "fake")}))
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module(module)
    assert isinstance(info.value, MissingPluginError)
    assert str(info.value).startswith(f"{module} is provided by the smdebug-fake plugin, which is not installed: "
                                      "pip install --find-links dist 'smdebug-core[fake]'")
    assert module not in sys.modules
    with pytest.raises(ModuleNotFoundError, match="No module named"):  # other names: the usual error
        importlib.import_module(f"smdebug.{uid('other')}")


def test_finder_lets_later_finders_provide_the_module(restore_meta_path):
    import importlib.machinery

    from smdebug.core.plugins.missing import MissingPlugin, MissingPluginFinder

    module = f"smdebug.{uid('late')}"

    class LateFinder:
        def find_spec(self, fullname, path=None, target=None):
            if fullname != module:
                return None
            loader = type("L", (), {"create_module": lambda self, spec: None,
                                    "exec_module": lambda self, m: setattr(m, "VALUE", 7)})()
            return importlib.machinery.ModuleSpec(fullname, loader)

    sys.meta_path.append(MissingPluginFinder({module: MissingPlugin("smdebug-late", "late")}))
    sys.meta_path.append(LateFinder())
    try:
        assert importlib.import_module(module).VALUE == 7
    finally:
        sys.modules.pop(module, None)


def test_import_of_an_uninstalled_plugin_module_explains_itself(monkeypatch):
    """``import smdebug.pytorch`` with smdebug-torch hidden (it may well be installed in this environment)."""
    import smdebug

    core_dir = next(p for p in smdebug.__path__ if (Path(p) / "__init__.py").exists())
    if (Path(core_dir) / "pytorch").exists():
        pytest.skip("smdebug-torch is installed into the same directory as smdebug-core")
    monkeypatch.setattr(smdebug, "__path__", [core_dir])
    for name in [m for m in sys.modules if m == "smdebug.pytorch" or m.startswith("smdebug.pytorch.")]:
        monkeypatch.delitem(sys.modules, name)
    if hasattr(smdebug, "pytorch"):
        monkeypatch.delattr(smdebug, "pytorch")
    with pytest.raises(ModuleNotFoundError, match=r"smdebug\.pytorch is provided by the smdebug-torch plugin, which "
                                                  r"is not installed: pip install --find-links dist "
                                                  r"'smdebug-core\[torch\]' \(dist: the wheels built from"):
        importlib.import_module("smdebug.pytorch")
    with pytest.raises(ModuleNotFoundError, match="smdebug-torch"):
        exec("from smdebug import pytorch", {})
