#!/usr/bin/env python3
"""Record real Darts' probabilistic RNNModel runs and PyTorch's CPU samplers as fixtures for
tsrnn's likelihood, sampling and dropout tests (tests/test_prob.c).

Needs the Darts virtual environment of CONTRIBUTING.md, outside the source tree (the tests
do not), with the AirPassengers data set where Darts loads it offline:

    python3 -m venv /tmp/venv-darts && /tmp/venv-darts/bin/pip install "darts==0.48.1" \\
        "pytorch-lightning==2.6.*" tensorboard safetensors
    mkdir -p ~/.darts/datasets && cp examples/data/air_passengers.csv ~/.darts/datasets/
    /tmp/venv-darts/bin/python scripts/gen-prob-fixtures.py [--only PART ...]

CPU, torch.set_num_threads(1). Every run trains exactly as a Darts user would (no
seed_everything, Lightning's defaults); a callback reads the losses (it draws no random
number). It writes under tests/fixtures/ (prob-fixtures.md lists versions and figures):

* dropout: prob_dropout_metrics.csv -- RNNModel(model="LSTM", n_rnn_layers=2,
  dropout=0.2) on the example's data and settings (random_state 42, shuffled,
  validated every epoch): every step's train_loss and every epoch's val_loss in tsrnn's
  metrics.csv layout, floats %.9g. The masks come from PyTorch's global generator inside
  each step, so these numbers hold tsrnn to PyTorch's draws and to the shuffles after them.
* air: for each of GaussianLikelihood(), LaplaceLikelihood(), QuantileRegression() (and
  GaussianLikelihood(prior_mu=0.4, prior_sigma=0.3) for 10 epochs), the example's
  RNNModel on the scaled AirPassengers series with that likelihood, 100 epochs:
  prob_air_<name>_metrics.csv (every step and validation, as `dropout`); then (gaussian after
  that run, laplace and quantile after one of 10 epochs), as a user would right after fit():
  pred = predict(24, num_samples=100) -> prob_air_<name>_samples.csv
  (the paths inverse-scaled, Darts' to_dataframe() layout: Month,#Passengers_s0,...), and
  val = predict(23, num_samples=100) scored against the validation part ->
  prob_air_<name>_scores.txt (mape, mae, rmse of the median; mql at 0.05, 0.5, 0.95; mic,
  miw of (0.05, 0.95); Darts' metrics, original scale); for gaussian also predict(1,
  predict_likelihood_parameters=True) -> prob_air_gaussian_params.csv.
* global: the same three likelihoods on the three series of tests/fixtures/global/ (the
  settings of scripts/gen-global-fixtures.py's first case, 20 epochs, Laplace 10):
  prob_global_<name>_
  metrics.csv, and predict(6, series=train, num_samples=20) -> prob_global_<name>_samples.csv
  (id,date,v_s0,...).
* counts: PoissonLikelihood() and NegativeBinomialLikelihood() on the raw passenger counts
  (no scaler), 10 epochs: prob_counts_<name>_metrics.csv and predict(12, num_samples=20) ->
  prob_counts_<name>_samples.csv.
* more: LogNormalLikelihood(), GammaLikelihood(), WeibullLikelihood() and
  GeometricLikelihood() on the raw passenger counts (their support is positive or counts),
  HalfNormalLikelihood(), CauchyLikelihood(), ExponentialLikelihood() and GumbelLikelihood()
  on the scaled series, BernoulliLikelihood() on prob_updown.csv (1 where the passengers rose
  from the month before, written here), 10 epochs each: prob_more_<name>_metrics.csv and predict(12, num_samples=20) ->
  prob_more_<name>_samples.csv (the scaled ones' paths inverse-scaled).
* backtest: GaussianLikelihood(), 10 epochs, then right after fit()
  historical_forecasts(series, start=1959-02, forecast_horizon=6, stride=3, retrain=False,
  last_points_only=False, num_samples=50) on the scaled series: prob_backtest_forecasts.csv
  (each forecast's median, `start,Month,#Passengers` as tsrnn-predict's backtest.csv) and
  prob_backtest_errors.txt (each forecast's mql at 0.05/0.5/0.95, mic and miw of (0.05,
  0.95), original scale).
* vectors: prob_vectors.txt -- PyTorch's CPU samplers from manual_seed(seed), one case a
  line, `<case> <args> | <values>` (floats %.9g): torch.normal (several calls in a row, the
  scalar path's cached sample carried between them), uniform_, torch.rand, torch.poisson,
  torch._standard_gamma.
* losses: prob_losses.txt -- Darts' likelihood.compute_loss() on random head outputs (B=3,
  T=4, C=2, P) and targets, with autograd's gradient: one case a line, `<likelihood>
  <options> | raw (B*T*C*P) | y (B*T*C) | loss | dloss/draw`.
"""

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
PARTS = ("dropout", "vectors", "losses", "air", "global", "counts", "more", "backtest")
AIR_EPOCHS = 100
AIR_SAMPLES = 100
SHORT_EPOCHS = 10
LIKELIHOODS = {
    "gaussian": ("GaussianLikelihood", {}),
    "laplace": ("LaplaceLikelihood", {}),
    "quantile": ("QuantileRegression", {}),
    "gaussian_prior": ("GaussianLikelihood", {"prior_mu": 0.4, "prior_sigma": 0.3}),
    "poisson": ("PoissonLikelihood", {}),
    "negative_binomial": ("NegativeBinomialLikelihood", {}),
    "lognormal": ("LogNormalLikelihood", {}),
    "gamma": ("GammaLikelihood", {}),
    "halfnormal": ("HalfNormalLikelihood", {}),
    "cauchy": ("CauchyLikelihood", {}),
    "exponential": ("ExponentialLikelihood", {}),
    "weibull": ("WeibullLikelihood", {}),
    "gumbel": ("GumbelLikelihood", {}),
    "geometric": ("GeometricLikelihood", {}),
    "bernoulli": ("BernoulliLikelihood", {}),
}
# The `more` part's runs: (likelihood, on the raw counts (else the scaled series)).
MORE_RUNS = (("lognormal", True), ("gamma", True), ("halfnormal", False), ("cauchy", False),
             ("exponential", False), ("weibull", True), ("gumbel", False), ("geometric", True))
