/* nn.MSELoss() (reduction "mean"), the loss of Darts' RNNModel: over batch x steps x
 * targets, every step of the window counts. */
#include "ops.h"

double tsrnn_mse_sum(const float *out, const float *y, size_t n)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        float e = out[i] - y[i];
        sum += (double)(e * e);
    }
    return sum;
}

float tsrnn_mse_forward(const float *out, const float *y, size_t n)
{
    return (float)(tsrnn_mse_sum(out, y, n) / (double)n);
}

void tsrnn_mse_backward(float *d_out, const float *out, const float *y, size_t n)
{
    float norm = (float)(2.0 / (double)n);
    for (size_t i = 0; i < n; i++)
        d_out[i] = (out[i] - y[i]) * norm;
}
