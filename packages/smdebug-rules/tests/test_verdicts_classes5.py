"""ClassImbalance (and CheckInputImages) verdicts of probe 5's classes, on real tiny runs and hand-made ones:

* many balanced classes with a few labels each at the saved steps are not an imbalance (sampling noise);
* a sequence model's per-token targets (a language model's next characters) are NotApplicable (ClassImbalance
  and Confusion);
* imbalance the run compensates with class weights (CrossEntropyLoss(weight=...), XGBoost's
  scale_pos_weight) is judged on the weighted counts; imbalance with no compensation still fires;
* the misprediction test reaches the trained XGBoost model whatever the round count (the hook saves
  predictions and labels after the last round);
* too few samples saved say how many were saved and why, not that nothing was.
"""

import numpy as np
import pytest
import torch
import torch.nn as nn

from smdebug.rules.generic import CheckInputImages, ClassImbalance
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.rules.runner import run_rules
from smdebug.trials import create_trial

from _torch_runs import train_recommended
from test_data_rules import run


def _verdict(path, rule="ClassImbalance", **params):
    result = run_rules(str(path), [(rule, {k: str(v) for k, v in params.items()})] if params else [rule])
    return result.rules[0]


# --- F4: many balanced classes, few labels per class --------------------------------------------------------------
def test_many_balanced_classes_are_no_imbalance(tmp_path):
    """200 balanced classes, 16 saves of 64 labels (about 5 a class): chance alone gives 11 against 1."""
    rng = np.random.default_rng(0)
    trial = run(tmp_path / "balanced", [{"labels": rng.integers(0, 200, 64)} for _ in range(16)])
    rule = ClassImbalance(trial)
    assert invoke_rule(rule) == []
    r = _verdict(tmp_path / "balanced")
    assert r.status == "NotEvaluated"
    assert "per class" in r.detail and "1024 labels saved" in r.detail and "too few" in r.detail


def test_many_classes_with_real_imbalance_still_fire(tmp_path):
    """40 common classes 20 times as frequent as 10 rare ones, enough labels: still an imbalance."""
    rng = np.random.default_rng(1)
    p = np.array([20.0] * 40 + [1.0] * 10)
    steps = [{"labels": rng.choice(50, 2000, p=p / p.sum())} for _ in range(16)]
    assert invoke_rule(ClassImbalance(run(tmp_path / "skewed", steps)))
    # and two classes 19:1 with 1000 labels, as before
    two = run(tmp_path / "two", [{"labels": np.array([0] * 476 + [1] * 24)} for _ in range(2)])
    assert invoke_rule(ClassImbalance(two)) == [0, 1]


# --- F5: a character language model's next-token targets -----------------------------------------------------------
class _CharLM(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab, 16)
        self.rnn = nn.GRU(16, 32, batch_first=True)
        self.out = nn.Linear(32, vocab)

    def forward(self, x):
        return self.out(self.rnn(self.embed(x))[0]).reshape(-1, self.vocab)


def _zipf_text(n, vocab, seed=0):
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1) ** 1.3  # natural-text-like: the commonest character ~100x the rarest
    return rng.choice(vocab, n, p=p / p.sum())


def test_language_model_targets_are_not_applicable(tmp_path):
    torch.manual_seed(0)
    vocab, length, batch = 30, 20, 32
    text = torch.tensor(_zipf_text(20_000, vocab))
    starts = torch.randint(0, len(text) - length - 1, (40 * batch,))
    x = torch.stack([text[s:s + length] for s in starts])
    y = torch.stack([text[s + 1:s + length + 1] for s in starts]).reshape(len(starts), length)

    model = _CharLM(vocab)
    loss = nn.CrossEntropyLoss()  # on the (N * T, V) logits and the (N * T,) flattened next characters
    import smdebug.pytorch as smd

    hook = smd.Hook.recommended(str(tmp_path / "lm"))
    hook.register_module(model)
    hook.register_loss(loss)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(40):
        xb, yb = x[step * batch:(step + 1) * batch], y[step * batch:(step + 1) * batch]
        opt.zero_grad()
        loss(model(xb), yb.reshape(-1)).backward()
        opt.step()
    hook.close()
    r = _verdict(tmp_path / "lm")
    assert r.status == "NotApplicable", (r.status, r.detail, r.findings[:1])
    assert "per-token targets of a sequence model" in r.detail and "20 class ids per row" in r.detail
    # Confusion likewise: a sound language model mispredicts most tokens of most classes (two healthy benchmark
    # LMs fired "class 0: 43 of 283 predicted correctly" once Confusion judged early last labels)
    r = _verdict(tmp_path / "lm", "Confusion")
    assert r.status == "NotApplicable", (r.status, r.detail, r.findings[:1])
    assert "per-token targets of a sequence model" in r.detail and "confusion matrix is not judged" in r.detail


