/* The rendezvous store (src/comm/store.h): values between processes, binary values, the
 * deadline and its message, key names, and that a reader never sees half a value.
 *
 * Then NCCL's unique id through the store (src/comm/nccl_id.c, the nccl backend's bootstrap
 * under tsrnn-launch): an opaque 128-byte blob from rank 0 to every rank, the deadline, and
 * the error when rank 0 never publishes. No GPU or NCCL is needed: the id is made here.
 *
 * A child process checks its own side and exits 0, or prints why and exits non-zero
 * (cmocka's asserts belong to the parent only); the parent reaps it with a deadline.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../src/comm/backend.h"
#include "../src/comm/store.h"
#include "testutil.h"

static void sleep_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0)
        continue;
}

/* A child's failed check: prints it and gives the exit code. */
__attribute__((format(printf, 2, 3))) static int fail_child(int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "child, test_store.c:%d: ", line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 1;
}

#define FAIL(...) fail_child(__LINE__, __VA_ARGS__)

static pid_t start_child(int (*body)(const char *dir), const char *dir)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        exit(body(dir)); /* exit, not _exit: LeakSanitizer checks the child */
    return pid;
}

/* The child's exit code; kills it and fails the test after `deadline_s`. */
static int reap(pid_t pid, double deadline_s)
{
    double start = tsrnn_clock_now_s();
    int status;
    while (waitpid(pid, &status, WNOHANG) != pid) {
        if (tsrnn_clock_now_s() - start > deadline_s) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            fail_msg("the child still ran after %.1f s", deadline_s);
        }
        sleep_s(0.002);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void open_store(struct tsrnn_store *store, const char *dir, double timeout_s)
{
    char rendezvous[PATH_MAX + 8];
    snprintf(rendezvous, sizeof(rendezvous), "file:%s", dir);
    if (tsrnn_store_open(store, rendezvous, timeout_s) != TSRNN_OK)
        fail_msg("open %s: %s", rendezvous, tsrnn_last_error());
}

/* An NCCL unique id stands for every value: 128 bytes, NULs among them. */
enum {
    ID_NBYTES = 128
};

static void fill_id(uint8_t *id, uint8_t seed)
{
    for (size_t i = 0; i < ID_NBYTES; i++)
        id[i] = i % 3 == 0 ? 0 : (uint8_t)(seed + 31 * i);
}

/* 1. between processes */

/* The child answers the parent's key with its own: its set comes after the parent's, so the
 * parent's get, which starts before, has to wait for it. */
static int round_trip_child(const char *dir)
{
    char rendezvous[PATH_MAX + 8];
    snprintf(rendezvous, sizeof(rendezvous), "file:%s", dir);
    struct tsrnn_store store;
    if (tsrnn_store_open(&store, rendezvous, 5) != TSRNN_OK)
        return FAIL("open: %s", tsrnn_last_error());
    uint8_t id[ID_NBYTES], got[ID_NBYTES];
    size_t nbytes;
    if (tsrnn_store_get(&store, "from-parent", got, sizeof(got), &nbytes) != TSRNN_OK)
        return FAIL("get: %s", tsrnn_last_error());
    fill_id(id, 9);
    if (nbytes != ID_NBYTES || memcmp(got, id, ID_NBYTES) != 0)
        return FAIL("got %zu bytes, not the parent's %d", nbytes, ID_NBYTES);
    fill_id(id, 7);
    if (tsrnn_store_set(&store, "from-child", id, sizeof(id)) != TSRNN_OK)
        return FAIL("set: %s", tsrnn_last_error());
    tsrnn_store_close(&store);
    return 0;
}

static void test_round_trip_between_processes(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    pid_t child = start_child(round_trip_child, dir);
    struct tsrnn_store store;
    open_store(&store, dir, 5);
    /* The child's key cannot be there before the parent's is: the get below waits for it
     * (the event, whatever the machine's load). */
    bool found = true;
    assert_int_equal(tsrnn_store_has(&store, "from-child", &found), TSRNN_OK);
    assert_false(found);
    uint8_t id[ID_NBYTES], got[ID_NBYTES];
    fill_id(id, 9);
    assert_int_equal(tsrnn_store_set(&store, "from-parent", id, sizeof(id)), TSRNN_OK);
    size_t nbytes = 0;
    assert_int_equal(tsrnn_store_get(&store, "from-child", got, sizeof(got), &nbytes), TSRNN_OK);
    fill_id(id, 7);
    assert_int_equal(nbytes, ID_NBYTES);
    assert_memory_equal(got, id, ID_NBYTES);
    assert_int_equal(reap(child, 10), 0);
    tsrnn_store_close(&store);
    tu_rmtree(dir);
    free(dir);
}

/* 2. values */

static void test_binary_and_empty_values(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct tsrnn_store store;
    open_store(&store, dir, 2);
    static const char nul_value[] = { 0, 0, 'a', 0, 'b', 0 };
    char buf[64];
    size_t nbytes;
    assert_int_equal(tsrnn_store_set(&store, "nul", nul_value, sizeof(nul_value)), TSRNN_OK);
    assert_int_equal(tsrnn_store_get(&store, "nul", buf, sizeof(buf), &nbytes), TSRNN_OK);
    assert_int_equal(nbytes, sizeof(nul_value));
    assert_memory_equal(buf, nul_value, sizeof(nul_value));

    assert_int_equal(tsrnn_store_set(&store, "empty", NULL, 0), TSRNN_OK);
    nbytes = 99;
    assert_int_equal(tsrnn_store_get(&store, "empty", NULL, 0, &nbytes), TSRNN_OK);
    assert_int_equal(nbytes, 0);

    /* A later set replaces the value. */
    assert_int_equal(tsrnn_store_set(&store, "nul", "xyz", 3), TSRNN_OK);
    assert_int_equal(tsrnn_store_get(&store, "nul", buf, sizeof(buf), &nbytes), TSRNN_OK);
    assert_int_equal(nbytes, 3);
    assert_memory_equal(buf, "xyz", 3);

    /* A value longer than the buffer: refused, its length given, the buffer untouched. */
    char big[100];
    memset(big, 'b', sizeof(big));
    assert_int_equal(tsrnn_store_set(&store, "big", big, sizeof(big)), TSRNN_OK);
    memset(buf, '.', sizeof(buf));
    assert_int_equal(tsrnn_store_get(&store, "big", buf, 10, &nbytes), TSRNN_ERR_COMM);
    assert_int_equal(nbytes, 100);
    assert_true(buf[0] == '.' && buf[9] == '.');
    tu_expect_in(tsrnn_last_error(), "\"big\"");
    tu_expect_in(tsrnn_last_error(), "holds 100 bytes, more than the 10 expected");

    bool found = true;
    assert_int_equal(tsrnn_store_has(&store, "nobody", &found), TSRNN_OK);
    assert_false(found);
    assert_int_equal(tsrnn_store_has(&store, "big", &found), TSRNN_OK);
    assert_true(found);

    /* Only the keys are left in the folder: no temporary file. */
    DIR *d = opendir(dir);
    assert_non_null(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        assert_true(strcmp(e->d_name, "nul") == 0 || strcmp(e->d_name, "empty") == 0 ||
                    strcmp(e->d_name, "big") == 0);
        files++;
    }
    closedir(d);
    assert_int_equal(files, 3);
    tsrnn_store_close(&store);
    tu_rmtree(dir);
    free(dir);
}

/* A writer replaces one key's 256 KiB value again and again, each time all of one byte;
 * a reader in another process must only ever see whole values. */
enum {
    TORN_NBYTES = 256 * 1024,
    TORN_ROUNDS = 60
};

static int torn_writer(const char *dir)
{
    char rendezvous[PATH_MAX + 8];
    snprintf(rendezvous, sizeof(rendezvous), "file:%s", dir);
    struct tsrnn_store store;
    if (tsrnn_store_open(&store, rendezvous, 5) != TSRNN_OK)
        return FAIL("open: %s", tsrnn_last_error());
    uint8_t *value = malloc(TORN_NBYTES);
    int rc = 0;
    for (int i = 0; i < TORN_ROUNDS && rc == 0; i++) {
        /* Lengths vary too, so a reader would also notice a mix of two lengths. */
        size_t nbytes = TORN_NBYTES - (size_t)(i % 7) * 1000;
        memset(value, 'A' + i % 26, nbytes);
        if (tsrnn_store_set(&store, "value", value, nbytes) != TSRNN_OK)
            rc = FAIL("set %d: %s", i, tsrnn_last_error());
    }
    free(value);
    if (rc == 0 && tsrnn_store_set(&store, "done", NULL, 0) != TSRNN_OK)
        rc = FAIL("set done: %s", tsrnn_last_error());
    tsrnn_store_close(&store);
    return rc;
}

static void test_no_partial_values(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    pid_t child = start_child(torn_writer, dir);
    struct tsrnn_store store;
    open_store(&store, dir, 10);
    uint8_t *buf = malloc(TORN_NBYTES);
    int reads = 0;
    bool done = false;
    while (!done) {
        assert_int_equal(tsrnn_store_has(&store, "done", &done), TSRNN_OK);
        size_t nbytes;
        assert_int_equal(tsrnn_store_get(&store, "value", buf, TORN_NBYTES, &nbytes), TSRNN_OK);
        int round = buf[0] - 'A';
        assert_true(round >= 0 && round < 26);
        assert_true(nbytes % 1000 == TORN_NBYTES % 1000);
        for (size_t i = 0; i < nbytes; i++)
            if (buf[i] != buf[0])
                fail_msg("read %d: byte %zu of %zu is '%c', byte 0 '%c': half a value", reads, i,
                         nbytes, buf[i], buf[0]);
        reads++;
    }
    print_message("%d whole reads while the value was replaced %d times\n", reads, TORN_ROUNDS);
    free(buf);
    assert_int_equal(reap(child, 20), 0);
    tsrnn_store_close(&store);
    tu_rmtree(dir);
    free(dir);
}

/* 3. the deadline */

/* The bound within which a wait that has run out must have returned, past its deadline:
 * after the deadline a wait returns at its next wake-up (a poll sleeps 10 ms at most), so an
 * idle machine returns within milliseconds; only a wait that kept waiting (for a key that
 * never comes) reaches 10 s, however loaded the machine. */
#define RETURN_AFTER_DEADLINE_S 10.0

static void test_missing_key_times_out(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct tsrnn_store store;
    open_store(&store, dir, 0.5);
    char buf[ID_NBYTES];
    size_t nbytes = 99;
    double start = tsrnn_clock_now_s();
    assert_int_equal(tsrnn_store_get(&store, "nccl-id", buf, sizeof(buf), &nbytes), TSRNN_ERR_COMM);
    double end = tsrnn_clock_now_s();
    print_message("get gave up %.3f s after it started, %.3f s after the deadline: %s\n",
                  end - start, end - store.deadline_s, tsrnn_last_error());
    /* Not before the store's deadline (open's time + 0.5 s, on the same clock), and then
     * without waiting on. */
    assert_true(end >= store.deadline_s);
    assert_true(end - store.deadline_s < RETURN_AFTER_DEADLINE_S);
    assert_int_equal(nbytes, 0);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof(want), "rendezvous key \"nccl-id\" did not appear in %s within 0.5 s",
             dir);
    tu_expect_in(tsrnn_last_error(), want);

    /* The deadline is the store's: later waits end at once, naming only what is missing,
     * while a key that is there is still read. A wait that started a deadline of its own
     * would return no sooner than the timeout, 0.5 s, later: no load makes that shorter, and
     * a wait that returns at once (no sleep) takes microseconds, so half a second of margin
     * fails only the first. */
    assert_int_equal(tsrnn_store_set(&store, "here", "1", 1), TSRNN_OK);
    const char *keys[] = { "here", "gone-1", "gone-2" };
    start = tsrnn_clock_now_s();
    assert_int_equal(tsrnn_store_wait(&store, keys, 3), TSRNN_ERR_COMM);
    assert_true(tsrnn_clock_now_s() - start < store.timeout_s);
    snprintf(want, sizeof(want), "rendezvous keys \"gone-1\", \"gone-2\" did not appear in %s",
             dir);
    tu_expect_in(tsrnn_last_error(), want);
    assert_null(strstr(tsrnn_last_error(), "\"here\""));
    assert_int_equal(tsrnn_store_wait(&store, keys, 1), TSRNN_OK);
    assert_int_equal(tsrnn_store_get(&store, "here", buf, sizeof(buf), &nbytes), TSRNN_OK);
    assert_int_equal(nbytes, 1);
    tsrnn_store_close(&store);
    tu_rmtree(dir);
    free(dir);
}

