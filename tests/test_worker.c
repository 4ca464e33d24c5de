/* tsrnn-worker as a user runs it: the real binary, real files, exit codes and messages. */
#include <dirent.h>
#include <limits.h>
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
#include "tsrnn/comm.h"
#include "tsrnn/safetensors.h"

static struct tu_result result;

static const char *worker(void)
{
    return tu_env("TSRNN_WORKER");
}

/* examples/air_passengers.ini, trained for 2 epochs instead of 300: these tests are about the
 * command line, the config and the data (test_train covers training). */
static const char *example(void)
{
    static char path[PATH_MAX];
    if (path[0] != '\0')
        return path;
    char source[PATH_MAX];
    snprintf(source, sizeof(source), "%s/examples/air_passengers.ini", tu_env("TSRNN_SOURCE_ROOT"));
    char *text = tu_read(source);
    assert_non_null(text);
    char *epochs = strstr(text, "n_epochs = 300");
    assert_non_null(epochs);
    memcpy(epochs, "n_epochs = 002", 14);
    char *data = strstr(text, "path = data/");
    assert_non_null(data);
    *data = '\0';
    char *copy = NULL;
    assert_true(asprintf(&copy, "%spath = %s/examples/%s", text, tu_env("TSRNN_SOURCE_ROOT"),
                         data + strlen("path = ")) > 0);
    snprintf(path, sizeof(path), "%s", tu_write(tu_run_dir(), "air_passengers.ini", copy));
    free(copy);
    free(text);
    return path;
}

static void run(const char *const argv[])
{
    assert_int_equal(tu_run(argv, 20, &result), 0);
    assert_false(result.timed_out);
}

/* Runs the worker with up to three arguments (NULL ends them early) and checks its exit code
 * and one piece of stdout and of stderr (NULL: not checked). */
static void check(const char *a1, const char *a2, const char *a3, int exit_code,
                  const char *out_needle, const char *err_needle)
{
    const char *argv[] = { worker(), a1, a2, a3, NULL };
    run(argv);
    if (result.exit_code != exit_code)
        fail_msg("%s %s: exit %d, expected %d; stderr: %s", a1, a2 ? a2 : "", result.exit_code,
                 exit_code, result.err);
    if (out_needle != NULL)
        tu_expect_in(result.out, out_needle);
    if (err_needle != NULL)
        tu_expect_in(result.err, err_needle);
}

static void test_air_passengers_summary(void **state)
{
    (void)state;
    const char *argv[] = { worker(), example(), NULL };
    run(argv);
    assert_int_equal(result.exit_code, 0);
    tu_expect_in(result.out,
                 "144 points (1949-01 .. 1960-12, freq MS), 1 component: #Passengers\n");
    tu_expect_in(result.out, "train 121 points (1949-01 .. 1959-01)");
    tu_expect_in(result.out, "val 23 points (1959-02 .. 1960-12)");
    tu_expect_in(result.out, "#Passengers min 104 max 505");
    tu_expect_in(result.out, "101 training samples, 3 validation samples");
    tu_expect_in(result.out, "7 per epoch at batch_size 16");
    assert_string_equal(result.err, "");
}

static void test_set_precedence(void **state)
{
    (void)state;
    /* ceil(101 / 32) batches */
    check("--set", "training.batch_size=32", example(), 0, "4 per epoch at batch_size 32", NULL);
    /* the later --set wins: ceil(101 / 50) */
    const char *two[] = { worker(),  "-s", "training.batch_size=8", "--set=training.batch_size=50",
                          example(), NULL };
    run(two);
    assert_int_equal(result.exit_code, 0);
    tu_expect_in(result.out, "3 per epoch at batch_size 50");
    check("--set", "data.split_after=1958-12", example(), 0,
          "100 training samples, 4 validation samples", NULL);
    tu_expect_in(result.out, "train 120 points");
}

static void test_print_config_round_trip(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    const char *argv[] = { worker(), "--print-config", "--set", "model.hidden_dim=33", example(),
                           NULL };
    run(argv);
    assert_int_equal(result.exit_code, 0);
    tu_expect_in(result.out, "hidden_dim = 33\n");
    tu_expect_in(result.out, "split_after = 1959-01\n");
    char *first = strdup(strchr(result.out, '\n') + 1); /* after the comment line */
    char ini[PATH_MAX];
    snprintf(ini, sizeof(ini), "%s", tu_write(dir, "resolved.ini", result.out));
    const char *again[] = { worker(), "--print-config", ini, NULL };
    run(again);
    assert_int_equal(result.exit_code, 0);
    assert_string_equal(strchr(result.out, '\n') + 1, first);
    /* and the resolved file trains on the same data from any folder */
    const char *summary[] = { worker(), ini, NULL };
    run(summary);
    assert_int_equal(result.exit_code, 0);
    tu_expect_in(result.out, "101 training samples, 3 validation samples");
    free(first);
    tu_rmtree(dir);
    free(dir);
}

