/* The LSTM cell of torch.nn.LSTM, gates in PyTorch's order i, f, g, o (rows of W_ih/W_hh):
 *     i = sigmoid(.)  f = sigmoid(.)  g = tanh(.)  o = sigmoid(.)   (. = W_i* x + b_i* +
 *     c' = f * c + i * g                                                 W_h* h + b_h*)
 *     h' = o * tanh(c')
 * gates holds i, f, g, o after activation, per sample: (B, 4H) = [i | f | g | o]. */
#include "activation.h"
#include "cpu.h"

/* One sample: gates (4H) in place from pre-activations to activations, then c, tanh(c), h.
 * Pointers to distinct arrays (restrict), so the loops vectorise. */
static inline __attribute__((always_inline)) void
lstm_forward_row(float *restrict gates, const float *restrict hg, const float *restrict c_prev,
                 float *restrict c, float *restrict tanh_c, float *restrict h, size_t H)
{
    for (size_t j = 0; j < 2 * H; j++) /* i, f */
        gates[j] = tsrnn_sigmoidf(hg[j] + gates[j]);
    for (size_t j = 2 * H; j < 3 * H; j++) /* g */
        gates[j] = tsrnn_tanhf(hg[j] + gates[j]);
    for (size_t j = 3 * H; j < 4 * H; j++) /* o */
        gates[j] = tsrnn_sigmoidf(hg[j] + gates[j]);
    for (size_t j = 0; j < H; j++) {
        float cj = gates[H + j] * c_prev[j] + gates[j] * gates[2 * H + j];
        c[j] = cj;
        tanh_c[j] = tsrnn_tanhf(cj);
        h[j] = gates[3 * H + j] * tanh_c[j];
    }
}

TSRNN_CPU_BODY lstm_forward_body(const struct tsrnn_cell_step *s, size_t batch_count,
                                 size_t hidden_count)
{
    size_t H = hidden_count;
    for (size_t b = 0; b < batch_count; b++)
        lstm_forward_row(s->gates + b * 4 * H, s->hg + b * 4 * H, s->c_prev + b * H, s->c + b * H,
                         s->aux + b * H, s->h + b * H, H);
}

TSRNN_CPU_ISA_VARIANTS(lstm_forward,
                       (const struct tsrnn_cell_step *s, size_t batch_count, size_t hidden_count),
                       (s, batch_count, hidden_count))

/* With dc the gradient flowing into c' from step t+1:
 *     dc' = dc + dh * o * (1 - tanh(c')^2)
 *     di = dc' g    df = dc' c    dg = dc' i    do = dh tanh(c')    dc_prev = dc' f
 * then through the activations: sigmoid' = s (1 - s), tanh' = 1 - t^2. */
static inline __attribute__((always_inline)) void
lstm_backward_row(float *restrict d_pre, float *restrict dc, const float *restrict gates,
                  const float *restrict c_prev, const float *restrict tanh_c,
                  const float *restrict dh, size_t H)
{
    for (size_t j = 0; j < H; j++) {
        float i = gates[j], f = gates[H + j], g = gates[2 * H + j], o = gates[3 * H + j];
        float tc = tanh_c[j];
        float dc_total = dc[j] + dh[j] * o * (1.0f - tc * tc);
        float di = dc_total * g, df = dc_total * c_prev[j], dg = dc_total * i;
        float d_o = dh[j] * tc;
        d_pre[j] = di * i * (1.0f - i);
        d_pre[H + j] = df * f * (1.0f - f);
        d_pre[2 * H + j] = dg * (1.0f - g * g);
        d_pre[3 * H + j] = d_o * o * (1.0f - o);
        dc[j] = dc_total * f;
    }
}

TSRNN_CPU_BODY lstm_backward_body(const struct tsrnn_cell_grads *g, const struct tsrnn_cell_step *s,
                                  size_t batch_count, size_t hidden_count)
{
    size_t H = hidden_count;
    for (size_t b = 0; b < batch_count; b++)
        lstm_backward_row(g->d_xg + b * 4 * H, g->dc + b * H, s->gates + b * 4 * H,
                          s->c_prev + b * H, s->aux + b * H, g->dh + b * H, H);
}

TSRNN_CPU_ISA_VARIANTS(lstm_backward,
                       (const struct tsrnn_cell_grads *g, const struct tsrnn_cell_step *s,
                        size_t batch_count, size_t hidden_count),
                       (g, s, batch_count, hidden_count))

const struct tsrnn_cell tsrnn_cell_lstm = {
    .name = "LSTM",
    .gate_count = 4,
    .has_cell_state = true,
    .forward = lstm_forward,
    .backward = lstm_backward,
};
