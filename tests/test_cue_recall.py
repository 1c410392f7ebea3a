"""The cue-recall experiment of week 06 (numeric/cue_recall, seqgrad experiment cue-recall)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess

import numpy as np
import pytest
import torch

from seqgrad.crosscheck import cli
from seqgrad.numeric.cue_recall import experiment, models, paths, results, task, train


# ---------------------------------------------------------------- task

def test_episode_layout():
    ep = task.generate(50, 8, seed=1)
    assert ep.inputs.shape == ep.targets.shape == (50, task.input_length(8)) == (50, 12)
    assert (ep.inputs[:, 0] == task.BOS).all()
    assert (ep.inputs[:, task.CUE_POSITION] == ep.cues).all()
    moves = ep.inputs[:, 2:ep.recall]
    assert moves.shape[1] == 8 and set(moves.unique().tolist()) <= set(task.DIRECTIONS)
    assert (ep.inputs[:, ep.recall] == task.RECALL).all()
    assert (ep.targets[:, ep.recall] == ep.cues).all()  # the recall query's target is the cue
    assert (ep.targets[:, -1] == task.EOS).all()
    assert (ep.targets[:, :-1] == ep.inputs[:, 1:]).all()  # next-token shift
    assert set(ep.cues.unique().tolist()) == set(task.DIRECTIONS)


def test_splits_are_separate_and_reproducible():
    a, b = task.split("train", 16, 256), task.split("validation", 16, 256)
    assert not torch.equal(a.inputs, b.inputs)
    assert torch.equal(task.split("train", 16, 256).inputs, a.inputs)
    assert len(task.split("test", 8)) == 1024 and len(task.split("validation", 8)) == 512


def test_recall_metrics_perfect_and_uniform():
    ep = task.generate(40, 8, seed=2)
    perfect = torch.full((40, ep.inputs.shape[1], task.K), -30.0)
    perfect[torch.arange(40), ep.recall, ep.cues] = 30.0
    m = task.recall_metrics(perfect, ep)
    assert m.accuracy == 1.0 and m.cross_entropy < 1e-12
    uniform = torch.full((40, ep.inputs.shape[1], task.K), -math.inf)
    uniform[:, :, list(task.DIRECTIONS)] = 0.0
    m = task.recall_metrics(uniform, ep)
    assert m.cross_entropy == pytest.approx(math.log(4)) and task.CHANCE_CROSS_ENTROPY == pytest.approx(1.386, abs=5e-4)


# ---------------------------------------------------------------- models

def test_parameter_counts_of_the_built_models():
    assert [models.parameter_count(m) for m in models.MODELS] == [1943, 2023, 1915]
    # the note of claims.experiment_parameter_counts: the Transformer's count depends on the delay
    assert [models.parameter_count("transformer", d) for d in (8, 16)] == [1627, 1723]
    assert models.parameter_count("rnn", 8) == 1943 and models.parameter_count("gru", 8) == 2023


@pytest.mark.parametrize("name", models.MODELS)
def test_models_are_causal(name):
    model = models.build(name, 8, 6206)
    ep = task.generate(4, 8, seed=3)
    x = ep.inputs.clone()
    x2 = x.clone()
    x2[:, 6:] = task.DIRECTIONS[0]
    a, b = model(x), model(x2)
    assert a.shape == (4, 12, task.K)
    assert torch.equal(a[:, :6], b[:, :6]) and not torch.equal(a[:, 6:], b[:, 6:])


def _random_parameters(model) -> dict[str, torch.Tensor]:
    """The parameters drawn at random: not the constant LayerNorm gains and shifts, nor zero biases."""
    return {n: p.detach().flatten() for n, p in model.named_parameters() if p.numel() > 1 and p.flatten().std() > 0}


@pytest.mark.parametrize("name", models.MODELS)
def test_no_two_parameter_tensors_start_equal(name):
    """Each module draws from its own stream (the head was once seeded like the block: its rows were the first
    head's W_Q rows). In float64 two independent draws share no value, so any shared value is a shared stream."""
    model = models.build(name, 8, 6206, dtype=torch.float64)
    params = _random_parameters(model)
    assert len(params) >= (8 if name == "transformer" else 5)
    names = sorted(params)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared = set(params[a].tolist()) & set(params[b].tolist())
            assert not shared, f"{a} and {b} start with {len(shared)} equal values"
    # a scaled copy of one stream (randn and randn / sqrt(D)) is a shared stream too
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            x, y = params[a], params[b]
            n = min(len(x), len(y), 8)
            ratio = x[:n] / y[:n]
            assert not torch.allclose(ratio, ratio[0].expand(n)), f"{b} is a multiple of {a}"


def test_initialisation_streams_depend_on_the_seed_only():
    s = models.streams(6206)
    assert list(s) == list(models.STREAMS) and len(set(s.values())) == len(s)
    assert s == models.streams(6206) and set(s.values()).isdisjoint(models.streams(6207).values())
    state = torch.random.get_rng_state()
    a = models.build("rnn", 8, 6206)
    assert torch.equal(torch.random.get_rng_state(), state)  # building leaves the global generator alone
    torch.manual_seed(123)
    b = models.build("rnn", 8, 6206)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_transformer_shape_as_described():
    m = models.build("transformer", 32, 0)
    heads = m.encoder.blocks[0].attention.heads
    assert len(heads) == 2 and all(h.d_k == h.d_v == 6 and h.D == 12 for h in heads)
    assert m.encoder.blocks[0].mlp.F_width == 24 and m.encoder.learned.max_len == 36


# ---------------------------------------------------------------- training

def _tiny_data(d=8):
    return {"train": task.generate(192, d, 11), "validation": task.generate(64, d, 12), "test": task.generate(64, d, 13)}


@pytest.fixture(autouse=True)
def _one_thread():
    """As the experiment runs: one thread (the runs are tiny; a loaded 2-core machine makes threads costly)."""
    from seqgrad.numeric.device import one_thread

    with one_thread():
        yield


def test_project_clipping_equals_clip_grad_norm():
    model = models.build("gru", 8, 6206)
    ep = task.generate(64, 8, 5)
    train.next_token_loss(model(ep.inputs), ep.targets).mul(50).backward()  # a gradient far above norm 1
    params = list(model.parameters())
    assert train.clip_difference(params) <= 1e-7
    before = [p.grad.clone() for p in params]
    total = train.clip_(params)
    assert total > 1
    assert math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in params)) == pytest.approx(1.0, rel=1e-5)
    cos = sum(float((p.grad.double() * g.double()).sum()) for p, g in zip(params, before)) / total
    assert cos == pytest.approx(1.0, rel=1e-5)


