/* Configuration: defaults, paths, overrides, syntax, and the resolved-config round trip. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/config.h"
#include "tsrnn/data.h"

struct fixture {
    char *dir;
    struct tsrnn_config *cfg;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->dir = tu_mkdtemp();
    f->cfg = malloc(sizeof(*f->cfg));
    tu_write(f->dir, "s.csv", "t,v\n1,1\n2,2\n3,3\n");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    tu_rmtree(f->dir);
    free(f->dir);
    free(f->cfg);
    free(f);
    return 0;
}

/* The file and --set arguments checked as tsrnn-worker checks them before it reads anything:
 * the config's own checks, then data's ([data] freq, the data files). */
static enum tsrnn_status load(struct fixture *f, const char *text, const char *const *sets,
                              size_t set_count)
{
    char ini[PATH_MAX];
    snprintf(ini, sizeof(ini), "%s", tu_write(f->dir, "c.ini", text));
    TSRNN_TRY(tsrnn_config_load(f->cfg, ini, sets, set_count));
    return tsrnn_data_check_config(f->cfg);
}

static void test_defaults_are_darts(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(load(f, "[data]\npath = s.csv\n", NULL, 0), TSRNN_OK);
    const struct tsrnn_config *c = f->cfg;
    assert_int_equal(c->model, TSRNN_MODEL_RNN);
    assert_int_equal(c->hidden_dim, 25);
    assert_int_equal(c->n_rnn_layers, 1);
    assert_true(c->dropout == 0.0);
    assert_int_equal(c->training_length, 24);
    assert_int_equal(c->batch_size, 32);
    assert_int_equal(c->n_epochs, 100);
    assert_true(c->lr == 1e-3);
    assert_true(c->shuffle);
    assert_int_equal(c->random_state, 0);
    assert_int_equal(c->scaler, TSRNN_SCALER_MINMAX);
    assert_int_equal(c->num_threads, 1);
    assert_int_equal(c->accelerator, TSRNN_ACCELERATOR_AUTO);
    assert_string_equal(c->devices, "auto");
    assert_false(c->force_reset);
    assert_false(c->save_checkpoints);
    assert_false(c->log_tensorboard);
    assert_int_equal(c->forecast_n, 0);
    assert_int_equal(c->value_col_count, 0);
    /* TimeSeries.from_csv(freq=None, fill_missing_dates=False), no MissingValuesFiller */
    assert_string_equal(c->freq, "");
    assert_false(c->fill_missing_dates);
    assert_int_equal(c->fill_missing_values, TSRNN_FILL_MISSING_NONE);
    size_t n = strlen(c->work_dir);
    assert_true(n > 11 && strcmp(c->work_dir + n - 11, "/darts_logs") == 0);
    assert_non_null(strstr(c->model_name, "_torch_model_run_"));
    assert_string_equal(tsrnn_config_origin(c, "model", "hidden_dim"), "default");
    assert_null(tsrnn_config_origin(c, "model", "nope"));
}