DROPOUT_EPOCHS = 60


def gen_darts():
    """scripts/gen-darts-fixtures.py as a module: its data loading and step recorder."""
    spec = importlib.util.spec_from_file_location("gen_darts", ROOT / "scripts" / "gen-darts-fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_metrics(path, rows):
    with open(path, "w") as f:
        f.write("epoch,step,train_loss,val_loss\n")
        for epoch, step, train_loss, val_loss in rows:
            f.write("%d,%d,%s,%s\n" % (epoch, step, "" if train_loss is None else "%.9g" % train_loss,
                                       "" if val_loss is None else "%.9g" % val_loss))


def air_model(gd, callbacks, work_dir, **overrides):
    """The example's RNNModel (examples/air_passengers.ini) with `overrides`."""
    from darts.models import RNNModel

    kw = dict(model="RNN", hidden_dim=20, dropout=0, batch_size=16, n_epochs=300,
              optimizer_kwargs={"lr": 1e-3}, model_name="prob", work_dir=str(work_dir),
              random_state=42, training_length=20, input_chunk_length=14, force_reset=True,
              pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                                 "enable_model_summary": False, "callbacks": callbacks})
    kw.update(overrides)
    return RNNModel(**kw)


def part_dropout(gd, summary):
    _, _, _, train_s, val_s, _ = gd.load_data()
    rec = gd.make_recorder()()
    with tempfile.TemporaryDirectory() as work_dir:
        model = air_model(gd, [rec], work_dir, model="LSTM", n_rnn_layers=2, dropout=0.2,
                          n_epochs=DROPOUT_EPOCHS)
        model.fit(train_s, val_series=val_s)
    write_metrics(FIXTURES / "prob_dropout_metrics.csv", rec.rows)
    steps = [r for r in rec.rows if r[2] is not None]
    vals = [r for r in rec.rows if r[3] is not None]
    summary.append(f"| dropout | LSTM, 2 layers, dropout 0.2, {DROPOUT_EPOCHS} epochs | "
                   f"{len(steps)} | {steps[0][2]:.9g} | {steps[-1][2]:.9g} | {vals[-1][3]:.9g} |")