@pytest.mark.parametrize("name", models.MODELS)
def test_training_is_deterministic_on_cpu(name):
    data = _tiny_data()
    with torch.random.fork_rng():
        r1, s1 = train.train(name, 8, 6206, data, epochs=2)
        r2, s2 = train.train(name, 8, 6206, data, epochs=2)
    assert r1.history == r2.history and r1.test_accuracy == r2.test_accuracy
    assert all(torch.equal(s1[k], s2[k]) for k in s1)
    r3, _ = train.train(name, 8, 6207, data, epochs=2)
    assert r3.history != r1.history  # another initialisation seed is another run


def test_checkpoint_is_the_best_validation_epoch():
    run, _ = train.train("transformer", 8, 6206, _tiny_data(), epochs=3)
    assert run.best_epoch == 1 + int(np.argmin(run.history["val_ce"]))
    assert run.validation_cross_entropy == min(run.history["val_ce"])


def test_batch_order_is_shared_by_every_model_and_seed():
    a = train.batch_orders(256, 2, 8)
    b = train.batch_orders(256, 2, 8)
    assert all(torch.equal(x, y) for ea, eb in zip(a, b) for x, y in zip(ea, eb))
    assert not torch.equal(a[0][0], a[1][0])


# ---------------------------------------------------------------- gradient paths