static void test_cli(void **state)
{
    (void)state;
    check("--help", NULL, NULL, 0, "Usage: tsrnn-worker", NULL);
    check("--version", NULL, NULL, 0, "tsrnn-worker 0.1.0", NULL);
    check(NULL, NULL, NULL, 2, NULL, "expected one config file");
    check("--frobnicate", example(), NULL, 2, NULL, "unrecognized option '--frobnicate'");
    check("/nonexistent/x.ini", NULL, NULL, 2, NULL,
          "cannot open config file /nonexistent/x.ini: No such file");
    check("/tmp", NULL, NULL, 2, NULL, "cannot read config file /tmp: Is a directory");
    check("--set", "hidden_dim=3", example(), 2, NULL,
          "--set hidden_dim=3: expected section.key=value");
    check("--set", "model.dropout=1.5", example(), 2, NULL,
          "--set model.dropout=1.5: [model] dropout = '1.5': out of range");
}

/* Runs the worker on the example through env(1): `env` (NULL-terminated) are env's
 * arguments before the worker, "NAME=value" to set a variable, "-u", "NAME" to unset one. */
static void run_with_env(const char *const *env)
{
    const char *argv[24];
    size_t n = 0;
    argv[n++] = "/usr/bin/env";
    for (; *env != NULL; env++) {
        assert_true(n < 20);
        argv[n++] = *env;
    }
    argv[n++] = worker();
    argv[n++] = example();
    argv[n] = NULL;
    run(argv);
}

/* TSRNN_CPU_ISA caps the CPU kernels' vector level; a value it does not know was ignored
 * silently (the run then compared nothing it meant to). */
static void test_unknown_cpu_isa_is_refused(void **state)
{
    (void)state;
    const char *env[] = { "TSRNN_CPU_ISA=AVX2", NULL };
    run_with_env(env);
    assert_int_equal(result.exit_code, 2);
    tu_expect_in(result.err, "TSRNN_CPU_ISA=AVX2: accepted: avx512, avx2 or baseline");
    const char *known[] = { "TSRNN_CPU_ISA=baseline", NULL };
    run_with_env(known);
    assert_int_equal(result.exit_code, 0);
    tu_expect_in(result.out, "Compute: CPU kernels baseline");
}

/* The worker's side of the launcher's contract (include/tsrnn/world.h): it uses the comm
 * backend the launcher chose (TSRNN_COMM_BACKEND) and refuses one that is unknown, missing or
 * does not fit the world size, with exit code 2, before reading the config. */
