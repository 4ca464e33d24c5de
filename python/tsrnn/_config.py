"""Darts' RNNModel arguments as tsrnn's configuration keys (docs/configuration.md names the
Darts argument of each): what tsrnn has is set, with the argument as the origin of any error;
what it does not have is refused, naming the argument, rather than silently ignored.

Classes and objects (an optimizer class, a loss, a likelihood, a callback) are recognised by
their class name and read through their attributes: neither torch nor Darts is imported.
"""

import math

from ._lib import TsrnnUsageError

# Darts' TorchForecastingModel and PLForecastingModule keyword arguments (Darts 0.48), beside
# RNNModel's own (input_chunk_length, model, hidden_dim, n_rnn_layers, dropout,
# training_length).
DARTS_KWARGS = (
    "batch_size", "n_epochs", "model_name", "work_dir", "log_tensorboard",
    "nr_epochs_val_period", "force_reset", "save_checkpoints", "add_encoders", "random_state",
    "pl_trainer_kwargs", "show_warnings", "enable_finetuning", "loss_fn", "torch_metrics",
    "likelihood", "optimizer_cls", "optimizer_kwargs", "lr_scheduler_cls",
    "lr_scheduler_kwargs", "use_reversible_instance_norm", "output_chunk_length",
    "output_chunk_shift",
)
# tsrnn's own: {"section.key": value} for the keys Darts has no argument for.
TSRNN_KWARGS = ("tsrnn_settings",)

OPTIMIZERS = {
    "Adam": ("weight_decay", "eps"),
    "AdamW": ("weight_decay", "eps"),
    "SGD": ("momentum", "nesterov", "weight_decay"),
    "RMSprop": ("alpha", "eps", "weight_decay", "momentum", "centered"),
    "Adagrad": ("lr_decay", "weight_decay", "initial_accumulator_value", "eps"),
}
# optimizer arguments tsrnn takes only at PyTorch's defaults
OPTIMIZER_DEFAULTS = {"betas": (0.9, 0.999), "amsgrad": False, "dampening": 0,
                      "maximize": False, "foreach": None, "capturable": False,
                      "differentiable": False, "fused": None}
SCHEDULERS = {
    "ExponentialLR": ("gamma",),
    "StepLR": ("step_size", "gamma"),
    "ReduceLROnPlateau": ("factor", "patience", "threshold", "threshold_mode", "cooldown",
                          "min_lr", "mode"),
    "CosineAnnealingLR": ("T_max", "eta_min"),
    "OneCycleLR": ("max_lr", "total_steps", "epochs", "steps_per_epoch", "pct_start",
                   "anneal_strategy", "cycle_momentum", "base_momentum", "max_momentum",
                   "div_factor", "final_div_factor", "three_phase"),
    "CosineAnnealingWarmRestarts": ("T_0", "T_mult", "eta_min"),
    "LinearLR": ("start_factor", "end_factor", "total_iters"),
}
LOSSES = {"MSELoss": (), "L1Loss": (), "HuberLoss": ("delta",), "SmoothL1Loss": ("beta",)}
# Darts' likelihood classes and tsrnn's [model] likelihood, with the [likelihood] keys each
# class's constructor arguments set (Darts' names: prior_mu, ...).
LIKELIHOODS = {
    "GaussianLikelihood": "gaussian", "LaplaceLikelihood": "laplace",
    "QuantileRegression": "quantile", "PoissonLikelihood": "poisson",
    "NegativeBinomialLikelihood": "negative_binomial", "LogNormalLikelihood": "lognormal",
    "HalfNormalLikelihood": "halfnormal", "CauchyLikelihood": "cauchy",
    "GammaLikelihood": "gamma", "ExponentialLikelihood": "exponential",
    "WeibullLikelihood": "weibull", "GumbelLikelihood": "gumbel",
    "GeometricLikelihood": "geometric", "BernoulliLikelihood": "bernoulli",
}
LIKELIHOOD_ARGS = ("prior_mu", "prior_sigma", "prior_b", "prior_lambda", "prior_xzero",
                   "prior_gamma", "prior_alpha", "prior_beta", "prior_p", "prior_strength",
                   "beta_nll")