@pytest.mark.parametrize("name", ["rnn", "gru"])
def test_path_product_equals_autograd(name):
    model = models.build(name, 8, 6206)
    s = paths.summarize(model, task.split("test", 8), 6206, n=4)
    assert s.chain_rule_error < 1e-9
    assert 0 < s.grad_cue <= s.grad_recall * s.path_norm * (1 + 1e-9)  # ||g_c|| <= ||g_q|| ||P||_2, per episode on average
    assert s.ratio > 0


def test_transformer_attention_to_the_cue():
    model = models.build("transformer", 8, 6206)
    s = paths.summarize(model, task.split("test", 8), 6206, n=4)
    assert len(s.attention) == 2 and all(0 < a < 1 for a in s.attention)
    assert s.uniform_attention == pytest.approx(1 / 11)
    assert s.grad_cue > 0 and s.grad_recall > 0


# ---------------------------------------------------------------- results

def _records():
    out = []
    for m, d, vals in [("rnn", 8, [1.0, 1.0, 1.0]), ("rnn", 16, [0.3, 0.5, 0.4]), ("gru", 8, [1.0, 0.98, 1.0])]:
        for s, v in zip(train.SEEDS, vals):
            out.append({"model": m, "delay": d, "seed": s, "test_accuracy": v, "test_cross_entropy": 0.1,
                        "best_epoch": 3, "validation_cross_entropy": 0.2})
    return out


def test_table_mean_and_sample_std():
    cells = results.table(_records())
    c = next(c for c in cells if (c.model, c.delay) == ("rnn", 16))
    assert c.mean == pytest.approx(0.4) and c.std == pytest.approx(0.1)  # ddof = 1
    assert c.as_dict()["distance_to_printed"] == pytest.approx(0.4 - 0.44)
    md = results.markdown(cells)
    assert "| RNN | 1 ± 0 | 1 ± 0 | 0.4 ± 0.1 | 0.44 ± 0.126 |" in md
    single = results.table(_records()[:1])
    assert single[0].std is None and "| RNN | 1 | 1 ± 0 |" in results.markdown(single)


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
def test_latex_table_compiles(tmp_path):
    body = results.latex(results.table(_records()))
    doc = "\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n" + body + "\\end{document}\n"
    (tmp_path / "t.tex").write_text(doc)
    r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:]


def test_wilson_interval_known_values():
    z2 = results.Z95 ** 2
    assert results.wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)  # the textbook example
    assert results.wilson_interval(13, 13) == pytest.approx((13 / (13 + z2), 1.0))
    assert results.wilson_interval(0, 13) == pytest.approx((0.0, z2 / (13 + z2)))
    p = results.Proportion(11, 13)
    assert p.three_pass == pytest.approx((11 / 13) ** 3)
    assert p.three_pass_interval == pytest.approx(tuple(x ** 3 for x in p.interval))
    assert p.verdict == "reproduced in 11 of 13 seeds"
    assert results.verdict(13, 13) == "reproduced" and results.verdict(0, 13) == "not reproduced"


def test_escape_epoch_is_the_first_below_the_threshold():
    chance = task.CHANCE_CROSS_ENTROPY
    assert results.escape_epoch({"val_ce": [chance, chance - 0.01, 1.2, 0.3]}) == 3
    assert results.escape_epoch({"val_ce": [chance] * 60}) is None
    assert results.ESCAPE_CROSS_ENTROPY == pytest.approx(0.9 * math.log(4))


def test_seed_ranges():
    seeds = experiment.parse_seeds("6206-6208,7000-7009")
    assert seeds == experiment.DISTRIBUTION_SEEDS and len(seeds) == 13
    assert experiment.format_seeds(seeds) == "6206-6208,7000-7009"
    assert experiment.parse_seeds("5,3-4,5") == (5, 3, 4) and experiment.format_seeds((5, 3, 4)) == "5,3-4"


