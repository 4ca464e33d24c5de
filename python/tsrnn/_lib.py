"""The C API of libtsrnn.so (include/tsrnn/tsrnn.h) through ctypes: its handles as Python
objects, its statuses as exceptions.

Why ctypes (docs/python.md): the C API is a small set of functions on opaque handles and plain
arrays, which ctypes calls without a compiled extension: the wheel carries libtsrnn.so and no
Python-version-specific module, so one wheel serves every Python 3, and building it needs no
Python headers. ctypes releases the GIL during each call (a fit runs while other Python
threads go on), NumPy arrays pass as pointers without a copy, and the callbacks (output,
progress) take the GIL back when they run.
"""

import ctypes
import os
from pathlib import Path

import numpy as np

# enum tsrnn_status
OK, USAGE, DATA, IO, NOMEM, NUMERIC, COMM, INTERRUPTED = range(8)
_STATUS_NAMES = ("ok", "usage error", "data error", "I/O error", "out of memory",
                 "numeric error", "communication error", "interrupted")


class TsrnnError(Exception):
    """A failed call of libtsrnn: `status` (the C API's enum tsrnn_status) and its message
    (what, which value, what is accepted)."""

    def __init__(self, message, status=USAGE):
        super().__init__(message)
        self.status = status


class TsrnnUsageError(TsrnnError, ValueError):
    """A bad argument or configuration value (tsrnn's exit code 2)."""


class TsrnnDataError(TsrnnError, ValueError):
    """Bad series, file or checkpoint (exit code 2)."""


class TsrnnNumericError(TsrnnError, ArithmeticError):
    """The loss or a gradient became NaN or infinite (exit code 1)."""


class TsrnnInterrupted(TsrnnError):
    """A fit stopped by a cancel request (RNNModel.fit turns it into KeyboardInterrupt)."""


_ERRORS = {USAGE: TsrnnUsageError, DATA: TsrnnDataError, NUMERIC: TsrnnNumericError,
           INTERRUPTED: TsrnnInterrupted}


def error(status, message):
    if status == NOMEM:
        return MemoryError(message)
    return _ERRORS.get(status, TsrnnError)(message, status)


def library_path():
    """libtsrnn.so: $TSRNN_LIBRARY (the build tree's, for the tests), else the one installed
    beside this file."""
    env = os.environ.get("TSRNN_LIBRARY")
    return Path(env) if env else Path(__file__).resolve().parent / "libtsrnn.so"


def programs_dir():
    """The folder of tsrnn-launch, tsrnn-worker and tsrnn-predict: $TSRNN_BIN_DIR (the build
    tree), else the package's _bin."""
    env = os.environ.get("TSRNN_BIN_DIR")
    return Path(env) if env else Path(__file__).resolve().parent / "_bin"


_c = ctypes
_p = _c.c_void_p
_size = _c.c_size_t
_str = _c.c_char_p
_f32p = _c.POINTER(_c.c_float)
_i64p = _c.POINTER(_c.c_int64)
WRITE_FN = _c.CFUNCTYPE(None, _p, _c.POINTER(_c.c_char), _size)
PROGRESS_FN = _c.CFUNCTYPE(_c.c_int, _p, _c.c_int64, _c.c_int64, _c.c_int64, _c.c_double,
                           _c.c_double)

