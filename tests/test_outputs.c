/* What rank 0 leaves in the run folder, through the real tsrnn-worker and tsrnn-predict:
 * checkpoints read back by a strict reader written here, TensorBoard scalars decoded and
 * compared with metrics.csv, resume bit for bit, checkpoints that survive SIGKILL and a full
 * disk, the writer thread's checkpoints equal to the synchronous ones, bad checkpoints refused without touching the folder, forecasts and plots. */
#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tfevents.h"
#include "tsrnn/checkpoint.h"
#include "tsrnn/fs.h"
#include "tsrnn/plot.h"

static struct tu_result result;

static const char *run_path(const char *model_name, const char *file)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s%s%s", tu_run_dir(), model_name, file[0] ? "/" : "", file);
    return path;
}

/* Reads a whole file into a malloc'd buffer. */
static unsigned char *read_bytes(const char *path, size_t *nbytes)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bytes = malloc((size_t)size + 1);
    assert_non_null(bytes);
    assert_int_equal(fread(bytes, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *nbytes = (size_t)size;
    return bytes;
}

static void write_bytes(const char *path, const void *bytes, size_t nbytes)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, nbytes, f), nbytes);
    assert_int_equal(fclose(f), 0);
}

/* The names in `dir`, sorted, one per line (for comparing folders and finding files). */
static char *list_dir(const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    size_t cap = 4096, used = 0;
    char *out = calloc(cap, 1);
    assert_non_null(out);
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.')
            used += (size_t)snprintf(out + used, cap - used, "%s\n", names[i]->d_name);
        free(names[i]);
    }
    if (n >= 0)
        free(names);
    return out;
}

/* The one file in `dir` whose name starts with `prefix`; fails unless there is exactly one. */
static const char *only_file(const char *dir, const char *prefix)
{
    static char path[PATH_MAX];
    char *names = list_dir(dir);
    int found = 0;
    for (char *save, *line = strtok_r(names, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save))
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            snprintf(path, sizeof(path), "%s/%s", dir, line);
            found++;
        }
    free(names);
    if (found != 1)
        fail_msg("%d files starting with '%s' in %s", found, prefix, dir);
    return path;
}

/* Everything under a run folder: names and contents, to show that a refused run changed
 * nothing. */
static char *snapshot(const char *dir)
{
    char *names = list_dir(dir);
    size_t cap = strlen(names) + 1;
    char *out = strdup(names);
    for (char *save, *line = strtok_r(names, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, line);
        assert_int_equal(stat(path, &st), 0);
        char *part;
        size_t nbytes;
        if (S_ISDIR(st.st_mode)) {
            part = snapshot(path);
            nbytes = strlen(part);
        } else {
            part = (char *)read_bytes(path, &nbytes);
        }
        out = realloc(out, cap + nbytes + strlen(line) + 2);
        assert_non_null(out);
        memcpy(out + cap - 1, line, strlen(line));
        cap += strlen(line);
        out[cap - 1] = '\n';
        cap++;
        memcpy(out + cap - 1, part, nbytes);
        cap += nbytes;
        out[cap - 1] = '\0';
        free(part);
    }
    free(names);
    return out;
}

/* --- a strict safetensors reader, independent of src/checkpoint/ ------------------------ */

struct st_file {
    unsigned char *bytes;
    size_t nbytes, header_nbytes;
    json_t *header;
};

/* Reads `path` and checks the format to the letter: the header length is a multiple of 8,
 * the header is one JSON object padded with spaces only, every tensor is F32 with
 * data_offsets matching its shape, aligned to 4 bytes, and the tensors tile the data buffer
 * from 0 to the end of the file; __metadata__ holds strings only and its tsrnn.data_crc32c is
 * the CRC-32C of the data buffer. */
