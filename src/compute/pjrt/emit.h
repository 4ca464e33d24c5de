/* StableHLO programs of the pjrt backend, written as MLIR text from the model's description
 * (the shapes are static: one program per (B, T)). Every program is one `func.func @main`:
 *
 * train step   (p, m, v: (N) donated; x (B, T, C); y (B, T, O); adam (7); [masks (L-1, T, B, H)])
 *              -> (p', m', v', squared errors (B, T, O), finite ())
 *     forward over time in a stablehlo.while (states kept for the backward), Darts' head on
 *     every step, MSE's gradient, the backward loop (the CPU cells' formulas, src/compute/
 *     cpu/{rnn,lstm,gru}.c), Adam as src/optim/adam.c; with replica_count > 1 the gradient is
 *     summed over replicas by stablehlo.all_reduce (each replica's B windows, its gradient
 *     scaled by 1/(replica_count*B*T*O)). The update is skipped (p, m, v kept) when a
 *     gradient is not finite; `finite` says which. The loss is summed on the host, in double,
 *     from the squared errors, as the CPU backend sums it.
 *     adam = beta1, 1-beta1, beta2, 1-beta2, sqrt(bias_correction2), eps, -lr/bias_correction1
 *
 * forward      (p (N); x (B, T, C); h0 (L, B, H); [c0 (L, B, H) for LSTM])
 *              -> (out (T, B, O), hT (L, B, H) [, cT (L, B, H)])
 *     validation (zero states) and a forecast (the saved states).
 *
 * Matrix products ask for precision HIGHEST (a TPU runs f32 products in bf16 otherwise).
 */
#ifndef TSRNN_COMPUTE_PJRT_EMIT_H
#define TSRNN_COMPUTE_PJRT_EMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "tsrnn/model.h"

/* The program's text (malloc'd; the caller frees it), or NULL when out of memory.
 * batch_count is B per replica. */
char *tsrnn_pjrt_emit_train_step(const struct tsrnn_model_dims *dims, size_t batch_count,
                                 size_t step_count, size_t replica_count, bool dropout);
char *tsrnn_pjrt_emit_forward(const struct tsrnn_model_dims *dims, size_t batch_count,
                              size_t step_count);

#endif
