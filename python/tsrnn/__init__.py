"""tsrnn: Darts' RNNModel (RNN, LSTM, GRU) trained and forecast by a native library, with the
numbers of tsrnn's command line (docs/python.md).

    from tsrnn import RNNModel          # NumPy is all it needs; series: TimeSeries, pandas, NumPy
    from tsrnn.darts import RNNModel    # the same, for scripts written for Darts (needs darts)

The Darts guide's script runs with `from darts.models import RNNModel` replaced by
`from tsrnn.darts import RNNModel`.
"""

from ._lib import (TsrnnDataError, TsrnnError, TsrnnInterrupted, TsrnnNumericError,
                   TsrnnUsageError)
from .model import RNNModel


def version():
    """libtsrnn's version ("0.1.0")."""
    from ._lib import version as _version

    return _version()


__all__ = ["RNNModel", "TsrnnError", "TsrnnUsageError", "TsrnnDataError", "TsrnnNumericError",
           "TsrnnInterrupted", "version"]