@pytest.mark.parametrize("argv, named", [
    (["--delays", "1000000000"], "--delays"),
    (["--seeds", "1" * 30], "--seeds"),
    (["--seeds", "1e400"], "--seeds"),
    (["--seeds", "0-100000"], "--seeds"),
    (["--seeds", "9-3"], "--seeds"),
    (["--jobs", "100000000000000000000"], "--jobs"),
    (["--jobs", "0"], "--jobs"),
])
def test_size_guards_of_the_command(argv, named, tmp_path, capsys):
    out = tmp_path / "never"
    assert _cli(*argv, "--out", str(out)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0] and ("to " in err[0] or "at most" in err[0] or "a <= b" in err[0]), err
    assert not out.exists()


# ---------------------------------------------------------------- the command

def _cli(*argv) -> int:
    return cli.main(["experiment", "cue-recall", *argv])


def test_quick_run_small_grid_resumes(tmp_path, capsys):
    out = tmp_path / "exp"
    assert _cli("--quick", "--delays", "8", "--models", "rnn,transformer", "--out", str(out)) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["quick"] and len(doc["runs"]) == 2 and doc["invocations"][-1]["runs_trained"] == 2
    assert {p.name for p in out.iterdir()} >= {"results.json", "table.md", "table.tex", "accuracy-vs-delay.png",
                                               "gradient-paths.png", "plateau-escape.png"}
    shown = capsys.readouterr().out  # the table, measured beside printed, on the terminal
    assert "| Model | Delay 8: measured | Delay 8: Table 34 |" in shown and "| RNN | " in shown
    assert "| the text's reading | verdict | check |" in shown and str(out / "results.json") in shown
    assert not list(out.rglob("*.tmp"))
    # a rerun reuses the finished runs and reproduces the same numbers, a run recorded before the loss was an
    # option (no "loss" in its config) included: it was trained with the default loss
    old = sorted((out / "runs").glob("*.json"))[0]
    record = json.loads(old.read_text())
    del record["config"]["loss"]
    old.write_text(json.dumps(record))
    assert _cli("--quick", "--delays", "8", "--models", "rnn,transformer", "--out", str(out)) == 0
    again = json.loads((out / "results.json").read_text())
    assert again["invocations"][-1]["runs_trained"] == 0 and len(again["invocations"]) == 2
    assert again["table"] == doc["table"]


def test_interrupted_run_keeps_finished_runs(tmp_path, monkeypatch):
    out = tmp_path / "exp"
    real = train.train
    calls = []

    def flaky(*args, **kwargs):
        calls.append(args[:3])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(train, "train", flaky)
    assert _cli("--quick", "--delays", "8", "--models", "rnn,gru", "--out", str(out)) == 130
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["rnn-d8-s6206.json", "rnn-d8-s6206.pt"]
    assert not (out / "results.json").exists() and not list(out.rglob("*.tmp"))
    monkeypatch.setattr(train, "train", real)
    assert _cli("--quick", "--delays", "8", "--models", "rnn,gru", "--out", str(out)) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["invocations"][-1]["runs_trained"] == 1 and len(doc["runs"]) == 2


@pytest.mark.slow
def test_quick_run_of_the_whole_grid(tmp_path):
    """``seqgrad experiment cue-recall --quick``: 3 models x 3 delays, one seed (the issue's < 60 s smoke run)."""
    import time

    start = time.process_time()  # CPU time: one process, one thread; a loaded machine inflates only the wall time
    assert _cli("--quick", "--out", str(tmp_path)) == 0
    seconds = time.process_time() - start
    doc = json.loads((tmp_path / "results.json").read_text())
    assert len(doc["runs"]) == 9 and {c["delay"] for c in doc["table"]} == {8, 16, 32}
    assert all(r["clip_vs_torch"] <= 1e-6 for r in doc["runs"])
    assert max(p["chain_rule_error"] or 0 for p in doc["paths"]) < 1e-8
    assert seconds < 60  # measured: about 11 s of CPU time


# ---------------------------------------------------------------- the trend checks on a recorded run

