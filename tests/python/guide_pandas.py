# tests/python/guide.py without Darts: the same steps with pandas (the CSV Darts' dataset
# downloads, split after 1959-01, a MinMax scaler fitted on the training part in float32 as
# Darts' Scaler computes it) and `from tsrnn import RNNModel`, which takes pandas series.
# What CI runs where Darts is not installed (tests/python/test_guide.py).
import sys

import numpy as np
import pandas as pd

from tsrnn import RNNModel

# Read data:
series = pd.read_csv(sys.argv[1], index_col="Month", parse_dates=True)["#Passengers"]
series = series.astype(np.float32).asfreq("MS")

# Create training and validation sets:
train, val = series[:"1959-01-01"], series["1959-02-01":]

# Normalize the time series (sklearn's MinMaxScaler on float32, as Darts' Scaler)
data_min, data_max = train.min(), train.max()
scale = np.float32(1) / (data_max - data_min)
offset = np.float32(0) - data_min * scale
train_transformed = (train * scale + offset).astype(np.float32)
val_transformed = (val * scale + offset).astype(np.float32)

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
common = val_transformed.index.intersection(pred_series.index)
ape = np.abs((val_transformed[common] - pred_series[common]) / val_transformed[common])
print("MAPE: {:.2f}%".format(100 * float(np.mean(ape))))
forecast = ((pred_series - offset) / scale).astype(np.float32)
print("forecast:", " ".join("%.9g" % v for v in forecast.to_numpy()))