def fmt_list(values):
    return " ".join("%.9g" % float(v) for v in values)


def part_vectors(gd, summary):
    import torch

    lines = ["# PyTorch's CPU samplers after torch.manual_seed(<seed>): <case> <seed> <args> | values"]
    for seed in (0, 42, 1234):
        torch.manual_seed(seed)
        calls = (5, 3, 20, 7, 16, 33, 1)
        values = []
        for n in calls:  # one generator, its cached normal carried between the calls
            values += torch.normal(torch.zeros(n), torch.ones(n)).tolist()
        lines.append(f"normal {seed} {' '.join(map(str, calls))} | {fmt_list(values)}")
        torch.manual_seed(seed)
        eps = torch.finfo(torch.float32).eps
        lines.append(f"uniform {seed} {(eps - 1).hex()} {(1.0).hex()} 50 | "
                     + fmt_list(torch.empty(50).uniform_(eps - 1, 1).tolist()))
        torch.manual_seed(seed)
        lines.append(f"rand {seed} 40 | " + fmt_list(torch.rand(40).tolist()))
        lams = [0.0, 0.3, 2.5, 9.99, 10.0, 37.5, 400.0, 1e-3]
        torch.manual_seed(seed)
        lines.append(f"poisson {seed} {fmt_list(lams)} | "
                     + fmt_list(torch.poisson(torch.tensor(lams * 5)).tolist()))
        torch.manual_seed(seed)
        lines.append(f"cauchy {seed} 30 | " + fmt_list(torch.empty(30).cauchy_().tolist()))
        torch.manual_seed(seed)
        lines.append(f"exponential {seed} 30 | "
                     + fmt_list(torch.empty(30).exponential_().tolist()))
        probs = [0.0, 0.05, 0.3, 0.5, 0.77, 0.999, 1.0]
        torch.manual_seed(seed)
        lines.append(f"bernoulli {seed} {fmt_list(probs)} | "
                     + fmt_list(torch.bernoulli(torch.tensor(probs * 5)).tolist()))
        alphas = [0.05, 0.5, 0.999, 1.0, 1.7, 12.0, 250.0]
        torch.manual_seed(seed)
        values = torch._standard_gamma(torch.tensor(alphas * 5)).tolist()
        values += torch.normal(torch.zeros(3), torch.ones(3)).tolist()  # the cache after them
        lines.append(f"gamma {seed} {fmt_list(alphas)} | " + fmt_list(values))
    (FIXTURES / "prob_vectors.txt").write_text("\n".join(lines) + "\n")
    summary.append(f"| vectors | {len(lines) - 1} sampler cases | | | | |")