/* 4. refusals */

static void test_bad_keys(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    struct tsrnn_store store;
    open_store(&store, dir, 0.2);
    char too_long[TSRNN_STORE_KEY_MAX + 2];
    memset(too_long, 'k', sizeof(too_long) - 1);
    too_long[sizeof(too_long) - 1] = '\0';
    const char *bad[] = { "",        "a/b",    "/etc/passwd", "..",          "../x",  "a..b",
                          ".hidden", "sp ace", "tab\t",       "caf\xc3\xa9", too_long };
    char buf[8];
    size_t nbytes;
    bool found;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(tsrnn_store_set(&store, bad[i], "v", 1), TSRNN_ERR_USAGE);
        tu_expect_in(tsrnn_last_error(), "is not valid: a key is 1 to 128 characters");
        assert_int_equal(tsrnn_store_get(&store, bad[i], buf, sizeof(buf), &nbytes),
                         TSRNN_ERR_USAGE);
        assert_int_equal(tsrnn_store_has(&store, bad[i], &found), TSRNN_ERR_USAGE);
        const char *keys[] = { "fine", bad[i] };
        assert_int_equal(tsrnn_store_wait(&store, keys, 2), TSRNN_ERR_USAGE);
    }
    assert_int_equal(tsrnn_store_set(&store, "a/b", "v", 1), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "rendezvous key \"a/b\" is not valid");
    assert_int_equal(tsrnn_store_set(&store, NULL, "v", 1), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), "rendezvous key is NULL");
    assert_int_equal(tsrnn_store_set(&store, "k", NULL, 1), TSRNN_ERR_USAGE);
    /* Nothing was written by any of them. */
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        assert_true(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0);
    closedir(d);

    /* The longest key is fine, and so are the other characters. */
    too_long[TSRNN_STORE_KEY_MAX] = '\0';
    assert_int_equal(tsrnn_store_set(&store, too_long, "v", 1), TSRNN_OK);
    assert_int_equal(tsrnn_store_set(&store, "Gloo.rank_0-x", "v", 1), TSRNN_OK);
    assert_int_equal(tsrnn_store_has(&store, "Gloo.rank_0-x", &found), TSRNN_OK);
    assert_true(found);
    tsrnn_store_close(&store);
    tu_rmtree(dir);
    free(dir);
}