_PROTOTYPES = {
    "tsrnn_version": (_str, []),
    "tsrnn_api_version": (_c.c_int, []),
    "tsrnn_series_set_create": (_c.c_int, [_c.POINTER(_p)]),
    "tsrnn_series_set_destroy": (None, [_p]),
    "tsrnn_series_set_error": (_str, [_p]),
    "tsrnn_series_set_add": (_c.c_int, [_p, _str, _str, _i64p, _c.c_bool, _str, _size, _f32p,
                                        _size, _c.POINTER(_str), _c.POINTER(_size)]),
    "tsrnn_series_set_add_covariates": (_c.c_int, [_p, _size, _i64p, _size, _f32p, _size,
                                                   _c.POINTER(_str)]),
    "tsrnn_series_set_count": (_size, [_p]),
    "tsrnn_run_create": (_c.c_int, [_c.POINTER(_p)]),
    "tsrnn_run_destroy": (None, [_p]),
    "tsrnn_run_error": (_str, [_p]),
    "tsrnn_run_set": (_c.c_int, [_p, _str, _str, _str, _str]),
    "tsrnn_run_get": (_size, [_p, _str, _str, _c.c_char_p, _size]),
    "tsrnn_run_config_text": (_size, [_p, _c.c_char_p, _size]),
    "tsrnn_run_read_ini_text": (_c.c_int, [_p, _str, _str]),
    "tsrnn_run_set_output": (_c.c_int, [_p, WRITE_FN, _p, _str, _c.c_bool]),
    "tsrnn_run_set_progress": (_c.c_int, [_p, PROGRESS_FN, _p]),
    "tsrnn_run_cancel": (None, [_p]),
    "tsrnn_run_fit": (_c.c_int, [_p, _p, _p]),
    "tsrnn_run_result": (_c.c_double, [_p, _str]),
    "tsrnn_run_path": (_size, [_p, _str, _c.c_char_p, _size]),
    "tsrnn_run_load_checkpoint": (_c.c_int, [_p, _str, _str]),
    "tsrnn_run_save_checkpoint": (_c.c_int, [_p, _str]),
    "tsrnn_run_predict": (_c.c_int, [_p, _size, _p, _c.POINTER(_p)]),
    "tsrnn_run_backtest": (_c.c_int, [_p, _p, _str, _size, _size, _c.c_bool, _c.POINTER(_p)]),
    "tsrnn_run_set_predict_seed": (None, [_p, _c.c_int64]),
    "tsrnn_prediction_destroy": (None, [_p]),
    "tsrnn_prediction_error": (_str, [_p]),
    "tsrnn_prediction_count": (_size, [_p]),
    "tsrnn_prediction_series_count": (_size, [_p]),
    "tsrnn_prediction_component_count": (_size, [_p]),
    "tsrnn_prediction_sample_count": (_size, [_p]),
    "tsrnn_prediction_series_index": (_size, [_p, _size]),
    "tsrnn_prediction_length": (_size, [_p, _size]),
    "tsrnn_prediction_times": (_i64p, [_p, _size]),
    "tsrnn_prediction_values": (_f32p, [_p, _size]),
    "tsrnn_prediction_samples": (_f32p, [_p, _size]),
    "tsrnn_prediction_scores": (_c.c_bool, [_p, _size, _c.POINTER(_c.c_double),
                                            _c.POINTER(_c.c_double), _c.POINTER(_c.c_double)]),
    "tsrnn_prediction_backtest_scores": (_c.c_bool, [_p, _size, _c.POINTER(_c.c_double),
                                                     _c.POINTER(_c.c_double),
                                                     _c.POINTER(_c.c_double)]),
    "tsrnn_prediction_write_csv": (_c.c_int, [_p, _str]),
}

_lib = None


def lib():
    """libtsrnn.so, loaded once, its prototypes declared."""
    global _lib
    if _lib is None:
        path = library_path()
        if not path.is_file():
            raise ImportError(
                "tsrnn: %s is missing: install the package with `pip install .` from tsrnn's "
                "source tree (the wheel carries the library), or point TSRNN_LIBRARY at a "
                "built libtsrnn.so" % path)
        loaded = ctypes.CDLL(str(path))
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(loaded, name)
            fn.restype = restype
            fn.argtypes = argtypes
        _lib = loaded
    return _lib


def _text(value):
    return None if value is None else str(value).encode("utf-8")


def _names(names):
    array = (_str * len(names))(*[_text(n) for n in names])
    return array


def _floats(a):
    return a.ctypes.data_as(_f32p)


def _ints(a):
    return a.ctypes.data_as(_i64p)


class SeriesSet:
    """A tsrnn_series_set: the arrays are the caller's (zero-copy) and are kept alive here."""

    def __init__(self):
        self._handle = _p()
        self._keep = []
        status = lib().tsrnn_series_set_create(_c.byref(self._handle))
        if status != OK:
            raise error(status, "out of memory")

    def close(self):
        if self._handle:
            lib().tsrnn_series_set_destroy(self._handle)
            self._handle = _p()
        self._keep = []

    __del__ = close

    def _check(self, status):
        if status != OK:
            raise error(status, lib().tsrnn_series_set_error(self._handle).decode("utf-8",
                                                                                   "replace"))

    def add(self, s, series_id=""):
        """Adds an internal series (tsrnn._series.Series); returns its index."""
        index = _size()
        self._keep += [s.times, s.values]
        self._check(lib().tsrnn_series_set_add(
            self._handle, _text(series_id), _text(s.time_name), _ints(s.times), s.dates,
            _text(s.freq), len(s.times), _floats(s.values), s.values.shape[1],
            _names(s.components), _c.byref(index)))
        if s.covariates is not None:
            cov = s.covariates
            self._keep += [cov.times, cov.values]
            self._check(lib().tsrnn_series_set_add_covariates(
                self._handle, index.value, _ints(cov.times), len(cov.times), _floats(cov.values),
                cov.values.shape[1], _names(cov.components)))
        return index.value

    @property
    def handle(self):
        return self._handle


class Prediction:
    """A tsrnn_prediction, read into NumPy arrays (copies: the handle is freed at once)."""

    def __init__(self, handle):
        L = lib()
        try:
            self.series_count = L.tsrnn_prediction_series_count(handle)
            self.component_count = L.tsrnn_prediction_component_count(handle)
            self.sample_count = L.tsrnn_prediction_sample_count(handle)
            self.forecasts = []  # (series index, times, values (n, C), samples or None, scores)
            C = self.component_count
            for i in range(L.tsrnn_prediction_count(handle)):
                n = L.tsrnn_prediction_length(handle, i)
                times = np.ctypeslib.as_array(L.tsrnn_prediction_times(handle, i), (n,)).copy()
                values = np.ctypeslib.as_array(L.tsrnn_prediction_values(handle, i),
                                               (n, C)).copy()
                samples = L.tsrnn_prediction_samples(handle, i)
                if samples:
                    samples = np.ctypeslib.as_array(samples, (self.sample_count, n, C)).copy()
                else:
                    samples = None
                scores = [_c.c_double() for _ in range(3)]
                L.tsrnn_prediction_scores(handle, i, *[_c.byref(x) for x in scores])
                self.forecasts.append((L.tsrnn_prediction_series_index(handle, i), times, values,
                                       samples, tuple(x.value for x in scores)))
            self.backtest_scores = []
            for s in range(self.series_count):
                scores = [_c.c_double() for _ in range(3)]
                if L.tsrnn_prediction_backtest_scores(handle, s, *[_c.byref(x) for x in scores]):
                    self.backtest_scores.append(tuple(x.value for x in scores))
        finally:
            L.tsrnn_prediction_destroy(handle)