static void test_comm_backend_from_the_launcher(void **state)
{
    (void)state;
    char rendezvous[PATH_MAX + 8];
    snprintf(rendezvous, sizeof(rendezvous), "TSRNN_RENDEZVOUS=file:%s", tu_run_dir());
    const struct {
        const char *env[8];
        const char *expect[3];
    } refused[] = {
        { { "TSRNN_RANK=0", "TSRNN_WORLD_SIZE=2", rendezvous, "TSRNN_COMM_BACKEND=bogus" },
          { "environment variable TSRNN_COMM_BACKEND=bogus: unknown comm backend",
            "accepted: local, gloo, mpi, nccl" } },
        { { "TSRNN_RANK=1", "TSRNN_WORLD_SIZE=2", rendezvous, "TSRNN_COMM_BACKEND=" },
          { "TSRNN_COMM_BACKEND=: unknown comm backend", "accepted: local, gloo, mpi, nccl" } },
        { { "-u", "TSRNN_COMM_BACKEND", "TSRNN_RANK=0", "TSRNN_WORLD_SIZE=2", rendezvous },
          { "TSRNN_WORLD_SIZE=2 needs TSRNN_COMM_BACKEND (accepted: local, gloo, mpi, nccl)" } },
        { { "TSRNN_RANK=0", "TSRNN_WORLD_SIZE=3", rendezvous, "TSRNN_COMM_BACKEND=local" },
          { "TSRNN_COMM_BACKEND=local runs a world of 1 rank, but TSRNN_WORLD_SIZE=3",
            "accepted: a backend other than local (tsrnn knows local, gloo, mpi, nccl)" } },
        { { "TSRNN_RANK=0", "TSRNN_WORLD_SIZE=1", "TSRNN_COMM_BACKEND=gloo" },
          { "TSRNN_COMM_BACKEND=gloo with TSRNN_WORLD_SIZE=1", "accepted: local" } },
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        run_with_env(refused[i].env);
        if (result.exit_code != 2)
            fail_msg("case %zu: exit %d, expected 2; stderr: %s", i, result.exit_code, result.err);
        tu_expect_in(result.err, "tsrnn-worker: error: ");
        for (size_t k = 0; k < 3 && refused[i].expect[k] != NULL; k++)
            tu_expect_in(result.err, refused[i].expect[k]);
        assert_string_equal(result.out, "");
    }

    /* A world of one under a launcher: local, said or left out. */
    const char *local[] = { "TSRNN_RANK=0", "TSRNN_WORLD_SIZE=1", "TSRNN_COMM_BACKEND=local",
                            NULL };
    run_with_env(local);
    assert_int_equal(result.exit_code, 0);
    tu_expect_in(result.out, "101 training samples, 3 validation samples");
    const char *unset[] = { "-u", "TSRNN_COMM_BACKEND", "TSRNN_RANK=0", "TSRNN_WORLD_SIZE=1",
                            NULL };
    run_with_env(unset);
    assert_int_equal(result.exit_code, 0);
    /* Without TSRNN_RANK no launcher variable is read: a process of its own. */
    const char *alone[] = { "-u", "TSRNN_RANK", "TSRNN_COMM_BACKEND=bogus", NULL };
    run_with_env(alone);
    assert_int_equal(result.exit_code, 0);
    assert_string_equal(result.err, "");
}

/* Whether `text` (the loader's LD_DEBUG=files lines) says it mapped a file named `name`*. */
static bool loaded(const char *text, const char *name)
{
    char needle[64];
    snprintf(needle, sizeof(needle), "file=%s", name);
    return strstr(text, needle) != NULL;
}

/* The comm modules (src/comm/module.c): a world of one maps neither Gloo nor Open MPI, nor
 * their modules; a gloo rank whose module is not there, or is not one, stops with exit code
 * 2 and a message naming the backend, the module, the path tried, the loader's reason and
 * what to install. (Gloo and MPI ranks that load theirs: test_launch, test_mpi.) */
static void test_comm_modules_loaded_when_chosen(void **state)
{
    (void)state;
    /* LD_DEBUG=files: the dynamic loader names on stderr every file it maps. */
    const char *one[] = { "LD_DEBUG=files", "TSRNN_RANK=0", "TSRNN_WORLD_SIZE=1",
                          "TSRNN_COMM_BACKEND=local", NULL };
    run_with_env(one);
    assert_int_equal(result.exit_code, 0);
    assert_true(loaded(result.err, "libc.so.6"));
    static const char *const unwanted[] = { "libgloo", "libmpi", "tsrnn-comm-", "libstdc++" };
    for (size_t i = 0; i < sizeof(unwanted) / sizeof(unwanted[0]); i++) {
        /* UBSan's runtime, in the sanitized build, needs libstdc++ itself. */
        if (strcmp(unwanted[i], "libstdc++") == 0 && loaded(result.err, "libubsan"))
            continue;
        if (loaded(result.err, unwanted[i]) || strstr(result.err, unwanted[i]) != NULL)
            fail_msg("a world of one loaded %s; the loader says:\n%s", unwanted[i], result.err);
    }

    if (!tsrnn_comm_backend_available("gloo")) {
        print_message("gloo is not in this build: its module's failures are not checked\n");
        return;
    }
    char rendezvous[PATH_MAX + 32], module_dir[PATH_MAX + 32];
    snprintf(rendezvous, sizeof(rendezvous), "TSRNN_RENDEZVOUS=file:%s", tu_run_dir());
    snprintf(module_dir, sizeof(module_dir), "TSRNN_MODULE_DIR=%s", tu_run_dir());
    const char *gloo[] = {
        module_dir, "TSRNN_RANK=0", "TSRNN_WORLD_SIZE=2", rendezvous, "TSRNN_COMM_BACKEND=gloo",
        NULL
    };
    char expect[2 * PATH_MAX + 64];
    run_with_env(gloo);
    if (result.exit_code != 2)
        fail_msg("no module: exit %d, expected 2; stderr: %s", result.exit_code, result.err);
    snprintf(expect, sizeof(expect),
             "comm backend gloo: its module tsrnn-comm-gloo.so did not load (tried "
             "%s/tsrnn-comm-gloo.so: not there)",
             tu_run_dir());
    tu_expect_in(result.err, expect);
    tu_expect_in(result.err, "needs Gloo (Debian: libgloo0) installed");

    /* A file of that name that the loader refuses (longer than an ELF header). */
    tu_write(tu_run_dir(), "tsrnn-comm-gloo.so",
             "a text file where the gloo module should be, which the dynamic loader refuses\n");
    run_with_env(gloo);
    if (result.exit_code != 2)
        fail_msg("bad module: exit %d, expected 2; stderr: %s", result.exit_code, result.err);
    snprintf(expect, sizeof(expect), "(tried %s/tsrnn-comm-gloo.so: ", tu_run_dir());
    tu_expect_in(result.err, expect);
    tu_expect_in(result.err, "invalid ELF header)");
    unlink(tu_path(tu_run_dir(), "tsrnn-comm-gloo.so"));
}