static void expect_open_refused(const char *rendezvous, double timeout_s, const char *needle)
{
    struct tsrnn_store store;
    assert_int_equal(tsrnn_store_open(&store, rendezvous, timeout_s), TSRNN_ERR_USAGE);
    tu_expect_in(tsrnn_last_error(), needle);
    tsrnn_store_close(&store); /* harmless after a failed open */
}

static void test_bad_open(void **state)
{
    (void)state;
    expect_open_refused(NULL, 1, "rendezvous none is not valid: the store takes \"file:<dir>\"");
    expect_open_refused("tcp:127.0.0.1:29500", 1, "rendezvous \"tcp:127.0.0.1:29500\" is not");
    expect_open_refused("file:", 1, "rendezvous \"file:\" is not valid");
    expect_open_refused("file:/nonexistent/tsrnn-rdv", 1,
                        "rendezvous folder /nonexistent/tsrnn-rdv does not exist");
    expect_open_refused("file:/tmp", 0, "timeout 0 s is not valid");
    expect_open_refused("file:/tmp", NAN, "timeout nan s is not valid");
    expect_open_refused("file:/tmp", INFINITY, "timeout inf s is not valid");
    tsrnn_store_close(NULL);
}

/* 5. NCCL's unique id (nccl_id.c) */

