/* The GRU cell of torch.nn.GRU, gates in PyTorch's order r, z, n:
 *     r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
 *     z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
 *     n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
 *     h' = (h - n) * z + n                     (= (1 - z) * n + z * h, PyTorch's rounding)
 * gates holds r, z, n after activation, (B, 3H) = [r | z | n]; aux keeps W_hn h + b_hn. */
#include "activation.h"
#include "cpu.h"

/* One sample: gates (3H) in place from pre-activations to r, z, n; hn and h. Pointers to
 * distinct arrays (restrict), so the loop vectorises. */
static inline __attribute__((always_inline)) void
gru_forward_row(float *restrict gates, float *restrict hn, float *restrict h,
                const float *restrict hg, const float *restrict h_prev, size_t H)
{
    for (size_t j = 0; j < H; j++) {
        float r = tsrnn_sigmoidf(hg[j] + gates[j]);
        float z = tsrnn_sigmoidf(hg[H + j] + gates[H + j]);
        hn[j] = hg[2 * H + j];
        float n = tsrnn_tanhf(gates[2 * H + j] + hn[j] * r);
        gates[j] = r;
        gates[H + j] = z;
        gates[2 * H + j] = n;
        h[j] = (h_prev[j] - n) * z + n;
    }
}

TSRNN_CPU_BODY gru_forward_body(const struct tsrnn_cell_step *s, size_t batch_count,
                                size_t hidden_count)
{
    size_t H = hidden_count;
    for (size_t b = 0; b < batch_count; b++)
        gru_forward_row(s->gates + b * 3 * H, s->aux + b * H, s->h + b * H, s->hg + b * 3 * H,
                        s->h_prev + b * H, H);
}

TSRNN_CPU_ISA_VARIANTS(gru_forward,
                       (const struct tsrnn_cell_step *s, size_t batch_count, size_t hidden_count),
                       (s, batch_count, hidden_count))

/*     dn = dh (1 - z)    dz = dh (h - n)    dh_prev (direct) = dh z
 *     dn_pre = dn (1 - n^2): the input part of n's gradient; the recurrent part is dn_pre r
 *     dr_pre = dn_pre hn r (1 - r)    dz_pre = dz z (1 - z) */
static inline __attribute__((always_inline)) void
gru_backward_row(float *restrict d_xg, float *restrict d_hg, float *restrict dh_prev,
                 const float *restrict gates, const float *restrict h_prev,
                 const float *restrict hn, const float *restrict dh, size_t H)
{
    for (size_t j = 0; j < H; j++) {
        float r = gates[j], z = gates[H + j], n = gates[2 * H + j];
        float dn_pre = dh[j] * (1.0f - z) * (1.0f - n * n);
        float dz_pre = dh[j] * (h_prev[j] - n) * z * (1.0f - z);
        float dr_pre = dn_pre * hn[j] * r * (1.0f - r);
        d_xg[j] = dr_pre;
        d_xg[H + j] = dz_pre;
        d_xg[2 * H + j] = dn_pre;
        d_hg[j] = dr_pre;
        d_hg[H + j] = dz_pre;
        d_hg[2 * H + j] = dn_pre * r;
        dh_prev[j] = dh[j] * z;
    }
}

TSRNN_CPU_BODY gru_backward_body(const struct tsrnn_cell_grads *g, const struct tsrnn_cell_step *s,
                                 size_t batch_count, size_t hidden_count)
{
    size_t H = hidden_count;
    for (size_t b = 0; b < batch_count; b++)
        gru_backward_row(g->d_xg + b * 3 * H, g->d_hg + b * 3 * H, g->dh_prev + b * H,
                         s->gates + b * 3 * H, s->h_prev + b * H, s->aux + b * H, g->dh + b * H, H);
}

TSRNN_CPU_ISA_VARIANTS(gru_backward,
                       (const struct tsrnn_cell_grads *g, const struct tsrnn_cell_step *s,
                        size_t batch_count, size_t hidden_count),
                       (g, s, batch_count, hidden_count))

const struct tsrnn_cell tsrnn_cell_gru = {
    .name = "GRU",
    .gate_count = 3,
    .separate_d_hg = true,
    .has_direct_path = true,
    .forward = gru_forward,
    .backward = gru_backward,
};
