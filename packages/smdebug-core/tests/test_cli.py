"""The ``smdebug`` command, run as a real subprocess (console script when installed)."""

from __future__ import annotations

import json
import uuid

from smdebug._version import __version__

FW = "smdebug.frameworks"


def _plugins(fake_dist):
    good, broken = f"clifw_{uuid.uuid4().hex[:8]}", f"clibroken_{uuid.uuid4().hex[:8]}"
    fake_dist.make(
        "fake-cli-good",
        {FW: {good: f"{good}_mod"}},
        {
            f"{good}_mod.py": f"""
                from smdebug.core.plugins import FrameworkInfo, hookimpl
                FRAMEWORK_IMPORT = "json"

                @hookimpl
                def smdebug_register_frameworks(register):
                    register(FrameworkInfo(name={good!r}, module="{good}_mod", import_name="json",
                                           hook_classes={{"Hook": "{good}_mod:Hook"}}, description="cli test"))
            """
        },
        version="2.3",
    )
    fake_dist.make("fake-cli-broken", {FW: {broken: f"{broken}_mod"}},
                   {f"{broken}_mod.py": "raise ValueError('broken on purpose')\n"})
    return good, broken


def test_plugins_json_lists_discovered_plugins(fake_dist, smdebug_cli):
    good, broken = _plugins(fake_dist)
    out = smdebug_cli("plugins", "--json", env={"PYTHONPATH": fake_dist.pythonpath()})
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)  # warnings go to stderr: stdout stays valid JSON
    assert data["smdebug_version"] == __version__
    by_name = {p["name"]: p for p in data["plugins"]}
    assert by_name[good]["status"] == "loaded"
    assert by_name[good]["distribution"] == "fake-cli-good" and by_name[good]["version"] == "2.3"
    assert by_name[good]["group"] == FW
    assert by_name[broken]["status"] == "failed" and "broken on purpose" in by_name[broken]["detail"]
    assert data["frameworks"][good]["plugin"] == good
    assert data["frameworks"][good]["hook_classes"] == {"Hook": f"{good}_mod:Hook"}
    assert isinstance(data["rules"], dict)
    assert broken in out.stderr  # the warning names the plugin


def test_plugins_strict_fails_on_a_broken_plugin(fake_dist, smdebug_cli):
    _plugins(fake_dist)
    out = smdebug_cli("plugins", "--strict", env={"PYTHONPATH": fake_dist.pythonpath()})
    assert out.returncode == 1


def test_plugins_table(fake_dist, smdebug_cli):
    good, broken = _plugins(fake_dist)
    out = smdebug_cli("plugins", env={"PYTHONPATH": fake_dist.pythonpath(), "SMDEBUG_DISABLE_PLUGINS": broken})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for heading in ("Plugins:", "Frameworks:", "Rules:", "STATUS", "DETAIL"):
        assert heading in text
    good_line = next(line for line in text.splitlines() if line.strip().startswith(good) and "loaded" in line)
    assert "fake-cli-good" in good_line and "2.3" in good_line
    assert any(broken in line and "disabled" in line for line in text.splitlines())
    assert f"SMDEBUG_DISABLE_PLUGINS='{broken}'" in text


def test_plugins_json_with_everything_disabled(smdebug_cli):
    out = smdebug_cli("plugins", "--json", env={"SMDEBUG_DISABLE_PLUGINS": "*"})
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert all(p["status"] == "disabled" for p in data["plugins"])
    assert data["frameworks"] == {} and data["rules"] == {}
    assert data["environment"]["SMDEBUG_DISABLE_PLUGINS"] == "*"


def test_version(smdebug_cli):
    out = smdebug_cli("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"smdebug {__version__} (smdebug-core)"


def test_help_lists_every_command(smdebug_cli):
    out = smdebug_cli("--help")
    assert out.returncode == 0
    for command in ("ls", "show", "plot", "report", "rules", "plugins"):
        assert f"    {command} " in out.stdout
    for command in ("ls", "show", "plot", "report"):
        out = smdebug_cli(command, "--help")
        assert out.returncode == 0 and f"usage: smdebug {command}" in out.stdout and "TRIAL" in out.stdout


def test_no_command_prints_usage(smdebug_cli):
    out = smdebug_cli()
    assert out.returncode == 2
    assert "usage: smdebug" in out.stderr and "plugins" in out.stderr


def test_unknown_command_is_a_usage_error(smdebug_cli):
    out = smdebug_cli("frobnicate")
    assert out.returncode == 2
    assert "invalid choice" in out.stderr


def test_main_is_importable_without_heavy_modules():
    import subprocess
    import sys

    heavy = ('numpy', 'pluggy', 'pandas', 'matplotlib', 'tqdm', 'smdebug.trials', 'smdebug.rules',
             'smdebug.rules.command', 'smdebug.rules.cli')
    # a core command: no plugin discovery at all; `smdebug --help`: the plugins' entry points (pluggy, the
    # rule pack's entry module) to list their commands, none of the commands' modules
    for argv, allowed in ((["ls"], set()), ([], {"pluggy", "smdebug.rules"})):
        code = (f"import sys; import smdebug.cli.main as m; m.build_parser({argv!r}); "
                f"print(sorted(x for x in {heavy!r} if x in sys.modules))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        found = set(eval(out.stdout.strip()))
        assert found <= allowed, argv
        assert ("pluggy" in found) == (not argv), argv