/* Each bad config: the text, then what the message must contain (file:line, key, ...). */
struct bad_case {
    const char *ini;
    const char *expect[4];
};

#define DATA "[data]\npath = s.csv\ntime_col = Month\n"

static const struct bad_case config_cases[] = {
    { DATA "[modle]\nhidden_dim = 5\n",
      { "bad.ini:4:", "unknown section [modle]", "did you mean [model]", "accepted: [data]" } },
    { DATA "[optimizer]\n", { "bad.ini:4:", "unknown section [optimizer]" } },
    { DATA "[model]\nhiden_dim = 5\n",
      { "bad.ini:5:", "unknown key 'hiden_dim' in [model]", "did you mean [model] hidden_dim" } },
    { DATA "[model]\nhidden_dim = 5\nhidden_dim = 6\n",
      { "bad.ini:6:", "duplicate key [model] hidden_dim", "first set at line 5" } },
    { DATA "[model]\nhidden_dim = twenty\n",
      { "bad.ini:5:", "[model] hidden_dim = 'twenty'", "not an integer",
        "accepted: an integer from 1 to 65536" } },
    { DATA "[model]\nhidden_dim = 0\n", { "bad.ini:5:", "hidden_dim = '0'", "out of range" } },
    { DATA "[model]\ndropout = 1.5\n",
      { "bad.ini:5:", "[model] dropout = '1.5'", "out of range", "accepted: a number in [0, 1)" } },
    { DATA "[training]\nbatch_size = -16\n",
      { "bad.ini:5:", "[training] batch_size = '-16'", "out of range",
        "an integer from 1 to 1048576" } },
    { DATA "[training]\nn_epochs = 3.5\n", { "bad.ini:5:", "n_epochs = '3.5'", "not an integer" } },
    { DATA "[model]\nmodel = TCN\n",
      { "bad.ini:5:", "[model] model = 'TCN'", "unknown value", "accepted: RNN, LSTM or GRU" } },
    { DATA "[model]\ntraining_length = 10\ninput_chunk_length = 14\n",
      { "bad.ini:5:", "training_length = 10", "input_chunk_length = 14 (", "bad.ini:6)" } },
    { "[data]\npath = nothing_here.csv\n",
      { "bad.ini:2:", "[data] path", "nothing_here.csv", "No such file or directory" } },
    { "[data]\npath = .\n", { "bad.ini:2:", "[data] path", "cannot read", "Is a directory" } },
    { DATA "[model]\ninit_weights = missing.safetensors\n",
      { "bad.ini:5:", "[model] init_weights", "missing.safetensors", "No such file" } },
    { DATA "split_after = 1959-01\nval_fraction = 0.2\n",
      {
          "bad.ini:5:",
          "val_fraction = 0.2",
          "split_after = '1959-01' (",
          "bad.ini:4)",
      } },
    { DATA "[model]\nhidden_dim 20\n", { "bad.ini:5:", "syntax error", "'hidden_dim 20'" } },
    { DATA "[model\n", { "bad.ini:4:", "syntax error" } },
    { "hidden_dim = 20\n", { "bad.ini:1:", "before any [section]" } },
    { "[model]\nhidden_dim = 20\n", { "[data] path is not set" } },
    { DATA "[trainer]\naccelerator = ipu\n",
      { "bad.ini:5:", "accelerator = 'ipu'", "auto, cpu, gpu, xla or tpu" } },
};

