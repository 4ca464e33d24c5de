/* Files that tsrnn writes whole (src/core/atomic_file.c): what an existing target keeps — a
 * symbolic link is written through, a device, a pipe or an open file reached through /proc
 * is written in place, a folder is refused — and temporary files that nobody can plant
 * anything at: unpredictable names, created exclusively, never followed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tsrnn/atomic_file.h"

static void expect_message(const char *fragment)
{
    if (strstr(tsrnn_last_error(), fragment) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", tsrnn_last_error(), fragment);
}

/* The names in `dir`, sorted, one space between them. */
static char *listing(const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    assert_true(n >= 0);
    char *out = calloc(4096, 1);
    assert_non_null(out);
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            if (out[0] != '\0')
                strcat(out, " ");
            strcat(out, names[i]->d_name);
        }
        free(names[i]);
    }
    free(names);
    return out;
}

static void expect_listing(const char *dir, const char *expected)
{
    char *names = listing(dir);
    assert_string_equal(names, expected);
    free(names);
}

static void expect_file(const char *path, const char *text)
{
    char *have = tu_read(path);
    if (have == NULL)
        fail_msg("cannot read %s", path);
    assert_string_equal(have, text);
    free(have);
}

/* Writes `text` to `path` through an atomic file. */
static enum tsrnn_status write_text(const char *path, const char *text)
{
    struct tsrnn_atomic_file af;
    enum tsrnn_status status = tsrnn_atomic_file_open(&af, path);
    if (status != TSRNN_OK)
        return status;
    fputs(text, af.file);
    return tsrnn_atomic_file_commit(&af);
}

static char *join(const char *dir, const char *name)
{
    char *path;
    assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
    return path;
}

/* --- 1. an existing target keeps what it is ------------------------------------------- */

/* A link to a regular file: the file behind it gets the new bytes (replaced atomically, in
 * its own folder), the link stays a link; also through a chain of links and into another
 * folder. */