def test_text_classifier_on_token_ids_is_still_judged(tmp_path):
    """Token-id inputs with one label per sequence: a classifier's labels, whose imbalance counts."""
    rng = np.random.default_rng(2)
    steps = [{"model_input_0": rng.integers(0, 100, (100, 12)), "labels": np.array([0] * 95 + [1] * 5)}
             for _ in range(8)]
    trial = run(tmp_path, steps, collections={"inputs": ["model_input_0"]})
    assert invoke_rule(ClassImbalance(trial))


def test_per_position_labels_are_not_applicable(tmp_path):
    """A tagger: labels (N, T) scored by predictions (N, T, C)."""
    rng = np.random.default_rng(3)
    tags = rng.choice(5, (64, 15), p=[0.9, 0.05, 0.03, 0.015, 0.005])
    steps = [{"labels": tags, "predictions": rng.normal(size=(64, 15, 5)).astype(np.float32)} for _ in range(10)]
    run(tmp_path, steps)
    r = _verdict(tmp_path)
    assert r.status == "NotApplicable" and "a class per position of a sequence" in r.detail


# --- F2: imbalance the run compensates -----------------------------------------------------------------------------
def _imbalanced(n=1280, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = (torch.rand(n, generator=g) < 0.05).long()
    x = torch.randn(n, 6, generator=g) + 1.5 * y[:, None].float()
    return x, y


@pytest.mark.parametrize("weighted", [True, False])
def test_cross_entropy_class_weights_compensate(tmp_path, weighted):
    torch.manual_seed(0)
    x, y = _imbalanced()
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    loss = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 19.0]) if weighted else None)
    train_recommended(tmp_path, model, x, y, loss, steps=40, batch_size=64, lr=0.1)
    trial = create_trial(str(tmp_path))
    if weighted:
        entries = trial.collection_manager.meta["class_weights"]
        assert entries == [{"source": "CrossEntropyLoss(weight=...)", "weights": {"0": 1.0, "1": 19.0},
                            "targets": "^CrossEntropyLoss_input_1$"}]
    r = _verdict(tmp_path)
    if weighted:
        assert r.status == "NoIssuesFound", r.findings[:1]
    else:
        assert r.status == "IssuesFound" and "ratio" in r.findings[0].reason


def test_partial_compensation_still_fires_and_says_weighted(tmp_path):
    torch.manual_seed(0)
    x, y = _imbalanced()
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    train_recommended(tmp_path, model, x, y, nn.CrossEntropyLoss(weight=torch.tensor([1.0, 1.2])), steps=40,
                      batch_size=64, lr=0.1)
    r = _verdict(tmp_path)
    assert r.status == "IssuesFound"
    assert "weighted by CrossEntropyLoss(weight=...)" in r.findings[0].reason


def _xgboost_run(path, params, x, y, rounds, validation=True, **fit):
    import xgboost as xgb

    import smdebug.xgboost as smd

    dtrain = xgb.DMatrix(x, label=y, **fit)
    hook = smd.Hook.recommended(str(path))
    if validation:
        hook.validation_data = dtrain
    xgb.train({"nthread": 1, **params}, dtrain, num_boost_round=rounds, callbacks=[hook])
    hook.close()
    return path


def _binary(n=1000, seed=0, positives=0.05):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < positives).astype(int)
    x = rng.normal(size=(n, 4)) + y[:, None]
    return x, y


@pytest.mark.parametrize("spw", [19, None])
def test_xgboost_scale_pos_weight_compensates(tmp_path, spw):
    x, y = _binary()
    params = {"objective": "binary:logistic", "max_depth": 2}
    if spw:
        params["scale_pos_weight"] = spw
    r = _verdict(_xgboost_run(tmp_path, params, x, y, 20))
    assert r.status == ("NoIssuesFound" if spw else "IssuesFound"), r.findings[:1]


def test_xgboost_row_weights_compensate(tmp_path):
    x, y = _binary()
    weights = np.where(y == 1, 19.0, 1.0)
    run_dir = _xgboost_run(tmp_path, {"objective": "binary:logistic", "max_depth": 2}, x, y, 20, weight=weights)
    assert _verdict(run_dir).status == "NoIssuesFound"