static void test_relative_paths_follow_the_ini(void **state)
{
    struct fixture *f = *state;
    char sub[PATH_MAX], ini[PATH_MAX], real_dir[PATH_MAX], expected[PATH_MAX + 32];
    snprintf(sub, sizeof(sub), "%s/sub", f->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(ini, sizeof(ini), "%s",
             tu_write(sub, "c.ini",
                      "[data]\npath = ../s.csv\n[output]\nwork_dir = "
                      "runs\n"));
    assert_int_equal(tsrnn_config_load(f->cfg, ini, NULL, 0), TSRNN_OK);
    assert_non_null(realpath(sub, real_dir));
    snprintf(expected, sizeof(expected), "%s/../s.csv", real_dir);
    assert_string_equal(f->cfg->data_path, expected);
    snprintf(expected, sizeof(expected), "%s/runs", real_dir);
    assert_string_equal(f->cfg->work_dir, expected);
    /* absolute paths stay as they are */
    snprintf(expected, sizeof(expected), "[data]\npath = %s/s.csv\n", f->dir);
    assert_int_equal(load(f, expected, NULL, 0), TSRNN_OK);
    snprintf(expected, sizeof(expected), "%s/s.csv", f->dir);
    assert_string_equal(f->cfg->data_path, expected);
}

/* [training] resume: last / best kept as words (any case), a path resolved like the other
 * paths and required to be readable; resume = last/best with force_reset = true is refused. */
static void test_resume_values(void **state)
{
    struct fixture *f = *state;
    char text[PATH_MAX + 128], expected[PATH_MAX + 32], real_dir[PATH_MAX];
    assert_int_equal(load(f, "[data]\npath = s.csv\n[training]\nresume = LAST\n", NULL, 0),
                     TSRNN_OK);
    assert_string_equal(f->cfg->resume, "last");
    assert_int_equal(load(f, "[data]\npath = s.csv\n[training]\nresume = best\n", NULL, 0),
                     TSRNN_OK);
    assert_string_equal(f->cfg->resume, "best");
    assert_int_equal(load(f, "[data]\npath = s.csv\n[training]\nresume = s.csv\n", NULL, 0),
                     TSRNN_OK);
    assert_non_null(realpath(f->dir, real_dir));
    snprintf(expected, sizeof(expected), "%s/s.csv", real_dir);
    assert_string_equal(f->cfg->resume, expected);

    assert_int_equal(
        load(f, "[data]\npath = s.csv\n[training]\nresume = nope.safetensors\n", NULL, 0),
        TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "c.ini:4: [training] resume: cannot open checkpoint");
    snprintf(text, sizeof(text),
             "[data]\npath = s.csv\n[training]\nresume = last\n[output]\nforce_reset = true\n");
    assert_int_equal(load(f, text, NULL, 0), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "c.ini:4: [training] resume = last, but [output] "
                                     "force_reset = true (");
    tu_expect_in(tsrnn_last_error(), "c.ini:6) deletes that checkpoint; accepted: one of them");
}

static void test_set_wins_over_file_in_order(void **state)
{
    struct fixture *f = *state;
    const char *sets[] = { "model.hidden_dim=32", "training.lr = 0.01", "model.hidden_dim=48",
                           "Model.MODEL=lstm" };
    assert_int_equal(load(f, "[data]\npath = s.csv\n[model]\nhidden_dim = 20\n", sets, 4),
                     TSRNN_OK);
    assert_int_equal(f->cfg->hidden_dim, 48);
    assert_true(f->cfg->lr == 0.01);
    assert_int_equal(f->cfg->model, TSRNN_MODEL_LSTM);
    assert_string_equal(tsrnn_config_origin(f->cfg, "model", "hidden_dim"),
                        "--set model.hidden_dim=48");
    /* without --set, the file's value and its line */
    assert_int_equal(load(f, "[data]\npath = s.csv\n[model]\nhidden_dim = 20\n", NULL, 0),
                     TSRNN_OK);
    assert_int_equal(f->cfg->hidden_dim, 20);
    const char *origin = tsrnn_config_origin(f->cfg, "model", "hidden_dim");
    assert_non_null(strstr(origin, "c.ini:4"));
}

static void test_values_and_syntax(void **state)
{
    struct fixture *f = *state;
    /* a long comment line must not shift later line numbers (libinih's 200-byte default) */
    char text[2048];
    char comment[600];
    memset(comment, 'x', sizeof(comment) - 1);
    comment[sizeof(comment) - 1] = '\0';
    snprintf(text, sizeof(text),
             "# %s\n[data]\npath = s.csv\nvalue_cols = v , w,x y\ntime_col = t # not a "
             "comment\n\n  [model]\n  hidden_dim = 0\n",
             comment);
    assert_int_equal(load(f, text, NULL, 0), TSRNN_ERR_USAGE);
    assert_non_null(strstr(tsrnn_last_error(), "c.ini:8: [model] hidden_dim = '0'"));

    assert_int_equal(load(f,
                          "[data]\npath = s.csv\nvalue_cols = v , w,x y\ntime_col = t # not a "
                          "comment\n[training]\nshuffle = off\n; comment\nrandom_state = "
                          "4294967295\n",
                          NULL, 0),
                     TSRNN_OK);
    assert_int_equal(f->cfg->value_col_count, 3);
    assert_string_equal(f->cfg->value_cols[0], "v");
    assert_string_equal(f->cfg->value_cols[1], "w");
    assert_string_equal(f->cfg->value_cols[2], "x y");
    assert_string_equal(f->cfg->time_col, "t # not a comment");
    assert_false(f->cfg->shuffle);
    assert_int_equal(f->cfg->random_state, UINT64_C(4294967295));

    const char *bad_sets[][2] = {
        { "training.random_state=4294967296", "out of range" },
        { "trainer.devices=0,0", "not a device selection" },
        { "trainer.devices=0", "not a device selection" },
        { "trainer.devices=-2", "not a device selection" },
        { "training.lr=0", "out of range" },
        { "training.lr=nan", "not a finite number" },
        { "output.model_name=a/b", "not a plain folder name" },
        { "output.model_name=", "not a plain folder name" },
        { "output.model_name=..", "not a plain folder name" },
        { "data.value_cols=a,,b", "empty column name" },
        { "data.value_cols=a,a", "listed twice" },
        { "training.shuffle=maybe", "not a boolean" },
        { "data.val_fraction=1", "out of range" },
        { "forecast.n=-1", "out of range" },
        { "data.freq=M", "pandas 3 spells it ME" },
        { "data.freq=2H", "pandas 3 spells it h" },
        { "data.freq=T", "pandas 3 spells it min" },
        { "data.freq=A-DEC", "pandas 3 spells it YE" },
        { "data.freq=ms", "whole seconds" },
        { "data.freq=0D", "not a frequency" },
        { "data.freq=W-sun", "not a frequency" },
        { "data.freq=WOM-1MON", "not a frequency" },
        { "data.freq=-1", "not a frequency" },
        { "data.fill_missing_dates=yes please", "not a boolean" },
        { "data.fill_missing_values=auto", "unknown value" },
    };
    for (size_t i = 0; i < sizeof(bad_sets) / sizeof(bad_sets[0]); i++) {
        const char *sets[] = { bad_sets[i][0] };
        assert_int_equal(load(f, "[data]\npath = s.csv\n", sets, 1), TSRNN_ERR_USAGE);
        if (strstr(tsrnn_last_error(), bad_sets[i][1]) == NULL ||
            strstr(tsrnn_last_error(), "accepted:") == NULL)
            fail_msg("%s: got '%s'", bad_sets[i][0], tsrnn_last_error());
    }
    /* a valid device list longer than the field that holds it is refused, not overflowed */
    char long_list[512] = "trainer.devices=0";
    for (int d = 1; d < 64; d++)
        snprintf(long_list + strlen(long_list), sizeof(long_list) - strlen(long_list), ",%d", d);
    const char *long_set[] = { long_list };
    assert_int_equal(load(f, "[data]\npath = s.csv\n", long_set, 1), TSRNN_ERR_USAGE);
    assert_non_null(strstr(tsrnn_last_error(), "[trainer] devices = '0,1,2,"));
    assert_non_null(strstr(tsrnn_last_error(), "': too long; accepted:"));
    const char *good[] = { "trainer.devices=0,2,5", "trainer.devices=-1", "trainer.devices=4",
                           "data.freq=MS",          "data.freq=2W-MON",   "data.freq=15min",
                           "data.freq=5",           "data.freq=",         "data.freq=QE-NOV" };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_int_equal(load(f, "[data]\npath = s.csv\n", &good[i], 1), TSRNN_OK);
    const char *fill[] = { "data.fill_missing_dates=true", "data.fill_missing_values=Interpolate" };
    assert_int_equal(load(f, "[data]\npath = s.csv\n", fill, 2), TSRNN_OK);
    assert_true(f->cfg->fill_missing_dates);
    assert_int_equal(f->cfg->fill_missing_values, TSRNN_FILL_MISSING_INTERPOLATE);
}

/* What a careless or hostile file holds: it is refused with the place and the reason, never
 * read differently from what it says, and nothing blocks or reads without end. */
static void test_files_that_lie(void **state)
{
    struct fixture *f = *state;
    /* A NUL byte would end libinih's line early: "hidden_dim = 2<NUL>0" read as 2. */
    static const char nul_text[] = "[data]\npath = s.csv\n[model]\nhidden_dim = 2\0"
                                   "0\n";
    const char *path = tu_path(f->dir, "nul.ini");
    FILE *out = fopen(path, "wb");
    fwrite(nul_text, 1, sizeof(nul_text) - 1, out);
    fclose(out);
    assert_int_equal(tsrnn_config_load(f->cfg, path, NULL, 0), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "nul.ini:4:15: a NUL byte");
    /* Old-Mac line ends made the whole file one line ("[data] path is not set"). */
    assert_int_equal(load(f, "[data]\rpath = s.csv\r", NULL, 0), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "c.ini:1:7: a carriage return that ends no line");
    assert_int_equal(load(f, "[data]\r\npath = s.csv\r\n", NULL, 0), TSRNN_OK); /* CRLF */
    /* A FIFO without a writer would block forever; /dev/zero would never end. */
    const char *fifo = tu_path(f->dir, "fifo.ini");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(tsrnn_config_load(f->cfg, fifo, NULL, 0), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "is not a regular file (a FIFO)");
    assert_int_equal(tsrnn_config_load(f->cfg, "/dev/zero", NULL, 0), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "config file /dev/zero is not a regular file (a character");
    assert_int_equal(load(f, "[data]\npath = fifo.ini\n", NULL, 0), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "c.ini:2: [data] path: data file ");
    tu_expect_in(tsrnn_last_error(), "fifo.ini is not a regular file (a FIFO); accepted: a file");
    /* A work_dir that is not a folder is named as the key it is (it failed later, at the run
     * folder's lock, without the key). */
    const char *devnull[] = { "output.work_dir=/dev/null" };
    assert_int_equal(load(f, "[data]\npath = s.csv\n", devnull, 1), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(),
                 "--set output.work_dir=/dev/null: [output] work_dir = /dev/null: not a folder");
    /* Numbers are decimal; control bytes (a newline from --set, an escape sequence) are
     * refused and shown escaped. */
    const char *bad_sets[][2] = {
        { "training.lr=0x1p-3", "[training] lr = '0x1p-3': not a finite number" },
        { "model.hidden_dim=0x10", "[model] hidden_dim = '0x10': not an integer" },
        { "output.model_name=a\nb", "[output] model_name = 'a\\nb': holds a control character" },
        { "output.model_name=\x1b[31mred",
          "[output] model_name = '\\x1b[31mred': holds a control character" },
        { "data.time_col=t\tu", "[data] time_col = 't\\tu': holds a control character" },
        { "output.model_name=caf\xe9", "[output] model_name = 'caf\\xe9': not UTF-8 text" },
        { "data.value_cols=caf\xe9", "[data] value_cols = 'caf\\xe9': not UTF-8 text" },
    };
    for (size_t i = 0; i < sizeof(bad_sets) / sizeof(bad_sets[0]); i++) {
        const char *sets[] = { bad_sets[i][0] };
        assert_int_equal(load(f, "[data]\npath = s.csv\n", sets, 1), TSRNN_ERR_USAGE);
        tu_expect_in(tsrnn_last_error(), bad_sets[i][1]);
    }
}

static void test_print_config_round_trips(void **state)
{
    struct fixture *f = *state;
    /* --set paths resolve against the current folder, so this one is absolute */
    char weights[PATH_MAX + 32];
    snprintf(weights, sizeof(weights), "model.init_weights=%s/s.csv", f->dir);
    const char *sets[] = { "model.model=GRU",
                           "training.lr=0.0003",
                           "data.value_cols=v",
                           weights,
                           "data.val_fraction=0.25",
                           "trainer.devices=1,3",
                           "data.freq=2W-MON",
                           "data.fill_missing_dates=on",
                           "data.fill_missing_values=interpolate" };
    assert_int_equal(load(f,
                          "[data]\npath = s.csv\ntime_col = t\n[model]\ndropout = 0.1\n"
                          "n_rnn_layers = 2\n[output]\nmodel_name = Air_RNN\n",
                          sets, 9),
                     TSRNN_OK);
    char first[PATH_MAX], second[PATH_MAX];
    snprintf(first, sizeof(first), "%s/first.ini", f->dir);
    snprintf(second, sizeof(second), "%s/second.ini", f->dir);
    FILE *out = fopen(first, "w");
    assert_int_equal(tsrnn_config_write(f->cfg, out), TSRNN_OK);
    fclose(out);

    struct tsrnn_config *again = malloc(sizeof(*again));
    assert_int_equal(tsrnn_config_load(again, first, NULL, 0), TSRNN_OK);
    out = fopen(second, "w");
    assert_int_equal(tsrnn_config_write(again, out), TSRNN_OK);
    fclose(out);
    char *a = tu_read(first), *b = tu_read(second);
    assert_string_equal(a, b);

    /* and the values themselves, not only their text */
    assert_int_equal(again->model, TSRNN_MODEL_GRU);
    assert_true(again->lr == 0.0003);
    assert_true(again->dropout == 0.1);
    assert_true(again->val_fraction == 0.25);
    assert_int_equal(again->n_rnn_layers, 2);
    assert_string_equal(again->data_path, f->cfg->data_path);
    assert_string_equal(again->init_weights, f->cfg->init_weights);
    assert_string_equal(again->work_dir, f->cfg->work_dir);
    assert_string_equal(again->model_name, "Air_RNN");
    assert_string_equal(again->devices, "1,3");
    assert_int_equal(again->value_col_count, 1);
    assert_string_equal(again->time_col, "t");
    assert_string_equal(again->freq, "2W-MON");
    assert_true(again->fill_missing_dates);
    assert_int_equal(again->fill_missing_values, TSRNN_FILL_MISSING_INTERPOLATE);
    /* every key is there */
    static const char *keys[] = { "path =",
                                  "time_col =",
                                  "value_cols =",
                                  "freq =",
                                  "fill_missing_dates =",
                                  "fill_missing_values =",
                                  "split_after =",
                                  "val_fraction =",
                                  "scaler =",
                                  "model =",
                                  "hidden_dim =",
                                  "n_rnn_layers =",
                                  "dropout =",
                                  "training_length =",
                                  "input_chunk_length =",
                                  "init_weights =",
                                  "batch_size =",
                                  "n_epochs =",
                                  "lr =",
                                  "random_state =",
                                  "shuffle =",
                                  "accelerator =",
                                  "devices =",
                                  "num_threads =",
                                  "work_dir =",
                                  "model_name =",
                                  "force_reset =",
                                  "save_checkpoints =",
                                  "log_tensorboard =",
                                  "\nn =" };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strstr(a, keys[i]) == NULL)
            fail_msg("'%s' missing from the printed config", keys[i]);
    free(a);
    free(b);
    free(again);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_defaults_are_darts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relative_paths_follow_the_ini, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_wins_over_file_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_values_and_syntax, setup, teardown),
        cmocka_unit_test_setup_teardown(test_files_that_lie, setup, teardown),
        cmocka_unit_test_setup_teardown(test_print_config_round_trips, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
