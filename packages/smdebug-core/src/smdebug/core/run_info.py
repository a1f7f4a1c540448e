"""Which framework wrote a run.

Hooks record it in the collections file (``_meta.framework``: ``"pytorch"``, ``"tensorflow"``, ``"mxnet"``,
``"xgboost"``: the hook's ``framework_name``). Runs without the record (written by the original smdebug, which
reads ``_meta`` as a whole and so accepts the key, but never writes it) are recognised by the collections
each framework's hook creates with its default regexes, which the collections file carries.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

FRAMEWORK_KEY = "framework"
#: what a recorded framework name may look like (a hook's ``framework_name``): readers quote it in messages,
#: so a record that is a paragraph, holds control characters or is a megabyte long is no framework name
_FRAMEWORK_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]{0,39}")

#: collections only one framework's hook creates
_XGBOOST_COLLECTIONS = ("hyperparameters", "trees", "feature_importance", "average_shap", "full_shap")
_TENSORFLOW_COLLECTIONS = ("optimizer_variables", "sm_metrics", "tensorflow_summaries")
#: the default regex of the ``losses`` collection, which differs between PyTorch and MXNet
_LOSS_REGEXES = {r"[Ll]oss_(?!input).*output": "pytorch", r".*loss._(?!input).*output": "mxnet"}


def framework_of(source) -> Optional[str]:
    """The framework of a run (a trial or its CollectionManager): the recorded one, else inferred from its
    collections; None when neither tells (a recorded name that is no name, see _FRAMEWORK_NAME, tells
    nothing)."""
    cm = getattr(source, "collection_manager", source)
    recorded = getattr(cm, "meta", {}).get(FRAMEWORK_KEY)
    if isinstance(recorded, str) and _FRAMEWORK_NAME.fullmatch(recorded.strip()):
        return recorded.strip()
    return infer_framework(getattr(cm, "collections", {}))


def infer_framework(collections) -> Optional[str]:
    """The framework whose hook creates these collections (name -> Collection), None if unknown."""
    if any(name in collections for name in _XGBOOST_COLLECTIONS):
        return "xgboost"
    if any(name in collections for name in _TENSORFLOW_COLLECTIONS):
        return "tensorflow"
    losses = collections.get("losses")
    for regex in getattr(losses, "include_regex", None) or ():
        if regex in _LOSS_REGEXES:
            return _LOSS_REGEXES[regex]
    return None


def record_framework(collection_manager, framework: str) -> None:
    collection_manager.meta[FRAMEWORK_KEY] = framework


#: the modes the training script switched to with ``hook.set_mode`` (``_meta.modes_set``: ``["EVAL", "TRAIN"]``):
#: a validation that began no step (it ran another module with a functional loss) is told apart from none
MODES_SET_KEY = "modes_set"


def modes_set(source) -> List[str]:
    """The modes a run's script asked for with ``set_mode`` (mode names), [] when not recorded (the original's
    runs, runs that never called it)."""
    cm = getattr(source, "collection_manager", source)
    recorded = getattr(cm, "meta", {}).get(MODES_SET_KEY)
    if not isinstance(recorded, list):
        return []
    return [m for m in recorded if isinstance(m, str) and m in ("TRAIN", "EVAL", "PREDICT", "GLOBAL")]


def is_step(value) -> bool:
    """Whether a value read from a run's records is a step number: a whole number (not a bool) from 0 to 2**63-1
    (a record holding more digits is damage, and printing it would print them all)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 63


#: the first step whose gradients were due while every parameter an optimizer stepped had none
#: (``_meta.no_gradients``: ``{"step": 12, "parameters": 6}``; written by the PyTorch hook): why a run that asked for
#: gradients has none, said by the rules that need them
NO_GRADIENTS_KEY = "no_gradients"


def no_gradients(source) -> Optional[Tuple[int, int]]:
    """(step, parameters) of the run's record that an optimizer stepped with no gradient at a step whose gradients
    were due; None when not recorded (or not a record of two whole numbers)."""
    cm = getattr(source, "collection_manager", source)
    recorded = getattr(cm, "meta", {}).get(NO_GRADIENTS_KEY)
    if not isinstance(recorded, dict):
        return None
    step, count = recorded.get("step"), recorded.get("parameters")
    if not (is_step(step) and is_step(count)):
        return None
    return step, count


#: the model's trainable parameters (``requires_grad``) that no optimizer step moved at any step whose gradients
#: were due, as the optimizers stepped (``_meta.untrained_parameters``, written by the PyTorch hook):
#: ``{"not_stepped": [...], "no_gradient": [...], "steps": 12, "upto": 480}``. ``not_stepped``: had a gradient
#: but no optimizer of the run holds them (left out of the optimizer's parameters); ``no_gradient``: an optimizer
#: holds them but they had no gradient while others had one (cut from the loss by ``.detach()``, unused);
#: ``frozen`` (absent from older runs): ``requires_grad`` False at every such step, frozen on purpose.
#: ``steps``: how many such steps the record covers, the last at ``upto``
UNTRAINED_KEY = "untrained_parameters"
_MAX_NAMES = 10_000


