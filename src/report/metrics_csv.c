/* metrics.csv in the layout of Lightning's CSVLogger (include/tsrnn/report.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tsrnn/report.h"

static enum tsrnn_status write_failed(struct tsrnn_metrics_csv *m)
{
    return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot write %s", tsrnn_display_path(m->path));
}

enum tsrnn_status tsrnn_metrics_csv_open(struct tsrnn_metrics_csv *m, const char *dir)
{
    *m = (struct tsrnn_metrics_csv){ 0 };
    if ((size_t)snprintf(m->path, sizeof(m->path), "%s/metrics.csv", dir) >= sizeof(m->path))
        return tsrnn_error(TSRNN_ERR_IO, "run folder path too long: %s", dir);
    m->file = fopen(m->path, "w");
    if (m->file == NULL)
        return write_failed(m);
    if (fputs("epoch,step,train_loss,val_loss\n", m->file) < 0)
        return write_failed(m);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_metrics_csv_step(struct tsrnn_metrics_csv *m, int64_t epoch, int64_t step,
                                         double train_loss)
{
    if (fprintf(m->file, "%" PRId64 ",%" PRId64 ",%.9g,\n", epoch, step, train_loss) < 0)
        return write_failed(m);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_metrics_csv_epoch(struct tsrnn_metrics_csv *m, int64_t epoch, int64_t step,
                                          double val_loss)
{
    if (fprintf(m->file, "%" PRId64 ",%" PRId64 ",,%.9g\n", epoch, step, val_loss) < 0 ||
        fflush(m->file) != 0)
        return write_failed(m);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_metrics_csv_close(struct tsrnn_metrics_csv *m)
{
    if (m == NULL || m->file == NULL)
        return TSRNN_OK;
    int failed = ferror(m->file);
    failed |= fclose(m->file) != 0;
    m->file = NULL;
    if (failed)
        return write_failed(m);
    return TSRNN_OK;
}