def _recorded(accuracy, seeds=experiment.DISTRIBUTION_SEEDS) -> dict:
    """A synthetic record of the full grid with ``accuracy(model, delay, seed)``."""
    runs = [{"model": m, "delay": d, "seed": s, "test_accuracy": accuracy(m, d, s), "test_cross_entropy": 0.5,
             "best_epoch": 60, "validation_cross_entropy": 0.5, "clip_vs_torch": 0.0,
             "history": {"val_ce": [task.CHANCE_CROSS_ENTROPY] * 10 + [0.5] * 50}}
            for m in models.MODELS for d in experiment.DELAYS for s in seeds]
    path_rows = [{"model": m, "delay": d, "seed": s, "chain_rule_error": 1e-14 if m != "transformer" else None,
                  "path_norm": 10.0 ** -d if m != "transformer" else None, "ratio": 10.0 ** -d,
                  "attention": [0.9, 0.05] if m == "transformer" else None}
                 for m in models.MODELS for d in experiment.DELAYS for s in seeds]
    return {"config": experiment.Config().as_dict(), "runs": runs,
            "table": [c.as_dict() for c in results.table(experiment.text_seed_records(runs))],
            "distribution": [d.as_dict() for d in results.distribution(runs)],
            "parameters": {"rnn": {"32": 1943}, "transformer": {"8": 1627}}, "paths": path_rows,
            "paths_initial": [dict(p) for p in path_rows],
            "invocations": [{"command": "seqgrad experiment cue-recall"}]}


def _run_checks(doc, tmp_path, monkeypatch) -> dict:
    from seqgrad.crosscheck.checks import experiment as checks
    from seqgrad.crosscheck.registry import Context

    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    monkeypatch.setattr(checks, "RESULTS", path)
    names = ["record", "delay8_perfect", "transformer_every_delay", "ordering", "rnn_chance_at_32", "gradient_paths"]
    return {n: getattr(checks, n)(Context()) for n in names}


def test_trend_checks_pass_on_the_texts_pattern_and_fail_otherwise(tmp_path, monkeypatch):
    printed = lambda m, d, s: results.PRINTED[m][d][0]  # noqa: E731
    outcomes = _run_checks(_recorded(printed), tmp_path, monkeypatch)
    assert all(o.passed and not o.skipped for o in outcomes.values()), {k: o.detail for k, o in outcomes.items()}
    assert "printed 0.44 (distance +0.000)" in outcomes["ordering"].detail

    assert outcomes["transformer_every_delay"].detail.startswith("reproduced: ")
    assert "13/13" in outcomes["transformer_every_delay"].detail

    # two seeds of 13 fail at delay 32: the trend holds on most seeds, and the verdict says how often
    few = _recorded(lambda m, d, s: 0.52 if (m, d) == ("transformer", 32) and s in (6207, 7003) else printed(m, d, s))
    outcomes = _run_checks(few, tmp_path, monkeypatch)
    assert outcomes["transformer_every_delay"].passed and outcomes["ordering"].passed
    detail = outcomes["transformer_every_delay"].detail
    assert detail.startswith("reproduced in 11 of 13 seeds at transformer d=32: ") and "three seeds all pass with probability 0.61" in detail

    bad = _recorded(lambda m, d, s: 0.3 if (m, d) == ("transformer", 32) else printed(m, d, s))
    outcomes = _run_checks(bad, tmp_path, monkeypatch)
    assert not outcomes["transformer_every_delay"].passed and not outcomes["ordering"].passed
    assert outcomes["transformer_every_delay"].detail.startswith("not reproduced at transformer d=32")
    assert outcomes["ordering"].detail.startswith("not reproduced at d=32: ")
    assert outcomes["delay8_perfect"].passed and outcomes["rnn_chance_at_32"].passed

    # an order that holds in mean by less than two standard errors passes, and the verdict says it is not resolved
    noisy = _recorded(lambda m, d, s: (0.30 + (0.05 if s % 2 else -0.05) if m == "rnn" else 0.301) if d == 32 and m != "transformer"
                      else printed(m, d, s))
    outcomes = _run_checks(noisy, tmp_path, monkeypatch)
    assert outcomes["ordering"].passed
    assert "reproduced in mean, but not resolved by the seeds: gru - rnn at d=32" in outcomes["ordering"].detail

    # the RNN far from chance on most seeds at 32
    far = _recorded(lambda m, d, s: 0.5 if (m, d) == ("rnn", 32) and s >= 7000 else printed(m, d, s))
    outcomes = _run_checks(far, tmp_path, monkeypatch)
    assert not outcomes["rnn_chance_at_32"].passed and "reproduced in 3 of 13 seeds" in outcomes["rnn_chance_at_32"].detail

    # only the text's three seeds: not the distribution the record must hold
    outcomes = _run_checks(_recorded(printed, seeds=train.SEEDS), tmp_path, monkeypatch)
    assert not outcomes["record"].passed and "at least 10 more" in outcomes["record"].detail

    # a record without the Transformer: the trend is not measured, and says so
    partial = _recorded(printed)
    partial["runs"] = [r for r in partial["runs"] if r["model"] != "transformer"]
    outcomes = _run_checks(partial, tmp_path, monkeypatch)
    assert not outcomes["transformer_every_delay"].passed and "the record lacks transformer d=8" in outcomes["transformer_every_delay"].detail

    tampered = _recorded(printed)
    tampered["table"][0]["mean"] = 0.5
    tampered["paths"][0]["chain_rule_error"] = 1e-3
    for row in tampered["paths_initial"]:  # the RNN paths at d=16 do not vanish
        if (row["model"], row["delay"]) == ("rnn", 16):
            row["path_norm"] = 1.0
    outcomes = _run_checks(tampered, tmp_path, monkeypatch)
    assert not outcomes["record"].passed and "differs from its runs" in outcomes["record"].detail
    assert not outcomes["gradient_paths"].passed and "does not shrink" in outcomes["gradient_paths"].detail


