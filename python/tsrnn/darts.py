"""tsrnn for scripts written for Darts: `from tsrnn.darts import RNNModel` in place of
`from darts.models import RNNModel`, the rest of the script as it is (TimeSeries in,
TimeSeries out; darts.metrics, Scaler and the datasets stay Darts').

Importing this module imports Darts, which tsrnn does not need otherwise: where it is not
installed the import says what to install (tsrnn.RNNModel works without it, on pandas or
NumPy series).
"""

try:
    import darts as _darts  # noqa: F401  (the point of this module: Darts is there)
except ImportError as _e:
    raise ImportError(
        "tsrnn.darts is for scripts written for Darts and needs it: pip install darts "
        "(tsrnn itself does not: `from tsrnn import RNNModel` takes pandas or NumPy series)"
    ) from _e

from .model import RNNModel  # noqa: E402

__all__ = ["RNNModel"]