# --- D7: the trained model's mispredictions, whatever the round count ---------------------------------------------
def test_xgboost_constant_predictor_is_caught_after_100_rounds(tmp_path):
    """min_child_weight too large to split: every row gets the base score, class 0 is always mispredicted.
    The tapered schedule's last save is round 80 of 100; the hook saves predictions after round 99 too."""
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.6).astype(int)
    x = rng.normal(size=(300, 4))
    r = _verdict(_xgboost_run(tmp_path, {"objective": "binary:logistic", "min_child_weight": 1e6}, x, y, 100))
    assert r.status == "IssuesFound", (r.status, r.detail)
    assert r.findings[-1].step == 99 and "mispredicts class 0" in r.findings[-1].reason


def test_xgboost_scikit_learn_path_saves_labels_of_its_eval_set(tmp_path):
    from xgboost import XGBClassifier

    import smdebug.xgboost as smd

    x, y = _binary(seed=1, positives=0.4)
    hook = smd.Hook.recommended(str(tmp_path))
    XGBClassifier(n_estimators=30, max_depth=2, n_jobs=1, callbacks=[hook]).fit(
        x[:700], y[:700], eval_set=[(x[:700], y[:700]), (x[700:], y[700:])], verbose=False)
    hook.close()
    trial = create_trial(str(tmp_path))
    assert trial.collection_manager.meta.get("xgboost_labels_from") == "validation_1"
    assert trial.tensor("labels").value(0).shape == (300,)
    assert _verdict(tmp_path).status == "NoIssuesFound"


def test_xgboost_multi_output_trees_are_judged(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 5))
    y = np.stack([x[:, 0] + x[:, 1], x[:, 2] ** 2, x[:, 3]], 1)
    params = {"tree_method": "hist", "multi_strategy": "multi_output_tree", "max_depth": 3}
    r = _verdict(_xgboost_run(tmp_path, params, x, y, 12, validation=False), "TreeDepth")
    assert r.status == "NoIssuesFound", (r.status, r.detail)


# --- D5: too few samples saved: how many were ----------------------------------------------------------------------
def test_too_few_samples_say_how_many_were_saved(tmp_path):
    rng = np.random.default_rng(0)
    # classes 0 and 1 seven-fold apart: 80 labels can neither show that ratio above 10 nor rule it out (80 balanced
    # labels of 10 classes can: 12 against 5 allows at most 8.9)
    shares = np.array([0.28, 0.04] + [0.085] * 8)
    steps = []
    for i in range(60):
        saved = i % 2 == 0 and i < 40  # 20 saves of 4 images and labels, then steps with neither
        steps.append({"images": rng.normal(size=(4, 3, 8, 8)), "labels": rng.choice(10, 4, p=shares)} if saved else {})
    run(tmp_path, steps, collections={"inputs": ["images"]})
    r = _verdict(tmp_path, "CheckInputImages")
    assert r.status == "NotEvaluated"
    assert "80 of threshold_samples=500 images saved (about 4 per saved step x 20 saved steps)" in r.detail
    r = _verdict(tmp_path, "ClassImbalance")
    assert r.status == "NotEvaluated"
    assert "80 of samples=500 labels saved (about 4 per saved step x 20 saved steps)" in r.detail


def test_counts_balanced_by_scale_pos_weight_are_said_as_weighted(tmp_path):
    """A model that mispredicts the rare class of a set compensated by scale_pos_weight: the finding said "the
    classes are balanced: ... class 0 has 955 labels and ... class 1, 45: ratio 1.12" (probe 16b F8); the ratio is
    of the counts weighted by scale_pos_weight, and the finding says so."""
    rng = np.random.default_rng(0)
    y = (rng.random(1000) < 0.05).astype(int)
    x = rng.normal(size=(1000, 4))  # (no signal, and no split allowed: one score for every row)
    params = {"objective": "binary:logistic", "max_depth": 2, "scale_pos_weight": 19, "min_child_weight": 1e6}
    r = _verdict(_xgboost_run(tmp_path, params, x, y, 20))
    assert r.status == "IssuesFound", (r.status, r.detail)
    reason = r.findings[0].reason
    assert "weighted by scale_pos_weight=19 pass" in reason and "weighted 1 and 19: weighted ratio 1.12" in reason, reason
