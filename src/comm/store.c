/* The rendezvous store over a shared folder (store.h): one file per key, written to a
 * temporary file and renamed, read by polling.
 *
 * Why these choices:
 * - Polling, not inotify: inotify does not see other hosts' writes on NFS (Gloo's FileStore
 *   polls for the same reason). The first polls come after 1 ms, then twice as long each
 *   time up to 10 ms: a rendezvous reads keys one after another, and most of them are there
 *   already or arrive within a few milliseconds.
 * - No fsync: the files live as long as one attempt, and rename() alone makes a value appear
 *   whole to every reader; a crash of the machine ends the attempt anyway.
 * - Not Gloo's FileStore layout: FileStore names each file after std::hash of its key, which
 *   depends on the C++ library's version and cannot be computed from C. Gloo reads and writes
 *   through this store instead (gloo.cc's CStore), so there is one format, one key check and
 *   one deadline for every backend.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
    /* Room for '/', a key, and the temporary name's dot and ".XXXXXX". */
    PATH_EXTRA = TSRNN_STORE_KEY_MAX + 16,
    /* How much of the list of missing keys a message shows. */
    MISSING_NBYTES = 512,
};

#define FIRST_POLL_S 0.001
#define LAST_POLL_S  0.010

static bool key_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

static enum tsrnn_status check_key(const char *key)
{
    size_t len = key ? strnlen(key, TSRNN_STORE_KEY_MAX + 1) : 0;
    bool ok = len > 0 && len <= TSRNN_STORE_KEY_MAX && key[0] != '.' && !strstr(key, "..");
    for (size_t i = 0; ok && i < len; i++)
        ok = key_char_ok(key[i]);
    if (ok)
        return TSRNN_OK;
    if (!key)
        return tsrnn_error(TSRNN_ERR_USAGE, "rendezvous key is NULL");
    return tsrnn_error(TSRNN_ERR_USAGE,
                       "rendezvous key \"%.*s%s\" is not valid: a key is 1 to %d characters of "
                       "A-Z a-z 0-9 . _ -, not starting with '.' and without \"..\"",
                       TSRNN_STORE_KEY_MAX, key, len > TSRNN_STORE_KEY_MAX ? "..." : "",
                       TSRNN_STORE_KEY_MAX);
}

/* "<dir>/<key>" or, with `tmp`, "<dir>/.<key>.XXXXXX" (mkstemp's template). open() checked
 * the folder's length and check_key() the key's, so it fits; the check stays for safety. */
static enum tsrnn_status key_path(char *path, size_t path_nbytes, const struct tsrnn_store *store,
                                  const char *key, bool tmp)
{
    int n = snprintf(path, path_nbytes, tmp ? "%s/.%s.XXXXXX" : "%s/%s", store->dir, key);
    if (n < 0 || (size_t)n >= path_nbytes)
        return tsrnn_error(TSRNN_ERR_USAGE, "rendezvous key \"%s\" in %s: the path is too long",
                           key, store->dir);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_store_open(struct tsrnn_store *store, const char *rendezvous,
                                   double timeout_s)
{
    *store = (struct tsrnn_store){ 0 };
    if (!rendezvous || strncmp(rendezvous, "file:", 5) != 0 || rendezvous[5] == '\0')
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rendezvous %s%s%s is not valid: the store takes \"file:<dir>\", a "
                           "folder all ranks see",
                           rendezvous ? "\"" : "", rendezvous ? rendezvous : "none",
                           rendezvous ? "\"" : "");
    if (!(isfinite(timeout_s) && timeout_s > 0))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rendezvous timeout %g s is not valid: it must be finite and > 0",
                           timeout_s);
    const char *dir = rendezvous + 5;
    if (strlen(dir) + PATH_EXTRA >= sizeof(store->dir))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rendezvous folder %.64s... is too long: at most %zu characters", dir,
                           sizeof(store->dir) - PATH_EXTRA - 1);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rendezvous folder %s does not exist (the launcher creates it before "
                           "starting the ranks)",
                           dir);
    snprintf(store->dir, sizeof(store->dir), "%s", dir);
    store->timeout_s = timeout_s;
    store->deadline_s = tsrnn_clock_now_s() + timeout_s;
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_store_set(struct tsrnn_store *store, const char *key, const void *value,
                                  size_t nbytes)
{
    TSRNN_TRY(check_key(key));
    if (nbytes > 0 && !value)
        return tsrnn_error(TSRNN_ERR_USAGE, "rendezvous key \"%s\": %zu bytes from a NULL value",
                           key, nbytes);
    char path[PATH_MAX], tmp[PATH_MAX];
    TSRNN_TRY(key_path(path, sizeof(path), store, key, false));
    TSRNN_TRY(key_path(tmp, sizeof(tmp), store, key, true));
    /* mkstemp: a name no other writer of this key (another rank, another thread) uses. */
    int fd = mkstemp(tmp);
    if (fd < 0)
        return tsrnn_error_errno(TSRNN_ERR_IO, errno,
                                 "cannot write rendezvous key \"%s\" in %s: create of %s failed",
                                 key, store->dir, tmp);
    int err = 0;
    const char *step = "write";
    if (tsrnn_write_all(fd, value, nbytes, &err) == nbytes)
        err = 0;
    if (close(fd) != 0 && err == 0)
        err = errno, step = "close";
    if (err == 0 && rename(tmp, path) != 0)
        err = errno, step = "rename";
    if (err != 0) {
        unlink(tmp);
        return tsrnn_error_errno(TSRNN_ERR_IO, err,
                                 "cannot write rendezvous key \"%s\" in %s: %s of %s failed", key,
                                 store->dir, step, tmp);
    }
    return TSRNN_OK;
}

