/* The GEMM ceiling of the LSTM-256 benchmark on this machine: times tsrnn_cpu_gemm (OpenBLAS
 * above the loops' size) on the three products of one training step of LSTM hidden 256,
 * batch 64, training_length 64, and prints their GFLOP/s and the samples/s a trainer would
 * reach if it did nothing but these products. Used by scripts/bench.sh. */
#include <stdio.h>
#include <stdlib.h>

#include "tsrnn/compute.h"
#include "tsrnn/core.h"

struct product {
    const char *what;
    bool trans_a;
    size_t m, n, k, per_step; /* per_step: how many of these one training step runs */
};

/* Seconds per call, the best of 5 rounds of ~0.2 s each. */
static double time_product(const struct product *p)
{
    size_t a_count = p->m * p->k, b_count = p->k * p->n, c_count = p->m * p->n;
    float *a = malloc(a_count * sizeof(float)), *b = malloc(b_count * sizeof(float));
    float *c = calloc(c_count, sizeof(float));
    if (a == NULL || b == NULL || c == NULL) {
        fprintf(stderr, "bench-gemm: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < a_count; i++)
        a[i] = (float)(i % 7) * 0.01f;
    for (size_t i = 0; i < b_count; i++)
        b[i] = (float)(i % 5) * 0.01f;
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        size_t calls = 0;
        double start = tsrnn_clock_now_s(), now;
        do {
            tsrnn_cpu_gemm(p->trans_a, false, p->m, p->n, p->k, 1.0f, a, p->trans_a ? p->m : p->k,
                           b, p->n, 1.0f, c, p->n);
            calls++;
            now = tsrnn_clock_now_s();
        } while (now - start < 0.2);
        double per_call = (now - start) / (double)calls;
        best = per_call < best ? per_call : best;
    }
    free(a);
    free(b);
    free(c);
    return best;
}

int main(void)
{
    /* B 64, T 64, H 256, G*H 1024, input 1: the products that hold 99.9% of the FLOPs. */
    const struct product products[] = {
        { "forward step   h W_hh^T  64 x 1024 x 256", false, 64, 1024, 256, 64 },
        { "backward step  d W_hh    64 x 256 x 1024", false, 64, 256, 1024, 64 },
        { "weight grad    d^T h   1024 x 256 x 4096", true, 1024, 256, 4096, 1 },
    };
    double step_s = 0.0;
    tsrnn_cpu_set_thread_count(1);
    for (size_t i = 0; i < sizeof(products) / sizeof(products[0]); i++) {
        const struct product *p = &products[i];
        double s = time_product(p);
        printf("%-44s %6.1f GFLOP/s\n", p->what, 2.0 * (double)(p->m * p->n * p->k) / s * 1e-9);
        step_s += s * (double)p->per_step;
    }
    printf("GEMM-only bound for LSTM-256 (batch 64): %.0f samples/s (%.1f ms per step)\n",
           64.0 / step_s, step_s * 1e3);
    return 0;
}