LOSS_CASES = [
    # (name in tsrnn, Darts constructor, kwargs, target kind)
    ("gaussian", "GaussianLikelihood", {}, "real"),
    ("gaussian", "GaussianLikelihood", {"prior_mu": 0.3}, "real"),
    ("gaussian", "GaussianLikelihood", {"prior_sigma": 0.7, "prior_strength": 0.5}, "real"),
    ("gaussian", "GaussianLikelihood", {"prior_mu": -0.2, "prior_sigma": 0.4}, "real"),
    ("gaussian", "GaussianLikelihood", {"beta_nll": 0.5}, "real"),
    ("laplace", "LaplaceLikelihood", {}, "real"),
    ("laplace", "LaplaceLikelihood", {"prior_mu": 0.1, "prior_b": 0.6, "prior_strength": 2.0}, "real"),
    ("laplace", "LaplaceLikelihood", {"prior_b": 0.25}, "real"),
    ("quantile", "QuantileRegression", {}, "real"),
    ("quantile", "QuantileRegression", {"quantiles": [0.1, 0.5, 0.9]}, "real"),
    ("poisson", "PoissonLikelihood", {}, "count"),
    ("poisson", "PoissonLikelihood", {"prior_lambda": 2.0}, "count"),
    ("negative_binomial", "NegativeBinomialLikelihood", {}, "count"),
    ("lognormal", "LogNormalLikelihood", {}, "positive"),
    ("lognormal", "LogNormalLikelihood", {"prior_mu": 0.2, "prior_sigma": 0.5}, "positive"),
    ("halfnormal", "HalfNormalLikelihood", {}, "nonnegative"),
    ("halfnormal", "HalfNormalLikelihood", {"prior_sigma": 0.8, "prior_strength": 0.3},
     "nonnegative"),
    ("cauchy", "CauchyLikelihood", {}, "real"),
    ("cauchy", "CauchyLikelihood", {"prior_xzero": 0.1, "prior_gamma": 0.4}, "real"),
    ("cauchy", "CauchyLikelihood", {"prior_gamma": 0.7}, "real"),
    ("gamma", "GammaLikelihood", {}, "positive"),
    ("gamma", "GammaLikelihood", {"prior_alpha": 2.0, "prior_beta": 1.5}, "positive"),
    ("gamma", "GammaLikelihood", {"prior_beta": 0.8}, "positive"),
    ("exponential", "ExponentialLikelihood", {}, "nonnegative"),
    ("exponential", "ExponentialLikelihood", {"prior_lambda": 1.5, "prior_strength": 0.7},
     "nonnegative"),
    ("weibull", "WeibullLikelihood", {}, "positive"),
    ("gumbel", "GumbelLikelihood", {}, "real"),
    ("gumbel", "GumbelLikelihood", {"prior_mu": 0.2, "prior_beta": 0.6}, "real"),
    ("gumbel", "GumbelLikelihood", {"prior_beta": 0.9}, "real"),
    ("geometric", "GeometricLikelihood", {}, "count"),
    ("geometric", "GeometricLikelihood", {"prior_p": 0.3}, "count"),
    ("bernoulli", "BernoulliLikelihood", {}, "binary"),
    ("bernoulli", "BernoulliLikelihood", {"prior_p": 0.4, "prior_strength": 2.0}, "binary"),
]


def part_losses(gd, summary):
    import torch
    from darts.utils import likelihood_models as lm

    B, T, C = 3, 4, 2
    gen = np.random.default_rng(37)
    lines = ["# <likelihood> <key=value>... | raw (B=3, T=4, C=2, P) | y | loss | dloss/draw"]
    for name, cls, kwargs, target in LOSS_CASES:
        lik = getattr(lm, cls)(**kwargs)
        P = lik.num_parameters
        raw = gen.normal(0.0, 1.5, size=(B, T, C, P)).astype(np.float32)
        if name == "quantile":
            raw = np.sort(raw, axis=-1)
        if target == "count":
            y = gen.poisson(3.0, size=(B, T, C)).astype(np.float32)
            raw[..., 0] += 2.0
        elif target == "positive":
            y = gen.gamma(2.0, 1.0, size=(B, T, C)).astype(np.float32)
        elif target == "binary":
            y = gen.integers(0, 2, size=(B, T, C)).astype(np.float32)
        elif target == "nonnegative":
            y = np.abs(gen.normal(0.0, 1.0, size=(B, T, C))).astype(np.float32)
        else:
            y = gen.normal(0.0, 1.0, size=(B, T, C)).astype(np.float32)
        out = torch.tensor(raw, requires_grad=True)
        loss = lik.compute_loss(out, torch.tensor(y), None)
        loss.backward()
        opts = " ".join(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}"
                        for k, v in kwargs.items())
        lines.append(f"{name} {opts} | {fmt_list(raw.ravel())} | {fmt_list(y.ravel())} | "
                     f"{float(loss):.9g} | {fmt_list(out.grad.numpy().ravel())}")
    (FIXTURES / "prob_losses.txt").write_text("\n".join(lines) + "\n")
    summary.append(f"| losses | {len(lines) - 1} likelihood cases | | | | |")


