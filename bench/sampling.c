/* The sample paths of a forecast, apart from everything else: a trained model with a
 * likelihood (a checkpoint's), Darts' predict(n, num_samples) of its first series' training
 * part (tsrnn_forecast_predict(): the paths, their inverse scaling, quantiles and scores), on
 * one core; prints the median time of 21 calls after 3 to warm up, in ms, and the paths drawn.
 * Used by scripts/bench/sampling.sh, which times Darts' predict() beside it.
 *
 *     bench-sampling CHECKPOINT N NUM_SAMPLES */
#include <stdio.h>
#include <stdlib.h>

#include "tsrnn/checkpoint.h"
#include "tsrnn/compute.h"
#include "tsrnn/core.h"
#include "tsrnn/data.h"
#include "tsrnn/forecast.h"
#include "tsrnn/model.h"

#define CALLS 21

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fail(void)
{
    fprintf(stderr, "bench-sampling: %s\n", tsrnn_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    int64_t n, samples;
    if (argc != 4 || !tsrnn_parse_int64(argv[2], &n) || n < 1 ||
        !tsrnn_parse_int64(argv[3], &samples) || samples < 1) {
        fprintf(stderr, "usage: bench-sampling CHECKPOINT N NUM_SAMPLES\n");
        return 2;
    }
    static struct tsrnn_checkpoint ck;
    struct tsrnn_dataset ds = { 0 };
    struct tsrnn_compute *compute = NULL;
    struct tsrnn_model model = { 0 };
    struct tsrnn_compute_options device = { .kind = TSRNN_COMPUTE_CPU, .thread_count = 1 };
    if (tsrnn_checkpoint_read(&ck, argv[1]) != TSRNN_OK ||
        tsrnn_dataset_load(&ds, &ck.config) != TSRNN_OK ||
        tsrnn_compute_create(&compute, &device) != TSRNN_OK ||
        tsrnn_model_init(&model, compute, &ck.dims, (size_t)ck.config.batch_size,
                         (size_t)ck.input_chunk_length) != TSRNN_OK ||
        tsrnn_checkpoint_restore(&ck, &model, NULL) != TSRNN_OK ||
        tsrnn_model_likelihood(&model, &ck.likelihood) != TSRNN_OK)
        return fail();
    ck.config.num_samples = (int)samples;
    struct tsrnn_forecast_options opt;
    tsrnn_forecast_options_from_config(
        &opt, &ck.config,
        tsrnn_darts_seed((uint32_t)ck.config.random_state, TSRNN_DARTS_PREDICT_DRAW), false);
    const struct tsrnn_dataset_series *item = &ds.items[0];
    struct tsrnn_forecast_source src = {
        .series = &item->series,
        .scaler = &item->scaler,
        .origin = item->train_length,
        .covariates = ds.covariates,
        .cov_scaler = &item->cov_scaler,
    };
    double times[CALLS];
    for (int call = -3; call < CALLS; call++) {
        struct tsrnn_forecast f;
        double t0 = tsrnn_clock_now_s();
        if (tsrnn_forecast_predict(&f, &model, &src, 1, (size_t)ck.input_chunk_length, (size_t)n,
                                   NULL, &opt) != TSRNN_OK)
            return fail();
        double t = tsrnn_clock_now_s() - t0;
        if (call >= 0)
            times[call] = t;
        tsrnn_forecast_finish(&f);
    }
    qsort(times, CALLS, sizeof(double), compare);
    printf("tsrnn %lld paths of %lld steps: %.3f ms (median of %d; fastest %.3f ms)\n",
           (long long)samples, (long long)n, 1e3 * times[CALLS / 2], CALLS, 1e3 * times[0]);
    tsrnn_model_finish(&model);
    tsrnn_compute_destroy(compute);
    tsrnn_dataset_finish(&ds);
    tsrnn_checkpoint_finish(&ck);
    return 0;
}
