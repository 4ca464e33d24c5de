/* The vanilla RNN cell of torch.nn.RNN (nonlinearity="tanh"):
 *     h' = tanh(W_ih x + b_ih + W_hh h + b_hh)
 * gates holds h' itself. */
#include "activation.h"
#include "cpu.h"

TSRNN_CPU_BODY rnn_forward_body(const struct tsrnn_cell_step *s, size_t batch_count,
                                size_t hidden_count)
{
    size_t n = batch_count * hidden_count;
    for (size_t i = 0; i < n; i++) {
        float h = tsrnn_tanhf(s->hg[i] + s->gates[i]);
        s->gates[i] = h;
        s->h[i] = h;
    }
}

TSRNN_CPU_ISA_VARIANTS(rnn_forward,
                       (const struct tsrnn_cell_step *s, size_t batch_count, size_t hidden_count),
                       (s, batch_count, hidden_count))

/* d(pre-activation) = dh * (1 - h'^2); the same for the input and the recurrent part. */
TSRNN_CPU_BODY rnn_backward_body(const struct tsrnn_cell_grads *g, const struct tsrnn_cell_step *s,
                                 size_t batch_count, size_t hidden_count)
{
    size_t n = batch_count * hidden_count;
    for (size_t i = 0; i < n; i++) {
        float h = s->h[i];
        g->d_xg[i] = g->dh[i] * (1.0f - h * h);
    }
}

TSRNN_CPU_ISA_VARIANTS(rnn_backward,
                       (const struct tsrnn_cell_grads *g, const struct tsrnn_cell_step *s,
                        size_t batch_count, size_t hidden_count),
                       (g, s, batch_count, hidden_count))

const struct tsrnn_cell tsrnn_cell_rnn = {
    .name = "RNN",
    .gate_count = 1,
    .forward = rnn_forward,
    .backward = rnn_backward,
};