def test_trend_checks_skip_without_a_record(tmp_path, monkeypatch):
    from seqgrad.crosscheck.checks import experiment as checks
    from seqgrad.crosscheck.registry import Context

    monkeypatch.setattr(checks, "RESULTS", tmp_path / "nothing.json")
    assert checks.ordering(Context()).skipped


def test_docs_page_shows_the_recorded_table():
    """docs/experiment-cue-recall.md carries the recorded table.md verbatim (the page cannot drift from the record)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    recorded = root / "docs" / "experiments" / "cue-recall" / "table.md"
    if not recorded.exists():
        pytest.skip("no recorded full run")
    table = recorded.read_text(encoding="utf-8").split("\n\n")[0].strip()
    assert table.startswith("| Model |")
    assert table in (root / "docs" / "experiment-cue-recall.md").read_text(encoding="utf-8")


def test_the_package_record_is_the_docs_record():
    """One results.json: the package's copy (read by `seqgrad check` from any install) is the one
    `--record` wrote beside the docs' tables and figures."""
    from pathlib import Path

    docs = Path(__file__).resolve().parent.parent / "docs" / "experiments" / "cue-recall" / "results.json"
    if not experiment.RECORD.exists():
        pytest.skip("no recorded full run")
    assert docs.read_bytes() == experiment.RECORD.read_bytes()
    doc = json.loads(experiment.RECORD.read_text())
    assert "--record" in doc["invocations"][-1]["command"]


def test_record_only_the_texts_setup(tmp_path, capsys):
    assert _cli("--quick", "--record", "--out", str(tmp_path / "q")) == 2
    assert "--record" in capsys.readouterr().err and not (tmp_path / "q").exists()


def test_batch_size_and_loss_are_part_of_the_configuration(tmp_path):
    out = tmp_path / "exp"
    assert _cli("--quick", "--delays", "4", "--models", "rnn", "--batch-size", "256", "--loss", "recall", "--out", str(out)) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["batch_size"] == 256 and doc["runs"][0]["config"]["batch_size"] == 256
    assert doc["config"]["loss"] == "recall" and doc["runs"][0]["config"]["loss"] == "recall"
    assert doc["invocations"][-1]["command"].endswith("--batch-size 256 --loss recall --quick")
    # the default setup's runs are not reused for another loss, nor the other way round
    assert _cli("--quick", "--delays", "4", "--models", "rnn", "--batch-size", "256", "--out", str(out)) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["loss"] == "all-tokens" and doc["invocations"][-1]["runs_trained"] == 1


