/* The head V = torch.nn.Linear(H, O), applied to the hidden state of every step:
 *     out = h V_w^T + V_b        over all T*B rows at once. */
#include "ops.h"
#include "tsrnn/compute.h"

void tsrnn_linear_forward(float *out, const float *in, const float *w, const float *b,
                          size_t row_count, size_t in_count, size_t out_count)
{
    tsrnn_cpu_fill_rows(out, b, row_count, out_count);
    tsrnn_cpu_gemm(false, true, row_count, out_count, in_count, 1.0f, in, in_count, w, in_count,
                   1.0f, out, out_count);
}

void tsrnn_linear_backward(float *d_in, float *dw, float *db, const float *d_out, const float *in,
                           const float *w, size_t row_count, size_t in_count, size_t out_count)
{
    tsrnn_cpu_gemm(true, false, out_count, in_count, row_count, 1.0f, d_out, out_count, in,
                   in_count, 1.0f, dw, in_count);
    tsrnn_cpu_add_column_sums(db, d_out, row_count, out_count, out_count);
    tsrnn_cpu_gemm(false, false, row_count, in_count, out_count, 1.0f, d_out, out_count, w,
                   in_count, 0.0f, d_in, in_count);
}
