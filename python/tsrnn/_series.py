"""Series in and out: Darts' TimeSeries, pandas' Series and DataFrame, NumPy arrays, as the
C API takes them (a time index in int64 seconds or integers, float32 values row by row) and
back in the kind they came in.

Darts is never imported here: a TimeSeries is recognised by its class, and a forecast is made
with that same class (from_times_and_values), so that the core package needs NumPy alone.
pandas is imported only when a pandas object (or a TimeSeries) is met.
"""

import re

import numpy as np

# pandas' older offset aliases (pandas 1.x and 2.x, which Debian 12's pandas 1.5 prints) and
# the pandas 3 names tsrnn reads (src/data/freq.c): "M" -> "ME", "Q-DEC" -> "QE-DEC", ...
_ALIASES = [
    (r"BQ-", "BQE-"), (r"BQS-", "BQS-"), (r"BAS-", "BYS-"), (r"BYS-", "BYS-"),
    (r"BA-", "BYE-"), (r"BY-", "BYE-"), (r"AS-", "YS-"), (r"A-", "YE-"), (r"Y-", "YE-"),
    (r"Q-", "QE-"),
]
_PLAIN = {"M": "ME", "BM": "BME", "Q": "QE-DEC", "BQ": "BQE-DEC", "A": "YE-DEC", "Y": "YE-DEC",
          "AS": "YS-JAN", "YS": "YS-JAN", "QS": "QS-JAN", "BA": "BYE-DEC", "BY": "BYE-DEC",
          "BAS": "BYS-JAN", "BYS": "BYS-JAN", "H": "h", "T": "min", "S": "s", "W": "W-SUN"}


def normalize_freq(freq):
    """pandas' frequency name as tsrnn reads it (pandas 3's), or None to infer it."""
    if freq is None:
        return None
    text = str(freq)
    m = re.fullmatch(r"(\d*)([A-Za-z]+)((?:-[A-Za-z]+)?)", text)
    if not m:
        return text
    count, name, anchor = m.groups()
    if not anchor and name in _PLAIN:
        return count + _PLAIN[name]
    for old, new in _ALIASES:
        if (name + "-") == old:
            return count + new + anchor[1:]
    return text


class Series:
    """One series as the C API takes it. `kind` says what it came as ("darts", "pandas",
    "numpy") and `like` is the object itself, for making forecasts of the same kind."""

    def __init__(self, times, values, components, dates, freq, time_name, kind, like=None,
                 covariates=None, squeeze=False):
        self.times = np.ascontiguousarray(times, dtype=np.int64)
        self.values = values
        self.components = [str(c) for c in components]
        self.dates = bool(dates)
        self.freq = freq
        self.time_name = time_name or ""
        self.kind = kind
        self.like = like
        self.covariates = covariates
        self.squeeze = squeeze  # a 1-D array or a pandas Series: forecasts come back 1-D

    def __len__(self):
        return len(self.times)

    def with_covariates(self, covariates):
        return Series(self.times, self.values, self.components, self.dates, self.freq,
                      self.time_name, self.kind, self.like, covariates, self.squeeze)


def is_timeseries(obj):
    cls = type(obj)
    return cls.__name__ == "TimeSeries" and cls.__module__.split(".")[0] == "darts"


def _float32(values, what):
    """`values` as float32 rows: the array itself when it is float32 and C-contiguous
    (zero-copy), else a converted copy."""
    a = np.asarray(values)
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise ValueError("%s: values of %d dimensions; accepted: (time,) or (time, component)"
                         % (what, a.ndim))
    if a.dtype != np.float32:
        if not np.issubdtype(a.dtype, np.number):
            raise ValueError("%s: values of dtype %s; accepted: numbers" % (what, a.dtype))
        a = a.astype(np.float32)
    return np.ascontiguousarray(a)


def _index_times(index, what):
    """A pandas index as (int64 times, dates?, freq, name)."""
    import pandas as pd

    name = index.name if isinstance(index.name, str) else ""
    if isinstance(index, pd.DatetimeIndex):
        if index.tz is not None:
            raise ValueError("%s: a time index with a time zone (%s); accepted: naive stamps, "
                             "as tsrnn reads them (tz_localize(None) first)" % (what, index.tz))
        stamps = np.asarray(index.values)  # datetime64 of the index's unit (ns, us, s, ...)
        seconds = stamps.astype("datetime64[s]")
        if np.any(seconds != stamps):
            raise ValueError("%s: stamps finer than a second; accepted: whole seconds" % what)
        freq = index.freqstr if index.freq is not None else None
        return seconds.astype(np.int64), True, normalize_freq(freq), name
    if isinstance(index, pd.RangeIndex):
        return np.asarray(index, dtype=np.int64), False, str(index.step), name
    if pd.api.types.is_integer_dtype(index.dtype):
        return np.asarray(index, dtype=np.int64), False, None, name
    raise ValueError("%s: a %s index; accepted: a DatetimeIndex or an integer index"
                     % (what, type(index).__name__))