def likelihood(name):
    from darts.utils import likelihood_models as lm

    cls, kwargs = LIKELIHOODS[name]
    return getattr(lm, cls)(**kwargs)


def write_samples(path, preds, ids=None, time_name="Month", fmt=None):
    """Darts' to_dataframe() of stochastic series: <time>,<component>_s0,... (after an id)."""
    lines = []
    for k, pred in enumerate(preds):
        df = pred.to_dataframe(suppress_warnings=True) if hasattr(pred, "to_dataframe") else None
        if not lines:
            lines.append(("series," if ids else "") + time_name + "," + ",".join(df.columns))
        for t, row in zip(df.index, df.values):
            stamp = fmt(t) if fmt else f"{t:%Y-%m}"
            lines.append((f"{ids[k]}," if ids else "") + stamp + ","
                         + ",".join("%.9g" % float(v) for v in row))
    path.write_text("\n".join(lines) + "\n")


def summarize_run(summary, part, what, rows):
    steps = [r for r in rows if r[2] is not None]
    vals = [r for r in rows if r[3] is not None]
    summary.append(f"| {part} | {what} | {len(steps)} | {steps[0][2]:.9g} | {steps[-1][2]:.9g} | "
                   f"{vals[-1][3]:.9g} |" if vals else
                   f"| {part} | {what} | {len(steps)} | {steps[0][2]:.9g} | {steps[-1][2]:.9g} | |")


def part_air(gd, summary):
    from darts.metrics import mae, mape, mic, miw, mql, rmse

    series, train, val, train_s, val_s, scaler = gd.load_data()
    # The samples of gaussian after its long run; laplace's and quantile's after a short one
    # (SHORT_EPOCHS): their losses' kinks (|e|, max) amplify float rounding after ~100 steps,
    # so a long run's weights differ from Darts' in the 4th digit (docs/numerics.md).
    runs = [("gaussian", AIR_EPOCHS, True), ("laplace", AIR_EPOCHS, False),
            ("quantile", AIR_EPOCHS, False), ("laplace", SHORT_EPOCHS, True),
            ("quantile", SHORT_EPOCHS, True), ("gaussian_prior", SHORT_EPOCHS, False)]
    for name, epochs, sampled in runs:
        rec = gd.make_recorder()()
        with tempfile.TemporaryDirectory() as work_dir:
            model = air_model(gd, [rec], work_dir, likelihood=likelihood(name), n_epochs=epochs)
            model.fit(train_s, val_series=val_s)
            pred = scaler.inverse_transform(model.predict(24, num_samples=AIR_SAMPLES))
            pval = scaler.inverse_transform(model.predict(len(val), num_samples=AIR_SAMPLES))
            params = model.predict(1, predict_likelihood_parameters=True) if name == "gaussian" else None
        if epochs == AIR_EPOCHS or name == "gaussian_prior":
            write_metrics(FIXTURES / f"prob_air_{name}_metrics.csv", rec.rows)
            summarize_run(summary, "air", f"{name}, {epochs} epochs", rec.rows)
        if not sampled:
            continue
        write_samples(FIXTURES / f"prob_air_{name}_samples.csv", [pred])
        q = [0.05, 0.5, 0.95]
        scores = [("mape", mape(val, pval)), ("mae", mae(val, pval)), ("rmse", rmse(val, pval))]
        scores += [(f"mql_q{x:.3f}", v) for x, v in zip(q, mql(val, pval, q=q))]
        scores += [("mic", mic(val, pval, q_interval=(0.05, 0.95))),
                   ("miw", miw(val, pval, q_interval=(0.05, 0.95)))]
        (FIXTURES / f"prob_air_{name}_scores.txt").write_text(
            "".join(f"{k} {float(v):.9g}\n" for k, v in scores))
        if params is not None:
            df = params.to_dataframe()
            (FIXTURES / "prob_air_gaussian_params.csv").write_text(
                "Month," + ",".join(df.columns) + "\n"
                + "".join(f"{t:%Y-%m}," + ",".join("%.9g" % float(v) for v in r) + "\n"
                          for t, r in zip(df.index, df.values)))


