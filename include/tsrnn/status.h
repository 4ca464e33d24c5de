/* The statuses every call of libtsrnn returns, and the library's version: the part of the C
 * API (tsrnn/tsrnn.h, which includes this header) that the whole library shares, so that its
 * lowest layer (core) defines them without depending on the API above it. Installed beside
 * tsrnn.h; a program includes tsrnn.h. */
#ifndef TSRNN_STATUS_H
#define TSRNN_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

enum tsrnn_status {
    TSRNN_OK = 0,
    TSRNN_ERR_USAGE,       /* bad call, command line or configuration (exit 2) */
    TSRNN_ERR_DATA,        /* bad input data: series, CSV, weights, checkpoint (exit 2) */
    TSRNN_ERR_IO,          /* a file could not be written or read at run time (exit 1) */
    TSRNN_ERR_NOMEM,       /* an allocation failed (exit 1) */
    TSRNN_ERR_NUMERIC,     /* NaN/inf appeared in training (exit 1) */
    TSRNN_ERR_COMM,        /* a peer failed or timed out (exit 3) */
    TSRNN_ERR_INTERRUPTED, /* cancelled: tsrnn_run_cancel(), SIGINT/SIGTERM (exit 130) */
};

/* The library's version ("0.1.0"). */
const char *tsrnn_version(void);

/* "ok", "usage error", ... and the documented process exit code of a status (0, 1, 2, 3,
 * 130): what a program returns after a failed call. */
const char *tsrnn_status_name(enum tsrnn_status status);
int tsrnn_status_exit_code(enum tsrnn_status status);

#ifdef __cplusplus
}
#endif

#endif
