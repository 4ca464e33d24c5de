/* tsrnn report: what a run prints for a person (summaries, later progress and logs). */
#ifndef TSRNN_REPORT_H
#define TSRNN_REPORT_H

#include <stdio.h>

#include "tsrnn/config.h"
#include "tsrnn/data.h"

/* Prints the dataset summary: points and range, split, scaler, window and batch counts of
 * `sampler` (this rank's view). */
void tsrnn_report_dataset(FILE *out, const struct tsrnn_config *cfg, const struct tsrnn_dataset *ds,
                          const struct tsrnn_sampler *sampler);

#endif
