"""tsrnn.RNNModel: Darts' RNNModel on libtsrnn (docs/python.md).

The constructor takes Darts' arguments and refuses, by name, the ones tsrnn does not have;
fit(), predict(), historical_forecasts() and backtest() take Darts' arguments and series
(Darts TimeSeries, pandas objects or NumPy arrays) and give back the same kind. The run folder
{work_dir}/{model_name} is tsrnn's (docs/run-folder.md): config.ini, metrics.csv, TensorBoard
logs, checkpoints. The model after a fit is its last checkpoint.
"""

import codecs
import datetime
import json
import os
import sys
import threading

import numpy as np

from . import _config, _lib, _series
from ._lib import TsrnnUsageError

# Darts' RNNModel's own arguments and defaults.
_RNN_ARGS = ("input_chunk_length", "model", "hidden_dim", "n_rnn_layers", "dropout",
             "training_length")
SERIES_FILE = "training_series.npz"  # beside a model's checkpoints: its training series


def _unsupported(name, value, default, why):
    """Refuses `value` unless it is the default (None: anything given is refused; a series or
    an array is never compared element by element)."""
    given = value is not default if default is None or not np.isscalar(value) else \
        value != default
    if given:
        shown = value if np.isscalar(value) else type(value).__name__
        raise TsrnnUsageError("%s=%r: %s" % (name, shown, why))


def _output_writer():
    """The run's report into whatever sys.stdout is when it is written (a notebook swaps it
    per cell), decoded as UTF-8 across writes."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def write(data):
        text = decoder.decode(data)
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
    return write


def _progress_mode(enabled):
    if not enabled:
        return "none"
    interactive = "ipykernel" in sys.modules or getattr(sys.stdout, "isatty", lambda: False)()
    return "bar" if interactive else "plain"


def run_interruptibly(call, cancel):
    """call() on a thread of its own while this one waits: Ctrl-C (here, or a notebook's
    interrupt) calls cancel() and waits for call() to stop cleanly. Returns call()'s
    result: the run's status, _lib.INTERRUPTED after a Ctrl-C.

    The wait is on an Event, not on Thread.join(): a KeyboardInterrupt inside join() can
    leave the thread marked as finished while it still runs (CPython before 3.13), and the
    fit would go on behind the caller's back."""
    box = {}
    finished = threading.Event()

    def target():
        try:
            box["result"] = call()
        except BaseException as e:  # handed to the caller
            box["error"] = e
        finally:
            finished.set()

    thread = threading.Thread(target=target, name="tsrnn-fit", daemon=True)
    thread.start()
    interrupted = False
    while not finished.is_set():
        try:
            finished.wait(0.1)
        except KeyboardInterrupt:
            interrupted = True
            cancel()
    thread.join()
    if "error" in box:
        raise box["error"]
    if interrupted and box["result"] != _lib.INTERRUPTED:  # it ended as Ctrl-C came
        raise KeyboardInterrupt("tsrnn: Ctrl-C as the fit ended (it had finished)")
    return box["result"]  # the caller raises KeyboardInterrupt with the run's message


