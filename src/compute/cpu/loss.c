/* The CPU backend's losses (backend.h) over the head's outputs of the batch loaded in the
 * workspace (workspace.h): nn.MSELoss, nn.L1Loss, nn.HuberLoss / nn.SmoothL1Loss and Darts'
 * likelihoods, each with reduction "mean" over batch x steps x targets (every step of the
 * window counts, as in Darts' RNNModel), its gradient with respect to the outputs as
 * autograd hands it down, and the per-window sums validation adds up. */
#include <math.h>
#include <string.h>

#include "tsrnn/likelihood.h"
#include "workspace.h"

enum tsrnn_status tsrnn_cpu_mse_forward(struct tsrnn_compute *ctx, void *workspace, float *loss)
{
    struct cpu_workspace *ws = workspace;
    size_t n = ws->step_count * ws->batch_count * ws->dims.output_count;
    double sum = 0.0;
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        float e = ws->out[i] - ws->y[i];
        sum += (double)(e * e);
    }
    *loss = (float)(sum / (double)n);
    return TSRNN_OK;
}

/* PyTorch's mse_loss_backward with grad_output 1. */
enum tsrnn_status tsrnn_cpu_mse_backward(struct tsrnn_compute *ctx, void *workspace)
{
    struct cpu_workspace *ws = workspace;
    size_t n = ws->step_count * ws->batch_count * ws->dims.output_count;
    float norm = (float)(2.0 / (double)n);
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        ws->d_out[i] = (ws->out[i] - ws->y[i]) * norm;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cpu_window_squared_errors(struct tsrnn_compute *ctx, void *workspace,
                                                  double *se)
{
    struct cpu_workspace *ws = workspace;
    size_t B = ws->batch_count, T = ws->step_count, O = ws->dims.output_count;
    (void)ctx;
    for (size_t b = 0; b < B; b++) {
        double sum = 0.0;
        for (size_t t = 0; t < T; t++)
            for (size_t o = 0; o < O; o++) {
                float e = ws->out[(t * B + b) * O + o] - ws->y[(t * B + b) * O + o];
                sum += (double)(e * e);
            }
        se[b] = sum;
    }
    return TSRNN_OK;
}

/* nn.L1Loss(): (out - y).abs().mean(). */
enum tsrnn_status tsrnn_cpu_l1_forward(struct tsrnn_compute *ctx, void *workspace, float *loss)
{
    struct cpu_workspace *ws = workspace;
    size_t n = ws->step_count * ws->batch_count * ws->dims.output_count;
    double sum = 0.0;
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        sum += (double)fabsf(ws->out[i] - ws->y[i]);
    *loss = (float)(sum / (double)n);
    return TSRNN_OK;
}

/* Autograd's mean backward (grad / numel) then abs backward (grad * sgn(out - y)). */
enum tsrnn_status tsrnn_cpu_l1_backward(struct tsrnn_compute *ctx, void *workspace)
{
    struct cpu_workspace *ws = workspace;
    size_t n = ws->step_count * ws->batch_count * ws->dims.output_count;
    float inv = 1.0f / (float)n;
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        float e = ws->out[i] - ws->y[i];
        ws->d_out[i] = e > 0.0f ? inv : e < 0.0f ? -inv : 0.0f;
    }
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cpu_window_abs_errors(struct tsrnn_compute *ctx, void *workspace,
                                              double *ae)
{
    struct cpu_workspace *ws = workspace;
    size_t B = ws->batch_count, T = ws->step_count, O = ws->dims.output_count;
    (void)ctx;
    for (size_t b = 0; b < B; b++) {
        double sum = 0.0;
        for (size_t t = 0; t < T; t++)
            for (size_t o = 0; o < O; o++)
                sum += (double)fabsf(ws->out[(t * B + b) * O + o] - ws->y[(t * B + b) * O + o]);
        ae[b] = sum;
    }
    return TSRNN_OK;
}

/* --- Darts' likelihoods (include/tsrnn/likelihood.h): the head's P outputs per target ---
 *
 * The loss is the mean of each target's term over B*T*O, summed in double and rounded once,
 * like the MSE above; its gradient is each term's times 1/n in float, as autograd's mean
 * backward hands it down. */

enum tsrnn_status tsrnn_cpu_likelihood_forward(struct tsrnn_compute *ctx, void *workspace,
                                               const struct tsrnn_likelihood *lik, float *loss)
{
    struct cpu_workspace *ws = workspace;
    size_t n = ws->step_count * ws->batch_count * ws->dims.output_count;
    size_t P = tsrnn_likelihood_param_count(lik);
    double sum = 0.0;
    (void)ctx;
    if (ws->likelihood_sum_valid) {
        sum = ws->likelihood_sum; /* the same terms, summed in the same order */
    } else {
        for (size_t i = 0; i < n; i++)
            sum += (double)tsrnn_likelihood_term(lik, ws->out + i * P, ws->y[i], NULL);
    }
    *loss = (float)(sum / (double)n);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cpu_likelihood_backward(struct tsrnn_compute *ctx, void *workspace,
                                                const struct tsrnn_likelihood *lik)
{
    struct cpu_workspace *ws = workspace;
    size_t n = ws->step_count * ws->batch_count * ws->dims.output_count;
    size_t P = tsrnn_likelihood_param_count(lik);
    float inv = 1.0f / (float)n;
    double sum = 0.0;
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        float *d = ws->d_out + i * P;
        sum += (double)tsrnn_likelihood_term(lik, ws->out + i * P, ws->y[i], d);
        for (size_t p = 0; p < P; p++)
            d[p] *= inv;
    }
    ws->likelihood_sum = sum;
    ws->likelihood_sum_valid = true;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cpu_window_likelihood_losses(struct tsrnn_compute *ctx, void *workspace,
                                                     const struct tsrnn_likelihood *lik,
                                                     double *sums)
{
    struct cpu_workspace *ws = workspace;
    size_t B = ws->batch_count, T = ws->step_count, O = ws->dims.output_count;
    size_t P = tsrnn_likelihood_param_count(lik);
    (void)ctx;
    for (size_t b = 0; b < B; b++) {
        double sum = 0.0;
        for (size_t t = 0; t < T; t++)
            for (size_t o = 0; o < O; o++) {
                size_t i = (t * B + b) * O + o;
                sum += (double)tsrnn_likelihood_term(lik, ws->out + i * P, ws->y[i], NULL);
            }
        sums[b] = sum;
    }
    return TSRNN_OK;
}

/* One element's loss as ATen's huber and smooth_l1 kernels compute it in float32, z = |out -
 * y|: HuberLoss z < delta ? 0.5 z z : delta (z - 0.5 delta); SmoothL1Loss z < beta ? 0.5 z z
 * / beta : z - 0.5 beta (beta > 0: the door runs beta 0 as L1Loss). */
static inline float huber_element(enum tsrnn_loss_kind loss, float delta, float out, float y)
{
    float z = fabsf(out - y);
    if (loss == TSRNN_LOSS_HUBER)
        return z < delta ? 0.5f * z * z : delta * (z - 0.5f * delta);
    return z < delta ? 0.5f * z * z / delta : z - 0.5f * delta;
}

/* nn.HuberLoss(delta) / nn.SmoothL1Loss(beta) with reduction "mean". */
enum tsrnn_status tsrnn_cpu_huber_forward(struct tsrnn_compute *ctx, void *workspace,
                                          enum tsrnn_loss_kind loss, float delta, float *loss_out)
{
    struct cpu_workspace *ws = workspace;
    size_t n = ws->step_count * ws->batch_count * ws->dims.output_count;
    double sum = 0.0;
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        sum += (double)huber_element(loss, delta, ws->out[i], ws->y[i]);
    *loss_out = (float)(sum / (double)n);
    return TSRNN_OK;
}

/* ATen's huber_backward and smooth_l1_backward (their vector paths) with grad_output 1 and
 * norm = 1 / numel: norm * (|x| >= delta ? +-delta : x), norm * (|x| >= beta ? +-1 : x / beta),
 * the sign + where x > 0. */
enum tsrnn_status tsrnn_cpu_huber_backward(struct tsrnn_compute *ctx, void *workspace,
                                           enum tsrnn_loss_kind loss, float delta)
{
    struct cpu_workspace *ws = workspace;
    size_t n = ws->step_count * ws->batch_count * ws->dims.output_count;
    float norm = (float)(1.0 / (double)n);
    (void)ctx;
    if (loss == TSRNN_LOSS_HUBER) {
        for (size_t i = 0; i < n; i++) {
            float x = ws->out[i] - ws->y[i];
            float outer = x > 0.0f ? delta : -delta;
            ws->d_out[i] = norm * (fabsf(x) >= delta ? outer : x);
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            float x = ws->out[i] - ws->y[i];
            float outer = x > 0.0f ? 1.0f : -1.0f;
            ws->d_out[i] = norm * (fabsf(x) >= delta ? outer : x / delta);
        }
    }
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_cpu_window_huber_errors(struct tsrnn_compute *ctx, void *workspace,
                                                enum tsrnn_loss_kind loss, float delta,
                                                double *sums)
{
    struct cpu_workspace *ws = workspace;
    size_t B = ws->batch_count, T = ws->step_count, O = ws->dims.output_count;
    (void)ctx;
    for (size_t b = 0; b < B; b++) {
        double sum = 0.0;
        for (size_t t = 0; t < T; t++)
            for (size_t o = 0; o < O; o++) {
                size_t i = (t * B + b) * O + o;
                sum += (double)huber_element(loss, delta, ws->out[i], ws->y[i]);
            }
        sums[b] = sum;
    }
    return TSRNN_OK;
}