static int id_rank; /* the rank a child plays */

static enum tsrnn_status make_id(void *id, size_t nbytes, void *arg)
{
    (void)arg;
    assert_int_equal(nbytes, ID_NBYTES);
    fill_id(id, 42);
    return TSRNN_OK;
}

static enum tsrnn_status make_no_id(void *id, size_t nbytes, void *arg)
{
    (void)id, (void)nbytes, (void)arg;
    return tsrnn_error(TSRNN_ERR_COMM, "ncclGetUniqueId failed: no network interface");
}

static int id_child(const char *dir)
{
    char rendezvous[PATH_MAX + 8];
    snprintf(rendezvous, sizeof(rendezvous), "file:%s", dir);
    uint8_t got[ID_NBYTES], want[ID_NBYTES];
    memset(got, 0xff, sizeof(got));
    if (tsrnn_comm_nccl_id_exchange(got, sizeof(got), id_rank, rendezvous, 5, make_no_id, NULL) !=
        TSRNN_OK)
        return FAIL("rank %d: %s", id_rank, tsrnn_last_error());
    fill_id(want, 42);
    if (memcmp(got, want, ID_NBYTES) != 0)
        return FAIL("rank %d got another id than rank 0's", id_rank);
    return 0;
}

/* Ranks 1..3 (processes) wait for rank 0 (this one), which publishes after 0.3 s: every rank
 * ends with rank 0's 128 bytes, and only rank 0 made an id (the others' generator fails). */