class Run:
    """A tsrnn_run. Its output and progress callbacks are kept alive here."""

    def __init__(self):
        self._handle = _p()
        status = lib().tsrnn_run_create(_c.byref(self._handle))
        if status != OK:
            raise error(status, "cannot create a run")
        self._callbacks = []

    def close(self):
        if self._handle:
            lib().tsrnn_run_destroy(self._handle)
            self._handle = _p()

    __del__ = close

    def message(self):
        return lib().tsrnn_run_error(self._handle).decode("utf-8", "replace")

    def _check(self, status):
        if status != OK:
            raise error(status, self.message())

    def set(self, section, key, value, origin=None):
        self._check(lib().tsrnn_run_set(self._handle, _text(section), _text(key), _text(value),
                                        _text(origin)))

    def get(self, section, key):
        n = lib().tsrnn_run_get(self._handle, _text(section), _text(key), None, 0)
        if n == 0 and self.message():
            raise error(USAGE, self.message())
        out = _c.create_string_buffer(n + 1)
        lib().tsrnn_run_get(self._handle, _text(section), _text(key), out, n + 1)
        return out.value.decode("utf-8")

    def config_text(self):
        n = lib().tsrnn_run_config_text(self._handle, None, 0)
        if n == 0:
            raise error(NOMEM, self.message())
        out = _c.create_string_buffer(n + 1)
        lib().tsrnn_run_config_text(self._handle, out, n + 1)
        return out.value.decode("utf-8")

    def read_ini_text(self, text, label):
        self._check(lib().tsrnn_run_read_ini_text(self._handle, _text(text), _text(label)))

    def set_output(self, write, mode, quiet):
        """write(text: bytes) gets the run's report; None: standard output."""
        callback = WRITE_FN(lambda ctx, data, n: write(_c.string_at(data, n))) if write else \
            WRITE_FN()
        self._callbacks.append(callback)
        self._check(lib().tsrnn_run_set_output(self._handle, callback, None, _text(mode), quiet))

    def set_progress(self, progress):
        """progress(epoch, batch, batch_count, train_loss, val_loss) -> bool (stop)."""
        def call(ctx, epoch, batch, batch_count, train_loss, val_loss):
            try:
                return 1 if progress(epoch, batch, batch_count, train_loss, val_loss) else 0
            except BaseException:  # a callback's exception stops the fit, not the process
                return 1
        callback = PROGRESS_FN(call) if progress else PROGRESS_FN()
        self._callbacks.append(callback)
        self._check(lib().tsrnn_run_set_progress(self._handle, callback, None))

    def cancel(self):
        lib().tsrnn_run_cancel(self._handle)

    def fit(self, train, val):
        """Returns the status (the caller decides what an interruption means)."""
        return lib().tsrnn_run_fit(self._handle, train.handle if train else None,
                                   val.handle if val else None)

    def result(self, name):
        return lib().tsrnn_run_result(self._handle, _text(name))

    def path(self, name):
        n = lib().tsrnn_run_path(self._handle, _text(name), None, 0)
        out = _c.create_string_buffer(n + 1)
        lib().tsrnn_run_path(self._handle, _text(name), out, n + 1)
        return out.value.decode("utf-8")

    def load_checkpoint(self, run_dir, which):
        self._check(lib().tsrnn_run_load_checkpoint(self._handle, _text(run_dir), _text(which)))

    def save_checkpoint(self, path):
        self._check(lib().tsrnn_run_save_checkpoint(self._handle, _text(path)))

    def predict(self, n, series, seed=None):
        lib().tsrnn_run_set_predict_seed(self._handle, -1 if seed is None else int(seed))
        handle = _p()
        self._check(lib().tsrnn_run_predict(self._handle, n, series.handle if series else None,
                                            _c.byref(handle)))
        return Prediction(handle)

    def backtest(self, series, start, horizon, stride, last_points_only, seed=None):
        lib().tsrnn_run_set_predict_seed(self._handle, -1 if seed is None else int(seed))
        handle = _p()
        self._check(lib().tsrnn_run_backtest(self._handle, series.handle if series else None,
                                             _text(start), horizon, stride, last_points_only,
                                             _c.byref(handle)))
        return Prediction(handle)


def version():
    return lib().tsrnn_version().decode()