def part_global(gd, summary):
    import pandas as pd
    from darts import TimeSeries
    from darts.dataprocessing.transformers import Scaler
    from darts.models import RNNModel

    sdir = FIXTURES / "global"
    series = [TimeSeries.from_csv(sdir / f"{sid}.csv", time_col="date", value_cols="v")
              .astype(np.float32) for sid in "abc"]
    parts = [s.split_after(pd.Timestamp("2000-02-10")) for s in series]
    train = [p[0] for p in parts]
    val = [p[1] for p in parts]
    scaler = Scaler().fit(train)
    for name in ("gaussian", "laplace", "quantile"):
        rec = gd.make_recorder()()
        epochs = 10 if name == "laplace" else 20  # Laplace's kink: see part_air
        with tempfile.TemporaryDirectory() as work_dir:
            model = RNNModel(
                model="RNN", hidden_dim=8, dropout=0, batch_size=16, n_epochs=epochs,
                optimizer_kwargs={"lr": 5e-3}, model_name="g", work_dir=work_dir, random_state=3,
                training_length=8, input_chunk_length=5, force_reset=True,
                likelihood=likelihood(name),
                pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                                   "enable_model_summary": False, "callbacks": [rec]})
            model.fit(scaler.transform(train), val_series=scaler.transform(val))
            preds = scaler.inverse_transform(
                model.predict(6, series=scaler.transform(train), num_samples=20))
        write_metrics(FIXTURES / f"prob_global_{name}_metrics.csv", rec.rows)
        summarize_run(summary, "global", f"{name}, 3 series, {epochs} epochs", rec.rows)
        write_samples(FIXTURES / f"prob_global_{name}_samples.csv", preds, ids=list("abc"),
                      time_name="date", fmt=lambda t: f"{t:%Y-%m-%d}")


def part_counts(gd, summary):
    series, train, val, _, _, _ = gd.load_data()
    for name in ("poisson", "negative_binomial"):
        rec = gd.make_recorder()()
        with tempfile.TemporaryDirectory() as work_dir:
            model = air_model(gd, [rec], work_dir, likelihood=likelihood(name), n_epochs=10)
            model.fit(train, val_series=val)
            pred = model.predict(12, num_samples=20)
        write_metrics(FIXTURES / f"prob_counts_{name}_metrics.csv", rec.rows)
        summarize_run(summary, "counts", f"{name}, raw counts, 10 epochs", rec.rows)
        write_samples(FIXTURES / f"prob_counts_{name}_samples.csv", [pred])