/* Each bad CSV (with a valid config): the data and what the message must contain. */
static const struct bad_case csv_cases[] = {
    { "Month,Passengers\n1949-01,112\n",
      { "s.csv:1: no column '#Passengers' ([data] value_cols)", "it has: 'Month', 'Passengers'" } },
    { "Month,#Passengers\n1949-01,112\n1949-02,\n1949-03,3\n",
      { "s.csv:3:9:", "column '#Passengers': empty value, a missing value",
        "set [data] fill_missing_values = interpolate" } },
    { "Month,#Passengers\n1949-01,112\n1949-02,lots\n",
      { "s.csv:3:9:", "'lots' is not a number" } },
    { "Month,#Passengers\n1949-01,112\n1949-02,NaN\n1949-03,3\n",
      { "s.csv:3:9:", "'NaN' is a missing value", "MissingValuesFiller()" } },
    { "Month,#Passengers\n1949-01,112\n1949-02,inf\n", { "s.csv:3:9:", "'inf' is not a finite" } },
    { "Month,#Passengers\n1949-01,1\n1949-02,2\n1949-02,3\n",
      { "s.csv:4:1:", "'1949-02' repeats", "strictly increase" } },
    { "Month,#Passengers\n1949-01,1\n1949-03,2\n1949-02,3\n",
      { "s.csv:4:1:", "'1949-02' comes before the previous row's '1949-03'" } },
    { "Month,#Passengers\n1949-01,1\n1949-02,2,7\n", { "s.csv:3:", "3 fields", "header has 2" } },
    { "Month,#Passengers\n1949-01,1\n1949-02,2\n1949-03,3\n",
      { "series has 3 points", "training_length = 3", "needs at least 4" } },
    { "Month,#Passengers\n1949-1,1\n", { "s.csv:2:1:", "'1949-1' is not a time stamp" } },
    /* a covariate column is [covariates] columns' (it was labelled [data] value_cols) */
    { "Month,#Passengers\n1949-01,1\n1949-02,2\n1949-03,3\n1949-04,4\n",
      { "s.csv:1: no column 'Temp' ([covariates] columns) in the header" } },
};

static void run_bad(const char *dir, const char *ini_text, const char *csv_text,
                    const char *const expect[4], size_t case_idx, const char *kind)
{
    char ini[PATH_MAX];
    snprintf(ini, sizeof(ini), "%s", tu_write(dir, "bad.ini", ini_text));
    tu_write(dir, "s.csv", csv_text);
    const char *argv[] = { worker(), ini, NULL };
    run(argv);
    if (result.exit_code != 2)
        fail_msg("%s case %zu: exit %d, stderr: %s", kind, case_idx, result.exit_code, result.err);
    tu_expect_in(result.err, "tsrnn-worker: error: ");
    for (size_t k = 0; k < 4 && expect[k] != NULL; k++)
        if (strstr(result.err, expect[k]) == NULL)
            fail_msg("%s case %zu: expected '%s' in: %s", kind, case_idx, expect[k], result.err);
    assert_string_equal(result.out, ""); /* nothing half-done on stdout */
}

static void test_config_errors(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    const char *csv = "Month,#Passengers\n1949-01,1\n1949-02,2\n1949-03,3\n1949-04,4\n";
    for (size_t i = 0; i < sizeof(config_cases) / sizeof(config_cases[0]); i++)
        run_bad(dir, config_cases[i].ini, csv, config_cases[i].expect, i, "config");
    tu_rmtree(dir);
    free(dir);
}

static void test_csv_errors(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    const char *ini = "[data]\npath = s.csv\ntime_col = Month\nvalue_cols = #Passengers\n"
                      "[model]\ntraining_length = 3\ninput_chunk_length = 2\n";
    for (size_t i = 0; i < sizeof(csv_cases) / sizeof(csv_cases[0]); i++) {
        const char *text = i == 8    ? "[data]\npath = s.csv\ntime_col = Month\n[model]\n"
                                       "training_length = 3\ninput_chunk_length = 2\n"
                           : i == 10 ? "[data]\npath = s.csv\ntime_col = Month\nvalue_cols = "
                                       "#Passengers\n[covariates]\ncolumns = Temp\n[model]\n"
                                       "training_length = 3\ninput_chunk_length = 2\n"
                                     : ini;
        run_bad(dir, text, csv_cases[i].ini, csv_cases[i].expect, i, "csv");
    }
    /* BOM and CRLF are not errors */
    tu_write(dir, "ok.ini", ini);
    tu_write(dir, "s.csv",
             "\xEF\xBB\xBFMonth,#Passengers\r\n1949-01,1\r\n1949-02,2\r\n1949-03,3\r\n"
             "1949-04,4\r\n1949-05,8\r\n");
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/ok.ini", dir);
    const char *argv[] = { worker(), "--set", "data.split_after=", path, NULL };
    run(argv);
    assert_int_equal(result.exit_code, 0);
    tu_expect_in(result.out, "5 points (1949-01 .. 1949-05, freq MS)");
    tu_expect_in(result.out, "min 1 max 8");
    tu_expect_in(result.out, "2 training samples, 0 validation samples");
    tu_rmtree(dir);
    free(dir);
}

