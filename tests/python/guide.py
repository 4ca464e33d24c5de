# The Darts guide "Using Torch Models with GPUs and TPUs" (docs/userguide/gpu_and_tpu_usage.md,
# "Use CPU"), as a user runs it, then the RNN example's evaluation (04-RNN-examples: predict,
# mape against the validation series, the forecast inverse-scaled). tests/python/test_guide.py
# runs it as it is (real Darts) and with `from darts.models import RNNModel` replaced by
# `from tsrnn.darts import RNNModel`, and nothing else changed.
import numpy as np
import pandas as pd

import matplotlib.pyplot as plt

from darts.dataprocessing.transformers import Scaler
from darts.models import RNNModel
from darts.metrics import mape
from darts.datasets import AirPassengersDataset

# Read data:
series = AirPassengersDataset().load()
series = series.astype(np.float32)

# Create training and validation sets:
train, val = series.split_after(pd.Timestamp("19590101"))

# Normalize the time series (note: we avoid fitting the transformer on the validation set)
transformer = Scaler()
train_transformed = transformer.fit_transform(train)
val_transformed = transformer.transform(val)
series_transformed = transformer.transform(series)

my_model = RNNModel(
    model="RNN",
    hidden_dim=20,
    dropout=0,
    batch_size=16,
    n_epochs=300,
    optimizer_kwargs={"lr": 1e-3},
    model_name="Air_RNN",
    log_tensorboard=True,
    random_state=42,
    training_length=20,
    input_chunk_length=14,
    force_reset=True,
)

my_model.fit(train_transformed, val_series=val_transformed)

pred_series = my_model.predict(n=24)
print("MAPE: {:.2f}%".format(mape(val_transformed, pred_series)))
forecast = transformer.inverse_transform(pred_series)
print("forecast:", " ".join("%.9g" % v for v in forecast.values().ravel()))