def part_more(gd, summary):
    series, train, val, train_s, val_s, scaler = gd.load_data()
    for name, raw in MORE_RUNS:
        rec = gd.make_recorder()()
        with tempfile.TemporaryDirectory() as work_dir:
            model = air_model(gd, [rec], work_dir, likelihood=likelihood(name), n_epochs=10)
            model.fit(train if raw else train_s, val_series=val if raw else val_s)
            pred = model.predict(12, num_samples=20)
            if not raw:
                pred = scaler.inverse_transform(pred)
        write_metrics(FIXTURES / f"prob_more_{name}_metrics.csv", rec.rows)
        summarize_run(summary, "more", f"{name}, {'raw' if raw else 'scaled'}, 10 epochs",
                      rec.rows)
        write_samples(FIXTURES / f"prob_more_{name}_samples.csv", [pred])

    # BernoulliLikelihood() on whether the passengers went up from the month before (1 or 0):
    # prob_updown.csv, split after 1959-01 as the example, no scaler.
    from darts import TimeSeries
    import pandas as pd

    v = series.values().ravel()
    up = (v[1:] > v[:-1]).astype(np.float32)
    times = series.time_index[1:]
    with open(FIXTURES / "prob_updown.csv", "w") as f:
        f.write("Month,up\n")
        for t, u in zip(times, up):
            f.write(f"{t:%Y-%m},{int(u)}\n")
    updown = TimeSeries.from_times_and_values(times, up.reshape(-1, 1), columns=["up"])
    up_train, up_val = updown.split_after(pd.Timestamp("19590101"))
    rec = gd.make_recorder()()
    with tempfile.TemporaryDirectory() as work_dir:
        model = air_model(gd, [rec], work_dir, likelihood=likelihood("bernoulli"), n_epochs=10)
        model.fit(up_train, val_series=up_val)
        pred = model.predict(12, num_samples=20)
    write_metrics(FIXTURES / "prob_more_bernoulli_metrics.csv", rec.rows)
    summarize_run(summary, "more", "bernoulli, up or down, 10 epochs", rec.rows)
    write_samples(FIXTURES / "prob_more_bernoulli_samples.csv", [pred])


def part_backtest(gd, summary):
    import pandas as pd
    from darts.metrics import mic, miw, mql

    series, train, val, train_s, val_s, scaler = gd.load_data()
    rec = gd.make_recorder()()
    with tempfile.TemporaryDirectory() as work_dir:
        model = air_model(gd, [rec], work_dir, likelihood=likelihood("gaussian"), n_epochs=10)
        model.fit(train_s, val_series=val_s)
        hf = model.historical_forecasts(scaler.transform(series), start=pd.Timestamp("1959-02"),
                                        forecast_horizon=6, stride=3, retrain=False,
                                        last_points_only=False, num_samples=50, verbose=False)
    hf = [scaler.inverse_transform(f) for f in hf]
    lines = ["start,Month,#Passengers"]
    errors = ["# start mql_q0.050 mql_q0.500 mql_q0.950 mic miw"]
    q = [0.05, 0.5, 0.95]
    for f in hf:
        med = f.quantile(0.5)
        start = f"{f.start_time():%Y-%m}"
        lines += [f"{start},{t:%Y-%m},%.9g" % float(v) for t, v in zip(med.time_index, med.values()[:, 0])]
        scores = list(mql(series, f, q=q)) + [mic(series, f, q_interval=(0.05, 0.95)),
                                               miw(series, f, q_interval=(0.05, 0.95))]
        errors.append(start + " " + fmt_list(scores))
    (FIXTURES / "prob_backtest_forecasts.csv").write_text("\n".join(lines) + "\n")
    (FIXTURES / "prob_backtest_errors.txt").write_text("\n".join(errors) + "\n")
    summary.append(f"| backtest | gaussian, 10 epochs, {len(hf)} forecasts of 6 steps, 50 paths | | | | |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", choices=PARTS, help="write these parts only")
    args = ap.parse_args()
    import darts
    import pytorch_lightning
    import torch

    torch.set_num_threads(1)
    gd = gen_darts()
    summary = []
    for part in args.only or PARTS:
        globals()["part_" + part](gd, summary)
    text = f"""# Probabilistic fixtures (`prob_*`)

Written by `scripts/gen-prob-fixtures.py` (its docstring says what each file holds) with darts
{darts.__version__}, pytorch-lightning {pytorch_lightning.__version__}, torch {torch.__version__},
numpy {np.__version__}, Python {sys.version.split()[0]}, CPU, one thread.

| part | run | steps | first train_loss | last train_loss | last val_loss |
|---|---|---|---|---|---|
""" + "\n".join(summary) + "\n"
    (FIXTURES / "prob-fixtures.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