static void st_read(struct st_file *f, const char *path)
{
    f->bytes = read_bytes(path, &f->nbytes);
    assert_true(f->nbytes >= 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | f->bytes[i];
    assert_true(n % 8 == 0);
    assert_true(8 + n <= f->nbytes);
    f->header_nbytes = (size_t)n;
    assert_int_equal(f->bytes[8], '{');
    size_t end = 8 + (size_t)n;
    while (end > 8 && f->bytes[end - 1] == ' ')
        end--;
    assert_int_equal(f->bytes[end - 1], '}');
    json_error_t err;
    f->header = json_loadb((const char *)f->bytes + 8, end - 8, JSON_REJECT_DUPLICATES, &err);
    if (f->header == NULL)
        fail_msg("%s: header: %s", path, err.text);

    size_t data_nbytes = f->nbytes - 8 - (size_t)n;
    unsigned char *covered = calloc(data_nbytes + 1, 1);
    size_t total = 0;
    const char *key;
    json_t *value;
    json_object_foreach(f->header, key, value)
    {
        if (strcmp(key, "__metadata__") == 0) {
            const char *k;
            json_t *v;
            json_object_foreach(value, k, v) assert_true(json_is_string(v));
            continue;
        }
        assert_string_equal(json_string_value(json_object_get(value, "dtype")), "F32");
        json_t *shape = json_object_get(value, "shape");
        json_t *offsets = json_object_get(value, "data_offsets");
        size_t count = 1;
        for (size_t d = 0; d < json_array_size(shape); d++)
            count *= (size_t)json_integer_value(json_array_get(shape, d));
        size_t begin = (size_t)json_integer_value(json_array_get(offsets, 0));
        size_t stop = (size_t)json_integer_value(json_array_get(offsets, 1));
        assert_int_equal(stop - begin, count * 4);
        assert_true(stop <= data_nbytes);
        assert_int_equal(begin % 4, 0);
        for (size_t i = begin; i < stop; i++) {
            assert_int_equal(covered[i], 0); /* no overlap */
            covered[i] = 1;
        }
        total += stop - begin;
    }
    assert_int_equal(total, data_nbytes); /* no hole, no trailing bytes */
    free(covered);

    char crc[16];
    snprintf(crc, sizeof(crc), "%08x", tfev_crc32c(f->bytes + 8 + n, data_nbytes));
    json_t *meta = json_object_get(f->header, "__metadata__");
    assert_string_equal(json_string_value(json_object_get(meta, "tsrnn.data_crc32c")), crc);
    assert_string_equal(json_string_value(json_object_get(meta, "format")), "pt");
}

static const char *st_meta(const struct st_file *f, const char *key)
{
    const char *v =
        json_string_value(json_object_get(json_object_get(f->header, "__metadata__"), key));
    if (v == NULL)
        fail_msg("no __metadata__ %s", key);
    return v;
}

/* The data buffer: the weights and moments, byte for byte. */
static const unsigned char *st_data(const struct st_file *f, size_t *nbytes)
{
    *nbytes = f->nbytes - 8 - f->header_nbytes;
    return f->bytes + 8 + f->header_nbytes;
}

static void st_free(struct st_file *f)
{
    json_decref(f->header);
    free(f->bytes);
}

/* --- the run folder -------------------------------------------------------------------- */

#define EPOCHS 30

static const char *const full_run[] = { "training.n_epochs=30", "--progress=none", NULL };

static int group_setup(void **state)
{
    assert_int_equal(tu_setup_run_dir(state), 0);
    /* One run of the example (save_checkpoints, log_tensorboard, [forecast] n = 24) that the
     * first tests read. */
    return tu_train(&result, "Air", full_run, 120) == 0 ? 0 : -1;
}

/* checkpoints/ holds last-epoch=29 and the best epoch by val_loss (the first of equals, as
 * Lightning's ModelCheckpoint keeps it), both to the letter of the format, with PyTorch's
 * names in state_dict order and the state a resume needs. */
static void test_run_folder_and_checkpoints(void **state)
{
    (void)state;
    char *listing = list_dir(run_path("Air", ""));
    assert_string_equal(listing,
                        tsrnn_plot_available()
                            ? "checkpoints\nconfig.ini\nforecast.csv\nforecast.png\nlogs\n"
                              "metrics.csv\n"
                            : "checkpoints\nconfig.ini\nforecast.csv\nlogs\nmetrics.csv\n");
    free(listing);
    static struct tu_metrics_row rows[1000];
    size_t n = tu_read_metrics(run_path("Air", "metrics.csv"), rows, 1000);
    assert_int_equal(n, EPOCHS * 8);
    double best = INFINITY;
    long best_epoch = -1;
    for (size_t i = 0; i < n; i++)
        if (!isnan(rows[i].val_loss) && rows[i].val_loss < best) {
            best = rows[i].val_loss;
            best_epoch = rows[i].epoch;
        }
    char expect[512];
    snprintf(expect, sizeof(expect),
             "best-epoch=%ld-val_loss=%.4f.safetensors\nlast-epoch=%d.safetensors\n", best_epoch,
             best, EPOCHS - 1);
    listing = list_dir(run_path("Air", "checkpoints"));
    assert_string_equal(listing, expect);
    free(listing);

    struct st_file f;
    st_read(&f, only_file(run_path("Air", "checkpoints"), "last-"));
    static const char *const names[] = {
        "rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0",
        "rnn.bias_hh_l0",   "V.weight",         "V.bias",
    };
    const char *key;
    json_t *value;
    size_t i = 0;
    json_object_foreach(f.header, key, value)
    {
        if (strcmp(key, "__metadata__") == 0)
            continue;
        char name[64];
        snprintf(name, sizeof(name), "%s%s",
                 i < 6    ? ""
                 : i < 12 ? "optim.exp_avg."
                          : "optim.exp_avg_sq.",
                 names[i % 6]);
        assert_string_equal(key, name);
        i++;
    }
    assert_int_equal(i, 18);
    assert_string_equal(st_meta(&f, "tsrnn.epoch"), "29");
    tu_expect_in(st_meta(&f, "tsrnn.series"), "\"time_unit\":\"month\",\"freq\":\"MS\"");
    assert_string_equal(st_meta(&f, "tsrnn.global_step"), "210");
    assert_string_equal(st_meta(&f, "tsrnn.adam_step"), "210");
    assert_string_equal(st_meta(&f, "tsrnn.monitor"), "val_loss");
    assert_true(fabs(strtod(st_meta(&f, "tsrnn.best_value"), NULL) - best) <= 1e-8 * best);
    tu_expect_in(st_meta(&f, "tsrnn.model"), "\"model\":\"RNN\"");
    tu_expect_in(st_meta(&f, "tsrnn.model"), "\"hidden_dim\":20");
    tu_expect_in(st_meta(&f, "tsrnn.rng_state"), "\"random_state\":42");
    tu_expect_in(st_meta(&f, "tsrnn.series"), "\"train_end_text\":\"1959-01\"");
    tu_expect_in(st_meta(&f, "tsrnn.config"), "n_epochs = 30");
    st_free(&f);
    st_read(&f, only_file(run_path("Air", "checkpoints"), "best-"));
    snprintf(expect, sizeof(expect), "%ld", best_epoch);
    assert_string_equal(st_meta(&f, "tsrnn.epoch"), expect);
    st_free(&f);
}

/* logs/ as Lightning's TensorBoardLogger writes Darts' run: one event file whose records all
 * pass their CRCs; the first is brain.Event:2, then hp_metric = -1 at step 0; train_loss
 * every log_every_n_steps (50) steps, at the steps s with (s + 1) % 50 == 0, and val_loss
 * every epoch, each followed by `epoch` at the same step; the values are metrics.csv's (as
 * float32; val_loss is a double, printed with 9 digits, so its float may be the neighbour
 * of the one TensorBoard holds); lr (tsrnn's own) every epoch. And logs/hparams.yaml is the
 * file Darts 0.48.1 wrote for this model (tests/fixtures/darts_hparams.yaml), byte for byte. */
static void test_tensorboard_scalars_match_metrics(void **state)
{
    (void)state;
    struct tfev_event *events;
    size_t count;
    char err[256];
    if (tfev_read(only_file(run_path("Air", "logs"), "events.out.tfevents."), &events, &count, err,
                  sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_string_equal(events[0].file_version, "brain.Event:2");
    assert_true(count > 1 && events[1].value_count == 1);
    assert_string_equal(events[1].values[0].tag, "hp_metric");
    assert_true(events[1].values[0].value == -1.0f && events[1].step == 0);
    static struct tu_metrics_row rows[1000];
    size_t n = tu_read_metrics(run_path("Air", "metrics.csv"), rows, 1000);
    size_t r = 0, lr_count = 0, train_count = 0, val_count = 0, epoch_count = 0;
    const struct tu_metrics_row *last = NULL;
    for (size_t e = 2; e < count; e++)
        for (size_t v = 0; v < events[e].value_count; v++) {
            const char *tag = events[e].values[v].tag;
            float value = events[e].values[v].value;
            if (strcmp(tag, "lr") == 0) {
                assert_true(value == 1e-3f);
                lr_count++;
            } else if (strcmp(tag, "epoch") == 0) { /* after each train_loss and val_loss */
                assert_non_null(last);
                assert_int_equal(events[e].step, last->step);
                assert_true(value == (float)last->epoch);
                epoch_count++;
                last = NULL;
            } else if (strcmp(tag, "train_loss") == 0) {
                while (r < n && (isnan(rows[r].train_loss) || rows[r].step != events[e].step))
                    r++;
                assert_true(r < n);
                assert_int_equal((events[e].step + 1) % 50, 0);
                assert_true(value == (float)rows[r].train_loss);
                last = &rows[r++];
                train_count++;
            } else if (strcmp(tag, "val_loss") == 0) {
                while (r < n && (isnan(rows[r].val_loss) || rows[r].step != events[e].step))
                    r++;
                assert_true(r < n);
                assert_true(nextafterf((float)rows[r].val_loss, value) == value);
                last = &rows[r++];
                val_count++;
            } else {
                fail_msg("unexpected tag %s", tag);
            }
        }
    size_t steps = n - EPOCHS; /* one val_loss row per epoch */
    assert_int_equal(train_count, steps / 50);
    assert_int_equal(val_count, EPOCHS);
    assert_int_equal(epoch_count, train_count + val_count);
    assert_int_equal(lr_count, EPOCHS);
    printf("# %zu events: hp_metric, %zu train_loss (every 50 of %zu steps), %zu val_loss, %zu "
           "epoch = metrics.csv, %zu lr\n",
           count, train_count, steps, val_count, epoch_count, lr_count);
    tfev_free(events);

    char *ours = tu_read(run_path("Air", "logs/hparams.yaml"));
    char *darts = tu_read(tu_source("tests/fixtures/darts_hparams.yaml"));
    assert_non_null(ours);
    assert_non_null(darts);
    assert_string_equal(ours, darts);
    free(ours);
    free(darts);
}

/* Every-step logging stays available: log_every_n_steps = 1 gives TensorBoard a train_loss
 * (and an epoch) at every one of 2 x 7 steps. */
static void test_tensorboard_every_step(void **state)
{
    (void)state;
    const char *sets[] = { "training.n_epochs=2", "trainer.log_every_n_steps=1", "forecast.n=0",
                           "--quiet", NULL };
    assert_int_equal(tu_train(&result, "every", sets, 60), 0);
    struct tfev_event *events;
    size_t count, train = 0, epoch = 0;
    char err[256];
    if (tfev_read(only_file(run_path("every", "logs"), "events.out.tfevents."), &events, &count,
                  err, sizeof(err)) != 0)
        fail_msg("%s", err);
    for (size_t e = 1; e < count; e++)
        for (size_t v = 0; v < events[e].value_count; v++) {
            train += strcmp(events[e].values[v].tag, "train_loss") == 0;
            epoch += strcmp(events[e].values[v].tag, "epoch") == 0;
        }
    printf("# log_every_n_steps = 1: %zu train_loss, %zu epoch scalars\n", train, epoch);
    assert_int_equal(train, 14);
    assert_int_equal(epoch, 14 + 2);
    tfev_free(events);
}

/* PNG signature and the IHDR chunk's width and height. */
static void check_png(const char *path, unsigned width, unsigned height)
{
    size_t nbytes;
    unsigned char *png = read_bytes(path, &nbytes);
    assert_true(nbytes > 1000);
    assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
    assert_memory_equal(png + 12, "IHDR", 4);
    unsigned w = (unsigned)png[16] << 24 | png[17] << 16 | png[18] << 8 | png[19];
    unsigned h = (unsigned)png[20] << 24 | png[21] << 16 | png[22] << 8 | png[23];
    assert_int_equal(w, width);
    assert_int_equal(h, height);
    free(png);
}

static int predict(const char *const *args)
{
    const char *argv[24] = { tu_env("TSRNN_PREDICT") };
    size_t n = 1;
    for (size_t i = 0; args[i] != NULL && n < 23; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    assert_int_equal(tu_run(argv, 60, &result), 0);
    return result.exit_code;
}

/* The forecast.csv training wrote (from its final weights) and tsrnn-predict's forecast from
 * the last checkpoint are the same bytes: a saved and loaded model forecasts identically.
 * Time stamps continue the monthly series after the training part (split after 1959-01). */
static void test_predict_reproduces_training_forecast(void **state)
{
    (void)state;
    char run[PATH_MAX], out[PATH_MAX + 16], plot[PATH_MAX + 16];
    snprintf(run, sizeof(run), "%s", run_path("Air", ""));
    snprintf(out, sizeof(out), "%s/p.csv", tu_run_dir());
    snprintf(plot, sizeof(plot), "%s/p.png", tu_run_dir());
    const char *args[] = { "--run", run,      "--checkpoint", "last",   "--n",     "24", "--out",
                           out,     "--plot", plot,           "--size", "640x480", NULL };
    if (!tsrnn_plot_available()) { /* refused up front, nothing written */
        assert_int_equal(predict(args), 2);
        tu_expect_in(result.err, "built without cairo");
        assert_int_equal(access(out, F_OK), -1);
        args[8] = NULL;
    }
    assert_int_equal(predict(args), 0);
    char *ours = tu_read(out);
    char *trained = tu_read(run_path("Air", "forecast.csv"));
    assert_non_null(ours);
    assert_string_equal(ours, trained);
    assert_true(strncmp(ours, "Month,#Passengers\n1959-02,", 26) == 0);
    tu_expect_in(ours, "\n1961-01,");
    size_t lines = 0;
    for (const char *p = ours; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 25);
    tu_expect_in(result.err, "Forecast 24 steps, 1959-02 .. 1961-01");
    tu_expect_in(result.err, "Against the 23 actual values: MAPE ");
    if (tsrnn_plot_available()) {
        check_png(plot, 640, 480);
        check_png(run_path("Air", "forecast.png"), 1000, 500);
    }
    free(ours);
    free(trained);

    /* To standard output by default; best is the default checkpoint. */
    const char *best[] = { "--run", run, "--n", "3", NULL };
    assert_int_equal(predict(best), 0);
    assert_true(strncmp(result.out, "Month,#Passengers\n1959-02,", 26) == 0);
    tu_expect_in(result.err, "best-epoch=");
}

/* --out and --plot to what is not a regular file: /dev/stdout (a pipe here) and /dev/null are
 * written in place and stay what they were; a link is written through and stays a link. */
static void test_predict_writes_devices_in_place(void **state)
{
    (void)state;
    char run[PATH_MAX], link[PATH_MAX + 16], real[PATH_MAX + 16];
    snprintf(run, sizeof(run), "%s", run_path("Air", ""));
    snprintf(real, sizeof(real), "%s/real.csv", tu_run_dir());
    snprintf(link, sizeof(link), "%s/link.csv", tu_run_dir());
    const char *to_stdout[] = { "--run", run, "--n", "2", "--out", "/dev/stdout", NULL };
    assert_int_equal(predict(to_stdout), 0);
    assert_true(strncmp(result.out, "Month,#Passengers\n1959-02,", 26) == 0);
    const char *to_null[] = { "--run",
                              run,
                              "--n",
                              "2",
                              "--out",
                              "/dev/null",
                              tsrnn_plot_available() ? "--plot" : NULL,
                              "/dev/null",
                              NULL };
    assert_int_equal(predict(to_null), 0);
    struct stat st;
    assert_int_equal(lstat("/dev/stdout", &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    tu_write(tu_run_dir(), "real.csv", "old\n");
    assert_int_equal(symlink("real.csv", link), 0);
    const char *to_link[] = { "--run", run, "--n", "2", "--out", link, NULL };
    assert_int_equal(predict(to_link), 0);
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    char *text = tu_read(real);
    assert_true(strncmp(text, "Month,#Passengers\n1959-02,", 26) == 0);
    free(text);
    /* a device that refuses the bytes: the file and the reason (it was "cannot write
     * /dev/full" alone) */
    const char *to_full[] = { "--run", run, "--n", "2", "--out", "/dev/full", NULL };
    assert_int_equal(predict(to_full), 1);
    tu_expect_in(result.err, "cannot write /dev/full: No space left on device");
}

/* --series: the forecast starts after the series' own end, no actual values. */
static void test_predict_after_another_series(void **state)
{
    (void)state;
    char *data = tu_read(tu_source("examples/data/air_passengers.csv"));
    assert_non_null(data);
    char *cut = data;
    for (int i = 0; i < 61; i++) /* header + 1949-01 .. 1953-12 */
        cut = strchr(cut, '\n') + 1;
    *cut = '\0';
    const char *series = tu_write(tu_run_dir(), "first60.csv", data);
    char series_path[PATH_MAX], run[PATH_MAX];
    snprintf(series_path, sizeof(series_path), "%s", series);
    snprintf(run, sizeof(run), "%s", run_path("Air", ""));
    const char *args[] = { "--run", run, "--series", series_path, "--n", "13", NULL };
    assert_int_equal(predict(args), 0);
    assert_true(strncmp(result.out, "Month,#Passengers\n1954-01,", 26) == 0);
    tu_expect_in(result.out, "\n1955-01,");
    assert_null(strstr(result.err, "MAPE"));
    free(data);
}

static void test_predict_refuses_bad_arguments(void **state)
{
    (void)state;
    char run[PATH_MAX], missing[PATH_MAX + 16];
    snprintf(run, sizeof(run), "%s", run_path("Air", ""));
    snprintf(missing, sizeof(missing), "%s/nowhere", tu_run_dir());
    const char *no_n[] = { "--run", run, NULL };
    assert_int_equal(predict(no_n), 2);
    tu_expect_in(result.err, "--n N is required");
    const char *bad_n[] = { "--run", run, "--n", "0", NULL };
    assert_int_equal(predict(bad_n), 2);
    tu_expect_in(result.err, "--n 0: accepted: an integer from 1");
    const char *no_run[] = { "--run", missing, "--n", "3", NULL };
    assert_int_equal(predict(no_run), 2);
    tu_expect_in(result.err, "no best checkpoint");
    const char *text[] = { "--checkpoint", tu_source("examples/air_passengers.ini"), "--n", "3",
                           NULL };
    assert_int_equal(predict(text), 2);
    tu_expect_in(result.err, "air_passengers.ini");
    const char *bad_size[] = { "--run", run, "--n", "3", "--plot", "x.png", "--size", "9x9", NULL };
    assert_int_equal(predict(bad_size), 2);
    tu_expect_in(result.err, "--size 9x9: accepted: WIDTHxHEIGHT in pixels from 200x150");
    assert_string_equal(result.out, ""); /* refused before any forecast */
    const char *other = tu_write(tu_run_dir(), "other.csv", "Month,Cars\n1950-01,3\n");
    char other_path[PATH_MAX];
    snprintf(other_path, sizeof(other_path), "%s", other);
    const char *columns[] = { "--run", run, "--series", other_path, "--n", "3", NULL };
    assert_int_equal(predict(columns), 2);
    tu_expect_in(result.err, "#Passengers");
}

/* A forecast whose dates would pass the year 9999 is refused before any work (issue 39, point
 * 7): --n 100000000 after 1959-01 forecast all its steps (30 s, 395 MB) before refusing. The
 * peak memory shows the work was not done. */
static void test_predict_checks_the_dates_first(void **state)
{
    (void)state;
    char run[PATH_MAX];
    snprintf(run, sizeof(run), "%s", run_path("Air", ""));
    const char *far[] = { "--run", run, "--n", "100000000", NULL };
    assert_int_equal(predict(far), 2);
    tu_expect_in(result.err, "a 100000000-step forecast at freq MS after 1959-01 would pass the "
                             "last stamp tsrnn can write (9999-12-31 23:59:59)");
    assert_string_equal(result.out, "");
    printf("# --n 100000000: exit 2, peak memory %ld kB\n", result.max_rss_kb);
    assert_true(result.max_rss_kb < 64 * 1024);
}

/* AirPassengers' 144 values on other stamps: `stamp(i, out)` writes the i-th. */
static const char *restamped(const char *name, void (*stamp)(size_t, char *))
{
    char *data = tu_read(tu_source("examples/data/air_passengers.csv"));
    assert_non_null(data);
    static char text[8192];
    size_t used = (size_t)snprintf(text, sizeof(text), "Month,#Passengers\n");
    char *line = strchr(data, '\n') + 1;
    for (size_t i = 0; *line != '\0'; i++) {
        char when[32];
        char *comma = strchr(line, ','), *end = strchr(line, '\n');
        stamp(i, when);
        used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%.*s\n", when,
                                 (int)(end - comma), comma);
        line = end + 1;
    }
    free(data);
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s", tu_write(tu_run_dir(), name, text));
    return path;
}

static void month_end(size_t i, char *out)
{
    static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int y = 1949 + (int)(i / 12), m = (int)(i % 12) + 1;
    int d = days[m - 1] + (m == 2 && y % 4 == 0);
    snprintf(out, 32, "%04d-%02d-%02d", y, m, d);
}

/* Business days from Monday 2024-01-01: five a week, weekends skipped. */
static void business_day(size_t i, char *out)
{
    int day = 1 + (int)(i / 5) * 7 + (int)(i % 5); /* day of 2024 */
    static const int days[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int m = 0;
    while (day > days[m])
        day -= days[m++];
    snprintf(out, 32, "2024-%02d-%02d", m + 1, day);
}

/* The checkpoint records the frequency; tsrnn-predict continues it (month ends stay month
 * ends, business days skip weekends) and refuses a --series of another frequency. */
static void test_predict_continues_the_frequency(void **state)
{
    (void)state;
    char data[PATH_MAX + 16], run[PATH_MAX], series[PATH_MAX];
    snprintf(data, sizeof(data), "data.path=%s", restamped("month_ends.csv", month_end));
    const char *ends[] = { data,
                           "data.split_after=1959-01-31",
                           "training.n_epochs=3",
                           "forecast.plot=false",
                           "output.log_tensorboard=false",
                           "--progress=none",
                           NULL };
    if (tu_train(&result, "month_ends", ends, 60) != 0)
        fail_msg("%s", result.err);
    tu_expect_in(result.out, "144 points (1949-01-31 .. 1960-12-31, freq ME)");
    snprintf(run, sizeof(run), "%s", run_path("month_ends", ""));
    const char *args[] = { "--run", run, "--checkpoint", "last", "--n", "3", NULL };
    assert_int_equal(predict(args), 0);
    tu_expect_in(result.out, "Month,#Passengers\n1959-02-28,");
    tu_expect_in(result.out, "\n1959-03-31,");
    tu_expect_in(result.out, "\n1959-04-30,");
    /* a weekly series is not the model's */
    snprintf(series, sizeof(series), "%s",
             tu_write(tu_run_dir(), "weekly.csv",
                      "Month,#Passengers\n2024-01-07,1\n2024-01-14,2\n2024-01-21,3\n2024-01-28,4\n"
                      "2024-02-04,5\n2024-02-11,6\n2024-02-18,7\n2024-02-25,8\n2024-03-03,9\n"
                      "2024-03-10,10\n2024-03-17,11\n2024-03-24,12\n2024-03-31,13\n"
                      "2024-04-07,14\n"));
    const char *weekly[] = { "--run", run, "--checkpoint", "last", "--series", series, "--n",
                             "3",     NULL };
    assert_int_equal(predict(weekly), 2);
    tu_expect_in(result.err, "weekly.csv: the series' frequency is W-SUN, but the model was "
                             "trained on a series of freq ME; accepted: a series of freq ME");
    assert_string_equal(result.out, "");

    snprintf(data, sizeof(data), "data.path=%s", restamped("business_days.csv", business_day));
    const char *bdays[] = { data,
                            "data.split_after=2024-06-07",
                            "training.n_epochs=3",
                            "forecast.plot=false",
                            "output.log_tensorboard=false",
                            "--progress=none",
                            NULL };
    if (tu_train(&result, "business_days", bdays, 60) != 0)
        fail_msg("%s", result.err);
    tu_expect_in(result.out, "144 points (2024-01-01 .. 2024-07-18, freq B)");
    snprintf(run, sizeof(run), "%s", run_path("business_days", ""));
    /* the training part ends on Friday 2024-06-07: Monday comes next */
    const char *next[] = { "--run", run, "--checkpoint", "last", "--n", "2", NULL };
    assert_int_equal(predict(next), 0);
    tu_expect_in(result.out, "Month,#Passengers\n2024-06-10,");
    tu_expect_in(result.out, "\n2024-06-11,");
    tu_expect_in(result.err, "Forecast 2 steps, 2024-06-10 .. 2024-06-11");
}

/* --- resume ---------------------------------------------------------------------------- */

/* A 2-layer LSTM with dropout and shuffling (every random number tsrnn draws) run for 12
 * epochs in one go, and for 5 epochs then resumed to 12: the final weights and Adam moments
 * are the same bytes, and so is metrics.csv. The resumed run's TensorBoard file starts with
 * a SessionLog START at the resumed step. */
static void test_resume_is_bit_identical(void **state)
{
    (void)state;
    const char *model[] = { "model.model=LSTM",  "model.n_rnn_layers=2",
                            "model.dropout=0.2", "model.hidden_dim=8",
                            "--quiet",           NULL };
    const char *sets_full[8], *sets_part[8], *sets_resume[10];
    size_t n = 0;
    for (; model[n] != NULL; n++)
        sets_full[n] = sets_part[n] = sets_resume[n] = model[n];
    sets_full[n] = "training.n_epochs=12";
    sets_part[n] = "training.n_epochs=5";
    sets_resume[n] = "training.n_epochs=12";
    sets_resume[n + 1] = "--resume=last";
    sets_resume[n + 2] = "output.force_reset=false";
    sets_full[n + 1] = sets_part[n + 1] = sets_resume[n + 3] = NULL;

    assert_int_equal(tu_train(&result, "full", sets_full, 120), 0);
    assert_int_equal(tu_train(&result, "part", sets_part, 120), 0);
    assert_int_equal(tu_train(&result, "part", sets_resume, 120), 0);
    tu_expect_in(result.out, "Resumed at step 35: Trained 12 epochs (84 steps)");

    struct st_file a, b;
    st_read(&a, run_path("full", "checkpoints/last-epoch=11.safetensors"));
    st_read(&b, run_path("part", "checkpoints/last-epoch=11.safetensors"));
    size_t na, nb;
    const unsigned char *da = st_data(&a, &na), *db = st_data(&b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(da, db, na);
    assert_string_equal(st_meta(&a, "tsrnn.global_step"), st_meta(&b, "tsrnn.global_step"));
    printf("# resumed after epoch 4: %zu bytes of weights and moments identical, CRC %s\n", na,
           st_meta(&a, "tsrnn.data_crc32c"));
    st_free(&a);
    st_free(&b);
    char *ma = tu_read(run_path("full", "metrics.csv")),
         *mb = tu_read(run_path("part", "metrics.csv"));
    assert_string_equal(ma, mb);
    free(ma);
    free(mb);

    /* The second event file holds the START that hides the first file's steps >= 35. */
    char *names = list_dir(run_path("part", "logs"));
    char *second = strchr(names, '\n') + 1;
    assert_true(*second != '\0');
    *strchr(second, '\n') = '\0';
    char path[2 * PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", run_path("part", "logs"), second);
    struct tfev_event *events;
    size_t count;
    char err[256];
    if (tfev_read(path, &events, &count, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(events[1].session_status, 1);
    assert_int_equal(events[1].step, 35);
    assert_int_equal(events[2].step, 41); /* epoch 5's val_loss; train_loss every 50 steps */
    tfev_free(events);
    free(names);

    /* Resumed once more with the same n_epochs: nothing left; it says so, trains no step,
     * and prints no losses it did not compute (it printed "train_loss 0" and "0 steps/s"). */
    char *before = tu_read(run_path("part", "metrics.csv"));
    assert_int_equal(tu_train(&result, "part", sets_resume, 120), 0);
    tu_expect_in(result.out, "Nothing left to train: the checkpoint ends at epoch 11 (step 84)");
    assert_null(strstr(result.out, "steps/s"));
    assert_null(strstr(result.out, "train_loss"));
    char *after = tu_read(run_path("part", "metrics.csv"));
    assert_string_equal(before, after);
    free(before);
    free(after);

    /* Resuming with other training settings goes on, with a warning per changed key. */
    const char *changed[] = { "model.model=LSTM",
                              "model.n_rnn_layers=2",
                              "model.dropout=0.2",
                              "model.hidden_dim=8",
                              "training.n_epochs=13",
                              "training.batch_size=8",
                              "--resume=last",
                              "output.force_reset=false",
                              "--quiet",
                              NULL };
    assert_int_equal(tu_train(&result, "part", changed, 120), 0);
    tu_expect_in(result.err, "warning: resuming with [training] batch_size = 8 (the checkpoint ");
    tu_expect_in(result.err, "was trained with batch_size = 16)");
    assert_null(strstr(result.err, "n_epochs"));
}

/* Interrupted with SIGINT at some step (exit 130), then resumed from the last checkpoint:
 * the same final weights as the uninterrupted run. */
static void test_interrupted_run_resumes_to_the_same_weights(void **state)
{
    (void)state;
    const char *full[] = { "training.n_epochs=1500", "--quiet", NULL };
    const char *resume[] = { "training.n_epochs=1500", "--quiet", "--resume=last",
                             "output.force_reset=false", NULL };
    assert_int_equal(tu_train(&result, "uninterrupted", full, 120), 0);
    /* The signal must land after the first epoch's checkpoint and before the end: on a slow
     * or busy machine (ASan, a parallel test) try later, on a fast one earlier. 1500 epochs
     * take about 0.3 s here with the checkpoints written behind the training, as 400 did when
     * the training waited for them. */
    static const double after_s[] = { 0.25, 0.6, 0.1, 1.5 };
    char *before = NULL;
    for (size_t k = 0; k < sizeof(after_s) / sizeof(after_s[0]) && before == NULL; k++) {
        tu_signal_next_run(SIGINT, after_s[k]);
        int code = tu_train(&result, "interrupted", full, 120);
        if (code == 130 && tsrnn_folder_holds(run_path("interrupted", "checkpoints"), "last-"))
            before = list_dir(run_path("interrupted", "checkpoints"));
        else
            assert_true(code == 130 || code == 0);
    }
    if (before == NULL)
        fail_msg("no SIGINT landed between the first checkpoint and the end of the run");
    printf("# interrupted with: %s", before);
    assert_int_equal(tu_train(&result, "interrupted", resume, 120), 0);
    struct st_file a, b;
    st_read(&a, run_path("uninterrupted", "checkpoints/last-epoch=1499.safetensors"));
    st_read(&b, run_path("interrupted", "checkpoints/last-epoch=1499.safetensors"));
    size_t na, nb;
    const unsigned char *da = st_data(&a, &na), *db = st_data(&b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(da, db, na);
    st_free(&a);
    st_free(&b);
    free(before);
}

/* SIGKILL while the trainer checkpoints every epoch: whatever moment it dies at, the newest
 * "last" checkpoint reads back whole (CRC included), and so does every other checkpoint
 * file; a resume cleans up any temporary file the kill left. */
static void test_sigkill_never_leaves_a_broken_checkpoint(void **state)
{
    (void)state;
    const char *sets[] = { "training.n_epochs=100000", "--quiet", NULL };
    const char *resume[] = { "training.n_epochs=100000",
                             "training.max_steps=1",
                             "--quiet",
                             "--resume=last",
                             "output.force_reset=false",
                             NULL };
    static const double after_s[] = { 0.15, 0.23, 0.31, 0.42, 0.57, 0.66 };
    for (size_t k = 0; k < sizeof(after_s) / sizeof(after_s[0]); k++) {
        tu_signal_next_run(SIGKILL, after_s[k]);
        char name[32];
        snprintf(name, sizeof(name), "killed%zu", k);
        tu_train(&result, name, sets, 60);
        assert_int_equal(result.signal, SIGKILL);
        char dir[PATH_MAX], path[2 * PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", run_path(name, "checkpoints"));
        if (tsrnn_checkpoint_locate(path, sizeof(path), dir, "last") != TSRNN_OK)
            continue; /* killed before the first epoch ended */
        struct tsrnn_checkpoint *ck = malloc(sizeof(*ck));
        assert_int_equal(tsrnn_checkpoint_read(ck, path), TSRNN_OK);
        int64_t epoch = ck->state.epoch;
        tsrnn_checkpoint_finish(ck);
        char *names = list_dir(dir);
        printf("# killed after %.2f s: newest last checkpoint epoch %lld, files: %s", after_s[k],
               (long long)epoch, names);
        for (char *save, *line = strtok_r(names, "\n", &save); line != NULL;
             line = strtok_r(NULL, "\n", &save)) {
            if (strstr(line, ".tmp.") != NULL)
                continue;
            snprintf(path, sizeof(path), "%s/%s", dir, line);
            if (tsrnn_checkpoint_read(ck, path) != TSRNN_OK)
                fail_msg("%s: %s", line, tsrnn_last_error());
            tsrnn_checkpoint_finish(ck);
        }
        free(names);
        free(ck);
        /* The resume starts from that checkpoint (max_steps 1 was reached before it: it only
         * restores, and tidies the folder). */
        assert_int_equal(tu_train(&result, name, resume, 60), 0);
        names = list_dir(dir);
        assert_null(strstr(names, ".tmp."));
        free(names);
    }
}

/* The checkpoint `which` ("last", "best") of a run folder, read back whole (CRC included). */
static struct tsrnn_checkpoint *read_located(const char *dir, const char *which)
{
    char path[2 * PATH_MAX];
    if (tsrnn_checkpoint_locate(path, sizeof(path), dir, which) != TSRNN_OK)
        fail_msg("%s: no %s checkpoint: %s", dir, which, tsrnn_last_error());
    struct tsrnn_checkpoint *ck = malloc(sizeof(*ck));
    assert_non_null(ck);
    if (tsrnn_checkpoint_read(ck, path) != TSRNN_OK)
        fail_msg("%s: %s", path, tsrnn_last_error());
    return ck;
}

/* A disk that fills up (here RLIMIT_FSIZE: a checkpoint cannot grow past 64 KiB) from epoch
 * 2 of a run resumed after epoch 1 and set to `epochs` (training.n_epochs=...): exit 1 naming
 * the file `failed` and the reason, after epoch `stopped` (metrics.csv's last epoch: the
 * epoch where the failure is reported is fixed by the epochs, not by the writer thread's
 * timing); the previous checkpoints stay as they were, byte for byte, and no temporary file
 * is left. This model (LSTM-64, 101 windows x 20 steps x 17,217 parameters per epoch) has a
 * write point every 2 epochs (src/checkpoint/writer.c): epochs 1, 3, 5, and the drain at the
 * end of training. */
static void check_full_disk(const char *name, const char *epochs, const char *failed, long stopped)
{
    const char *first[] = { "model.model=LSTM", "model.hidden_dim=64", "training.n_epochs=2",
                            "--quiet", NULL };
    const char *more[] = { "model.model=LSTM", "model.hidden_dim=64",      epochs, "--quiet",
                           "--resume=last",    "output.force_reset=false", NULL };
    assert_int_equal(tu_train(&result, name, first, 60), 0);
    char *before = snapshot(run_path(name, "checkpoints"));

    struct rlimit saved, limit;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    limit = saved;
    limit.rlim_cur = 64 * 1024;
    signal(SIGXFSZ, SIG_IGN); /* write() then fails with EFBIG instead of killing */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &limit), 0);
    int code = tu_train(&result, name, more, 60);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, SIG_DFL);

    assert_int_equal(code, 1);
    char expect[128];
    snprintf(expect, sizeof(expect), "/checkpoints/%s: ", failed);
    tu_expect_in(result.err, "cannot write ");
    tu_expect_in(result.err, expect);
    tu_expect_in(result.err, "File too large");
    static struct tu_metrics_row rows[1000];
    size_t n = tu_read_metrics(run_path(name, "metrics.csv"), rows, 1000);
    assert_true(n > 0);
    assert_int_equal(rows[n - 1].epoch, stopped);
    char *after = snapshot(run_path(name, "checkpoints"));
    assert_string_equal(after, before);
    struct tsrnn_checkpoint *last = read_located(run_path(name, "checkpoints"), "last");
    assert_int_equal(last->state.epoch, 1);
    tsrnn_checkpoint_finish(last);
    free(last);
    free(before);
    free(after);
}

/* Epochs 2 to 5 of 6: write point 3's checkpoint (epoch 3 improved; epoch 2, before it, is
 * not written) fails, and the next write point's hand-off, at epoch 5's end, reports it. */
static void test_full_disk_keeps_the_previous_checkpoint(void **state)
{
    (void)state;
    check_full_disk("full_disk", "training.n_epochs=6", "last-epoch=3.safetensors", 5);
}

/* Resuming from a checkpoint that is wrong in any way: exit 2, a message naming the file and
 * the fault, and the run folder exactly as it was. */
static void test_bad_checkpoints_are_refused(void **state)
{
    (void)state;
    const char *first[] = { "training.n_epochs=2", "--quiet", NULL };
    assert_int_equal(tu_train(&result, "bad", first, 60), 0);
    char good[PATH_MAX];
    snprintf(good, sizeof(good), "%s", only_file(run_path("bad", "checkpoints"), "last-"));
    size_t nbytes;
    unsigned char *bytes = read_bytes(good, &nbytes);
    char *before = snapshot(run_path("bad", ""));

    struct {
        const char *name;
        size_t keep_nbytes;  /* 0: all */
        long flip;           /* byte to change; -1 none; -2 header garbage */
        const char *message; /* expected in stderr */
    } cases[] = {
        { "truncated.safetensors", 1000, -1, "truncated.safetensors: header length " },
        { "header.safetensors", 0, -2, "header.safetensors: the header is not valid JSON" },
        { "crc.safetensors", 0, (long)nbytes - 3, "crc.safetensors: checksum mismatch" },
        { "text.safetensors", 0, -3, "text.safetensors: header length " },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unsigned char *copy = malloc(nbytes);
        memcpy(copy, bytes, nbytes);
        size_t size = cases[i].keep_nbytes ? cases[i].keep_nbytes : nbytes;
        if (cases[i].flip >= 0)
            copy[cases[i].flip] ^= 0x40;
        if (cases[i].flip == -2)
            memcpy(copy + 8, "{\"a\":[}", 7);
        if (cases[i].flip == -3) {
            size = 11;
            memcpy(copy, "not a model", 11);
        }
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", tu_run_dir(), cases[i].name);
        write_bytes(path, copy, size);
        char resume[PATH_MAX + 32];
        snprintf(resume, sizeof(resume), "training.resume=%s", path);
        const char *sets[] = { "training.n_epochs=4", resume, "--quiet", NULL };
        assert_int_equal(tu_train(&result, "bad", sets, 60), 2);
        tu_expect_in(result.err, cases[i].message);
        printf("# %s: %s", cases[i].name, result.err);
        char *after = snapshot(run_path("bad", ""));
        assert_string_equal(after, before);
        free(after);
        free(copy);
    }

    /* Another model's checkpoint (hidden_dim 20 against 21). */
    const char *other[] = { "model.hidden_dim=21", "--resume=last", "output.force_reset=false",
                            "--quiet", NULL };
    assert_int_equal(tu_train(&result, "bad", other, 60), 2);
    tu_expect_in(result.err, "the checkpoint's model is RNN, hidden_dim 20, n_rnn_layers 1");
    tu_expect_in(result.err, "this run's config describes RNN, hidden_dim 21");
    char *after = snapshot(run_path("bad", ""));
    assert_string_equal(after, before);
    free(after);
    free(before);
    free(bytes);
}

/* Writes `good` again at `path` with metadata `key` set to `value` (or, when `needle` is
 * not NULL, with `needle` in that value replaced by `value`; a needle ending in '[' takes the
 * rest of that JSON array with it), the metadata checksum made to
 * match (a crafted file) or left as it was (a damaged one). */
static void tamper(const char *good, const char *path, const char *key, const char *needle,
                   const char *value, bool fix_crc)
{
    struct tsrnn_safetensors st;
    assert_int_equal(tsrnn_safetensors_read(&st, good), TSRNN_OK);
    struct tsrnn_tensor_desc *t = calloc(st.tensor_count, sizeof(*t));
    struct tsrnn_metadata_entry *m = calloc(st.metadata_count, sizeof(*m));
    char replaced[16384], crc[16];
    for (size_t i = 0; i < st.tensor_count; i++) {
        t[i].name = st.tensors[i].name;
        t[i].dtype = st.tensors[i].dtype;
        t[i].rank = st.tensors[i].rank;
        memcpy(t[i].shape, st.tensors[i].shape, sizeof(t[i].shape));
        t[i].data = st.tensors[i].data;
    }
    size_t crc_entry = st.metadata_count;
    for (size_t i = 0; i < st.metadata_count; i++) {
        m[i] = st.metadata[i];
        if (strcmp(m[i].key, "tsrnn.metadata_crc32c") == 0)
            crc_entry = i;
        if (strcmp(m[i].key, key) != 0)
            continue;
        if (needle == NULL) {
            m[i].value = value;
            continue;
        }
        const char *at = strstr(m[i].value, needle), *rest;
        assert_non_null(at);
        rest = at + strlen(needle);
        if (rest[-1] == '[') /* a needle ending in '[' stands for the whole JSON array */
            rest = strchr(rest, ']') + 1;
        snprintf(replaced, sizeof(replaced), "%.*s%s%s", (int)(at - m[i].value), m[i].value, value,
                 rest);
        m[i].value = replaced;
    }
    assert_true(crc_entry < st.metadata_count);
    if (fix_crc) {
        snprintf(crc, sizeof(crc), "%08" PRIx32,
                 tsrnn_safetensors_metadata_crc(m, st.metadata_count));
        m[crc_entry].value = crc;
    }
    assert_int_equal(tsrnn_safetensors_write(path, t, st.tensor_count, m, st.metadata_count),
                     TSRNN_OK);
    free(t);
    free(m);
    tsrnn_safetensors_finish(&st);
}

/* Checkpoint metadata is not trusted: a flipped bit is damage (the metadata has its own
 * CRC), and a crafted file with a matching CRC is held to what a run can write. Resume,
 * tsrnn-predict and init_weights refuse the same files, with exit 2 and the same reason.
 * (Before: epoch = INT64_MAX overflowed and trained forever, a flipped scaler changed every
 * forecast, a scale of 1e-45 gave -inf forecasts with exit 0, init_weights took a file
 * whose data CRC was wrong, a component name holding an escape sequence reached the terminal
 * raw.) */
static void test_tampered_metadata_is_refused(void **state)
{
    (void)state;
    const char *first[] = { "training.n_epochs=2", "--quiet", NULL };
    assert_int_equal(tu_train(&result, "tamper", first, 60), 0);
    char good[PATH_MAX];
    snprintf(good, sizeof(good), "%s", only_file(run_path("tamper", "checkpoints"), "last-"));
    struct {
        const char *name, *key, *needle, *value;
        bool fix_crc;
        const char *message;
    } cases[] = {
        { "flip.safetensors", "tsrnn.scaler", "\"scale\":[0.00", "\"scale\":[0.01", false,
          "the metadata's CRC-32C is" },
        { "epoch.safetensors", "tsrnn.epoch", NULL, "9223372036854775807", true,
          "\"tsrnn.epoch\" = \"9223372036854775807\"; expected an integer from 0 to 100000000" },
        { "step.safetensors", "tsrnn.global_step", NULL, "9223372036854775807", true,
          "\"tsrnn.global_step\" = \"9223372036854775807\"; expected an integer from 0" },
        { "scale.safetensors", "tsrnn.scaler", "\"scale\":[", "\"scale\":[1e-45]", true,
          "\"tsrnn.scaler\": a bound, scale or offset is not what a fitted scaler holds" },
        /* a name that would drive the terminal where predict prints it (issue 39, point 5) */
        { "escape.safetensors", "tsrnn.series", "\"components\":[",
          "\"components\":[\"\\u001b]0;owned\\u0007\"]", true,
          "\"tsrnn.series\": a component name is not a short printable string" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[PATH_MAX], resume[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/%s", tu_run_dir(), cases[i].name);
        tamper(good, path, cases[i].key, cases[i].needle, cases[i].value, cases[i].fix_crc);
        snprintf(resume, sizeof(resume), "training.resume=%s", path);
        const char *sets[] = { "training.n_epochs=4", resume, "output.force_reset=false", "--quiet",
                               NULL };
        assert_int_equal(tu_train(&result, "tamper", sets, 60), 2);
        tu_expect_in(result.err, cases[i].message);
        const char *predict_args[] = { "--checkpoint", path, "--n", "3", NULL };
        assert_int_equal(predict(predict_args), 2);
        tu_expect_in(result.err, cases[i].message);
        printf("# %s: %s", cases[i].name, result.err);
    }
    /* init_weights: the same rule for a damaged tsrnn checkpoint (its data CRC wrong). */
    size_t nbytes;
    unsigned char *bytes = read_bytes(good, &nbytes);
    bytes[nbytes - 3] ^= 0x40;
    char damaged[PATH_MAX], weights[PATH_MAX + 32];
    snprintf(damaged, sizeof(damaged), "%s/damaged.safetensors", tu_run_dir());
    write_bytes(damaged, bytes, nbytes);
    free(bytes);
    snprintf(weights, sizeof(weights), "model.init_weights=%s", damaged);
    const char *init[] = { "training.n_epochs=1", weights, "--quiet", NULL };
    assert_int_equal(tu_train(&result, "tamper_init", init, 60), 2);
    tu_expect_in(result.err, "damaged.safetensors: checksum mismatch: the data's CRC-32C is");

    /* What a run interrupted in its first epoch writes: no best epoch yet (-1, NaN). It is a
     * checkpoint to resume from, not a damaged one (it was refused: "expected >= 0"). */
    char first_epoch[PATH_MAX], step1[PATH_MAX];
    snprintf(step1, sizeof(step1), "%s/first-step1.safetensors", tu_run_dir());
    snprintf(first_epoch, sizeof(first_epoch), "%s/first.safetensors", tu_run_dir());
    tamper(good, step1, "tsrnn.best_epoch", NULL, "-1", true);
    tamper(step1, first_epoch, "tsrnn.best_value", NULL, "nan", true);
    char resume_first[PATH_MAX + 32];
    snprintf(resume_first, sizeof(resume_first), "training.resume=%s", first_epoch);
    const char *sets_first[] = { "training.n_epochs=4", resume_first, "output.force_reset=false",
                                 "--quiet", NULL };
    assert_int_equal(tu_train(&result, "tamper", sets_first, 60), 0);
}

/* Writes `text` with every `needle` replaced by `value` to `path`. */
static void write_replaced(const char *path, const char *text, const char *needle,
                           const char *value)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (const char *at; (at = strstr(text, needle)) != NULL; text = at + strlen(needle))
        fprintf(f, "%.*s%s", (int)(at - text), text, value);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* A checkpoint names the data it was trained on, and tsrnn-predict reads that file only when
 * the run folder's config.ini names it too, or when it lies inside the run folder; a file it
 * reads that way is never echoed (issue 39, point 3: a crafted checkpoint naming a secret file
 * made tsrnn-predict print its first line). */
static void test_predict_reads_only_the_data_the_run_names(void **state)
{
    (void)state;
    const char *first[] = { "training.n_epochs=2", "--quiet", NULL };
    assert_int_equal(tu_train(&result, "stored", first, 60), 0);
    char good[PATH_MAX], run[PATH_MAX], secret[PATH_MAX], data[PATH_MAX];
    snprintf(good, sizeof(good), "%s", only_file(run_path("stored", "checkpoints"), "last-"));
    snprintf(run, sizeof(run), "%s", run_path("stored", ""));
    snprintf(secret, sizeof(secret), "%s",
             tu_write(tu_run_dir(), "secret.txt", "SECRET root:$6$salt$hash:19000:0:99999:7:::\n"));
    snprintf(data, sizeof(data), "%s", tu_source("examples/data/air_passengers.csv"));

    /* a checkpoint alone, naming a file outside its folder: not opened */
    char *loose = tu_mkdtemp(), crafted[PATH_MAX];
    snprintf(crafted, sizeof(crafted), "%s/crafted.safetensors", loose);
    tamper(good, crafted, "tsrnn.config", data, secret, true);
    const char *alone[] = { "--checkpoint", crafted, "--n", "3", NULL };
    assert_int_equal(predict(alone), 2);
    tu_expect_in(result.err, "the checkpoint names its training data");
    tu_expect_in(result.err, "does not lie inside the run folder");
    tu_expect_in(result.err, "--series CSV");
    assert_null(strstr(result.err, "SECRET"));
    assert_null(strstr(result.out, "SECRET"));
    printf("# alone: %s", result.err);

    /* with --run DIR, whose config.ini names the real data: not opened either */
    const char *with_run[] = { "--run", run, "--checkpoint", crafted, "--n", "3", NULL };
    assert_int_equal(predict(with_run), 2);
    tu_expect_in(result.err, "config.ini");
    assert_null(strstr(result.err, "SECRET"));

    /* a whole crafted run folder (config.ini naming the file too): read, never echoed */
    char foreign[PATH_MAX + 32], ini[PATH_MAX + 64], ck_path[PATH_MAX + 96];
    snprintf(foreign, sizeof(foreign), "%s/foreign", loose);
    snprintf(ck_path, sizeof(ck_path), "%s/checkpoints", foreign);
    assert_int_equal(tsrnn_make_dirs(ck_path), TSRNN_OK);
    snprintf(ck_path, sizeof(ck_path), "%s/checkpoints/last-epoch=1.safetensors", foreign);
    tamper(good, ck_path, "tsrnn.config", data, secret, true);
    char *config = tu_read(run_path("stored", "config.ini"));
    assert_non_null(config);
    snprintf(ini, sizeof(ini), "%s/config.ini", foreign);
    write_replaced(ini, config, data, secret);
    free(config);
    const char *whole[] = { "--run", foreign, "--checkpoint", "last", "--n", "3", NULL };
    assert_int_equal(predict(whole), 2);
    tu_expect_in(result.err, "cannot be read as the series the model was trained on");
    tu_expect_in(result.err, "what it holds is not shown");
    assert_null(strstr(result.err, "SECRET"));
    assert_null(strstr(result.out, "SECRET"));
    printf("# whole folder: %s", result.err);

    /* the rule's other half: data inside the checkpoint's folder is read */
    char inside[PATH_MAX + 32], copy[PATH_MAX + 32];
    snprintf(copy, sizeof(copy), "%s/air.csv", loose);
    char *text = tu_read(data);
    assert_non_null(text);
    tu_write(loose, "air.csv", text);
    free(text);
    snprintf(inside, sizeof(inside), "%s/inside.safetensors", loose);
    tamper(good, inside, "tsrnn.config", data, copy, true);
    const char *ok[] = { "--checkpoint", inside, "--n", "3", NULL };
    assert_int_equal(predict(ok), 0);
    tu_expect_in(result.out, "Month,#Passengers\n1959-02,");
    tu_rmtree(loose);
    free(loose);
}

/* One rule for links at the names tsrnn writes (include/tsrnn/atomic_file.h): a link of this
 * user's (or root's) is written through, metrics.csv's included (it was refused, while the
 * atomic files followed any link); another user's is refused, so that whoever else can write
 * a folder cannot make tsrnn write elsewhere; and a run folder another user owns is named in
 * a warning. The other-user cases need root (to give a link away) and say so otherwise. */
static void test_links_follow_one_rule(void **state)
{
    (void)state;
    /* this user's link at metrics.csv: written through */
    char run[PATH_MAX], elsewhere[PATH_MAX], link[PATH_MAX + 16];
    snprintf(run, sizeof(run), "%s", run_path("linked", ""));
    assert_int_equal(tsrnn_make_dirs(run), TSRNN_OK);
    snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere.csv", tu_run_dir());
    snprintf(link, sizeof(link), "%s/metrics.csv", run);
    assert_int_equal(symlink(elsewhere, link), 0);
    const char *sets[] = { "training.n_epochs=2", "output.force_reset=false", "--quiet", NULL };
    assert_int_equal(tu_train(&result, "linked", sets, 60), 0);
    struct tu_metrics_row rows[64];
    assert_int_equal(tu_read_metrics(elsewhere, rows, 64), 16); /* 2 x (7 steps + 1 val) */
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));

    if (geteuid() != 0) {
        printf("# not root: no link of another user can be made; that half skipped\n");
        return;
    }
    /* another user's link where tsrnn-predict writes: refused, its target untouched */
    char victim[PATH_MAX], planted[PATH_MAX + 16];
    snprintf(victim, sizeof(victim), "%s", tu_write(tu_run_dir(), "victim.txt", "precious\n"));
    snprintf(planted, sizeof(planted), "%s/planted.csv", tu_run_dir());
    assert_int_equal(symlink(victim, planted), 0);
    assert_int_equal(lchown(planted, 12345, 12345), 0);
    const char *args[] = { "--run", run_path("Air", ""), "--n", "2", "--out", planted, NULL };
    assert_int_equal(predict(args), 1);
    tu_expect_in(result.err, "is a symbolic link of another user (uid 12345)");
    char *text = tu_read(victim);
    assert_string_equal(text, "precious\n");
    free(text);
    /* and at metrics.csv, on resuming a run of its own */
    const char *again[] = { "training.n_epochs=2", "output.force_reset=true", "--quiet", NULL };
    assert_int_equal(tu_train(&result, "linked", again, 60), 0);
    assert_int_equal(unlink(link), 0);
    assert_int_equal(symlink(victim, link), 0);
    assert_int_equal(lchown(link, 12345, 12345), 0);
    const char *resume[] = { "training.n_epochs=3", "output.force_reset=false", "--resume=last",
                             "--quiet", NULL };
    assert_int_equal(tu_train(&result, "linked", resume, 60), 1);
    tu_expect_in(result.err, "metrics.csv is a symbolic link of another user (uid 12345)");
    text = tu_read(victim);
    assert_string_equal(text, "precious\n");
    free(text);
    /* a run folder of another user's: said */
    assert_int_equal(unlink(link), 0);
    assert_int_equal(chown(run, 12345, 12345), 0);
    const char *owned[] = { "training.n_epochs=1",
                            "output.force_reset=false",
                            "--resume=last",
                            "training.n_epochs=4",
                            "--quiet",
                            NULL };
    assert_int_equal(tu_train(&result, "linked", owned, 60), 0);
    tu_expect_in(result.err, "warning: the run folder ");
    tu_expect_in(result.err, "belongs to another user (uid 12345)");
}

/* Checkpoint names are read as tsrnn writes them: an epoch past int64 (undefined behaviour in
 * sscanf, and that file was "newest"), a sign, a space or a leading zero make a name that is
 * not a checkpoint's. */
static void test_checkpoint_names_are_read_strictly(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), path[PATH_MAX];
    static const char *const decoys[] = {
        "last-epoch=99999999999999999999999.safetensors",
        "last-epoch=9223372036854775808.safetensors",
        "last-epoch=+7.safetensors",
        "last-epoch= 8.safetensors",
        "last-epoch=009.safetensors",
        "last-epoch=100000001.safetensors",
        "last-epoch=5x.safetensors",
    };
    tu_write(dir, "last-epoch=3.safetensors", "");
    for (size_t i = 0; i < sizeof(decoys) / sizeof(decoys[0]); i++)
        tu_write(dir, decoys[i], "");
    assert_int_equal(tsrnn_checkpoint_locate(path, sizeof(path), dir, "last"), TSRNN_OK);
    tu_expect_in(path, "/last-epoch=3.safetensors");
    tu_write(dir, "last-epoch=100000000.safetensors", ""); /* the largest epoch a run has */
    assert_int_equal(tsrnn_checkpoint_locate(path, sizeof(path), dir, "last"), TSRNN_OK);
    tu_expect_in(path, "/last-epoch=100000000.safetensors");
    tu_rmtree(dir);
    free(dir);
}

/* A run killed between renaming last-epoch=N into place and linking best-epoch=N to it
 * (epoch N the best so far) leaves last-epoch=N, whose metadata says it is the best, beside
 * the older best-epoch=M. That state, made here by hand: tsrnn-predict's default takes the
 * true best (last-epoch=N), and --resume last gives it its best-epoch=N name back (the same
 * file) and drops the older one. */
static void test_best_checkpoint_survives_a_crash_between_its_names(void **state)
{
    (void)state;
    const char *two[] = { "training.n_epochs=2", "--quiet", NULL };
    const char *three[] = { "training.n_epochs=3", "--quiet", "--resume=last",
                            "output.force_reset=false", NULL };
    char dir[PATH_MAX], older[2 * PATH_MAX], run[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", run_path("crash", "checkpoints"));
    snprintf(run, sizeof(run), "%s", run_path("crash", ""));
    assert_int_equal(tu_train(&result, "crash", two, 60), 0);
    snprintf(older, sizeof(older), "%s", only_file(dir, "best-"));
    size_t nbytes;
    unsigned char *older_bytes = read_bytes(older, &nbytes);
    assert_int_equal(tu_train(&result, "crash", three, 60), 0);
    char *listing = list_dir(dir);
    printf("# after 3 epochs: %s", listing);
    assert_non_null(strstr(listing, "best-epoch=2-")); /* the premise: epoch 2 is the best */
    free(listing);

    /* The crash: best-epoch=2 never linked, best-epoch=1 not yet pruned. */
    assert_int_equal(unlink(only_file(dir, "best-")), 0);
    write_bytes(older, older_bytes, nbytes);
    const char *args[] = { "--run", run, "--n", "3", NULL };
    assert_int_equal(predict(args), 0);
    tu_expect_in(result.err, "last-epoch=2.safetensors (RNN, epoch 2");

    const char *again[] = { "training.n_epochs=3", "--resume=last", "output.force_reset=false",
                            NULL };
    assert_int_equal(tu_train(&result, "crash", again, 60), 0);
    tu_expect_in(result.err, "best-epoch=2-val_loss=");
    listing = list_dir(dir);
    printf("# resumed: %s", listing);
    struct stat best, last;
    assert_int_equal(stat(only_file(dir, "best-"), &best), 0);
    assert_non_null(strstr(only_file(dir, "best-"), "best-epoch=2-val_loss=0."));
    assert_int_equal(stat(only_file(dir, "last-"), &last), 0);
    assert_true(best.st_ino == last.st_ino);
    assert_int_equal(access(older, F_OK), -1);
    free(listing);
    free(older_bytes);
}

/* An earlier run's checkpoints block a new run unless it resumes or resets (Darts'
 * force_reset); force_reset = true deletes the folder first. */
static void test_existing_run_needs_resume_or_reset(void **state)
{
    (void)state;
    const char *first[] = { "training.n_epochs=1", "--quiet", NULL };
    const char *again[] = { "training.n_epochs=1", "output.force_reset=false", "--quiet", NULL };
    assert_int_equal(tu_train(&result, "again", first, 60), 0);
    tu_write(run_path("again", ""), "marker.txt", "x");
    char *before = snapshot(run_path("again", ""));
    assert_int_equal(tu_train(&result, "again", again, 60), 2);
    tu_expect_in(result.err, "already holds the checkpoints or TensorBoard logs of an earlier run");
    tu_expect_in(result.err, "--resume last");
    tu_expect_in(result.err, "force_reset = true");
    char *after = snapshot(run_path("again", ""));
    assert_string_equal(after, before);
    assert_int_equal(tu_train(&result, "again", first, 60), 0); /* the example has force_reset */
    assert_int_equal(access(run_path("again", "marker.txt"), F_OK), -1);
    /* the earlier folder, moved aside and removed beside the training, is gone too */
    assert_int_equal(access(run_path(".again.old", ""), F_OK), -1);
    const char *both[] = { "--resume=last", "--quiet", NULL };
    assert_int_equal(tu_train(&result, "again", both, 60), 2);
    tu_expect_in(result.err, "force_reset = true");
    free(before);
    free(after);
}

/* config.ini is written beside the training (src/train/train.c, "beside the training"): when
 * it cannot be, the run stops with the message and exit status of the synchronous write, long
 * before its 300 epochs (the metrics of at most a few dozen), and tells of no training. */
static void test_failure_beside_the_training_stops_the_run(void **state)
{
    (void)state;
    const char *sets[] = { "output.force_reset=false", "--quiet", NULL };
    assert_int_equal(tsrnn_make_dirs(run_path("beside", "config.ini")), TSRNN_OK);
    assert_int_equal(tu_train(&result, "beside", sets, 60), 1);
    tu_expect_in(result.err, "tsrnn-worker: error: cannot write ");
    tu_expect_in(result.err, "beside/config.ini: it is a folder; give a file name");
    assert_null(strstr(result.out, "Trained"));
    char *metrics = tu_read(run_path("beside", "metrics.csv"));
    assert_non_null(metrics);
    size_t rows = 0;
    for (const char *p = metrics; (p = strchr(p, '\n')) != NULL; p++)
        rows++;
    assert_true(rows >= 1 && rows < 2100 / 2);
    free(metrics);
    assert_int_equal(access(run_path("beside", "forecast.png"), F_OK), -1);
}

/* A machine where cairo cannot draw (a libcairo.so.2 that is not cairo, first in
 * LD_LIBRARY_PATH, as a prebuilt program meets a machine without cairo): the default picture
 * is skipped with one warning and the run succeeds with forecast.csv; [forecast] plot = true
 * written in the config is refused before training (exit 2, no run folder); tsrnn-predict
 * --plot is refused, its backtest picture skipped with a warning. */
static void test_picture_without_cairo(void **state)
{
    (void)state;
    if (!tsrnn_plot_available())
        skip(); /* a build without cairo: the same rule, tested where cairo is built */
    assert_int_equal(setenv("LD_LIBRARY_PATH", tu_env("TSRNN_STUB_DIR"), 1), 0);
    const char *sets[] = { "training.n_epochs=2", "--progress=none", NULL };
    int code = tu_train(&result, "nocairo", sets, 60);
    unsetenv("LD_LIBRARY_PATH");
    assert_int_equal(code, 0);
    tu_expect_in(result.err, "warning: forecast.png is not drawn: ");
    tu_expect_in(result.err, "libcairo.so.2 (");
    tu_expect_in(result.err, "[forecast] plot = false silences this");
    /* once */
    assert_null(strstr(strstr(result.err, "warning: forecast.png") + 1, "warning: forecast.png"));
    assert_int_equal(access(run_path("nocairo", "forecast.csv"), F_OK), 0);
    assert_int_equal(access(run_path("nocairo", "forecast.png"), F_OK), -1);
    assert_null(strstr(result.out, "and forecast.png"));

    assert_int_equal(setenv("LD_LIBRARY_PATH", tu_env("TSRNN_STUB_DIR"), 1), 0);
    const char *asked[] = { "training.n_epochs=2", "forecast.plot=true", "--progress=none", NULL };
    code = tu_train(&result, "nocairo_asked", asked, 60);
    unsetenv("LD_LIBRARY_PATH");
    assert_int_equal(code, 2);
    tu_expect_in(result.err, "--set forecast.plot=true: [forecast] plot = true, but the picture "
                             "cannot be drawn "
                             "here: libcairo.so.2 (");
    tu_expect_in(result.err, ") has no cairo_arc: not the library of the build; accepted: plot = "
                             "false");
    assert_int_equal(access(run_path("nocairo_asked", ""), F_OK), -1);

    const char *plot_args[] = { "--run",  run_path("nocairo", ""),      "--n", "3",
                                "--plot", run_path("nocairo", "p.png"), NULL };
    assert_int_equal(setenv("LD_LIBRARY_PATH", tu_env("TSRNN_STUB_DIR"), 1), 0);
    code = predict(plot_args);
    unsetenv("LD_LIBRARY_PATH");
    assert_int_equal(code, 2);
    tu_expect_in(result.err, "--plot ");
    tu_expect_in(result.err, "p.png: the picture cannot be drawn here: ");
    assert_int_equal(access(run_path("nocairo", "p.png"), F_OK), -1);
}

/* --- checkpoints written behind the training (src/checkpoint/writer.c) ----------------- */

/* Fails unless folders `a` and `b` hold the same names with the same bytes. */
static void expect_same_files(const char *a, const char *b)
{
    char *names_a = list_dir(a), *names_b = list_dir(b);
    assert_string_equal(names_a, names_b);
    for (char *save, *line = strtok_r(names_a, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char path_a[2 * PATH_MAX], path_b[2 * PATH_MAX];
        snprintf(path_a, sizeof(path_a), "%s/%s", a, line);
        snprintf(path_b, sizeof(path_b), "%s/%s", b, line);
        size_t na, nb;
        unsigned char *bytes_a = read_bytes(path_a, &na), *bytes_b = read_bytes(path_b, &nb);
        assert_int_equal(na, nb);
        assert_memory_equal(bytes_a, bytes_b, na);
        free(bytes_a);
        free(bytes_b);
    }
    free(names_a);
    free(names_b);
}

/* The writer writes at its write points only (the example: every 52 epochs, and the last
 * one), yet after the run the folder holds what writing every epoch synchronously leaves
 * (TSRNN_CHECKPOINT_SYNC=1), byte for byte: the last epoch and the best one, 245 of the 300
 * (val_loss 0.01491, the epoch Darts' own run picks: tests/fixtures/darts_rnn_42_metrics.csv).
 * The same run folder both times, so that the config inside is the same text. */
static void test_checkpoint_writer_leaves_the_synchronous_files(void **state)
{
    (void)state;
    const char *sets[] = { "--quiet", NULL };
    char kept[PATH_MAX];
    snprintf(kept, sizeof(kept), "%s/writer-checkpoints", tu_run_dir());
    assert_int_equal(tu_train(&result, "writer", sets, 120), 0);
    assert_int_equal(rename(run_path("writer", "checkpoints"), kept), 0);
    assert_int_equal(setenv("TSRNN_CHECKPOINT_SYNC", "1", 1), 0);
    int code = tu_train(&result, "writer", sets, 120);
    assert_int_equal(unsetenv("TSRNN_CHECKPOINT_SYNC"), 0);
    assert_int_equal(code, 0);
    char *names = list_dir(kept);
    assert_string_equal(names, "best-epoch=245-val_loss=0.0149.safetensors\n"
                               "last-epoch=299.safetensors\n");
    free(names);
    expect_same_files(kept, run_path("writer", "checkpoints"));
}

/* SIGKILL at pseudo-random moments within 0.2 s, while many epochs still improve (a kill
 * before the first epoch's checkpoint moves the window 0.1 s later, so that a slow or loaded
 * machine, ASan's build, still lands kills after it): the
 * newest last checkpoint is whole, and a write point's (the example writes every 52 epochs,
 * src/checkpoint/writer.c: epochs 51, 103, ...) or the improving epoch written just before
 * one; the best checkpoint is the one it names (tsrnn.best_epoch), whole too: an improving
 * epoch that a later one followed before the write point still got its best-... file before
 * that later one was written. */
static void test_sigkill_keeps_the_last_and_the_best(void **state)
{
    (void)state;
    const char *sets[] = { "training.n_epochs=100000", "--quiet", NULL };
    uint32_t lcg = 20261204u;
    int landed = 0;
    double shift_s = 0;
    for (int k = 0; k < 40 && landed < 10; k++) {
        lcg = lcg * 1664525u + 1013904223u;
        double after_s = shift_s + 0.02 + 0.18 * (double)(lcg >> 8) / (double)(1u << 24);
        tu_signal_next_run(SIGKILL, after_s);
        tu_train(&result, "killed_best", sets, 60);
        assert_int_equal(result.signal, SIGKILL);
        char dir[PATH_MAX], path[2 * PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", run_path("killed_best", "checkpoints"));
        if (tsrnn_checkpoint_locate(path, sizeof(path), dir, "last") != TSRNN_OK) {
            shift_s += 0.1; /* killed before the first epoch ended: later next time */
            continue;
        }
        tsrnn_error_clear();
        struct tsrnn_checkpoint *last = read_located(dir, "last");
        struct tsrnn_checkpoint *best = read_located(dir, "best");
        printf("# killed after %.3f s: last epoch %lld names best epoch %lld; best file epoch "
               "%lld\n",
               after_s, (long long)last->state.epoch, (long long)last->state.best_epoch,
               (long long)best->state.epoch);
        assert_true((last->state.epoch + 1) % 52 == 0 ||
                    last->state.epoch == last->state.best_epoch);
        assert_int_equal(best->state.epoch, last->state.best_epoch);
        assert_int_equal(best->state.best_epoch, best->state.epoch);
        assert_true(best->state.best_value == last->state.best_value);
        tsrnn_checkpoint_finish(last);
        tsrnn_checkpoint_finish(best);
        free(last);
        free(best);
        landed++;
    }
    if (landed == 0)
        fail_msg("no SIGKILL landed after the first checkpoint (the window moved to %.1f s)",
                 shift_s);
}

/* SIGTERM mid-run: the checkpoint of every finished step is on disk before the process ends
 * (exit 130): its global step is the count the message gives, and the message names it. */
static void test_sigterm_leaves_the_checkpoint_of_every_step(void **state)
{
    (void)state;
    const char *sets[] = { "training.n_epochs=100000", "--quiet", NULL };
    static const double after_s[] = { 0.2, 0.45 };
    for (size_t k = 0; k < sizeof(after_s) / sizeof(after_s[0]); k++) {
        tu_signal_next_run(SIGTERM, after_s[k]);
        assert_int_equal(tu_train(&result, "terminated", sets, 60), 130);
        const char *holds = strstr(result.err, "metrics.csv holds the ");
        assert_non_null(holds);
        long long steps = strtoll(holds + strlen("metrics.csv holds the "), NULL, 10);
        struct tsrnn_checkpoint *last = read_located(run_path("terminated", "checkpoints"), "last");
        printf("# SIGTERM after %.2f s: %lld steps; last checkpoint epoch %lld, %lld batches%s\n",
               after_s[k], steps, (long long)last->state.epoch, (long long)last->state.batches_done,
               last->state.epoch_complete ? "" : " (mid-epoch)");
        assert_int_equal(last->state.global_step, steps);
        tu_expect_in(result.err, strrchr(last->path, '/') + 1);
        tsrnn_checkpoint_finish(last);
        free(last);
    }
}

/* Epoch 2 of 3, the last, not a write point: the drain at the end of training writes it and
 * reports the failure, with the same message and exit code. */
static void test_full_disk_at_the_last_epoch(void **state)
{
    (void)state;
    check_full_disk("full_last", "training.n_epochs=3", "last-epoch=2.safetensors", 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_folder_and_checkpoints),
        cmocka_unit_test(test_tensorboard_scalars_match_metrics),
        cmocka_unit_test(test_tensorboard_every_step),
        cmocka_unit_test(test_predict_reproduces_training_forecast),
        cmocka_unit_test(test_predict_writes_devices_in_place),
        cmocka_unit_test(test_predict_after_another_series),
        cmocka_unit_test(test_predict_refuses_bad_arguments),
        cmocka_unit_test(test_predict_checks_the_dates_first),
        cmocka_unit_test(test_predict_continues_the_frequency),
        cmocka_unit_test(test_resume_is_bit_identical),
        cmocka_unit_test(test_interrupted_run_resumes_to_the_same_weights),
        cmocka_unit_test(test_sigkill_never_leaves_a_broken_checkpoint),
        cmocka_unit_test(test_full_disk_keeps_the_previous_checkpoint),
        cmocka_unit_test(test_bad_checkpoints_are_refused),
        cmocka_unit_test(test_tampered_metadata_is_refused),
        cmocka_unit_test(test_predict_reads_only_the_data_the_run_names),
        cmocka_unit_test(test_checkpoint_names_are_read_strictly),
        cmocka_unit_test(test_links_follow_one_rule),

        cmocka_unit_test(test_best_checkpoint_survives_a_crash_between_its_names),
        cmocka_unit_test(test_existing_run_needs_resume_or_reset),
        cmocka_unit_test(test_failure_beside_the_training_stops_the_run),
        cmocka_unit_test(test_picture_without_cairo),
        cmocka_unit_test(test_checkpoint_writer_leaves_the_synchronous_files),
        cmocka_unit_test(test_sigkill_keeps_the_last_and_the_best),
        cmocka_unit_test(test_sigterm_leaves_the_checkpoint_of_every_step),
        cmocka_unit_test(test_full_disk_at_the_last_epoch),
    };
    return cmocka_run_group_tests(tests, group_setup, tu_teardown_run_dir);
}
