"""Red team 12: a hook configuration (``smdebug run --config``, SMDEBUG_CONFIG_FILE_PATH) whose values are
huge. The refusal quoted the value whole (the CLI clips its error line at about 1,000 characters; the
exception, and the line the hook logs in the training's log, were not): a save_interval of 5,000 digits, a save_steps entry or an
export_tensorboard of a megabyte became one error line as long; the value is now quoted clipped (``core.names.shown``)."""

from __future__ import annotations

import json
import sys

import pytest

from _hostile import run_smdebug

HUGE = "9" * 5000


@pytest.mark.parametrize("hook_parameters, said", [
    ({"save_interval": HUGE}, "save_interval must be an integer"),
    ({"start_step": "x" * 1_000_000}, "start_step must be an integer"),
    ({"save_steps": ["b" * 1_000_000]}, "save_steps entry must be an integer"),
    ({"save_steps": 0.5}, "save_steps must be a list of integers"),
    ({"export_tensorboard": "y" * 1_000_000}, "must be true or false"),
])
def test_a_huge_value_in_the_configuration_is_quoted_clipped(tmp_path, hook_parameters, said):
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / "run"), "HookParameters": hook_parameters}))
    mark = tmp_path / "ran"
    proc = run_smdebug("run", "--config", config, "--", sys.executable, "-c", f"open({str(mark)!r}, 'w')")
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(proc.stderr) < 600, proc.stderr[:300]
    assert not mark.exists()


@pytest.mark.parametrize("value", [HUGE, "x" * 1_000_000, ["y" * 1_000_000]])
def test_the_exception_quotes_a_huge_value_clipped(value):
    from smdebug.core.save_config import SaveConfig
    from smdebug.exceptions import SMDebugValueError

    with pytest.raises(SMDebugValueError) as raised:
        SaveConfig(save_interval=value) if not isinstance(value, list) else SaveConfig(save_steps=value)
    assert "must be an integer" in str(raised.value) and len(str(raised.value)) < 400
