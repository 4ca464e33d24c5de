/* Console report: Lightning's and tqdm's number formats, the startup lines and model summary,
 * and the training progress bar in its three modes.
 *
 * Expected strings come from the Python originals: tqdm 4.70.1 (format_num, format_interval,
 * format_meter with Lightning's BAR_FORMAT), Lightning's Tqdm.format_num and
 * get_human_readable_count, and the model summary of shared reference/ecosystem-formats.md §7.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/report.h"

/* Output captured from a FILE*: open, write, then read back with capture_text(). */
struct capture {
    FILE *f;
    char *text;
    size_t nbytes;
};

static void capture_open(struct capture *c)
{
    c->text = NULL;
    c->nbytes = 0;
    c->f = open_memstream(&c->text, &c->nbytes);
    assert_non_null(c->f);
}

static const char *capture_text(struct capture *c)
{
    fflush(c->f);
    return c->text;
}

static void capture_close(struct capture *c)
{
    fclose(c->f);
    free(c->text);
}

/* --- numbers --------------------------------------------------------------------------- */

static void test_format_metric(void **state)
{
    (void)state;
    static const struct {
        double value;
        const char *str; /* Python's str(value) */
        const char *metric;
    } cases[] = {
        { 0.0023312, "0.0023312", "0.00233" },
        { 0.021, "0.021", "0.021" },
        { 0.5, "0.5", "0.500" },
        { 1.23e-05, "1.23e-05", "1.23e-5" },
        { 12345.6, "12345.6", "12345.6" }, /* a tie in length: str() wins */
        { 12345.0, "12345.0", "12345.0" },
        { 2.0, "2.0", "2.000" },
        { 0.0, "0.0", "0.000" },
        { -0.0, "-0.0", "-0.00" },
        { 100.0, "100.0", "100.0" },
        { 1000.0, "1000.0", "1e+3" },
        { 0.1 + 0.2, "0.30000000000000004", "0.300" },
        { -0.5, "-0.5", "-0.50" },
        { 1e16, "1e+16", "1e+16" },
        { 1e15, "1000000000000000.0", "1e+15" },
        { 123456789.0, "123456789.0", "1.23e+8" },
        { 1.5e-07, "1.5e-07", "1.5e-7" },
        { 0.0001, "0.0001", "0.0001" },
        { 0.00012345, "0.00012345", "0.000123" },
        { INFINITY, "inf", "inf.0" },
        { -INFINITY, "-inf", "-inf." },
        { NAN, "nan", "nan.0" },
        { 0.000237, "0.000237", "0.000237" },
        { 0.002, "0.002", "0.002" },
        { 99999.0, "99999.0", "1e+5" },
        { 1e-05, "1e-05", "1e-5" },
        { 0.123456, "0.123456", "0.123" },
        { 1e100, "1e+100", "1e+100" },
        { 5e-324, "5e-324", "5e-324" },
        { 1.7976931348623157e308, "1.7976931348623157e+308", "1.8e+308" },
        { 0.1, "0.1", "0.100" },
        { 1.0 / 3.0, "0.3333333333333333", "0.333" },
        { 2.0 / 3.0, "0.6666666666666666", "0.667" },
        { 1234.5678, "1234.5678", "1.23e+3" },
        { 3.14159e-10, "3.14159e-10", "3.14e-10" },
    };
    char buf[64];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = tsrnn_report_format_pyfloat(buf, sizeof(buf), cases[i].value);
        assert_string_equal(buf, cases[i].str);
        assert_int_equal(len, strlen(cases[i].str));
        len = tsrnn_report_format_metric(buf, sizeof(buf), cases[i].value);
        assert_string_equal(buf, cases[i].metric);
        assert_int_equal(len, strlen(cases[i].metric));
    }
    /* truncation keeps snprintf's contract */
    assert_int_equal(tsrnn_report_format_metric(buf, 4, 0.0023312), 7);
    assert_string_equal(buf, "0.0");
}

static void test_format_interval(void **state)
{
    (void)state;
    static const struct {
        double seconds;
        const char *text;
    } cases[] = {
        { 0, "00:00" },    { 0.999, "00:00" },  { 59.9, "00:59" },     { 60, "01:00" },
        { 3599, "59:59" }, { 3600, "1:00:00" }, { 3661.5, "1:01:01" }, { 172805, "48:00:05" },
        { -5, "00:00" },   { NAN, "00:00" },
    };
    char buf[32];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tsrnn_report_format_interval(buf, sizeof(buf), cases[i].seconds);
        assert_string_equal(buf, cases[i].text);
    }
}