def test_the_recall_loss_reads_the_recall_position_only():
    torch.manual_seed(0)
    logits, targets = torch.randn(5, 12, task.K), torch.randint(0, task.K, (5, 12))
    q = task.recall_position(8)
    loss = train.training_loss("recall", 8)
    changed = logits.clone()
    changed[:, :q] += 3.0 * torch.randn(5, q, task.K)  # every other position changes
    changed[:, q + 1:] -= 1.0
    assert torch.equal(loss(logits, targets), loss(changed, targets))
    assert torch.allclose(loss(logits, targets), torch.nn.functional.cross_entropy(logits[:, q], targets[:, q]))
    assert train.training_loss("all-tokens", 8) is train.next_token_loss
    with pytest.raises(ValueError, match="loss"):
        train.training_loss("every", 8)


# ---------------------------------------------------------------- the record ships with the package

def _experiment_report(seqgrad: list[str], cwd, env=None) -> dict[str, dict]:
    out = cwd / "report"
    r = subprocess.run([*seqgrad, "check", "--only", "experiment", "--no-figures", "--jobs", "1", "--out", str(out)],
                       cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    checks = json.loads((out / "report.json").read_text())["checks"]
    return {c["name"]: c for c in checks if c["group"] == "experiment"}


@pytest.mark.slow
@pytest.mark.xdist_group("source-tree-build")  # builds from the source tree, as test_packaging's sdist does
def test_an_installed_wheel_reads_the_same_record(tmp_path):
    """`pip install .` and `pip install -e .` give the same experiment checks: the record is package data.

    A wheel is built from this checkout, installed into a fresh venv (system site-packages for torch & co.,
    no dependencies), and the experiment checks are run from a temporary directory with it and with the
    interpreter running this test; their statuses and details must agree, and with a record present the
    installed run must not skip."""
    import os
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    wheels, venv, here = tmp_path / "wheels", tmp_path / "venv", tmp_path / "cwd"
    here.mkdir()
    import site
    import sysconfig
    import zipfile

    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "wheel", "--no-deps", "-w", str(wheels)]
    built = subprocess.run([*pip, "--no-build-isolation", str(root)], capture_output=True, timeout=300)
    if built.returncode != 0:  # this environment's setuptools cannot build wheels: an isolated build fetches one
        subprocess.run([*pip, str(root)], check=True, capture_output=True, timeout=300)
    wheel = next(wheels.glob("seqgrad-*.whl"))
    assert "seqgrad/numeric/cue_recall/data/results.json" in zipfile.ZipFile(wheel).namelist() or not experiment.RECORD.exists()
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    if sys.prefix != sys.base_prefix:  # run from a venv (CI's): its packages (torch, ...) are seen after the wheel's
        parents = [p for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"]] if p != purelib]
        (Path(purelib) / "parent-env.pth").write_text("\n".join(dict.fromkeys(parents)) + "\n")
    subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run([str(python), "-c", "import seqgrad.numeric.cue_recall.experiment as e; print(e.RECORD)"],
                           cwd=here, capture_output=True, text=True, check=True, env=env).stdout.strip()
    assert where.startswith(str(venv)), where  # the installed copy, not this checkout
    installed = _experiment_report([str(python), "-m", "seqgrad"], here, env)
    (here / "editable").mkdir()
    editable = _experiment_report([sys.executable, "-m", "seqgrad"], here / "editable", env)
    assert sorted(installed) == sorted(editable) and len(installed) >= 6
    for name, a in installed.items():
        b = editable[name]
        assert a["status"] == b["status"], (name, a["detail"], b["detail"])
        if a["status"] != "skip":
            assert a["detail"] == b["detail"], name
        elif experiment.RECORD.exists():
            pytest.fail(f"{name} skipped in the installed seqgrad although the record exists: {a['detail']}")