class RNNModel:
    """Darts' RNNModel (darts.models.RNNModel) trained and forecast by tsrnn.

    Arguments are Darts': input_chunk_length, model ("RNN", "LSTM", "GRU"), hidden_dim,
    n_rnn_layers, dropout, training_length, and the torch models' batch_size, n_epochs,
    model_name, work_dir, log_tensorboard, force_reset, save_checkpoints, add_encoders,
    random_state, pl_trainer_kwargs, optimizer_cls, optimizer_kwargs, lr_scheduler_cls,
    lr_scheduler_kwargs, loss_fn, torch_metrics, likelihood (docs/python.md lists what each
    takes). tsrnn_settings={"section.key": value} sets tsrnn's other configuration keys.
    """

    def __init__(self, input_chunk_length, model="RNN", hidden_dim=25, n_rnn_layers=1,
                 dropout=0.0, training_length=24, **kwargs):
        unknown = sorted(set(kwargs) - set(_config.DARTS_KWARGS) - set(_config.TSRNN_KWARGS))
        if unknown:
            raise TypeError(
                "RNNModel() got unexpected keyword argument%s %s; tsrnn's RNNModel takes "
                "Darts' arguments (%s) and tsrnn_settings" % (
                    "s" if len(unknown) > 1 else "", ", ".join(map(repr, unknown)),
                    ", ".join(_RNN_ARGS + _config.DARTS_KWARGS)))
        args = dict(input_chunk_length=input_chunk_length, model=model, hidden_dim=hidden_dim,
                    n_rnn_layers=n_rnn_layers, dropout=dropout, training_length=training_length,
                    **kwargs)
        self._settings = _config.settings_from_kwargs(args)
        self._run = _lib.Run()
        for section, key, value, origin in self._settings.items:
            self._run.set(section, key, value, origin)
        self.model_params = args
        self._init_state()

    def _init_state(self):
        self._training = None  # the fit's series (with covariates), a list
        self._training_list = False
        self._fit_metrics = {}
        self._fitted = False

    # --- what the model is -------------------------------------------------------------

    @property
    def model_name(self):
        return self._run.get("output", "model_name")

    @property
    def work_dir(self):
        return self._run.get("output", "work_dir")

    @property
    def run_dir(self):
        """{work_dir}/{model_name}: the run folder."""
        return os.path.join(self.work_dir, self.model_name)

    @property
    def input_chunk_length(self):
        return int(self._run.get("model", "input_chunk_length"))

    @property
    def training_series(self):
        if self._training is None:
            return None
        out = [s.like for s in self._training]
        return out if self._training_list else out[0]

    @property
    def epochs_trained(self):
        return int(self._fit_metrics.get("epochs", 0))

    @property
    def metrics(self):
        """The last fit's figures: first_step_loss, val_loss, best_val_loss, epochs, ..."""
        return dict(self._fit_metrics)

    @property
    def checkpoint(self):
        """The checkpoint file the model is."""
        return self._run.path("checkpoint") or None

    def config_text(self):
        """The resolved configuration (what config.ini holds)."""
        return self._run.config_text()

    def __repr__(self):
        args = ", ".join("%s=%r" % (k, v) for k, v in self.model_params.items()
                         if k in _RNN_ARGS)
        return "tsrnn.RNNModel(%s)" % args

    # --- fit ---------------------------------------------------------------------------

    def fit(self, series, past_covariates=None, future_covariates=None, val_series=None,
            val_past_covariates=None, val_future_covariates=None, trainer=None, verbose=None,
            epochs=0, max_samples_per_ts=None, dataloader_kwargs=None, sample_weight=None,
            val_sample_weight=None, stride=1, load_best=False):
        """Darts' fit(): trains on `series` (a series or a list), validated on `val_series`
        (each the continuation of its training series), with `future_covariates`. Returns
        the model. Ctrl-C stops the fit at a step boundary (a checkpoint to resume from is
        written) and raises KeyboardInterrupt."""
        for name, value in (("past_covariates", past_covariates),
                            ("val_past_covariates", val_past_covariates)):
            _unsupported(name, value, None, "RNNModel takes future covariates only (Darts "
                         "raises as well)")
        _unsupported("trainer", trainer, None, "tsrnn runs its own trainer: set "
                     "pl_trainer_kwargs in the constructor")
        _unsupported("dataloader_kwargs", dataloader_kwargs, None, "tsrnn reads its windows "
                     "in place, without a DataLoader")
        _unsupported("sample_weight", sample_weight, None, "not supported by tsrnn")
        _unsupported("val_sample_weight", val_sample_weight, None, "not supported by tsrnn")
        _unsupported("stride", stride, 1, "tsrnn trains on every window (stride 1)")
        train, is_list = self._with_covariates(series, future_covariates, "series",
                                               "future_covariates")
        val = None
        if val_series is not None:
            val, _ = self._with_covariates(val_series, val_future_covariates, "val_series",
                                           "val_future_covariates")
            if len(val) != len(train):
                raise TsrnnUsageError("%d series but %d val_series; accepted: one validation "
                                      "series per training series" % (len(train), len(val)))
        if epochs:
            self._run.set("training", "n_epochs", int(epochs), "fit(epochs=%d)" % epochs)
        if max_samples_per_ts is not None:
            self._run.set("data", "max_samples_per_ts", int(max_samples_per_ts),
                          "fit(max_samples_per_ts=%d)" % max_samples_per_ts)
        mode = _progress_mode(self._settings.progress and verbose is not False)
        workers = _config.worker_count(self._settings.accelerator, self._settings.devices,
                                       os.cpu_count() or 1)
        self._init_state()
        try:
            if workers == 1:
                self._fit_here(train, val, mode)
            else:
                from . import _launch

                _launch.fit(self, train, val, mode, _output_writer())
        except KeyboardInterrupt:
            # As Darts' model after Ctrl-C: what it trained so far (the last checkpoint).
            if self.checkpoint is not None:
                self._keep_training_series(train, is_list)
            raise
        self._keep_training_series(train, is_list)
        if load_best:
            self._run.load_checkpoint(self.run_dir, "best")
        return self

    def _keep_training_series(self, train, is_list):
        self._training, self._training_list = train, is_list
        self._fitted = True
        self._save_series(os.path.join(self.run_dir, SERIES_FILE))

    def _with_covariates(self, series, covariates, name, cov_name):
        items, is_list = _series.to_series_list(series, name)
        if items is None:
            raise TsrnnUsageError("%s: no series (None)" % name)
        covs, _ = _series.to_series_list(covariates, cov_name)
        if covs is not None:
            if len(covs) != len(items):
                raise TsrnnUsageError("%d %s but %d %s; accepted: one covariate series per "
                                      "series" % (len(items), name, len(covs), cov_name))
            items = [s.with_covariates(c) for s, c in zip(items, covs)]
        return items, is_list

    @staticmethod
    def _series_set(items):
        """A C series set of `items`: one unnamed series, or several named by position."""
        s = _lib.SeriesSet()
        for i, item in enumerate(items):
            s.add(item, "" if len(items) == 1 else str(i))
        return s

    def _fit_here(self, train, val, mode):
        train_set = self._series_set(train)
        val_set = self._series_set(val) if val is not None else None
        run = self._run
        run.set_output(_output_writer(), mode, False)
        status = run_interruptibly(lambda: run.fit(train_set, val_set), run.cancel)
        train_set.close()
        if val_set is not None:
            val_set.close()
        if status == _lib.INTERRUPTED:
            raise KeyboardInterrupt(run.message())
        if status != _lib.OK:
            raise _lib.error(status, run.message())
        for name in ("epochs", "steps", "first_step_loss", "last_step_loss", "epoch_mean_loss",
                     "val_loss", "best_val_loss", "best_epoch", "mape", "total_s"):
            value = run.result(name)
            if _config.is_finite(value):
                self._fit_metrics[name] = value

    # --- the training series beside the checkpoints (Darts pickles them with the model) --

    def _save_series(self, path):
        if self._training is None:
            return
        arrays, meta = {}, {"list": self._training_list, "series": []}
        for i, s in enumerate(self._training):
            arrays["times_%d" % i] = s.times
            arrays["values_%d" % i] = s.values
            entry = {"components": s.components, "dates": s.dates, "freq": s.freq,
                     "time_name": s.time_name, "kind": s.kind, "squeeze": s.squeeze}
            if s.covariates is not None:
                arrays["cov_times_%d" % i] = s.covariates.times
                arrays["cov_values_%d" % i] = s.covariates.values
                entry["cov_components"] = s.covariates.components
            meta["series"].append(entry)
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        tmp = path + ".tmp.npz"
        np.savez(tmp, **arrays)
        os.replace(tmp, path)

    def _load_series(self, path):
        if not os.path.isfile(path):
            return
        with np.load(path) as f:
            meta = json.loads(bytes(f["meta"]).decode())
            items = []
            for i, e in enumerate(meta["series"]):
                cov = None
                if "cov_times_%d" % i in f:
                    cov = _series.Series(f["cov_times_%d" % i], f["cov_values_%d" % i],
                                         e["cov_components"], e["dates"], e["freq"], "",
                                         e["kind"])
                items.append(_series.Series(f["times_%d" % i], f["values_%d" % i],
                                            e["components"], e["dates"], e["freq"],
                                            e["time_name"], e["kind"], None, cov,
                                            e.get("squeeze", False)))
        self._training, self._training_list = items, meta["list"]

    # --- forecasts ---------------------------------------------------------------------

    def _need_model(self):
        if self.checkpoint is None:
            raise TsrnnUsageError("the model is not fitted: call fit() (or load a checkpoint) "
                                  "before predict()")

    def _forecast_series(self, series, future_covariates):
        """The series to forecast from and whether a list was given: `series`, or the fit's
        (with future_covariates over theirs when given)."""
        if series is not None:
            return self._with_covariates(series, future_covariates, "series",
                                         "future_covariates")
        if self._training is None:
            raise TsrnnUsageError("predict() without series: the model knows no training "
                                  "series (loaded without them); pass series=")
        items = self._training
        if future_covariates is not None:
            covs, _ = _series.to_series_list(future_covariates, "future_covariates")
            if len(covs) != len(items):
                raise TsrnnUsageError("future_covariates: %d for %d training series"
                                      % (len(covs), len(items)))
            items = [s.with_covariates(c) for s, c in zip(items, covs)]
        return items, self._training_list

    def predict(self, n, series=None, past_covariates=None, future_covariates=None,
                trainer=None, batch_size=None, verbose=None, n_jobs=1, roll_size=None,
                num_samples=1, dataloader_kwargs=None, mc_dropout=False,
                predict_likelihood_parameters=False, show_warnings=True, random_state=None):
        """Darts' predict(): n steps after the end of each series (default: the training
        series), in the kind the series came in (TimeSeries, pandas, NumPy); a list for a
        list."""
        self._need_model()
        _unsupported("past_covariates", past_covariates, None, "RNNModel takes future "
                     "covariates only")
        _unsupported("trainer", trainer, None, "tsrnn forecasts without a trainer")
        _unsupported("mc_dropout", mc_dropout, False, "not supported by tsrnn")
        items, is_list = self._forecast_series(series, future_covariates)
        self._run.set("forecast", "num_samples", int(num_samples),
                      "predict(num_samples=%d)" % num_samples)
        self._run.set("forecast", "predict_likelihood_parameters",
                      bool(predict_likelihood_parameters),
                      "predict(predict_likelihood_parameters=%r)" % predict_likelihood_parameters)
        series_set = self._series_set(items)
        try:
            prediction = self._run.predict(int(n), series_set, random_state)
        finally:
            series_set.close()
        out = []
        for (index, times, values, samples, _), like in zip(prediction.forecasts, items):
            if predict_likelihood_parameters:
                out.append(values)  # the parameters of the first step
            else:
                out.append(_series.make_forecast(like, times, values, samples))
        return out if is_list else out[0]

    def _start_text(self, s, start, start_format):
        """Darts' `start` of historical_forecasts() as tsrnn's text (a stamp, a position or an
        index value, a fraction)."""
        if start is None:  # the first point with input_chunk_length points before it
            return str(self.input_chunk_length) if s.dates else \
                str(int(s.times[min(self.input_chunk_length, len(s.times) - 1)]))
        if isinstance(start, float):
            return repr(start)
        if isinstance(start, (int, np.integer)):
            if start_format == "position" and not s.dates:
                return str(int(s.times[int(start)]))
            return str(int(start))
        if hasattr(start, "strftime"):
            return start.strftime("%Y-%m-%d %H:%M:%S")
        return str(start)

    def _backtest_one(self, s, forecast_horizon, start, start_format, stride, last_points_only,
                      random_state):
        series_set = self._series_set([s])
        try:
            return self._run.backtest(series_set, self._start_text(s, start, start_format),
                                      int(forecast_horizon), int(stride), bool(last_points_only),
                                      random_state)
        finally:
            series_set.close()

    def _check_backtest_args(self, retrain, num_samples, overlap_end, train_length, val_length,
                             kwargs):
        if retrain not in (False, 0):
            raise TsrnnUsageError("retrain=%r: tsrnn backtests the fitted model as it is: pass "
                                  "retrain=False" % (retrain,))
        _unsupported("num_samples", num_samples, 1, "tsrnn's backtests keep each forecast's "
                     "median path")
        _unsupported("overlap_end", overlap_end, False, "tsrnn's forecasts stay inside the "
                     "series")
        _unsupported("train_length", train_length, None, "only with retrain")
        _unsupported("val_length", val_length, 0, "only with retrain")
        for name, value in kwargs.items():
            if value not in (None, False, True, 1) or name in ("data_transformers",
                                                               "sample_weight") and value:
                raise TsrnnUsageError("%s=%r: not supported by tsrnn's backtests"
                                      % (name, value))

    def historical_forecasts(self, series, past_covariates=None, future_covariates=None,
                             forecast_horizon=1, num_samples=1, train_length=None, val_length=0,
                             start=None, start_format="value", stride=1, retrain=True,
                             overlap_end=False, last_points_only=True, verbose=False,
                             show_warnings=True, predict_likelihood_parameters=False,
                             random_state=None, **kwargs):
        """Darts' historical_forecasts(retrain=False): with last_points_only the series of
        each forecast's last point, else the list of forecasts (per series for a list)."""
        self._need_model()
        _unsupported("past_covariates", past_covariates, None, "RNNModel takes future "
                     "covariates only")
        _unsupported("predict_likelihood_parameters", predict_likelihood_parameters, False,
                     "not in tsrnn's backtests")
        self._check_backtest_args(retrain, num_samples, overlap_end, train_length, val_length,
                                  kwargs)
        items, is_list = self._with_covariates(series, future_covariates, "series",
                                               "future_covariates")
        out = []
        for s in items:
            p = self._backtest_one(s, forecast_horizon, start, start_format, stride,
                                   last_points_only, random_state)
            forecasts = p.forecasts
            if last_points_only:
                times = np.array([f[1][-1] for f in forecasts], dtype=np.int64)
                values = np.array([f[2][-1] for f in forecasts], dtype=np.float32)
                out.append(_series.make_forecast(s, times, values))
            else:
                out.append([_series.make_forecast(s, f[1], f[2]) for f in forecasts])
        return out if is_list else out[0]

    def backtest(self, series, past_covariates=None, future_covariates=None,
                 historical_forecasts=None, forecast_horizon=1, num_samples=1,
                 train_length=None, val_length=0, start=None, start_format="value", stride=1,
                 retrain=True, overlap_end=False, last_points_only=False, metric=None,
                 reduction=np.nanmean, verbose=False, show_warnings=True, metric_kwargs=None,
                 random_state=None, **kwargs):
        """Darts' backtest(retrain=False): the metric of each historical forecast, reduced
        (np.nanmean: one number per series). Darts' mape (the default), mae and rmse come
        from tsrnn's own scores; another metric is called on the forecasts as Darts does."""
        self._need_model()
        self._check_backtest_args(retrain, num_samples, overlap_end, train_length, val_length,
                                  kwargs)
        items, is_list = self._with_covariates(series, future_covariates, "series",
                                               "future_covariates")
        name = getattr(metric, "__name__", None) if metric is not None else "mape"
        own = name in ("mape", "mae", "rmse") and (
            metric is None or getattr(metric, "__module__", "").startswith("darts")) and \
            not metric_kwargs and historical_forecasts is None
        out = []
        for i, s in enumerate(items):
            if own:
                p = self._backtest_one(s, forecast_horizon, start, start_format, stride,
                                       last_points_only, random_state)
                which = ("mape", "mae", "rmse").index(name)
                if reduction is None:
                    scores = np.array([f[4][which] for f in p.forecasts])
                    out.append(scores[-1] if last_points_only else scores)
                elif reduction in (np.nanmean, np.mean) or last_points_only:
                    out.append(p.backtest_scores[0][which])
                else:
                    out.append(reduction(np.array([f[4][which] for f in p.forecasts])))
                continue
            if metric is None or not callable(metric):
                raise TsrnnUsageError("metric=%r: accepted: Darts' mape, mae, rmse, or a "
                                      "function metric(actual, forecast)" % (metric,))
            forecasts = historical_forecasts[i] if is_list and historical_forecasts is not None \
                else historical_forecasts
            if forecasts is None:
                forecasts = self.historical_forecasts(
                    s.like if s.like is not None else s, future_covariates=None,
                    forecast_horizon=forecast_horizon, start=start, start_format=start_format,
                    stride=stride, retrain=False, last_points_only=last_points_only)
            if last_points_only:
                forecasts = [forecasts]
            actual = s.like if s.like is not None else s.values
            scores = np.array([metric(actual, f, **(metric_kwargs or {})) for f in forecasts])
            out.append(scores if reduction is None else reduction(scores))
        return out if is_list else out[0]

    # --- checkpoints -------------------------------------------------------------------

    def save(self, path=None, clean=False):
        """Darts' save(path): the model as a tsrnn checkpoint at `path` (default
        RNNModel_<date>.safetensors), its training series beside it (<path>.npz) for
        predict() without series after load()."""
        self._need_model()
        if path is None:
            path = "RNNModel_%s.safetensors" % datetime.datetime.now().strftime(
                "%Y-%m-%d_%H_%M_%S")
        path = str(path)
        self._run.save_checkpoint(path)
        if not clean:
            self._save_series(path + ".npz")
        return path

    @classmethod
    def _from_run(cls, run, series_file):
        model = cls.__new__(cls)
        model._run = run
        model._settings = _config.Settings()
        model.model_params = {k: _config_value(run, "model", k) for k in _RNN_ARGS}
        model._init_state()
        model._load_series(series_file)
        return model

    @classmethod
    def load(cls, path, pl_trainer_kwargs=None, **kwargs):
        """Darts' load(path): a model saved with save()."""
        _unsupported("pl_trainer_kwargs", pl_trainer_kwargs, None, "not taken at load")
        run = _lib.Run()
        run.load_checkpoint(None, str(path))
        return cls._from_run(run, str(path) + ".npz")

    @classmethod
    def load_from_checkpoint(cls, model_name, work_dir=None, file_name=None, best=True,
                             **kwargs):
        """Darts' load_from_checkpoint(): the best (or last) checkpoint of the run folder
        {work_dir}/{model_name} (work_dir default: ./darts_logs), or its file_name."""
        run_dir = os.path.join(work_dir if work_dir is not None else
                               os.path.join(os.getcwd(), "darts_logs"), model_name)
        run = _lib.Run()
        if file_name is not None:
            run.load_checkpoint(run_dir, os.path.join(run_dir, "checkpoints", file_name))
        else:
            run.load_checkpoint(run_dir, "best" if best else "last")
        return cls._from_run(run, os.path.join(run_dir, SERIES_FILE))


def _config_value(run, section, key):
    text = run.get(section, key)
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


__all__ = ["RNNModel"]
