"""Run an unmodified training script with a hook attached (PyTorch, Keras, MXNet Gluon, XGBoost).

  smdebug run --out-dir /tmp/run -- python train.py      # what `smdebug rules run /tmp/run` needs
  smdebug run --out-dir /tmp/run --collections weights,gradients,losses --save-interval 10 -- python train.py
  smdebug run --config hook.json -- python train.py --epochs 3

The hook is built from a JSON hook configuration (--config, else SMDEBUG_CONFIG_FILE_PATH, else one made from
--out-dir/--collections/--save-interval/--include-regex) and attached when the script imports its
framework, the way SageMaker's framework containers did it. With --out-dir alone the hook saves the
recommended preset (--preset recommended: what smd.Hook.recommended saves, so that `smdebug rules run` can
judge the run; the collections come from smdebug-rules, for the script's framework). USE_SMDEBUG=0 runs the
script untouched. The exit status is the script's. When the script has ended, the command waits (Linux; at most
SMDEBUG_RUN_CHILDREN_WAIT seconds, 120) for the processes it started that outlive it (the other ranks a
launcher in the script started, as Lightning's DDP strategy does), then says how many steps were saved.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from smdebug.zero_code.job_processes import adopt_orphans, adopted_note, wait_for_adopted
from smdebug.zero_code.preset import PRESET_ENV, RECOMMENDED
from smdebug.zero_code.saved_steps import saved_steps_note

#: seconds ``smdebug run`` waits, after the script has ended, for the processes it started that outlive it
CHILDREN_WAIT_ENV, CHILDREN_WAIT_DEFAULT = "SMDEBUG_RUN_CHILDREN_WAIT", 120.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="a hook JSON configuration (as SageMaker writes it)")
    parser.add_argument("--out-dir", metavar="DIR", help="where to save (local directory or s3://bucket/prefix)")
    parser.add_argument("--collections", default="", metavar="NAMES", help="comma-separated collections to save")
    parser.add_argument("--save-interval", type=int, default=None, metavar="N", help="save every N steps")
    parser.add_argument("--include-regex", default="", metavar="REGEX", help="also save tensors matching this")
    parser.add_argument(
        "--preset", choices=(RECOMMENDED, "none"), default=None,
        help="recommended (the default with --out-dir alone): save what the recommended rules read, as "
             "smd.Hook.recommended does (the collections smdebug-rules names for the script's framework; every "
             "step to 9, then steps 10, 20, 40 ... 320, then every 500; losses and metrics at every step); "
             "--collections adds to it, --save-interval replaces its schedule. none (the default when "
             "--collections, --save-interval or --include-regex is given): save only what the options say, "
             "every --save-interval steps (500 if not given: a shorter run saves step 0 only)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")


def _preset(args) -> str:
    """The preset the options ask for: the one named, else the recommended one unless they say what to save
    (--collections, --save-interval, --include-regex: the original's behaviour, kept for them) or give a
    configuration file (the file says what to save)."""
    if args.preset is not None:
        return args.preset
    if args.config or not args.out_dir or args.collections.strip() or args.save_interval is not None \
            or args.include_regex:
        return "none"
    return RECOMMENDED


def _config_from_args(args, preset: str) -> dict:
    params = {}
    if args.save_interval is not None:
        params["save_interval"] = str(args.save_interval)
    if args.include_regex:
        params["include_regex"] = args.include_regex
    collections = [c.strip() for c in args.collections.split(",") if c.strip()]
    if preset == RECOMMENDED:
        # (named as HookParameters: a CollectionConfigurations entry would get its own every-500-steps
        # schedule, not the preset's)
        if collections:
            params["include_collections"] = ",".join(collections)
        return {"LocalPath": args.out_dir, "HookParameters": params}
    return {"LocalPath": args.out_dir, "HookParameters": params,
            "CollectionConfigurations": [{"CollectionName": c} for c in collections]}


def _configuration_problem(path: str):
    """Why the hook the script would make from the configuration at ``path`` would refuse it (a one-line
    message), or None. The hook reads it in the script's process, where a bad configuration must not stop
    training: it logs one error and the script trains on saving nothing (``--save-interval 0``, an include
    regex that is no regex). Read here first, the command says so before anything runs. A path with no file
    is left to the hook, which takes it for no configuration (SageMaker's rule)."""
    from smdebug.core.json_config import load_hook_config
    from smdebug.exceptions import SMDebugError

    try:
        config = load_hook_config(path)
        out_dir_problem = _out_dir_problem(config.get("out_dir"), config.get("dry_run"))
    except FileNotFoundError:
        return None
    except SMDebugError as e:  # InvalidConfigurationError and the checks it calls (SMDebugValueError...)
        text = str(e)
        return text if len(text) <= 1000 else text[:1000] + "..."
    return out_dir_problem


def _out_dir_problem(out_dir, dry_run):
    """Why the hook would refuse ``out_dir`` (a file, a FIFO, a link to a device or to nothing, a finished
    run, a path under a file or in a folder it may not write), or None. The hook refuses it in the script's
    process with one logged error and the script trained for nothing; nothing is created here (the hook
    creates the folder). SMDebugError for what :func:`validate_out_dir` refuses itself."""
    from smdebug.core.out_dir import validate_out_dir
    from smdebug.core.storage.base import is_s3_path

    if not out_dir or is_s3_path(str(out_dir)):
        return None  # (no out_dir: the hook's own default; S3: its credentials are checked where it writes)
    out_dir = validate_out_dir(out_dir, dry_run=True)
    if dry_run:
        return None
    existing = out_dir
    while not os.path.lexists(existing):  # (the nearest part of the path there is: the hook creates the rest)
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"out_dir {out_dir} cannot be created: {existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"out_dir {out_dir} cannot be written: {existing} is not writable"
    return None


def _wait_for_job(adoption) -> None:
    """Wait, bounded, for the processes the script started that are still running now that it has ended (the
    other ranks of a job a launcher in it started), so that the steps are counted, and the command returns,
    once the whole job has ended."""
    from smdebug.core.env_settings import env_float

    timeout = env_float(CHILDREN_WAIT_ENV, CHILDREN_WAIT_DEFAULT, minimum=0.0)

    def waiting(pids):
        print(f"smdebug run: the script has ended; waiting for the processes it started (pid "
              f"{', '.join(map(str, pids)) or '?'}) to end, up to {timeout:g} s ({CHILDREN_WAIT_ENV})",
              file=sys.stderr)

    failed, left = wait_for_adopted(adoption, timeout, on_wait=waiting)
    for line in adopted_note(failed, left, timeout):
        print(line, file=sys.stderr)


def run(args) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("smdebug run: give the command to run after --", file=sys.stderr)
        return 2
    env = dict(os.environ)
    if env.get("USE_SMDEBUG", "").strip().lower() in ("0", "false", "no"):
        return subprocess.call(command, env=env)
    tmp = None
    preset = _preset(args)
    env.pop(PRESET_ENV, None)  # (an outer smdebug run's choice is not this one's)
    if preset == RECOMMENDED:
        if args.config or not args.out_dir:
            print("smdebug run: --preset recommended goes with --out-dir (a --config file says itself what to "
                  "save)", file=sys.stderr)
            return 2
        env[PRESET_ENV] = RECOMMENDED
    if args.config:
        if not os.path.isfile(args.config):
            # (the hook read no configuration and said "no hook configuration": the script ran, saving
            # nothing, as if --config had not been given)
            what = "no such file" if not os.path.lexists(args.config) else "not a regular file"
            print(f"smdebug run: --config {args.config}: {what}", file=sys.stderr)
            return 2
        env["SMDEBUG_CONFIG_FILE_PATH"] = os.path.abspath(args.config)
    elif args.out_dir:
        tmp = tempfile.NamedTemporaryFile("w", suffix=".json", prefix="smdebug-hook-", delete=False)
        json.dump(_config_from_args(args, preset), tmp)
        tmp.close()
        env["SMDEBUG_CONFIG_FILE_PATH"] = tmp.name
    elif not env.get("SMDEBUG_CONFIG_FILE_PATH"):
        print("smdebug run: give --out-dir or --config (or set SMDEBUG_CONFIG_FILE_PATH)", file=sys.stderr)
        return 2
    problem = _configuration_problem(env["SMDEBUG_CONFIG_FILE_PATH"])
    if problem is not None:
        if tmp is not None:  # (a configuration made from the options: name them, not a temporary file)
            problem = problem.replace(tmp.name, "the options' configuration")
            os.unlink(tmp.name)
        print(f"smdebug run: {problem}", file=sys.stderr)
        return 2
    bootstrap = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "zero_code", "bootstrap")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (bootstrap, env.get("PYTHONPATH", "")) if p)
    env["SMDEBUG_ZERO_CODE"] = "1"
    if preset == RECOMMENDED:
        print("smdebug run: saving the recommended preset (what `smdebug rules run` reads, as "
              "smd.Hook.recommended saves it); --preset none, --collections or --save-interval to choose "
              "yourself", file=sys.stderr)
    adoption = adopt_orphans()  # (the ranks a launcher in the script starts and leaves running: job_processes)
    # (the steps counted at the end are those written since; a second's slack for coarse file times)
    started = time.time() - 1.0
    try:
        status = subprocess.call(command, env=env)
        if adoption is not None:
            _wait_for_job(adoption)
    except FileNotFoundError:
        print(f"smdebug run: command not found: {command[0]}", file=sys.stderr)
        return 127
    finally:
        if adoption is not None:
            adoption.end()
        if tmp is not None:  # (after the whole job: a rank started late reads it too)
            os.unlink(tmp.name)
    if args.out_dir and not args.config:
        note = saved_steps_note(args.out_dir, preset, since=started)
        if note:
            print(note, file=sys.stderr)
    return status
