/* StableHLO programs of the pjrt backend, written as MLIR text from the model's description
 * (the shapes are static: one program per (B, T)). Every program is one `func.func @main`:
 *
 * train step   (p, m, v: (N) donated; x (B, T, C); y (B, T, O); w (B); s (8);
 *              [masks (L-1, T*B, H)]) -> (p', m', v', squared errors (T, B, O), finite ())
 *     forward over time in a stablehlo.while (states kept for the backward), Darts' head on
 *     every step, MSE's gradient, the backward loop (the CPU cells' formulas, src/compute/
 *     cpu/{rnn,lstm,gru}.c), Adam as src/optim/adam.c; with replica_count > 1 the gradient is
 *     summed over replicas by stablehlo.all_reduce. w weighs each window, 1 or 0: a batch
 *     shorter than the program's B (the epoch's last, or one split unevenly over replicas) is
 *     padded with windows of weight 0, so one program serves every batch. The update is skipped (p, m, v kept) when a
 *     gradient is not finite; `finite` says which. The loss is summed on the host, in double,
 *     from the squared errors, as the CPU backend sums it.
 *     s = Adam's beta1, 1-beta1, beta2, 1-beta2, sqrt(bias_correction2), eps,
 *     -lr/bias_correction1, then the MSE's 2/(B*T*O) for the B real windows of all replicas
 *
 * forward      (p (N); x (B, T, C); h0 (L, B, H); [c0 (L, B, H) for LSTM])
 *              -> (out (T, B, O), hT (L, B, H) [, cT (L, B, H)])
 *     validation (zero states) and a forecast (the saved states); rows past the batch are
 *     padding whose outputs are not read.
 *
 * Matrix products ask for precision HIGHEST (a TPU runs f32 products in bf16 otherwise).
 */
#ifndef TSRNN_COMPUTE_PJRT_EMIT_H
#define TSRNN_COMPUTE_PJRT_EMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/nn.h"

/* The program's text (malloc'd; the caller frees it), or NULL when out of memory.
 * batch_count is B per replica. */
char *tsrnn_pjrt_emit_train_step(const struct tsrnn_model_dims *dims, size_t batch_count,
                                 size_t step_count, size_t replica_count, bool dropout);
char *tsrnn_pjrt_emit_forward(const struct tsrnn_model_dims *dims, size_t batch_count,
                              size_t step_count);

#endif
