"""Hostile run folders and file systems, one quick case of each (the slow suite, test_hostile_slow.py,
tries every kind of object at every place): nothing is written through a planted link, nothing blocks on
a FIFO, decoding stays within the record's size, run-supplied regexes are matched in bounded time, names
with ``$`` draw, and every failure is the documented exception naming the file, never a raw traceback."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from _hostile import (
    add_collection,
    collections_path,
    event_path,
    index_path,
    peak_growth_reading,
    plant,
    put_record,
    run_smdebug,
    set_location,
    shape_record,
    string_record,
    write_simple_run,
)
from _support import NumpyHook
from smdebug import SaveConfig
from smdebug.exceptions import CollectionFileCorrupted, EventFileCorrupted, IndexReaderException
from smdebug.trials import create_trial

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file-system objects")

VICTIM_TEXT = b"precious, must never change\n"


@pytest.fixture
def victim(tmp_path):
    p = tmp_path / "victim.txt"
    p.write_bytes(VICTIM_TEXT)
    return p


@pytest.fixture(autouse=True)
def _quick_end(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def _train(out, steps=3, names=("weights/w", "loss")):
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["weights", "losses"])
    for step in range(steps):
        hook.begin_step()
        for i, n in enumerate(names):
            hook.record(n, np.full(4, step + i, np.float32))
        hook.end_step()
    hook.close()
    return hook


def _assert_clean_cli_error(proc, *needles):
    """A message naming the file and a non-zero exit status (2: unreadable run; show: 1, value unreadable)."""
    text = proc.stdout + proc.stderr
    assert proc.returncode in (1, 2), text[-2000:]
    assert "Traceback" not in text, text[-3000:]
    for needle in needles:
        assert needle in text, text[-2000:]


# --- 1. no write through a planted link -----------------------------------------------------------------
def test_planted_links_at_every_temporary_and_final_name_are_not_written_through(tmp_path, victim):
    out = tmp_path / "run"
    # An attacker who can write into out_dir plants links where the hook will create its files.
    planted = [
        "index/000000000/000000000000_worker_0.json.tmp",
        "index/000000000/000000000001_worker_0.json",  # a final name: replaced, never written through
        "events/000000000000/000000000000_worker_0.tfevents.tmp",
        "events/000000000002/000000000002_worker_0.tfevents",
        "collections/000000000/worker_0_collections.json.tmp",
        "training_job_end.ts.tmp",
    ]
    for rel in planted:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(victim, out / rel)
    hook = _train(out)
    assert not hook.disabled
    assert victim.read_bytes() == VICTIM_TEXT
    for rel in planted:
        # final names are replaced; a plain ``.tmp`` name is not one a writer uses (each writes under its
        # own private name, below), so the link there is left alone, never written through
        assert (out / rel).is_symlink() == rel.endswith(".tmp"), rel
    trial = create_trial(str(out))
    assert trial.steps() == [0, 1, 2]
    np.testing.assert_array_equal(trial.tensor("weights/w").value(2), np.full(4, 2, np.float32))


def test_links_planted_at_a_writers_private_temporary_name_are_not_written_through(tmp_path, victim):
    """The temporary name a write goes through (``<name>.<pid>.<thread>.tmp``) can be guessed for a known
    process and thread; a link (or any file) planted there is removed and the file made anew."""
    from smdebug.core.storage import get_storage
    from smdebug.core.storage.safe_fs import private_tmp_name

    out = tmp_path / "run"
    keys = ["training_job_end.ts", "index/000000000/000000000000_worker_0.json"]
    for key in keys:
        (out / key).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(victim, out / private_tmp_name(key))
    storage = get_storage(str(out))
    for key in keys:
        storage.write_atomic(key, b"ours")
    assert victim.read_bytes() == VICTIM_TEXT
    for key in keys:
        assert (out / key).read_bytes() == b"ours" and not (out / key).is_symlink()
        assert not os.path.lexists(out / private_tmp_name(key))


def test_a_folder_swapped_for_a_link_is_not_written_into(tmp_path):
    out, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "index").mkdir(parents=True)
    os.symlink(elsewhere, out / "index" / "000000000")  # where the index files of steps 0-999 go
    hook = _train(out)
    assert list(elsewhere.iterdir()) == []
    assert hook.unsaved_steps == [0, 1, 2]  # each lost step reported (at close), training went on


def test_tensorboard_and_state_files_are_not_written_through_links(tmp_path, victim, monkeypatch):
    import socket

    from smdebug.core.locations import step_str
    from smdebug.core.storage.safe_fs import write_file_atomic

    tb = tmp_path / "tb" / "GLOBAL"
    tb.mkdir(parents=True)
    os.symlink(victim, tb / f"{step_str(0)}_{os.getpid()}_{socket.gethostname()}.tfevents")
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_collections=["losses"], tensorboard_dir=str(tmp_path / "tb"))
    hook.begin_step()
    hook.record("loss", np.float32(1.5))
    hook.end_step()
    hook.close()
    assert victim.read_bytes() == VICTIM_TEXT
    assert [p for p in tb.iterdir() if not p.is_symlink()]  # the summaries went to a file of their own
    # the checkpoint state file (state_store) and every CLI output go through write_file_atomic
    target = tmp_path / "state" / "metadata.json"
    target.parent.mkdir()
    os.symlink(victim, target)
    write_file_atomic(str(target), b"[]")
    assert victim.read_bytes() == VICTIM_TEXT and target.read_bytes() == b"[]" and not target.is_symlink()


@pytest.mark.parametrize("planted", ["tensorboard", "tensorboard/GLOBAL"])
def test_the_runs_own_tensorboard_folder_is_not_entered_through_a_planted_link(tmp_path, planted, smdebug_log):
    # (export_tensorboard with no tensorboard_dir: <out_dir>/tensorboard is part of the run, and a link there
    # made the hook write its summaries into whatever folder it pointed to; probe 17b F2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "run"
    (out / planted).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(elsewhere, out / planted)
    hook = NumpyHook(out_dir=str(out), save_config=SaveConfig(save_interval=1), include_collections=["losses"],
                     export_tensorboard=True)
    for step in range(2):
        hook.begin_step()
        hook.record("loss", np.float32(step))
        hook.end_step()
    hook.close()
    assert list(elsewhere.iterdir()) == []
    text = "\n".join(smdebug_log.messages())
    assert "symbolic link, not a folder" in text and "TensorBoard output stops" in text, text
    assert create_trial(str(out)).tensor("loss").steps() == [0, 1]  # the run itself is saved


def test_a_tensorboard_dir_the_user_names_may_be_a_link(tmp_path):
    real = tmp_path / "real_tb"
    real.mkdir()
    os.symlink(real, tmp_path / "tb")
    hook = NumpyHook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1),
                     include_collections=["losses"], tensorboard_dir=str(tmp_path / "tb"))
    hook.begin_step()
    hook.record("loss", np.float32(1.0))
    hook.end_step()
    hook.close()
    assert [p.name for p in (real / "GLOBAL").iterdir()][0].endswith(".tfevents")


def test_plot_output_planted_as_a_link_is_replaced_not_written_through(tmp_path, victim):
    pytest.importorskip("matplotlib")
    out = tmp_path / "run"
    _train(out)
    png = tmp_path / "plot.png"
    os.symlink(victim, png)
    proc = run_smdebug("plot", str(out), "loss", "-o", str(png))
    assert proc.returncode == 0, proc.stderr
    assert victim.read_bytes() == VICTIM_TEXT
    assert not png.is_symlink() and png.read_bytes().startswith(b"\x89PNG")


# --- 2. bounded memory when decoding ----------------------------------------------------------------------
def test_string_tensor_bomb_decodes_within_the_records_size(tmp_path):
    """One 64 KiB string and 12,000 empty ones (89,593 bytes) made the reader peak at 3 GB."""
    out = write_simple_run(tmp_path / "run", names=["s"])
    record = string_record([b"x" * 65536] + [b""] * 12000)
    put_record(out, 1, "s", record)
    growth, outcome = peak_growth_reading(out, "s", 1)
    assert outcome.startswith("value object (12001,)"), outcome
    assert growth < 64 * len(record) + (16 << 20), (growth, len(record))
    value = create_trial(out).tensor("s").value(1)
    assert value[0] == "x" * 65536 and value[1:].tolist() == [""] * 12000


def test_ordinary_string_tensors_keep_numpy_strings(tmp_path):
    out = write_simple_run(tmp_path / "run", names=["s"])
    put_record(out, 1, "s", string_record([b"alpha", b"beta", b"gamma"]))
    value = create_trial(out).tensor("s").value(1)
    assert value.dtype.kind == "U" and value.tolist() == ["alpha", "beta", "gamma"]


@pytest.mark.parametrize("record", [
    shape_record([1 << 40], float_val=[1.0]),  # a splat of 4 TiB
    shape_record([1 << 62, 1 << 62, 1 << 62], content=b"\0" * 16),  # more elements than the content holds
    shape_record([2] * 100, content=b"\0" * 8),  # more dimensions than numpy has
], ids=["splat", "huge-shape", "rank-100"])
def test_shape_bombs_are_refused(tmp_path, record):
    out = write_simple_run(tmp_path / "run")
    put_record(out, 1, "w", record)
    with pytest.raises(EventFileCorrupted) as info:
        create_trial(out).tensor("w").value(1)
    assert info.value.step == 1 and info.value.path.endswith(".tfevents")
    assert "not of step" not in str(info.value)  # (refused for its shape, not for the step it claims)


@pytest.mark.parametrize("start,length", [(1 << 63, 100), ((1 << 64) + 5, 10), (0, 1 << 60), (10, (1 << 63) + 1)])
def test_absurd_index_locations_raise_the_documented_error(tmp_path, start, length):
    out = write_simple_run(tmp_path / "run")
    set_location(out, 1, "w", start, length)
    with pytest.raises(EventFileCorrupted, match="past the end") as info:
        create_trial(out).tensor("w").value(1)
    assert info.value.step == 1
    proc = run_smdebug("show", out, "w", "--step", "1")
    assert "Traceback" not in proc.stderr and proc.returncode != 0, proc.stderr


# --- 3. FIFOs, devices, folders where files belong: no hang ------------------------------------------
@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["fifo", "dir", "link_dev_zero"])
def test_index_collections_and_event_files_that_are_not_regular_files(tmp_path, kind):
    out = write_simple_run(tmp_path / "run")
    plant(index_path(out, 1), kind)
    if kind == "dir":
        # A folder is not a file: the listing holds no index file of step 1, as if it were missing.
        assert create_trial(out).steps() == [0, 2]
    else:
        with pytest.raises(IndexReaderException) as info:
            create_trial(out)
        assert info.value.path.endswith("000000000001_worker_0.json") and info.value.step == 1
        assert create_trial(out, skip_damaged=True).steps() == [0, 2]
        _assert_clean_cli_error(run_smdebug("ls", out, timeout=240), "000000000001_worker_0.json")

    out2 = write_simple_run(tmp_path / "run2")
    plant(event_path(out2, 1), kind)
    with pytest.raises(EventFileCorrupted) as info:
        create_trial(out2).tensor("w").value(1)
    assert info.value.step == 1 and info.value.path.endswith("000000000001_worker_0.tfevents")
    _assert_clean_cli_error(run_smdebug("show", out2, "w", "--step", "1", timeout=240), "tfevents")

    out3 = write_simple_run(tmp_path / "run3")
    plant(collections_path(out3), kind)
    if kind == "dir":
        assert create_trial(out3).steps() == [0, 1, 2]  # no collections file: read as one worker's run
    else:
        with pytest.raises(CollectionFileCorrupted):
            create_trial(out3)
        _assert_clean_cli_error(run_smdebug("ls", out3, timeout=240), "collections")


# --- 4. slow regexes from a run ----------------------------------------------------------------------------
@pytest.mark.timeout(600)
def test_catastrophic_include_regex_from_a_run_is_bounded(tmp_path):
    """The issue's case: ``^(a+)+$`` against ``'a' * 40 + '!'`` (minutes with Python's re)."""
    name = "a" * 40 + "!"
    out = write_simple_run(tmp_path / "run", names=["w", name, "aaaa"])
    add_collection(out, "evil", ["^(a+)+$"])
    trial = create_trial(out)
    assert trial.tensor_names(collection="evil") == ["aaaa"]  # the right answer, at once
    for args in (("ls", out), ("ls", out, "--json"), ("ls", out, "--collection", "evil")):
        proc = run_smdebug(*args, timeout=180)
        assert proc.returncode == 0, proc.stderr


@pytest.mark.timeout(600)
def test_a_pattern_too_slow_even_for_the_regex_engine_is_set_aside(tmp_path, caplog):
    name = "x" * 5000
    out = write_simple_run(tmp_path / "run", names=["w", name, "xxy"])
    add_collection(out, "evil", ["(x+x+)+y", "^w$"])
    trial = create_trial(out)
    with caplog.at_level("WARNING", logger="smdebug"):
        # set aside for every name (also "xxy", which it would match): the answer never depends on order
        assert trial.tensor_names(collection="evil") == ["w"]
    assert trial.collection("evil").refused_regex == ["(x+x+)+y"]
    assert "took more than" in caplog.text
    doc = json.loads(run_smdebug("ls", out, "--json", timeout=180).stdout)
    assert {c["name"]: c["refused_regex"] for c in doc["collections"]}["evil"] == ["(x+x+)+y"]
    assert create_trial(out).tensor_names(collection="weights") == ["w"]  # the run's own collections
    # the CLI's --regex is bounded the same way
    proc = run_smdebug("ls", out, "--regex", "(x+x+)+y", timeout=180)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.timeout(300)
def test_patterns_just_under_the_timeout_are_bounded_in_all(tmp_path, monkeypatch):
    """Each match a little under the per-match timeout, many names and collections: the patterns of the file
    share SMDEBUG_RUN_REGEX_TOTAL seconds in all, then are set aside (names x patterns x 0.1 s was hours)."""
    monkeypatch.setenv("SMDEBUG_RUN_REGEX_TOTAL", "1")
    names = ["a" * 23 + f"!{i}" for i in range(30)]
    out = write_simple_run(tmp_path / "run", names=["w", *names])
    path = collections_path(out, "worker_0")
    with open(path) as f:
        doc = json.load(f)
    for c in range(20):
        doc["collections"][f"slow{c}"] = {"name": f"slow{c}", "include_regex": ["^(a|aa)+$"], "tensor_names": []}
    with open(path, "w") as f:
        json.dump(doc, f)
    trial = create_trial(out)
    for c in range(20):
        assert trial.tensor_names(collection=f"slow{c}") == []
    budget = trial.collection("slow0")._budget
    assert budget.spent and budget.seconds >= 1 and "in all" in budget.why()
    assert trial.collection("slow19").refused_regex == ["^(a|aa)+$"]
    assert trial.tensor_names() == sorted(["w", *names])  # the run itself still reads


def test_a_hook_configuration_pattern_that_backtracks_does_not_stop_training(tmp_path, monkeypatch):
    """The JSON configuration's patterns are matched in bounded time too: (a|a)+$ against a 26-letter name
    took minutes before the first step."""
    from _support import NumpyHook

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / "run"), "CollectionConfigurations": [
        {"CollectionName": "evil", "CollectionParameters": {"include_regex": "(a|a)+$", "save_interval": "1"}}]}))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(config))
    hook = NumpyHook.create_from_json_file()
    for step in range(2):
        hook.begin_step()
        hook.record("a" * 26 + "b", np.ones(2, np.float32))
        hook.end_step()
    hook.close()
    assert hook.get_collection("evil").refused_regex == ["(a|a)+$"]


# --- 5. `$` in names ----------------------------------------------------------------------------------------
def test_dollar_signs_in_names_draw_as_text(tmp_path):
    pytest.importorskip("matplotlib")
    name = r"lr$\frac{a}{$"
    out = write_simple_run(tmp_path / "run", names=[name])
    proc = run_smdebug("plot", out, name, "-o", str(tmp_path / "p.png"))
    assert proc.returncode == 0, proc.stderr
    from smdebug.cli._series import plain_text

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure()
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_title(plain_text(name))
    fig.canvas.draw()  # raises ParseSyntaxException if the text were parsed as mathtext


def test_names_of_kilobytes_are_clipped_in_a_plot(tmp_path):
    # (long names squeezed the axes to nothing; matplotlib printed its layout warning and a line of our
    # source on stderr -- probe 17b F10)
    pytest.importorskip("matplotlib")
    names = [f"scalar/{i}_" + "x" * 3000 for i in range(5)]
    out = write_simple_run(tmp_path / "run", names=names)
    proc = run_smdebug("plot", out, "scalar/.*", "-o", str(tmp_path / "p.png"))
    assert proc.returncode == 0 and "Warning" not in proc.stderr, proc.stderr[-2000:]


# --- 6. raw exceptions ----------------------------------------------------------------------------------
def test_an_event_file_that_is_a_directory(tmp_path):
    out = write_simple_run(tmp_path / "run")
    plant(event_path(out, 2), "dir")
    with pytest.raises(EventFileCorrupted, match="a directory") as info:
        create_trial(out).tensor("w").value(2)
    assert info.value.step == 2
    values = create_trial(out, skip_damaged=True).tensor("w").values()
    assert sorted(values) == [0, 1]


# --- 7. worker names ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name,written_as", [("a\nb", "worker_0"), ("tab\there", "worker_0"), ("x" * 300, "worker_0"),
                                              ("ünï code", "ünï code"), ("..", "..")])
def test_worker_names_round_trip_or_are_replaced(tmp_path, monkeypatch, name, written_as):
    from smdebug.core.plugins.worker_env import apply_overrides
    from smdebug.core.plugins.info import WorkerInfo

    monkeypatch.setenv("SMDEBUG_WORKER_NAME", name)

    class Hook(NumpyHook):
        def _detect_worker(self):
            return apply_overrides(WorkerInfo(rank=0, size=1))

    hook = Hook(out_dir=str(tmp_path / "run"), save_config=SaveConfig(save_interval=1), include_collections=["losses"])
    for step in range(2):
        hook.begin_step()
        hook.record("loss", np.float32(step))
        hook.end_step()
    hook.close()
    trial = create_trial(str(tmp_path / "run"))
    assert trial.workers() == [written_as]
    assert trial.steps() == [0, 1]
    assert trial.tensor("loss").value(1, worker=written_as).tolist() == [1.0]


# --- 9. links inside a run are not followed -------------------------------------------------------
def test_a_linked_events_folder_pointing_outside_is_not_followed(tmp_path, caplog):
    import shutil

    out = write_simple_run(tmp_path / "run")
    outside = tmp_path / "outside_events"
    shutil.move(os.path.join(out, "events"), outside)
    os.symlink(outside, os.path.join(out, "events"))
    trial = create_trial(out)
    assert trial.steps() == [0, 1, 2]  # the index is inside the run
    with pytest.raises(EventFileCorrupted, match="symbolic link") as info:
        trial.tensor("w").value(1)
    assert info.value.step == 1


def test_a_linked_index_folder_is_not_entered(tmp_path, caplog):
    import shutil

    out = write_simple_run(tmp_path / "run")
    outside = tmp_path / "outside_index"
    shutil.move(os.path.join(out, "index", "000000000"), outside)
    os.symlink(outside, os.path.join(out, "index", "000000000"))
    with caplog.at_level("WARNING", logger="smdebug"):
        trial = create_trial(out)
        assert trial.steps() == []
    assert "follows no link" in caplog.text


def test_the_root_itself_may_be_a_link(tmp_path):
    out = write_simple_run(tmp_path / "real")
    os.symlink(out, tmp_path / "alias")
    assert create_trial(str(tmp_path / "alias")).tensor("w").value(2).tolist() == [2.0] * 3


# --- S3 prefixes: hostile keys ------------------------------------------------------------------------
def test_hostile_s3_keys_never_become_paths_of_the_disk_cache(tmp_path, s3_run):
    """Keys with ``..`` or absolute-looking parts are names in a bucket; with a disk cache they must not
    put a file outside the cache folder, and an index naming an event file outside events/ is refused."""
    import boto3

    from _support import write_run

    write_run(s3_run, range(3))
    bucket, prefix = s3_run.path[len("s3://"):].split("/", 1)
    client = boto3.client("s3")
    body = s3_run.read("index/000000000/000000000001_worker_0.json")
    for key in ("index/000000000/../../../../escape/000000000005_worker_0.json",
                "index/000000000//abs/000000000006_worker_0.json"):
        client.put_object(Bucket=bucket, Key=f"{prefix}/{key}", Body=body)
    cache = tmp_path / "cache"
    before = {str(p) for p in tmp_path.rglob("*")}
    # (not where any writer puts the index of a step: refused, or skipped with a warning)
    with pytest.raises(IndexReaderException, match="belongs at index/000000000/00000000000[56]_worker_0.json"):
        create_trial(s3_run.path, cache_dir=str(cache))
    trial = create_trial(s3_run.path, cache_dir=str(cache), skip_damaged=True)
    assert trial.steps() == [0, 1, 2]
    for step in trial.steps():
        trial.tensor("w").value(step)
    new = {str(p) for p in tmp_path.rglob("*")} - before
    assert all(p.startswith(str(cache) + os.sep) or p == str(cache) for p in new), sorted(new)
    # an index pointing outside events/ is refused, on S3 too
    for key in ("index/000000000/../../../../escape/000000000005_worker_0.json",
                "index/000000000//abs/000000000006_worker_0.json"):
        client.delete_object(Bucket=bucket, Key=f"{prefix}/{key}")
    doc = json.loads(body)
    doc["meta"]["event_file_name"] = "../../../../etc/passwd"
    s3_run.write("index/000000000/000000000007_worker_0.json", json.dumps(doc))
    with pytest.raises(IndexReaderException, match="outside the run"):
        create_trial(s3_run.path)