/* Whether the file of `key` exists; any error other than "not there" is TSRNN_ERR_IO. */
static enum tsrnn_status probe(const struct tsrnn_store *store, const char *key, bool *found)
{
    char path[PATH_MAX];
    TSRNN_TRY(key_path(path, sizeof(path), store, key, false));
    if (access(path, F_OK) == 0) {
        *found = true;
        return TSRNN_OK;
    }
    *found = false;
    if (errno == ENOENT)
        return TSRNN_OK;
    return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot read rendezvous key \"%s\" in %s", key,
                             store->dir);
}

enum tsrnn_status tsrnn_store_has(struct tsrnn_store *store, const char *key, bool *found)
{
    *found = false;
    TSRNN_TRY(check_key(key));
    return probe(store, key, found);
}

static void sleep_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    nanosleep(&ts, NULL); /* a signal cuts it short: the caller polls again, no harm */
}

/* The deadline has passed with keys[first..] not all there: TSRNN_ERR_COMM naming those
 * still missing. */
static enum tsrnn_status timed_out(const struct tsrnn_store *store, const char *const *keys,
                                   size_t count, size_t first)
{
    char list[MISSING_NBYTES];
    size_t used = 0, missing = 0;
    list[0] = '\0';
    for (size_t i = first; i < count; i++) {
        bool found;
        TSRNN_TRY(probe(store, keys[i], &found));
        if (found)
            continue;
        if (used < sizeof(list)) {
            int n = snprintf(list + used, sizeof(list) - used, "%s\"%s\"", missing ? ", " : "",
                             keys[i]);
            used += n > 0 ? (size_t)n : 0;
        }
        missing++;
    }
    if (missing == 0) /* they all came in the last moment */
        return TSRNN_OK;
    return tsrnn_error(TSRNN_ERR_COMM,
                       "rendezvous key%s %s%s did not appear in %s within %g s: the rank that "
                       "writes %s has not come, or failed before it could",
                       missing == 1 ? "" : "s", list, used >= sizeof(list) ? "..." : "", store->dir,
                       store->timeout_s, missing == 1 ? "it" : "them");
}

enum tsrnn_status tsrnn_store_wait(struct tsrnn_store *store, const char *const *keys, size_t count)
{
    for (size_t i = 0; i < count; i++)
        TSRNN_TRY(check_key(keys[i]));
    double poll_s = FIRST_POLL_S;
    size_t first = 0; /* keys[0..first) are there: files are never removed */
    for (;;) {
        bool found = true;
        while (first < count) {
            TSRNN_TRY(probe(store, keys[first], &found));
            if (!found)
                break;
            first++;
        }
        if (first == count)
            return TSRNN_OK;
        double left_s = store->deadline_s - tsrnn_clock_now_s();
        if (left_s <= 0)
            return timed_out(store, keys, count, first);
        sleep_s(fmin(poll_s, left_s));
        poll_s = fmin(2 * poll_s, LAST_POLL_S);
    }
}

/* Reads the whole file of `key`, which exists. */
static enum tsrnn_status read_value(const struct tsrnn_store *store, const char *key, void *buf,
                                    size_t capacity, size_t *nbytes)
{
    char path[PATH_MAX];
    TSRNN_TRY(key_path(path, sizeof(path), store, key, false));
    enum tsrnn_status status = TSRNN_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot read rendezvous key \"%s\" in %s",
                                   key, store->dir);
        goto out;
    }
    /* The file under fd never changes: a later set renames a new file over the name. */
    size_t size = (size_t)st.st_size;
    if (size > capacity) {
        *nbytes = size;
        status = tsrnn_error(TSRNN_ERR_COMM,
                             "rendezvous key \"%s\" in %s holds %zu bytes, more than the %zu "
                             "expected: another program or version wrote it",
                             key, store->dir, size, capacity);
        goto out;
    }
    size_t done = 0;
    while (done < size) {
        ssize_t n = read(fd, (char *)buf + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EIO; /* shorter than fstat said: not ours */
            status = tsrnn_error_errno(TSRNN_ERR_IO, err,
                                       "cannot read rendezvous key \"%s\" in %s (%zu of %zu bytes)",
                                       key, store->dir, done, size);
            goto out;
        }
        done += (size_t)n;
    }
    *nbytes = size;
out:
    if (fd >= 0)
        close(fd);
    return status;
}

enum tsrnn_status tsrnn_store_get(struct tsrnn_store *store, const char *key, void *buf,
                                  size_t capacity, size_t *nbytes)
{
    *nbytes = 0;
    if (capacity > 0 && !buf)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "rendezvous key \"%s\": read into a NULL buffer of %zu bytes",
                           key ? key : "(null)", capacity);
    TSRNN_TRY(tsrnn_store_wait(store, &key, 1));
    return read_value(store, key, buf, capacity, nbytes);
}

void tsrnn_store_close(struct tsrnn_store *store)
{
    if (store)
        *store = (struct tsrnn_store){ 0 };
}