def untrained_parameters(source) -> Optional[Dict[str, object]]:
    """The run's record of parameters no optimizer step moved (see :data:`UNTRAINED_KEY`), its lists kept to
    names (strings, at most 10,000 each); None when not recorded or not such a record."""
    cm = getattr(source, "collection_manager", source)
    recorded = getattr(cm, "meta", {}).get(UNTRAINED_KEY)
    if not isinstance(recorded, dict) or not (is_step(recorded.get("steps")) and is_step(recorded.get("upto"))):
        return None
    out: Dict[str, object] = {"steps": recorded["steps"], "upto": recorded["upto"]}
    for kind in ("not_stepped", "no_gradient", "frozen"):
        names = recorded.get(kind)
        names = names if isinstance(names, list) else []
        out[kind] = [n for n in names[:_MAX_NAMES] if isinstance(n, str)]
    return out


#: the first step at which an optimizer stepped the model while the model was in ``eval()`` mode and the script
#: had not named its modes (``_meta.trained_in_eval``: ``{"step": 0}``, written by the PyTorch hook): the hook
#: then reads the mode from the model's training flag, so a loop that left ``model.eval()`` on while training
#: saved its training steps as EVAL steps
TRAINED_IN_EVAL_KEY = "trained_in_eval"


def trained_in_eval(source) -> Optional[int]:
    """The step of the run's record that an optimizer stepped the model while it was in eval() mode; None when
    not recorded (or not a step)."""
    cm = getattr(source, "collection_manager", source)
    recorded = getattr(cm, "meta", {}).get(TRAINED_IN_EVAL_KEY)
    step = recorded.get("step") if isinstance(recorded, dict) else None
    return step if is_step(step) else None


#: forward passes of the model without gradients while it was in ``train()`` mode, followed by more training
#: (``_meta.evaluated_in_train_mode``, written by the PyTorch hook): ``{"step": 40, "forwards": 8, "modules":
#: ["Net.drop", ...]}``. ``step``: the training step that followed them; ``forwards``: how many such forward
#: passes came before it; ``modules``: the model's modules that behave differently in train() mode (Dropout,
#: BatchNorm), at most 10. A loop that validates under ``torch.no_grad()`` without ``model.eval()``
EVALUATED_IN_TRAIN_MODE_KEY = "evaluated_in_train_mode"
_MAX_MODULES = 10


def evaluated_in_train_mode(source) -> Optional[Dict[str, object]]:
    """The run's record of forward passes without gradients in train() mode between training steps (see
    :data:`EVALUATED_IN_TRAIN_MODE_KEY`); None when not recorded or not such a record."""
    cm = getattr(source, "collection_manager", source)
    recorded = getattr(cm, "meta", {}).get(EVALUATED_IN_TRAIN_MODE_KEY)
    if not isinstance(recorded, dict) or not (is_step(recorded.get("step")) and is_step(recorded.get("forwards"))):
        return None
    modules = recorded.get("modules")
    modules = [m for m in modules[:_MAX_MODULES] if isinstance(m, str)] if isinstance(modules, list) else []
    return {"step": recorded["step"], "forwards": recorded["forwards"], "modules": modules}


#: a causal language model (its head shifts the labels one token itself) given labels that are its ``input_ids``
#: already moved one token ahead (``_meta.labels_shifted_twice``, written by the PyTorch hook): ``{"step": 0,
#: "positions": 512, "share": 1.0}``, the step it was seen at, how many label positions were compared and the
#: share of them equal to the next input token
LABELS_SHIFTED_TWICE_KEY = "labels_shifted_twice"


def labels_shifted_twice(source) -> Optional[Dict[str, object]]:
    """The run's record of labels shifted twice (see :data:`LABELS_SHIFTED_TWICE_KEY`); None when not recorded or
    not such a record."""
    cm = getattr(source, "collection_manager", source)
    recorded = getattr(cm, "meta", {}).get(LABELS_SHIFTED_TWICE_KEY)
    if not isinstance(recorded, dict) or not (is_step(recorded.get("step")) and is_step(recorded.get("positions"))):
        return None
    share = recorded.get("share")
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        return None
    return {"step": recorded["step"], "positions": recorded["positions"], "share": float(share)}


#: the parts of a custom training loop the hook met only while a ``tf.function`` was traced (``_meta.traced_only``:
#: ``["wrap_optimizer"]``; written by the TensorFlow hook): the training steps that ran through them saved nothing,
#: which the rules that found no gradients or weights say
TRACED_ONLY_KEY = "traced_only"

#: what each recorded part is, as the rules say it
_TRACED_PARTS = {"wrap_tape": "wrap_tape()", "wrap_optimizer": "the optimizer given to wrap_optimizer()"}


def traced_only(source) -> List[str]:
    """The recorded parts (``wrap_tape``, ``wrap_optimizer``) the hook saw only while a tf.function was traced,
    [] when none was recorded; unknown names are left out (the record is a run's file)."""
    cm = getattr(source, "collection_manager", source)
    recorded = getattr(cm, "meta", {}).get(TRACED_ONLY_KEY)
    if not isinstance(recorded, list):
        return []
    return [_TRACED_PARTS[p] for p in _TRACED_PARTS if p in recorded]