static void test_nccl_id_reaches_every_rank(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    pid_t children[3];
    for (int r = 1; r <= 3; r++) {
        id_rank = r;
        children[r - 1] = start_child(id_child, dir);
    }
    sleep_s(0.3);
    char rendezvous[PATH_MAX + 8];
    snprintf(rendezvous, sizeof(rendezvous), "file:%s", dir);
    uint8_t id[ID_NBYTES], want[ID_NBYTES];
    assert_int_equal(tsrnn_comm_nccl_id_exchange(id, sizeof(id), 0, rendezvous, 5, make_id, NULL),
                     TSRNN_OK);
    fill_id(want, 42);
    assert_memory_equal(id, want, ID_NBYTES);
    for (int r = 1; r <= 3; r++)
        assert_int_equal(reap(children[r - 1], 10), 0);
    tu_rmtree(dir);
    free(dir);
}

/* Rank 0 never publishes: rank 1 gives up at its deadline, saying so. A value of another
 * size is refused; a failing generator on rank 0 publishes nothing. */
static void test_nccl_id_errors(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char rendezvous[PATH_MAX + 8], want[PATH_MAX + 160];
    snprintf(rendezvous, sizeof(rendezvous), "file:%s", dir);
    uint8_t id[ID_NBYTES];
    double start = tsrnn_clock_now_s();
    assert_int_equal(tsrnn_comm_nccl_id_exchange(id, sizeof(id), 1, rendezvous, 0.5, make_id, NULL),
                     TSRNN_ERR_COMM);
    double took = tsrnn_clock_now_s() - start;
    print_message("rank 1 gave up after %.3f s: %s\n", took, tsrnn_last_error());
    /* Its store's deadline is 0.5 s after an open that came after `start`: not sooner (but
     * for the rounding of two clock readings), and then without waiting on
     * (RETURN_AFTER_DEADLINE_S). */
    assert_true(took >= 0.5 - 1e-6);
    assert_true(took < 0.5 + RETURN_AFTER_DEADLINE_S);
    snprintf(want, sizeof(want),
             "rank 0 did not publish NCCL's unique id (key \"nccl-id\") in %s within 0.5 s: it "
             "died, is stalled, or never started",
             dir);
    tu_expect_in(tsrnn_last_error(), want);

    assert_int_equal(
        tsrnn_comm_nccl_id_exchange(id, sizeof(id), 0, rendezvous, 1, make_no_id, NULL),
        TSRNN_ERR_COMM);
    tu_expect_in(tsrnn_last_error(), "ncclGetUniqueId failed: no network interface");
    struct tsrnn_store store;
    open_store(&store, dir, 1);
    bool found = true;
    assert_int_equal(tsrnn_store_has(&store, "nccl-id", &found), TSRNN_OK);
    assert_false(found);

    const size_t sizes[] = { 16, 200 };
    for (size_t i = 0; i < 2; i++) {
        uint8_t other[200] = { 0 };
        assert_int_equal(tsrnn_store_set(&store, "nccl-id", other, sizes[i]), TSRNN_OK);
        assert_int_equal(
            tsrnn_comm_nccl_id_exchange(id, sizeof(id), 2, rendezvous, 1, make_id, NULL),
            TSRNN_ERR_COMM);
        snprintf(want, sizeof(want), "the NCCL unique id in %s has %zu bytes, not 128", dir,
                 sizes[i]);
        tu_expect_in(tsrnn_last_error(), want);
    }
    tsrnn_store_close(&store);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_between_processes),
        cmocka_unit_test(test_binary_and_empty_values),
        cmocka_unit_test(test_no_partial_values),
        cmocka_unit_test(test_missing_key_times_out),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_bad_open),
        cmocka_unit_test(test_nccl_id_reaches_every_rank),
        cmocka_unit_test(test_nccl_id_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
