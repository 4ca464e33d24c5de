/* Internal to the model: the linear head and the MSE loss, forward/backward pairs. */
#ifndef TSRNN_MODEL_OPS_H
#define TSRNN_MODEL_OPS_H

#include <stddef.h>

/* out (R, O) = in (R, I) w^T + b; w (O, I), b (O). Overwrites out. */
void tsrnn_linear_forward(float *out, const float *in, const float *w, const float *b,
                          size_t row_count, size_t in_count, size_t out_count);

/* Accumulates dw (O, I) += d_out^T in and db (O) += column sums of d_out; overwrites
 * d_in (R, I) = d_out w. */
void tsrnn_linear_backward(float *d_in, float *dw, float *db, const float *d_out, const float *in,
                           const float *w, size_t row_count, size_t in_count, size_t out_count);

/* nn.MSELoss(): mean of (out - y)^2 over n elements, summed in double. */
float tsrnn_mse_forward(const float *out, const float *y, size_t n);

/* Sum of (out - y)^2 over n elements, in double. */
double tsrnn_mse_sum(const float *out, const float *y, size_t n);

/* PyTorch's mse_loss_backward with grad_output 1: d_out = (out - y) * (2 / n). Overwrites. */
void tsrnn_mse_backward(float *d_out, const float *out, const float *y, size_t n);

#endif