def to_series(obj, what="series"):
    """A TimeSeries, a pandas Series or DataFrame (a DatetimeIndex or an integer index), or a
    NumPy array (an index 0, 1, ...) as a Series."""
    if isinstance(obj, Series):
        return obj
    if is_timeseries(obj):
        all_values = obj.all_values(copy=False)
        if all_values.shape[2] != 1:
            raise ValueError("%s: a stochastic series of %d samples; accepted: one sample"
                             % (what, all_values.shape[2]))
        times, dates, freq, name = _index_times(obj.time_index, what)
        if obj.freq_str is not None:
            freq = normalize_freq(obj.freq_str) if dates else str(obj.freq)
        return Series(times, _float32(all_values[:, :, 0], what), list(obj.components), dates,
                      freq, name or str(obj.time_dim), "darts", obj)
    module = type(obj).__module__.split(".")[0]
    if module == "pandas":
        import pandas as pd

        if isinstance(obj, pd.Series):
            frame, squeeze = obj.to_frame(name=obj.name if obj.name is not None else "0"), True
        elif isinstance(obj, pd.DataFrame):
            frame, squeeze = obj, False
        else:
            raise TypeError("%s: a pandas %s; accepted: a Series or a DataFrame"
                            % (what, type(obj).__name__))
        times, dates, freq, name = _index_times(frame.index, what)
        if dates and freq is None and len(frame.index) >= 3:
            freq = normalize_freq(pd.infer_freq(frame.index))
        return Series(times, _float32(frame.to_numpy(), what), list(frame.columns), dates, freq,
                      name, "pandas", obj, squeeze=squeeze)
    if isinstance(obj, np.ndarray) or isinstance(obj, (list, tuple)) and obj and \
            np.isscalar(obj[0]):
        a = np.asarray(obj)
        values = _float32(a, what)
        return Series(np.arange(len(values), dtype=np.int64), values,
                      [str(c) for c in range(values.shape[1])], False, "1", "", "numpy", obj,
                      squeeze=a.ndim == 1)
    raise TypeError("%s: a %s; accepted: a Darts TimeSeries, a pandas Series or DataFrame, or "
                    "a NumPy array (or a list of them)" % (what, type(obj).__name__))


def to_series_list(obj, what="series"):
    """(list of Series, whether a list was given)."""
    if obj is None:
        return None, False
    if isinstance(obj, (list, tuple)) and obj and not np.isscalar(obj[0]):
        return [to_series(o, "%s[%d]" % (what, i)) for i, o in enumerate(obj)], True
    return [to_series(obj, what)], False


def _datetime_index(seconds, freq, name):
    import pandas as pd

    index = pd.to_datetime(np.asarray(seconds, dtype=np.int64), unit="s")
    if freq is not None:
        try:
            index = pd.DatetimeIndex(index, freq=freq)
        except (ValueError, TypeError):
            pass  # an alias this pandas does not know: keep the stamps without it
    index.name = name or None
    return index


def _timeseries_class(like):
    """Darts' TimeSeries for a series that was one: its class, or (a series read back from a
    file) darts' own; None where Darts is not installed (the forecast is then pandas')."""
    if like.like is not None:
        return type(like.like)
    try:
        from darts import TimeSeries
    except ImportError:
        return None
    return TimeSeries


def make_forecast(like, times, values, samples=None):
    """A forecast of the kind of `like` (a Series): TimeSeries, pandas or NumPy, with values
    (n, C) or, for several sample paths, samples (S, n, C)."""
    data = values if samples is None else np.moveaxis(samples, 0, -1)  # (n, C[, S])
    cls = _timeseries_class(like) if like.kind == "darts" else None
    if cls is not None:
        if like.dates:
            index = _datetime_index(times, like.freq, like.time_name)
        else:
            import pandas as pd

            step = int(like.freq) if like.freq else 1
            index = pd.RangeIndex(int(times[0]), int(times[-1]) + step, step,
                                  name=like.time_name or None)
        return cls.from_times_and_values(index, data, columns=like.components)
    if like.kind in ("pandas", "darts"):
        import pandas as pd

        if like.dates:
            index = _datetime_index(times, like.freq, like.time_name)
        else:
            index = pd.Index(np.asarray(times), name=like.time_name or None)
        if samples is not None:
            columns = pd.MultiIndex.from_product(
                [like.components, ["s%d" % s for s in range(samples.shape[0])]])
            return pd.DataFrame(data.reshape(len(times), -1), index=index, columns=columns)
        frame = pd.DataFrame(values, index=index, columns=like.components)
        return frame.iloc[:, 0].rename(like.components[0]) if like.squeeze else frame
    if like.squeeze and samples is None:
        return values[:, 0].copy()
    return data.copy()
