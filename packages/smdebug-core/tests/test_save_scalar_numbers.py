"""``hook.save_scalar`` with a value that is no number (a string, an object) is refused at the call, naming
the scalar, once; training and the rest of the run go on. It used to be saved as a string tensor, which
every curve drawn or judged from the scalars then tripped over."""

import logging

from _support import NumpyHook, train_logistic_regression
from smdebug import SaveConfig
from smdebug.trials import create_trial


def test_save_scalar_refuses_what_is_no_number(tmp_path, caplog):
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1))
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        train_logistic_regression(hook, steps=3, on_step=lambda step: (hook.save_scalar("accuracy", "high"),
                                                                       hook.save_scalar("epoch", step)))
    hook.close()
    refused = [r.getMessage() for r in caplog.records if "accuracy" in r.getMessage()]
    assert refused == ["smdebug: save_scalar() ignored: save_scalar('accuracy') needs a number, got str 'high'"]
    trial = create_trial(str(tmp_path / "run"))
    assert "scalar/accuracy" not in trial.tensor_names() and "scalar/epoch" in trial.tensor_names()
    assert trial.tensor("loss").steps() == [0, 1, 2]  # training and the rest of the run went on