static void test_symlink_is_written_through(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), *sub = join(dir, "elsewhere");
    assert_int_equal(mkdir(sub, 0700), 0);
    char *real = join(sub, "real.csv"), *link = join(dir, "link.csv"),
         *chain = join(dir, "chain.csv");
    tu_write(sub, "real.csv", "old\n");
    assert_int_equal(symlink("elsewhere/real.csv", link), 0);
    assert_int_equal(symlink(link, chain), 0); /* absolute, to the first link */

    assert_int_equal(write_text(link, "new\n"), TSRNN_OK);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    expect_file(real, "new\n");
    assert_int_equal(write_text(chain, "newer\n"), TSRNN_OK);
    assert_int_equal(lstat(chain, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    expect_file(real, "newer\n");
    /* No temporary file left on either side. */
    expect_listing(dir, "chain.csv elsewhere link.csv");
    expect_listing(sub, "real.csv");

    /* A link to nothing yet: the file is made where it points. */
    char *dangling = join(dir, "dangling.csv");
    assert_int_equal(symlink("elsewhere/made.csv", dangling), 0);
    assert_int_equal(write_text(dangling, "made\n"), TSRNN_OK);
    assert_int_equal(lstat(dangling, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    char *made = join(sub, "made.csv");
    expect_file(made, "made\n");

    /* A link to /dev/null stays one, and /dev/null stays a device. */
    char *null_link = join(dir, "null.csv");
    assert_int_equal(symlink("/dev/null", null_link), 0);
    assert_int_equal(write_text(null_link, "gone\n"), TSRNN_OK);
    assert_int_equal(lstat(null_link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    expect_listing(dir, "chain.csv dangling.csv elsewhere link.csv null.csv");

    tu_rmtree(dir);
    free(made);
    free(dangling);
    free(null_link);
    free(real);
    free(link);
    free(chain);
    free(sub);
    free(dir);
}

/* A pipe (FIFO) and a character device are written in place: a reader gets the bytes, the
 * node stays what it was. */
static void test_special_files_are_written_in_place(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), *fifo = join(dir, "fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* A reader first, so that opening the FIFO for writing does not wait. */
    int reader = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(reader >= 0);
    assert_int_equal(write_text(fifo, "through the pipe\n"), TSRNN_OK);
    char buf[64] = "";
    assert_int_equal(read(reader, buf, sizeof(buf) - 1), 17);
    assert_string_equal(buf, "through the pipe\n");
    close(reader);
    struct stat st;
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));

    /* A null device of our own (needs CAP_MKNOD: root in most containers). */
    char *null = join(dir, "null");
    if (mknod(null, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        assert_int_equal(write_text(null, "nothing\n"), TSRNN_OK);
        assert_int_equal(lstat(null, &st), 0);
        assert_true(S_ISCHR(st.st_mode));
    } else {
        printf("# mknod: %s: the device node case is skipped\n", strerror(errno));
    }
    expect_listing(dir, access(null, F_OK) == 0 ? "fifo null" : "fifo");
    tu_rmtree(dir);
    free(null);
    free(fifo);
    free(dir);
}

/* /dev/stdout, /dev/fd/N and /proc/self/fd/N name an open file, not a place: the bytes are
 * appended to it (`>>` stays an append), nothing is created or replaced. */
static void test_open_files_via_proc_are_written_in_place(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    char path[64], buf[64] = "";
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[1]);
    assert_int_equal(write_text(path, "to the pipe\n"), TSRNN_OK);
    assert_int_equal(read(fds[0], buf, sizeof(buf) - 1), 12);
    assert_string_equal(buf, "to the pipe\n");
    close(fds[0]);
    close(fds[1]);

    char *dir = tu_mkdtemp(), *log = join(dir, "log.csv");
    tu_write(dir, "log.csv", "head\n");
    int fd = open(log, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    struct stat before, after;
    assert_int_equal(stat(log, &before), 0);
    snprintf(path, sizeof(path), "/dev/fd/%d", fd);
    assert_int_equal(write_text(path, "tail\n"), TSRNN_OK);
    expect_file(log, "head\ntail\n");
    assert_int_equal(stat(log, &after), 0);
    assert_true(before.st_ino == after.st_ino); /* the same file, not a new one */
    expect_listing(dir, "log.csv");
    close(fd);
    tu_rmtree(dir);
    free(log);
    free(dir);
}

/* A folder (and a block device) is refused before anything is created. */
static void test_folders_are_refused(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), *sub = join(dir, "sub");
    assert_int_equal(mkdir(sub, 0700), 0);
    struct tsrnn_atomic_file af;
    assert_int_equal(tsrnn_atomic_file_open(&af, sub), TSRNN_ERR_IO);
    expect_message("sub: it is a folder");
    char *disk = join(dir, "disk");
    if (mknod(disk, S_IFBLK | 0600, makedev(7, 0)) == 0) {
        assert_int_equal(tsrnn_atomic_file_open(&af, disk), TSRNN_ERR_IO);
        expect_message("disk: it is a block device");
        struct stat st;
        assert_int_equal(lstat(disk, &st), 0);
        assert_true(S_ISBLK(st.st_mode));
        unlink(disk);
    }
    expect_listing(dir, "sub");
    tu_rmtree(dir);
    free(disk);
    free(sub);
    free(dir);
}

/* A link that another user planted in a sticky world-writable folder (/tmp) is not followed,
 * as the kernel refuses it to open() (fs.protected_symlinks): the file it points at keeps its
 * bytes. Needs root (to make a link owned by someone else) and the sysctl. */
static void test_planted_link_in_sticky_folder_is_refused(void **state)
{
    (void)state;
    char *setting = tu_read("/proc/sys/fs/protected_symlinks");
    bool on = setting != NULL && setting[0] == '1';
    free(setting);
    if (geteuid() != 0 || !on) {
        printf("# needs root and fs.protected_symlinks = 1: skipped\n");
        skip();
    }
    char *dir = tu_mkdtemp(), *shared = join(dir, "shared"), *victim = join(dir, "victim");
    assert_int_equal(mkdir(shared, 0777), 0);
    assert_int_equal(chmod(shared, 01777), 0);
    tu_write(dir, "victim", "precious\n");
    char *link = join(shared, "forecast.csv");
    assert_int_equal(symlink(victim, link), 0);
    assert_int_equal(lchown(link, 65534, 65534), 0);
    assert_int_equal(write_text(link, "overwritten\n"), TSRNN_ERR_IO);
    expect_message("forecast.csv: Permission denied");
    expect_file(victim, "precious\n");
    expect_listing(shared, "forecast.csv");
    tu_rmtree(dir);
    free(link);
    free(victim);
    free(shared);
    free(dir);
}

/* --- 2. temporary files -------------------------------------------------------------- */

/* Another user plants links where a temporary file of a predictable name would go
 * (config.ini.tmp.<pid>, the hard link's best.tmp.<pid>): nothing is written through them,
 * config.ini becomes a regular file holding what was written, and the link is made. */
static void test_planted_temporaries_are_never_followed(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), *victim = join(dir, "victim"), *config = join(dir, "config.ini");
    tu_write(dir, "victim", "precious\n");
    char planted[PATH_MAX];
    snprintf(planted, sizeof(planted), "%s.tmp.%ld", config, (long)getpid());
    assert_int_equal(symlink(victim, planted), 0);

    assert_int_equal(write_text(config, "[data]\n"), TSRNN_OK);
    expect_file(victim, "precious\n");
    struct stat st;
    assert_int_equal(lstat(config, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    expect_file(config, "[data]\n");

    /* The hard link best = config.ini, past a file planted at best.tmp.<pid>. */
    char *best = join(dir, "best"), planted_link[PATH_MAX];
    snprintf(planted_link, sizeof(planted_link), "%s.tmp.%ld", best, (long)getpid());
    assert_int_equal(symlink(victim, planted_link), 0);
    assert_int_equal(tsrnn_atomic_file_link(config, best), TSRNN_OK);
    struct stat a;
    assert_int_equal(stat(best, &a), 0);
    assert_true(a.st_ino == st.st_ino);
    expect_file(victim, "precious\n");
    tu_rmtree(dir);
    free(best);
    free(victim);
    free(config);
    free(dir);
}

/* A commit that leaves the folder unsynced still puts the whole file under its name, and the
 * folder syncs afterwards; a missing folder's sync is an error that names the path. */
static void test_unsynced_commit_then_folder_sync(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), *path = join(dir, "last.safetensors");
    struct tsrnn_atomic_file af;
    assert_int_equal(tsrnn_atomic_file_open(&af, path), TSRNN_OK);
    fputs("weights\n", af.file);
    assert_int_equal(tsrnn_atomic_file_commit_unsynced(&af), TSRNN_OK);
    expect_file(path, "weights\n");
    assert_int_equal(tsrnn_atomic_file_sync_folder(path), TSRNN_OK);

    char *gone = join(dir, "missing/last.safetensors");
    assert_int_equal(tsrnn_atomic_file_sync_folder(gone), TSRNN_ERR_IO);
    tu_expect_in(tsrnn_last_error(), "missing/last.safetensors: syncing its folder failed");
    tu_expect_in(tsrnn_last_error(), "No such file or directory");
    tu_rmtree(dir);
    free(gone);
    free(path);
    free(dir);
}

/* Two writers of one file at once get different temporary names, which do not end in the
 * writer's pid. */
static void test_temporary_names_are_unpredictable(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), *path = join(dir, "metrics.csv"), pid_name[PATH_MAX];
    snprintf(pid_name, sizeof(pid_name), "%s.tmp.%ld", path, (long)getpid());
    struct tsrnn_atomic_file a, b;
    assert_int_equal(tsrnn_atomic_file_open(&a, path), TSRNN_OK);
    assert_int_equal(tsrnn_atomic_file_open(&b, path), TSRNN_OK);
    assert_non_null(a.tmp);
    assert_non_null(b.tmp);
    assert_string_not_equal(a.tmp, b.tmp);
    assert_string_not_equal(a.tmp, pid_name);
    assert_string_not_equal(b.tmp, pid_name);
    printf("# temporary names: %s, %s\n", strrchr(a.tmp, '/') + 1, strrchr(b.tmp, '/') + 1);
    fputs("a\n", a.file);
    fputs("b\n", b.file);
    assert_int_equal(tsrnn_atomic_file_commit(&a), TSRNN_OK);
    assert_int_equal(tsrnn_atomic_file_commit(&b), TSRNN_OK);
    expect_file(path, "b\n");
    expect_listing(dir, "metrics.csv");
    tu_rmtree(dir);
    free(path);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symlink_is_written_through),
        cmocka_unit_test(test_special_files_are_written_in_place),
        cmocka_unit_test(test_open_files_via_proc_are_written_in_place),
        cmocka_unit_test(test_folders_are_refused),
        cmocka_unit_test(test_planted_link_in_sticky_folder_is_refused),
        cmocka_unit_test(test_planted_temporaries_are_never_followed),
        cmocka_unit_test(test_temporary_names_are_unpredictable),
        cmocka_unit_test(test_unsynced_commit_then_folder_sync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
