"""``trial.to_dataframe(...)``: the whole run as one long table, checked value by value against the
per-tensor API, with every filter, stored and computed reductions, several workers, and on S3."""

from __future__ import annotations

import numpy as np
import pytest

from _cli_runs import write_mlp_run
from _support import NumpyHook, write_run
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugValueError
from smdebug.trials import create_trial

pd = pytest.importorskip("pandas", reason="to_dataframe needs pandas (smdebug-core[analysis])")


def _num(v) -> float:
    return float(np.asarray(v).reshape(-1)[0])


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    path = tmp_path_factory.mktemp("df") / "mlp"
    write_mlp_run(path, epochs=2, steps_per_epoch=10, eval_steps=3)
    return create_trial(str(path))


def test_every_saved_value_is_a_row(mlp):
    df = mlp.to_dataframe()
    assert list(df.columns) == ["tensor", "step", "mode", "mode_step", "worker", "value"]
    expected = sum(len(mlp.tensor(n).steps()) for n in mlp.tensor_names())
    assert len(df) == expected == 10 * 20 + 6 * 6  # 10 tensors at 20 TRAIN steps; 6 at the 6 EVAL steps
    for name in mlp.tensor_names():
        rows = df[df.tensor == name]
        t = mlp.tensor(name)
        assert rows.step.tolist() == t.steps()
        for _, row in rows.iloc[[0, len(rows) // 2, -1]].iterrows():
            m, ms = mlp.mode_modestep(row.step)
            assert (row["mode"], row.mode_step, row.worker) == (m.name, ms, "worker_0")
            want = t.value(row.step)
            if np.asarray(want).size == 1:
                assert row.value == pytest.approx(_num(want))
            else:
                np.testing.assert_array_equal(row.value, want)
    assert df[df.tensor == "loss"].value.dtype == object  # (arrays elsewhere in the column)
    assert mlp.to_dataframe(tensors="loss").value.dtype == np.float64  # one-element values: a float column


def test_filters(mlp):
    df = mlp.to_dataframe(tensors=["loss", "weights/.*"], modes="eval", steps=range(10, 20))
    assert set(df.tensor) == {"loss", "weights/fc1", "weights/fc2"}
    assert set(df["mode"]) == {"EVAL"} and set(df.step) == {10, 11, 12}
    df = mlp.to_dataframe(collections=["gradients"], modes=[ModeKeys.TRAIN])
    assert set(df.tensor) == set(mlp.tensor_names(collection="gradients")) and len(df) == 4 * 20
    assert mlp.to_dataframe(tensors="no-such-tensor").empty
    with pytest.raises(SMDebugValueError, match="no collection 'nope'"):
        mlp.to_dataframe(collections="nope")
    with pytest.raises(SMDebugValueError, match="unknown reduction 'l3'"):
        mlp.to_dataframe(reductions=["l3"])


def test_reductions_stored_or_computed(mlp):
    df = mlp.to_dataframe(collections=["gradients", "weights"], reductions=["l2", "mean", "abs_max"])
    assert list(df.columns)[5:] == ["l2", "mean", "abs_max"]
    for _, row in df.iloc[::7].iterrows():
        t = mlp.tensor(row.tensor)
        assert row.l2 == pytest.approx(_num(t.reduction_value(row.step, "l2")))  # stored for gradients
        assert row["mean"] == pytest.approx(_num(t.reduction_value(row.step, "mean")))
        assert row.abs_max == pytest.approx(_num(t.reduction_value(row.step, "max", abs=True)))


def test_reductions_of_a_run_saved_as_reductions_only(tmp_path):
    from smdebug.core.reduction_config import ReductionConfig
    from smdebug.core.save_config import SaveConfig

    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1), include_collections=["weights"])
    hook.get_collection("weights").reduction_config = ReductionConfig(norms=["l2"])
    for step in range(4):
        hook.begin_step()
        hook.record("weights/w", np.full(4, step, np.float32))
        hook.end_step()
    hook.close()
    trial = create_trial(str(tmp_path / "run"))
    df = trial.to_dataframe(reductions=["l2", "max"])
    assert df.l2.tolist() == pytest.approx([0, 2, 4, 6]) and df["max"].isna().all()  # max: neither stored nor computable
    assert trial.to_dataframe().empty  # no raw values saved


def test_several_workers(tmp_path):
    write_run(tmp_path / "run", range(6), workers=("worker_0", "worker_1"),
              tensors=lambda step, w: {"w": np.full(3, step * 10 + int(w[-1]), np.float32)})
    trial = create_trial(str(tmp_path / "run"))
    df = trial.to_dataframe(reductions=["max"])
    assert df[["step", "worker"]].values.tolist() == [[s, w] for s in range(6) for w in ("worker_0", "worker_1")]
    assert df["max"].tolist() == [s * 10 + k for s in range(6) for k in (0, 1)]
    assert trial.to_dataframe(workers="worker_1")["worker"].unique().tolist() == ["worker_1"]


def test_on_s3_as_locally(tmp_path, s3_run):
    write_mlp_run(tmp_path / "run", epochs=1, steps_per_epoch=10, eval_steps=3)
    from _cli_runs import upload_dir
    from smdebug.core.storage.base import parse_s3_path

    bucket, prefix = parse_s3_path(str(s3_run))
    upload_dir(tmp_path / "run", bucket, prefix)
    local = create_trial(str(tmp_path / "run")).to_dataframe(reductions=["l2"])
    remote = create_trial(str(s3_run)).to_dataframe(reductions=["l2"])
    pd.testing.assert_frame_equal(local, remote)