# pl_trainer_kwargs tsrnn reads; the others are refused.
TRAINER_KWARGS = ("accelerator", "devices", "strategy", "callbacks", "enable_progress_bar",
                  "enable_model_summary", "gradient_clip_val", "gradient_clip_algorithm",
                  "log_every_n_steps", "max_epochs", "max_steps", "precision", "num_nodes",
                  "logger", "enable_checkpointing", "deterministic", "num_sanity_val_steps",
                  "check_val_every_n_epoch")


class Settings:
    """The (section, key, value, origin) list a model's arguments make, and what the Python
    side keeps for itself (the device plan, the progress bar)."""

    def __init__(self):
        self.items = []
        self.progress = True
        self.accelerator = "auto"
        self.devices = "auto"
        self.save_checkpoints = False  # Darts' argument (tsrnn always writes them)

    def add(self, section, key, value, origin):
        self.items.append((section, key, text(value), origin))


def text(value):
    """A value as an INI line writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value)
    return str(value)


def refuse(what, why):
    raise TsrnnUsageError("%s: %s" % (what, why))


def class_name(obj):
    return obj.__name__ if isinstance(obj, type) else type(obj).__name__


def _optimizer(s, cls, kwargs):
    name = class_name(cls) if cls is not None else "Adam"
    if name not in OPTIMIZERS:
        refuse("optimizer_cls=%s" % name, "accepted: torch.optim's %s" % ", ".join(OPTIMIZERS))
    origin = "RNNModel(optimizer_cls=%s)" % name
    s.add("training", "optimizer_cls", name, origin)
    for key, value in dict(kwargs or {}).items():
        where = "RNNModel(optimizer_kwargs={%r: %r})" % (key, value)
        if key == "lr":
            s.add("training", "lr", float(value), where)
        elif key in OPTIMIZERS[name]:
            s.add("training", key, value, where)
        elif key in OPTIMIZER_DEFAULTS:
            default = OPTIMIZER_DEFAULTS[key]
            if (tuple(value) if isinstance(value, (list, tuple)) else value) != default:
                refuse(where, "tsrnn's %s has %s at PyTorch's default %r only" % (name, key,
                                                                                  default))
        else:
            refuse(where, "tsrnn's %s takes lr, %s" % (name, ", ".join(OPTIMIZERS[name])))


def _scheduler(s, cls, kwargs):
    if cls is None:
        if kwargs:
            refuse("RNNModel(lr_scheduler_kwargs=%r)" % (kwargs,), "no lr_scheduler_cls")
        return
    name = class_name(cls)
    if name not in SCHEDULERS:
        refuse("lr_scheduler_cls=%s" % name, "accepted: torch.optim.lr_scheduler's %s"
               % ", ".join(SCHEDULERS))
    s.add("training", "lr_scheduler_cls", name, "RNNModel(lr_scheduler_cls=%s)" % name)
    for key, value in dict(kwargs or {}).items():
        where = "RNNModel(lr_scheduler_kwargs={%r: %r})" % (key, value)
        if key in ("monitor", "strict", "name") and value in ("val_loss", True, None):
            continue  # Lightning's defaults
        if key not in SCHEDULERS[name] + ("interval", "frequency"):
            refuse(where, "%s takes %s, and Lightning's interval and frequency"
                   % (name, ", ".join(SCHEDULERS[name])))
        s.add("lr_scheduler_kwargs", key, value, where)


def _loss(s, loss):
    if loss is None:
        return
    name = class_name(loss)
    if name not in LOSSES or getattr(loss, "reduction", "mean") != "mean":
        refuse("RNNModel(loss_fn=%s)" % name, "accepted: torch.nn's %s with reduction 'mean'"
               % ", ".join(LOSSES))
    s.add("training", "loss_fn", name, "RNNModel(loss_fn=%s())" % name)
    for key in LOSSES[name]:
        s.add("training", key, float(getattr(loss, key)), "RNNModel(loss_fn=%s(%s=...))"
              % (name, key))


def _likelihood(s, lik):
    if lik is None:
        return
    name = class_name(lik)
    if name not in LIKELIHOODS:
        refuse("RNNModel(likelihood=%s)" % name, "accepted: Darts' %s" % ", ".join(LIKELIHOODS))
    origin = "RNNModel(likelihood=%s(...))" % name
    s.add("model", "likelihood", LIKELIHOODS[name], origin)
    if name == "QuantileRegression":
        s.add("likelihood", "quantiles", list(getattr(lik, "quantiles")), origin)
    for key in LIKELIHOOD_ARGS:
        value = getattr(lik, key, None)
        if value is not None and not (key == "prior_strength" and value == 1.0) and \
                not (key == "beta_nll" and value == 0.0):
            if not isinstance(value, (int, float)):
                refuse(origin, "%s=%r: tsrnn takes numbers" % (key, value))
            s.add("likelihood", key, float(value), origin)


def _metrics(metrics):
    """The torchmetrics names tsrnn can watch: {"val_MeanAbsoluteError", ...}."""
    if metrics is None:
        return set()
    items = metrics.values() if hasattr(metrics, "values") and callable(metrics.values) else \
        metrics if isinstance(metrics, (list, tuple)) else [metrics]
    names = set()
    for m in items:
        name = class_name(m)
        if name not in ("MeanAbsoluteError", "MeanSquaredError") or \
                not getattr(m, "squared", True):
            refuse("RNNModel(torch_metrics=%s)" % name,
                   "tsrnn computes torchmetrics' MeanAbsoluteError or MeanSquaredError, for "
                   "EarlyStopping to watch")
        names.add("val_" + name)
    return names


def _encoders(s, encoders):
    if not encoders:
        return
    for kind, spec in encoders.items():
        where = "RNNModel(add_encoders={%r: ...})" % kind
        if kind == "transformer":
            if class_name(spec) != "Scaler":
                refuse(where, "tsrnn's covariates scaler is Darts' Scaler() (MinMax)")
            s.add("covariates", "scaler", "minmax", where)
            continue
        if kind == "tz" or kind == "custom" or kind not in ("cyclic", "datetime_attribute",
                                                             "position"):
            refuse(where, "accepted: cyclic, datetime_attribute, position and transformer")
        if not isinstance(spec, dict) or set(spec) - {"future"}:
            refuse(where, "RNNModel takes future encoders only: {'future': [...]}")
        attributes = list(spec.get("future") or [])
        if kind == "position":
            if attributes != ["relative"]:
                refuse(where, "position takes ['relative']")
            s.add("covariates", "position", "relative", where)
        else:
            s.add("covariates", kind, attributes, where)


def _trainer(s, kwargs, metrics):
    kwargs = dict(kwargs or {})
    unknown = sorted(set(kwargs) - set(TRAINER_KWARGS))
    if unknown:
        refuse("RNNModel(pl_trainer_kwargs=...)",
               "tsrnn does not take %s; accepted: %s" % (", ".join(map(repr, unknown)),
                                                        ", ".join(TRAINER_KWARGS)))
    where = "RNNModel(pl_trainer_kwargs={%r: %r})"
    accelerator = kwargs.get("accelerator", "auto")
    if accelerator not in ("auto", "cpu", "gpu", "cuda", "tpu"):
        refuse(where % ("accelerator", accelerator), "accepted: auto, cpu, gpu (cuda), tpu")
    s.accelerator = {"cuda": "gpu"}.get(accelerator, accelerator)
    s.add("trainer", "accelerator", s.accelerator, where % ("accelerator", accelerator))
    devices = kwargs.get("devices", "auto")
    if isinstance(devices, (list, tuple)):
        devices_text = ",".join(str(int(d)) for d in devices)
    elif devices in ("auto", None):
        devices_text = "auto"
    else:
        devices_text = str(int(devices))
    s.devices = devices_text
    s.add("trainer", "devices", devices_text, where % ("devices", devices))
    strategy = kwargs.get("strategy", "auto")
    if class_name(strategy) != "str" or strategy not in (
            "auto", "ddp", "ddp_spawn", "ddp_fork", "ddp_notebook"):
        refuse(where % ("strategy", strategy),
               "tsrnn's data-parallel workers are processes (ddp_spawn's way); accepted: auto, "
               "ddp, ddp_spawn, ddp_fork, ddp_notebook")
    if kwargs.get("num_nodes", 1) != 1:
        refuse(where % ("num_nodes", kwargs["num_nodes"]),
               "tsrnn's Python package trains on one machine; clusters: mpirun or srun with "
               "tsrnn-worker (docs/distributed.md)")
    precision = kwargs.get("precision", "32-true")
    if str(precision) not in ("32", "32-true"):
        refuse(where % ("precision", precision), "tsrnn trains in float32: accepted: 32-true")
    if kwargs.get("enable_progress_bar") is False:
        s.progress = False
    if kwargs.get("logger") is False:
        s.add("output", "log_tensorboard", False, where % ("logger", False))
    for key in ("check_val_every_n_epoch",):
        if kwargs.get(key, 1) != 1:
            refuse(where % (key, kwargs[key]), "tsrnn validates every epoch")
    if kwargs.get("gradient_clip_val"):
        if kwargs.get("gradient_clip_algorithm", "norm") != "norm":
            refuse(where % ("gradient_clip_algorithm", kwargs["gradient_clip_algorithm"]),
                   "tsrnn clips by norm")
        s.add("trainer", "gradient_clip_val", float(kwargs["gradient_clip_val"]),
              where % ("gradient_clip_val", kwargs["gradient_clip_val"]))
    if "log_every_n_steps" in kwargs:
        s.add("trainer", "log_every_n_steps", int(kwargs["log_every_n_steps"]),
              where % ("log_every_n_steps", kwargs["log_every_n_steps"]))
    if kwargs.get("max_epochs") is not None:
        s.add("training", "n_epochs", int(kwargs["max_epochs"]),
              where % ("max_epochs", kwargs["max_epochs"]))
    if kwargs.get("max_steps") not in (None, -1):
        s.add("training", "max_steps", int(kwargs["max_steps"]),
              where % ("max_steps", kwargs["max_steps"]))
    for cb in kwargs.get("callbacks") or []:
        name = class_name(cb)
        if name in ("TFMProgressBar", "TQDMProgressBar", "RichProgressBar"):
            continue  # tsrnn draws its own bar
        if name != "EarlyStopping":
            refuse("RNNModel(pl_trainer_kwargs={'callbacks': [%s]})" % name,
                   "tsrnn runs EarlyStopping and draws its own progress bar; other callbacks "
                   "do not run")
        origin = "EarlyStopping(monitor=%r)" % cb.monitor
        monitor = cb.monitor
        if monitor not in ("val_loss", "train_loss") and monitor not in metrics:
            refuse(origin, "tsrnn watches val_loss, train_loss, or torch_metrics' "
                   "MeanAbsoluteError or MeanSquaredError")
        for attr in ("stopping_threshold", "divergence_threshold"):
            if getattr(cb, attr, None) is not None:
                refuse("EarlyStopping(%s=%r)" % (attr, getattr(cb, attr)),
                       "tsrnn's early stopping has monitor, patience, min_delta and mode")
        s.add("early_stopping", "monitor", monitor, origin)
        s.add("early_stopping", "patience", int(cb.patience), origin)
        s.add("early_stopping", "min_delta", abs(float(cb.min_delta)), origin)
        s.add("early_stopping", "mode", getattr(cb, "mode", "min"), origin)


def settings_from_kwargs(kwargs):
    """Settings for RNNModel(**kwargs) (kwargs holds every argument, RNNModel's own
    included); ValueError naming the argument for what tsrnn does not have."""
    s = Settings()
    origin = "RNNModel(%s=%r)"
    model = kwargs["model"]
    if not isinstance(model, str) or model not in ("RNN", "LSTM", "GRU"):
        refuse(origin % ("model", model), "accepted: 'RNN', 'LSTM', 'GRU' (a CustomRNNModule "
               "class runs in Darts only)")
    for key in ("input_chunk_length", "hidden_dim", "n_rnn_layers", "dropout",
                "training_length"):
        s.add("model", key, kwargs[key], origin % (key, kwargs[key]))
    s.add("model", "model", model, origin % ("model", model))
    for key, section in (("batch_size", "training"), ("n_epochs", "training"),
                         ("work_dir", "output"), ("log_tensorboard", "output"),
                         ("force_reset", "output")):
        if key in kwargs:
            s.add(section, key, kwargs[key], origin % (key, kwargs[key]))
    if kwargs.get("model_name") is not None:
        s.add("output", "model_name", kwargs["model_name"],
              origin % ("model_name", kwargs["model_name"]))
    # Darts scales series outside the model (its Scaler): the model takes them as they are.
    s.add("data", "scaler", "none", "tsrnn (Darts' models take the series as given)")
    s.save_checkpoints = bool(kwargs.get("save_checkpoints", False))
    # tsrnn's model after a fit is its last checkpoint (docs/python.md): always written.
    s.add("output", "save_checkpoints", True, "tsrnn (the model is its last checkpoint)")
    seed = kwargs.get("random_state")
    if seed is None:  # Darts draws one from NumPy's global generator
        import numpy as np

        seed = int(np.random.randint(0, 2**31 - 1))
    s.add("training", "random_state", int(seed), origin % ("random_state", seed))
    if kwargs.get("nr_epochs_val_period", 1) != 1:
        refuse(origin % ("nr_epochs_val_period", kwargs["nr_epochs_val_period"]),
               "tsrnn validates every epoch: accepted: 1")
    if kwargs.get("use_reversible_instance_norm", False):
        refuse(origin % ("use_reversible_instance_norm", True), "accepted: False (as Darts' "
               "RNNModel forces it)")
    for key, forced in (("output_chunk_length", 1), ("output_chunk_shift", 0)):
        if kwargs.get(key, forced) != forced:
            refuse(origin % (key, kwargs[key]), "RNNModel forces %s=%d" % (key, forced))
    if kwargs.get("enable_finetuning") not in (None, False):
        refuse(origin % ("enable_finetuning", kwargs["enable_finetuning"]),
               "tsrnn trains every parameter")
    _optimizer(s, kwargs.get("optimizer_cls"), kwargs.get("optimizer_kwargs"))
    _scheduler(s, kwargs.get("lr_scheduler_cls"), kwargs.get("lr_scheduler_kwargs"))
    _loss(s, kwargs.get("loss_fn"))
    _likelihood(s, kwargs.get("likelihood"))
    _encoders(s, kwargs.get("add_encoders"))
    _trainer(s, kwargs.get("pl_trainer_kwargs"), _metrics(kwargs.get("torch_metrics")))
    for name, value in dict(kwargs.get("tsrnn_settings") or {}).items():
        section, _, key = name.partition(".")
        if not key:
            refuse("RNNModel(tsrnn_settings={%r: ...})" % name, "keys are 'section.key'")
        s.add(section, key, value, "RNNModel(tsrnn_settings={%r: %r})" % (name, value))
    return s


def worker_count(accelerator, devices, cpu_count):
    """How many processes Lightning's `devices` asks for on this machine: 1 trains in this
    process; more run tsrnn-launch. -1 is every GPU (tsrnn-launch counts them: None here) or
    every core."""
    if devices in ("auto", "1", "0") or devices is None:
        return 1
    if "," in devices:
        return len(devices.split(","))
    n = int(devices)
    if n == -1:
        return cpu_count if accelerator == "cpu" else None
    return max(n, 1)


def is_finite(x):
    return x is not None and not math.isnan(x)