/* Fails unless `text` holds no control byte but newlines and no C1 control (what a terminal
 * takes for a command: ESC, BEL, U+009B CSI). */
static void expect_no_controls(const char *text, const char *what)
{
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f ||
            (p[0] == 0xC2 && p[1] >= 0x80 && p[1] < 0xA0))
            fail_msg("%s holds control byte 0x%02x at %td: %s", what, *p,
                     p - (const unsigned char *)text, text);
}

/* Bytes from a data file reach the terminal only through the printable filter (issue 39,
 * point 5): a cell holding an escape sequence is shown escaped in "is not a number"; a
 * column name, a series id or a file name (a series' name) holding a control character is
 * refused with the name escaped, before anything prints it raw. (Before: the cell was echoed
 * raw; the names trained and were printed raw in the dataset summary.) */
static void test_terminal_escapes_are_never_printed(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    static const struct {
        const char *ini, *csv, *name, *expect;
    } cases[] = {
        { "[data]\npath = s.csv\ntime_col = Month\nvalue_cols = v\n",
          "Month,v\n1949-01,1\n1949-02,\x1b]0;owned\x07\n", "s.csv",
          "s.csv:3:9: column 'v': '\\x1b]0;owned\\x07' is not a number" },
        { "[data]\npath = s.csv\ntime_col = Month\n",
          "Month,\x1b[2Jv\xc2\x9b\n1949-01,1\n1949-02,2\n", "s.csv",
          "s.csv:1:7: column name '\\x1b[2Jv\\xc2\\x9b' holds a control character" },
        { "[data]\npath = s.csv\ntime_col = Month\nid_col = id\n",
          "id,Month,v\na,1949-01,1\n\x1b]2;b\x07,1949-01,2\n", "s.csv",
          "s.csv:3: id column 'id': the id '\\x1b]2;b\\x07' holds a control character" },
        { "[data]\npath = *.csv\ntime_col = Month\n",
          "Month,v\n1949-01,1\n1949-02,2\n1949-03,3\n1949-04,4\n", "\x1b[31mred.csv",
          "the file's name, series '\\x1b[31mred', is not printable" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *sub = tu_mkdtemp();
        char ini[PATH_MAX];
        snprintf(ini, sizeof(ini), "%s", tu_write(sub, "bad.ini", cases[i].ini));
        tu_write(sub, cases[i].name, cases[i].csv);
        if (strcmp(cases[i].name, "s.csv") != 0) /* a second, plain file beside it */
            tu_write(sub, "plain.csv", cases[i].csv);
        const char *argv[] = {
            worker(), "--set", "model.training_length=2", "--set", "model.input_chunk_length=1",
            ini,      NULL
        };
        run(argv);
        if (result.exit_code != 2)
            fail_msg("case %zu: exit %d; stderr: %s", i, result.exit_code, result.err);
        tu_expect_in(result.err, cases[i].expect);
        expect_no_controls(result.err, "stderr");
        expect_no_controls(result.out, "stdout");
        tu_rmtree(sub);
        free(sub);
    }
    tu_rmtree(dir);
    free(dir);
}

/* [forecast] n past the year 9999 is refused before training (issue 39, point 7): a series
 * ending 9999-12 with [forecast] n = 50 trained every epoch, wrote its run folder, then exited
 * 2. Now: exit 2 with the dates and the setting, no epoch trained, no run folder. */
static void test_forecast_dates_checked_before_training(void **state)
{
    (void)state;
    char text[8192];
    size_t used = (size_t)snprintf(text, sizeof(text), "Month,v\n");
    for (int i = 0; i < 144; i++)
        used += (size_t)snprintf(text + used, sizeof(text) - used, "%04d-%02d,%d\n", 9988 + i / 12,
                                 i % 12 + 1, 100 + i % 17);
    char data[PATH_MAX + 16], run[PATH_MAX];
    snprintf(data, sizeof(data), "data.path=%s", tu_write(tu_run_dir(), "late.csv", text));
    const char *sets[] = { data,
                           "data.value_cols=v",
                           "data.split_after=9997-06",
                           "forecast.n=50",
                           "training.n_epochs=3",
                           NULL };
    assert_int_equal(tu_train(&result, "late", sets, 20), 2);
    snprintf(run, sizeof(run), "%s/late", tu_run_dir());
    assert_int_equal(access(run, F_OK), -1);
    assert_null(strstr(result.out, "Epoch"));
    assert_null(strstr(result.out, "Trained"));
    tu_expect_in(result.err, "a 50-step forecast at freq MS after 9997-06 would pass the last "
                             "stamp tsrnn can write (9999-12-31 23:59:59)");
    tu_expect_in(result.err, "[forecast] n = 50, --set forecast.n=50");
    /* n = 29 ends at 9999-11: trains */
    const char *fits[] = { data,
                           "data.value_cols=v",
                           "data.split_after=9997-06",
                           "forecast.n=29",
                           "training.n_epochs=1",
                           "forecast.plot=false",
                           NULL };
    assert_int_equal(tu_train(&result, "late", fits, 20), 0);
    tu_expect_in(result.out, "Forecast 29 steps (9997-07 .. 9999-11)");
}

/* A folder whose name is not UTF-8 (issue 39, point 6): the value was checked, the folder
 * prepended to it was not, so a run from such a folder trained, wrote five files, then failed
 * at its first checkpoint (JSON is UTF-8). Now the resolved paths are checked before anything
 * is written: the current folder (the default work_dir) and the config file's folder (its
 * relative [data] path). */
static void test_non_utf8_folders_refused_before_writing(void **state)
{
    (void)state;
    char *top = tu_mkdtemp(), latin[PATH_MAX], ini[PATH_MAX], data[PATH_MAX + 16];
    snprintf(latin, sizeof(latin), "%s/caf\xe9", top);
    assert_int_equal(mkdir(latin, 0700), 0);
    snprintf(data, sizeof(data), "data.path=%s", tu_source("examples/data/air_passengers.csv"));

    /* run from it: work_dir = <it>/darts_logs */
    const char *from_it[] = { "/usr/bin/env", "-C", latin,   worker(),
                              "--set",        data, "--set", "output.model_name=latin",
                              example(),      NULL };
    run(from_it);
    assert_string_equal(result.out, "");
    size_t count = 0;
    DIR *dir = opendir(latin);
    assert_non_null(dir);
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        count += e->d_name[0] != '.';
    closedir(dir);
    assert_int_equal(count, 0); /* nothing written */
    assert_int_equal(result.exit_code, 2);
    tu_expect_in(result.err, "[output] work_dir (its default) resolves to '");
    tu_expect_in(result.err, "/caf\\xe9/darts_logs', which is not printable UTF-8 text: the "
                             "current folder");

    /* its config file with a relative data path, run from elsewhere */
    char *text = tu_read(tu_source("examples/data/air_passengers.csv"));
    assert_non_null(text);
    tu_write(latin, "air.csv", text);
    free(text);
    snprintf(ini, sizeof(ini), "%s",
             tu_write(latin, "a.ini", "[data]\npath = air.csv\ntime_col = Month\n"));
    const char *its_ini[] = { worker(), "--set", "output.model_name=latin", ini, NULL };
    run(its_ini);
    assert_int_equal(result.exit_code, 2);
    tu_expect_in(result.err, "a.ini:2: [data] path resolves to '");
    tu_expect_in(result.err, "/caf\\xe9/air.csv', which is not printable UTF-8 text: the config "
                             "file's folder");
    assert_int_equal(access(tu_path(tu_run_dir(), "darts_logs/latin"), F_OK), -1);
    tu_rmtree(top);
    free(top);
}

/* metrics.csv, forecast.csv and the last checkpoint's tensors of a run, for comparing runs. */
struct run_outputs {
    char *metrics, *forecast;
    struct tsrnn_safetensors checkpoint;
};

static void read_outputs(struct run_outputs *o, const char *model_name, int last_epoch)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/metrics.csv", tu_run_dir(), model_name);
    o->metrics = tu_read(path);
    snprintf(path, sizeof(path), "%s/%s/forecast.csv", tu_run_dir(), model_name);
    o->forecast = tu_read(path);
    snprintf(path, sizeof(path), "%s/%s/checkpoints/last-epoch=%d.safetensors", tu_run_dir(),
             model_name, last_epoch);
    assert_int_equal(tsrnn_safetensors_read(&o->checkpoint, path), TSRNN_OK);
    assert_non_null(o->metrics);
    assert_non_null(o->forecast);
}