static void test_format_count(void **state)
{
    (void)state;
    static const struct {
        int64_t count;
        const char *text;
    } cases[] = {
        { 0, "0  " },
        { 26, "26  " },
        { 460, "460  " },
        { 481, "481  " },
        { 999, "999  " },
        { 1000, "1.0 K" },
        { 1401, "1.4 K" },
        { 1861, "1.9 K" },
        { 2826, "2.8 K" },
        { 99949, "99.9 K" },
        { 99950, "100.0 K" },
        { 132000, "132 K" },
        { 999999, "999 K" },
        { 1000000, "1.0 M" },
        { 2000000, "2.0 M" },
        { 123456789, "123 M" },
        { INT64_C(1234567890123), "1.2 T" },
        { INT64_C(1234567890123456), "1,234 T" },
    };
    char buf[32];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tsrnn_report_format_count(buf, sizeof(buf), cases[i].count);
        assert_string_equal(buf, cases[i].text);
    }
}

/* --- startup lines and summary ----------------------------------------------------------- */

static void test_devices(void **state)
{
    (void)state;
    struct capture c;
    capture_open(&c);
    tsrnn_report_devices(c.f, false, false, 0);
    assert_string_equal(capture_text(&c), "GPU available: False, used: False\n"
                                          "TPU available: False, using: 0 TPU cores\n");
    capture_close(&c);

    capture_open(&c);
    tsrnn_report_devices(c.f, false, false, 4);
    assert_string_equal(capture_text(&c), "GPU available: False, used: False\n"
                                          "TPU available: True, using: 4 TPU cores\n");
    capture_close(&c);

    capture_open(&c);
    tsrnn_report_devices(c.f, true, true, 0);
    tsrnn_report_fit_stopped(c.f, "max_epochs", 300);
    tsrnn_report_fit_stopped(c.f, "max_steps", 40);
    assert_string_equal(capture_text(&c), "GPU available: True (cuda), used: True\n"
                                          "TPU available: False, using: 0 TPU cores\n"
                                          "`Trainer.fit` stopped: `max_epochs=300` reached.\n"
                                          "`Trainer.fit` stopped: `max_steps=40` reached.\n");
    capture_close(&c);

    /* Lightning's line for a GPU process: the GPUs it was shown (tsrnn-launch sets one). */
    setenv("CUDA_VISIBLE_DEVICES", "2", 1);
    capture_open(&c);
    tsrnn_report_cuda_devices(c.f, 0);
    setenv("CUDA_VISIBLE_DEVICES", "0,3", 1);
    tsrnn_report_cuda_devices(c.f, 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    assert_string_equal(capture_text(&c), "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [2]\n"
                                          "LOCAL_RANK: 1 - CUDA_VISIBLE_DEVICES: [0,3]\n");
    capture_close(&c);
}

/* ecosystem-formats.md §7: LSTM(1 -> 25) + Linear(25 -> 1), made with Lightning's function.
 * The header keeps "Mode" padded to "train": Lightning's lines end in that blank. */
static void test_summary_reference_example(void **state)
{
    (void)state;
    struct capture c;
    capture_open(&c);
    tsrnn_report_model_summary(c.f, "LSTM", 4 * (25 * 1 + 25 * 25 + 2 * 25), 26);
    assert_string_equal(capture_text(&c), "  | Name      | Type    | Params | Mode \n"
                                          "----------------------------------------------\n"
                                          "0 | criterion | MSELoss | 0      | train\n"
                                          "1 | rnn       | LSTM    | 2.8 K  | train\n"
                                          "2 | V         | Linear  | 26     | train\n"
                                          "----------------------------------------------\n"
                                          "2.8 K     Trainable params\n"
                                          "0         Non-trainable params\n"
                                          "2.8 K     Total params\n"
                                          "0.011     Total estimated model params size (MB)\n"
                                          "3         Modules in train mode\n"
                                          "0         Modules in eval mode\n");
    capture_close(&c);
}

/* The seed configuration (hidden_dim 20, one input, one output) for each cell type:
 * darts-semantics.md §1 "Parameter count". */
static void test_summary_seed_configs(void **state)
{
    (void)state;
    struct capture c;
    capture_open(&c);
    tsrnn_report_model_summary(c.f, "RNN", 460, 21);
    assert_string_equal(capture_text(&c), "  | Name      | Type    | Params | Mode \n"
                                          "----------------------------------------------\n"
                                          "0 | criterion | MSELoss | 0      | train\n"
                                          "1 | rnn       | RNN     | 460    | train\n"
                                          "2 | V         | Linear  | 21     | train\n"
                                          "----------------------------------------------\n"
                                          "481       Trainable params\n"
                                          "0         Non-trainable params\n"
                                          "481       Total params\n"
                                          "0.002     Total estimated model params size (MB)\n"
                                          "3         Modules in train mode\n"
                                          "0         Modules in eval mode\n");
    capture_close(&c);

    capture_open(&c);
    tsrnn_report_model_summary(c.f, "LSTM", 1840, 21);
    const char *text = capture_text(&c);
    assert_non_null(strstr(text, "1 | rnn       | LSTM    | 1.8 K  | train\n"));
    assert_non_null(strstr(text, "\n1.9 K     Total params\n"));
    assert_non_null(strstr(text, "\n0.007     Total estimated model params size (MB)\n"));
    capture_close(&c);

    capture_open(&c);
    tsrnn_report_model_summary(c.f, "GRU", 1380, 21);
    text = capture_text(&c);
    assert_non_null(strstr(text, "1 | rnn       | GRU     | 1.4 K  | train\n"));
    assert_non_null(strstr(text, "\n1.4 K     Trainable params\n"));
    assert_non_null(strstr(text, "\n0.006     Total estimated model params size (MB)\n"));
    capture_close(&c);
}

/* Columns grow with their widest cell; eval rows are counted; sizes get "," groups. */
static void test_layer_table_widths(void **state)
{
    (void)state;
    const struct tsrnn_report_layer layers[] = {
        { "a_long_module_name", "Embedding", INT64_C(300000000), true },
        { "head", "Linear", 5, false },
    };
    struct capture c;
    capture_open(&c);
    tsrnn_report_layer_table(c.f, layers, 2);
    assert_string_equal(capture_text(&c),
                        "  | Name               | Type      | Params | Mode \n"
                        "---------------------------------------------------------\n"
                        "0 | a_long_module_name | Embedding | 300 M  | train\n"
                        "1 | head               | Linear    | 5      | eval \n"
                        "---------------------------------------------------------\n"
                        "300 M     Trainable params\n"
                        "0         Non-trainable params\n"
                        "300 M     Total params\n"
                        "1,200.000 Total estimated model params size (MB)\n"
                        "1         Modules in train mode\n"
                        "1         Modules in eval mode\n");
    capture_close(&c);
}

/* --- progress bar ------------------------------------------------------------------------ */

static const struct tsrnn_progress_metric seed_metrics[] = {
    { "train_loss", 0.0023312 },
    { "val_loss", 0.021 },
};

static void test_format_line(void **state)
{
    (void)state;
    char line[TSRNN_PROGRESS_LINE_MAX];

    tsrnn_progress_format_line(line, sizeof(line), "Epoch 299", 7, 7, 7 / 9123.45, 0, seed_metrics,
                               2);
    assert_string_equal(line, "Epoch 299: 100%|██████████| 7/7 [00:00<00:00, 9123.45it/s, "
                              "train_loss=0.00233, val_loss=0.021]");
    tsrnn_progress_format_line(line, sizeof(line), "Epoch 299", 3, 7, 1.5, 0, seed_metrics, 2);
    assert_string_equal(line, "Epoch 299:  43%|████▎     | 3/7 [00:01<00:02,  2.00it/s, "
                              "train_loss=0.00233, val_loss=0.021]");
    tsrnn_progress_format_line(line, sizeof(line), "Epoch 299", 0, 7, 0, 0, NULL, 0);
    assert_string_equal(line, "Epoch 299:   0%|          | 0/7 [00:00<?, ?it/s]");
    tsrnn_progress_format_line(line, sizeof(line), "Epoch 0", 1, 8, 0.25, 0, NULL, 0);
    assert_string_equal(line, "Epoch 0:  12%|█▎        | 1/8 [00:00<00:01,  4.00it/s]");
    tsrnn_progress_format_line(line, sizeof(line), "Epoch 299", 5, 7, 4000, 0, seed_metrics, 2);
    assert_string_equal(line, "Epoch 299:  71%|███████▏  | 5/7 [1:06:40<26:40,  0.00it/s, "
                              "train_loss=0.00233, val_loss=0.021]");

    /* every partial cell, 16 steps over 1 s */
    static const char *const sixteenths[] = {
        "E:   0%|          | 0/16 [00:01<?, ?it/s]",
        "E:   6%|▋         | 1/16 [00:01<00:15,  1.00it/s]",
        "E:  12%|█▎        | 2/16 [00:01<00:07,  2.00it/s]",
        "E:  19%|█▉        | 3/16 [00:01<00:04,  3.00it/s]",
        "E:  25%|██▌       | 4/16 [00:01<00:03,  4.00it/s]",
        "E:  31%|███▏      | 5/16 [00:01<00:02,  5.00it/s]",
        "E:  38%|███▊      | 6/16 [00:01<00:01,  6.00it/s]",
        "E:  44%|████▍     | 7/16 [00:01<00:01,  7.00it/s]",
        "E:  50%|█████     | 8/16 [00:01<00:01,  8.00it/s]",
        "E:  56%|█████▋    | 9/16 [00:01<00:00,  9.00it/s]",
        "E:  62%|██████▎   | 10/16 [00:01<00:00, 10.00it/s]",
        "E:  69%|██████▉   | 11/16 [00:01<00:00, 11.00it/s]",
        "E:  75%|███████▌  | 12/16 [00:01<00:00, 12.00it/s]",
        "E:  81%|████████▏ | 13/16 [00:01<00:00, 13.00it/s]",
        "E:  88%|████████▊ | 14/16 [00:01<00:00, 14.00it/s]",
        "E:  94%|█████████▍| 15/16 [00:01<00:00, 15.00it/s]",
        "E: 100%|██████████| 16/16 [00:01<00:00, 16.00it/s]",
    };
    for (size_t n = 0; n <= 16; n++) {
        tsrnn_progress_format_line(line, sizeof(line), "E", n, 16, 1.0, 0, NULL, 0);
        assert_string_equal(line, sixteenths[n]);
    }

    /* no usable total: tqdm's blank bar */
    tsrnn_progress_format_line(line, sizeof(line), "Epoch 0", 9, 0, 1.125, 0, NULL, 0);
    assert_string_equal(line, "Epoch 0: |          | 9/0 [00:01<00:00,  8.00it/s]");
    tsrnn_progress_format_line(line, sizeof(line), "Epoch 0", 9, 7, 1.125, 0, NULL, 0);
    assert_string_equal(line, "Epoch 0: |          | 9/? [00:01<00:00,  8.00it/s]");
}

static void test_format_line_width(void **state)
{
    (void)state;
    char line[TSRNN_PROGRESS_LINE_MAX];
    size_t len;

    /* tqdm fills the terminal with the bar ... */
    len = tsrnn_progress_format_line(line, sizeof(line), "Epoch 3", 5, 7, 2, 60, NULL, 0);
    assert_string_equal(line, "Epoch 3:  71%|███████████▍    | 5/7 [00:02<00:00,  2.50it/s]");
    assert_int_equal(len, strlen(line));
    /* ... and cuts a line that does not fit to its width, after a 1-cell bar */
    tsrnn_progress_format_line(line, sizeof(line), "Epoch 299", 5, 7, 2, 80, seed_metrics, 2);
    assert_string_equal(line, "Epoch 299:  71%|▋| 5/7 [00:02<00:00,  2.50it/s, "
                              "train_loss=0.00233, val_loss=0.0");
    tsrnn_progress_format_line(line, sizeof(line), "Epoch 299", 5, 7, 2, 40, seed_metrics, 2);
    assert_string_equal(line, "Epoch 299:  71%|▋| 5/7 [00:02<00:00,  2.");

    /* a small buffer is cut like snprintf */
    char small[16];
    len = tsrnn_progress_format_line(small, sizeof(small), "Epoch 299", 0, 7, 0, 0, NULL, 0);
    assert_string_equal(small, "Epoch 299:   0%");
    assert_int_equal(len, strlen("Epoch 299:   0%|          | 0/7 [00:00<?, ?it/s]"));
}

/* One epoch of 7 batches at 10 ms each, then validation, as the trainer will call it. */
static void run_epoch(struct tsrnn_progress *p, int64_t epoch, double t0, double loss,
                      double val_loss)
{
    tsrnn_progress_begin_epoch(p, epoch, 7, t0);
    for (size_t b = 1; b <= 7; b++) {
        assert_int_equal(tsrnn_progress_set_metric(p, "train_loss", loss), TSRNN_OK);
        tsrnn_progress_update(p, b, t0 + 0.01 * (double)b);
    }
    assert_int_equal(tsrnn_progress_set_metric(p, "val_loss", val_loss), TSRNN_OK);
    tsrnn_progress_end_epoch(p, t0 + 0.08);
}

static void test_plain_mode(void **state)
{
    (void)state;
    struct capture c;
    struct tsrnn_progress p;
    capture_open(&c);
    tsrnn_progress_init(&p, c.f, TSRNN_PROGRESS_AUTO); /* a memstream is no terminal */
    assert_int_equal(p.mode, TSRNN_PROGRESS_PLAIN);
    run_epoch(&p, 0, 100.0, 0.5, 0.25);
    run_epoch(&p, 1, 100.125, 0.0023312, 0.021);
    tsrnn_progress_finish(&p);
    assert_string_equal(capture_text(&c), "Epoch 0: 100%|██████████| 7/7 [00:00<00:00, 87.50it/s, "
                                          "train_loss=0.500, val_loss=0.250]\n"
                                          "Epoch 1: 100%|██████████| 7/7 [00:00<00:00, 87.50it/s, "
                                          "train_loss=0.00233, val_loss=0.021]\n");
    capture_close(&c);
}

static void test_none_mode(void **state)
{
    (void)state;
    struct capture c;
    struct tsrnn_progress p;
    capture_open(&c);
    tsrnn_progress_init(&p, c.f, TSRNN_PROGRESS_NONE);
    run_epoch(&p, 0, 0.0, 0.5, 0.25);
    tsrnn_progress_finish(&p);
    assert_int_equal(c.nbytes, 0);
    capture_close(&c);
}

/* BAR: one line redrawn in place, at most every 0.1 s; the final state and a newline at
 * finish. */
static void test_bar_mode(void **state)
{
    (void)state;
    struct capture c;
    struct tsrnn_progress p;
    capture_open(&c);
    tsrnn_progress_init(&p, c.f, TSRNN_PROGRESS_BAR);
    p.fit_terminal = false; /* 10 cells, whatever the test's terminal */

    /* Epoch 0 begins at t=100: drawn (first). Batches at +0.01..+0.07 are throttled;
     * end at +0.08 too. Epoch 1 begins at 100.125 (over 0.1 s after the first draw): drawn.
     * Its batches and end are throttled; finish draws the pending final state. */
    run_epoch(&p, 0, 100.0, 0.5, 0.25);
    run_epoch(&p, 1, 100.125, 0.0023312, 0.021);
    tsrnn_progress_finish(&p);
    tsrnn_progress_finish(&p); /* harmless twice */
    assert_string_equal(capture_text(&c),
                        "\rEpoch 0:   0%|          | 0/7 [00:00<?, ?it/s]\x1b[K"
                        "\rEpoch 1:   0%|          | 0/7 [00:00<?, ?it/s, "
                        "train_loss=0.500, val_loss=0.250]\x1b[K"
                        "\rEpoch 1: 100%|██████████| 7/7 [00:00<00:00, 87.50it/s, "
                        "train_loss=0.00233, val_loss=0.021]\x1b[K\n");
    capture_close(&c);

    /* Slow batches (0.5 s each) are all drawn. */
    capture_open(&c);
    tsrnn_progress_init(&p, c.f, TSRNN_PROGRESS_BAR);
    p.fit_terminal = false;
    tsrnn_progress_begin_epoch(&p, 4, 2, 10.0);
    tsrnn_progress_update(&p, 1, 10.5);
    tsrnn_progress_update(&p, 2, 11.0);
    tsrnn_progress_end_epoch(&p, 11.0); /* too soon: pending, drawn by finish */
    tsrnn_progress_finish(&p);
    assert_string_equal(capture_text(&c),
                        "\rEpoch 4:   0%|          | 0/2 [00:00<?, ?it/s]\x1b[K"
                        "\rEpoch 4:  50%|█████     | 1/2 [00:00<00:00,  2.00it/s]\x1b[K"
                        "\rEpoch 4: 100%|██████████| 2/2 [00:01<00:00,  2.00it/s]\x1b[K"
                        "\rEpoch 4: 100%|██████████| 2/2 [00:01<00:00,  2.00it/s]\x1b[K\n");
    capture_close(&c);

    /* A bar that never drew prints nothing at finish. */
    capture_open(&c);
    tsrnn_progress_init(&p, c.f, TSRNN_PROGRESS_BAR);
    tsrnn_progress_finish(&p);
    assert_int_equal(c.nbytes, 0);
    capture_close(&c);
}

static void test_set_metric_limits(void **state)
{
    (void)state;
    struct tsrnn_progress p;
    tsrnn_progress_init(&p, NULL, TSRNN_PROGRESS_AUTO);
    assert_int_equal(p.mode, TSRNN_PROGRESS_NONE);
    char name[TSRNN_PROGRESS_NAME_MAX + 1];
    memset(name, 'x', TSRNN_PROGRESS_NAME_MAX);
    name[TSRNN_PROGRESS_NAME_MAX] = '\0';
    assert_int_equal(tsrnn_progress_set_metric(&p, name, 1.0), TSRNN_ERR_USAGE);
    assert_non_null(strstr(tsrnn_last_error(), "longer than 31 bytes"));
    for (int i = 0; i < TSRNN_PROGRESS_METRIC_MAX; i++) {
        char m[16];
        snprintf(m, sizeof(m), "m%d", i);
        assert_int_equal(tsrnn_progress_set_metric(&p, m, i), TSRNN_OK);
    }
    assert_int_equal(tsrnn_progress_set_metric(&p, "m3", 33.0), TSRNN_OK); /* an update */
    assert_true(p.metrics[3].value == 33.0);
    assert_int_equal(tsrnn_progress_set_metric(&p, "one_more", 1.0), TSRNN_ERR_USAGE);
    assert_int_equal(p.metric_count, TSRNN_PROGRESS_METRIC_MAX);
}

/* metrics.csv follows the rule of every file tsrnn writes (include/tsrnn/atomic_file.h): a
 * link of this user's is written through; one another user planted in its place is refused,
 * not followed (the file it points at stays as it was); a FIFO is refused at once instead of
 * blocking the run. The other user's link needs root to make, and is skipped otherwise. */
static void test_metrics_csv_follows_the_links_rule(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char victim[PATH_MAX], link[PATH_MAX];
    snprintf(victim, sizeof(victim), "%s", tu_write(dir, "victim.txt", "precious\n"));
    snprintf(link, sizeof(link), "%s/metrics.csv", dir);
    assert_int_equal(symlink(victim, link), 0);
    struct tsrnn_metrics_csv m;
    if (geteuid() == 0) {
        assert_int_equal(lchown(link, 12345, 12345), 0);
        for (int64_t keep = 0; keep <= 5; keep += 5) { /* a new run, and a resume */
            assert_int_equal(tsrnn_metrics_csv_open(&m, dir, keep), TSRNN_ERR_IO);
            tu_expect_in(tsrnn_last_error(),
                         "metrics.csv is a symbolic link of another user (uid 12345)");
            char *text = tu_read(victim);
            assert_string_equal(text, "precious\n");
            free(text);
        }
        assert_int_equal(lchown(link, 0, 0), 0);
    } else {
        printf("# not root: no link of another user can be made; that case skipped\n");
    }
    /* this user's own link: the metrics go where it leads, and it stays a link */
    assert_int_equal(tsrnn_metrics_csv_open(&m, dir, 0), TSRNN_OK);
    assert_int_equal(tsrnn_metrics_csv_epoch(&m, 0, 7, 0.5), TSRNN_OK);
    assert_int_equal(tsrnn_metrics_csv_close(&m), TSRNN_OK);
    char *text = tu_read(victim);
    assert_string_equal(text, "epoch,step,train_loss,val_loss\n0,7,,0.5\n");
    free(text);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));

    assert_int_equal(unlink(link), 0);
    assert_int_equal(mkfifo(link, 0600), 0);
    for (int64_t keep = 0; keep <= 5; keep += 5) {
        enum tsrnn_status status = tsrnn_metrics_csv_open(&m, dir, keep);
        assert_int_equal(status, TSRNN_ERR_IO);
        tu_expect_in(tsrnn_last_error(), "metrics.csv is not a regular file");
        printf("# FIFO, keep_before_step %lld: %s\n", (long long)keep, tsrnn_last_error());
    }
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_metric),
        cmocka_unit_test(test_metrics_csv_follows_the_links_rule),
        cmocka_unit_test(test_format_interval),
        cmocka_unit_test(test_format_count),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_summary_reference_example),
        cmocka_unit_test(test_summary_seed_configs),
        cmocka_unit_test(test_layer_table_widths),
        cmocka_unit_test(test_format_line),
        cmocka_unit_test(test_format_line_width),
        cmocka_unit_test(test_plain_mode),
        cmocka_unit_test(test_none_mode),
        cmocka_unit_test(test_bar_mode),
        cmocka_unit_test(test_set_metric_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
