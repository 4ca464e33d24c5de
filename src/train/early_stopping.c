/* Lightning's EarlyStopping (pytorch_lightning/callbacks/early_stopping.py,
 * _evaluate_stopping_criteria) with check_finite on and no thresholds: include/tsrnn/train.h.
 * The metric, best score and min_delta are float32, as Lightning's tensors: `current -
 * min_delta` is one float32 subtraction, compared with torch.lt / torch.gt. */
#include <math.h>
#include <stdio.h>

#include "tsrnn/train.h"

void tsrnn_early_stopping_init(struct tsrnn_early_stopping *es, const struct tsrnn_config *cfg)
{
    bool min = cfg->es_mode == TSRNN_MONITOR_MIN;
    *es = (struct tsrnn_early_stopping){
        .enabled = cfg->es_monitor != TSRNN_EARLY_STOPPING_NONE,
        .mode = cfg->es_mode,
        .min_delta = (float)(min ? -cfg->es_min_delta : cfg->es_min_delta),
        .patience = cfg->es_patience,
        .best_score = min ? INFINITY : -INFINITY,
    };
}

bool tsrnn_early_stopping_check(struct tsrnn_early_stopping *es, const char *monitor, double metric,
                                char *reason, size_t reason_nbytes)
{
    float current = (float)metric;
    reason[0] = '\0';
    if (!es->enabled)
        return false;
    if (!isfinite(current)) {
        snprintf(reason, reason_nbytes,
                 "Monitored metric %s = %g is not finite. Previous best value was %.3f. "
                 "Signaling Trainer to stop.",
                 monitor, (double)current, (double)es->best_score);
        return true;
    }
    float shifted = current - es->min_delta;
    bool improved =
        es->mode == TSRNN_MONITOR_MIN ? shifted < es->best_score : shifted > es->best_score;
    if (improved) {
        es->best_score = current;
        es->wait_count = 0;
        return false;
    }
    es->wait_count++;
    if (es->wait_count < es->patience)
        return false;
    snprintf(reason, reason_nbytes,
             "Monitored metric %s did not improve in the last %lld records. Best score: %.3f. "
             "Signaling Trainer to stop.",
             monitor, (long long)es->wait_count, (double)es->best_score);
    return true;
}