/* The example end to end: AirPassengers without 1955-06 is refused (exit 2, naming
 * the line and both stamps); with fill_missing_dates and fill_missing_values it trains exactly
 * as the file with 1955-06 = 317 (270 and 364 around it, interpolated) does. */
static void test_gap_filled_trains_as_the_filled_file(void **state)
{
    (void)state;
    char *text = tu_read(tu_source("examples/data/air_passengers.csv"));
    assert_non_null(text);
    char *june = strstr(text, "1955-06,315\n");
    assert_non_null(june);
    char gap[PATH_MAX], filled[PATH_MAX], data[PATH_MAX + 16], filled_data[PATH_MAX + 16];
    memcpy(june, "1955-06,317\n", 12);
    snprintf(filled, sizeof(filled), "%s", tu_write(tu_run_dir(), "filled.csv", text));
    memmove(june, june + 12, strlen(june + 12) + 1);
    snprintf(gap, sizeof(gap), "%s", tu_write(tu_run_dir(), "gap.csv", text));
    free(text);
    snprintf(data, sizeof(data), "data.path=%s", gap);
    snprintf(filled_data, sizeof(filled_data), "data.path=%s", filled);

    const char *refused[] = { data, NULL };
    assert_int_equal(tu_train(&result, "gap_refused", refused, 20), 2);
    tu_expect_in(result.err, "gap.csv:79: time column 'Month': '1955-07' follows '1955-05' (line "
                             "78), but at freq MS the next stamp is '1955-06'");
    tu_expect_in(result.err, "set [data] fill_missing_dates = true");
    assert_string_equal(result.out, "");

    const char *fill[] = { data,
                           "data.fill_missing_dates=true",
                           "data.fill_missing_values=interpolate",
                           "training.n_epochs=20",
                           "forecast.plot=false",
                           "output.log_tensorboard=false",
                           NULL };
    assert_int_equal(tu_train(&result, "gap_filled", fill, 60), 0);
    tu_expect_in(result.out, "144 points (1949-01 .. 1960-12, freq MS)");
    tu_expect_in(result.out,
                 "Filled: 1 missing date inserted (1955-06), 1 missing value interpolated\n");
    const char *plain[] = { filled_data, "training.n_epochs=20", "forecast.plot=false",
                            "output.log_tensorboard=false", NULL };
    assert_int_equal(tu_train(&result, "gap_317", plain, 60), 0);
    assert_null(strstr(result.out, "Filled:"));

    struct run_outputs a, b;
    read_outputs(&a, "gap_filled", 19);
    read_outputs(&b, "gap_317", 19);
    assert_string_equal(a.metrics, b.metrics);
    assert_string_equal(a.forecast, b.forecast);
    size_t start_a = 8 + a.checkpoint.header_nbytes, start_b = 8 + b.checkpoint.header_nbytes;
    assert_int_equal(a.checkpoint.nbytes - start_a, b.checkpoint.nbytes - start_b);
    assert_memory_equal(a.checkpoint.bytes + start_a, b.checkpoint.bytes + start_b,
                        a.checkpoint.nbytes - start_a);
    /* and the value matters: with the real 315 the losses differ */
    const char *original[] = { "training.n_epochs=20", "forecast.plot=false",
                               "output.log_tensorboard=false", NULL };
    assert_int_equal(tu_train(&result, "gap_315", original, 60), 0);
    struct run_outputs c;
    read_outputs(&c, "gap_315", 19);
    assert_string_not_equal(a.metrics, c.metrics);
    free(c.metrics);
    free(c.forecast);
    tsrnn_safetensors_finish(&c.checkpoint);
    free(a.metrics);
    free(a.forecast);
    free(b.metrics);
    free(b.forecast);
    tsrnn_safetensors_finish(&a.checkpoint);
    tsrnn_safetensors_finish(&b.checkpoint);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_air_passengers_summary),
        cmocka_unit_test(test_set_precedence),
        cmocka_unit_test(test_print_config_round_trip),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_csv_errors),
        cmocka_unit_test(test_terminal_escapes_are_never_printed),
        cmocka_unit_test(test_forecast_dates_checked_before_training),
        cmocka_unit_test(test_non_utf8_folders_refused_before_writing),
        cmocka_unit_test(test_gap_filled_trains_as_the_filled_file),
        cmocka_unit_test(test_comm_backend_from_the_launcher),
        cmocka_unit_test(test_comm_modules_loaded_when_chosen),
        cmocka_unit_test(test_unknown_cpu_isa_is_refused),
    };
    return cmocka_run_group_tests(tests, tu_setup_run_dir, tu_teardown_run_dir);
}
