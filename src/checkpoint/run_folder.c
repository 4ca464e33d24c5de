/* The checkpoints of a run folder (include/tsrnn/checkpoint.h): their names as Darts'
 * ModelCheckpoint gives them, which one "last" and "best" mean (with what a crash between a
 * checkpoint's two names leaves), the repair of that, and the pruning of older ones. The
 * files themselves are checkpoint.c's. */
#include "tsrnn/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tsrnn/atomic_file.h"
#include "tsrnn/data.h" /* tsrnn_data_paths_expand: the files [data] path names */
#include "tsrnn/fs.h"

void tsrnn_checkpoint_name_last(char *out, size_t capacity, int64_t epoch)
{
    snprintf(out, capacity, "last-epoch=%" PRId64 ".safetensors", epoch);
}

void tsrnn_checkpoint_name_best(char *out, size_t capacity, int64_t epoch, const char *monitor,
                                double value)
{
    snprintf(out, capacity, "best-epoch=%" PRId64 "-%s=%.4f.safetensors", epoch, monitor, value);
}

/* The epoch of a checkpoint file name of kind `which` as tsrnn writes them
 * ("last-epoch=12.safetensors", "best-epoch=12-val_loss=0.0149.safetensors"), or -1 for any
 * other name: the epoch in decimal digits, without a sign, spaces or a leading zero, at most
 * what a checkpoint may hold (100000000). sscanf took "+12", " 12" and "007", and an epoch
 * past int64 was undefined behaviour that made the file the newest. */
static int64_t checkpoint_epoch(const char *name, const char *which)
{
    char prefix[16];
    size_t len = strlen(name);
    snprintf(prefix, sizeof(prefix), "%s-epoch=", which);
    if (strncmp(name, prefix, strlen(prefix)) != 0 || len < 12 ||
        strcmp(name + len - 12, ".safetensors") != 0)
        return -1;
    const char *start = name + strlen(prefix), *p = start;
    int64_t epoch = 0;
    for (; *p >= '0' && *p <= '9' && p - start < 10; p++)
        epoch = 10 * epoch + (*p - '0');
    if (p == start || (start[0] == '0' && p - start > 1) || epoch > 100000000)
        return -1;
    return *p == '.' || *p == '-' ? epoch : -1;
}

/* The newest checkpoint file of kind `which` in `checkpoint_dir`: its name in `name` (room
 * for 256 bytes) and its epoch, or -1 when there is none. */
static int64_t newest(const char *checkpoint_dir, const char *which, char *name)
{
    DIR *dir = opendir(checkpoint_dir);
    int64_t newest_epoch = -1;
    name[0] = '\0';
    if (dir == NULL)
        return -1;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        int64_t epoch = checkpoint_epoch(e->d_name, which);
        if (epoch > newest_epoch && strlen(e->d_name) < 256) {
            newest_epoch = epoch;
            strcpy(name, e->d_name);
        }
    }
    closedir(dir);
    return newest_epoch;
}

/* Whether the checkpoint at `path` is, by its own metadata, the best of its run so far
 * (the epoch it ends is its best_epoch, and was ranked: save_checkpoints' rule for a best
 * checkpoint), and then the name it has as one. Only the header is read: it is what
 * tsrnn_checkpoint_read() checks first anyway, and a damaged file is refused there. */
static bool is_own_best(const char *path, char *best_name, size_t capacity)
{
    FILE *f = fopen(path, "rb");
    unsigned char len_bytes[8];
    uint64_t header_nbytes = 0;
    bool best = false;
    if (f == NULL)
        return false;
    if (fread(len_bytes, 1, 8, f) == 8)
        for (int i = 7; i >= 0; i--)
            header_nbytes = header_nbytes << 8 | len_bytes[i];
    char *header =
        header_nbytes > 0 && header_nbytes <= 100000000u ? malloc((size_t)header_nbytes) : NULL;
    json_t *root = header != NULL && fread(header, 1, (size_t)header_nbytes, f) == header_nbytes
                       ? json_loadb(header, (size_t)header_nbytes, 0, NULL)
                       : NULL;
    fclose(f);
    free(header);
    json_t *meta = json_object_get(root, "__metadata__");
    const char *epoch_text = json_string_value(json_object_get(meta, "tsrnn.epoch")),
               *best_epoch_text = json_string_value(json_object_get(meta, "tsrnn.best_epoch")),
               *monitor = json_string_value(json_object_get(meta, "tsrnn.monitor")),
               *value_text = json_string_value(json_object_get(meta, "tsrnn.monitor_value")),
               *best_text = json_string_value(json_object_get(meta, "tsrnn.best_value"));
    int64_t epoch, best_epoch;
    if (epoch_text != NULL && best_epoch_text != NULL && monitor != NULL && value_text != NULL &&
        best_text != NULL && tsrnn_parse_int64(epoch_text, &epoch) &&
        tsrnn_parse_int64(best_epoch_text, &best_epoch) && epoch >= 0 && epoch == best_epoch &&
        (strcmp(monitor, "val_loss") == 0 || strcmp(monitor, "train_loss") == 0)) {
        double value = strtod(value_text, NULL), best_value = strtod(best_text, NULL);
        best = !isnan(value) && !isnan(best_value);
        if (best)
            tsrnn_checkpoint_name_best(best_name, capacity, epoch, monitor, best_value);
    }
    json_decref(root);
    return best;
}

/* The best checkpoint: the newest best-epoch=N file, unless the newest last-epoch=M (M > N,
 * or no best file at all) is itself the best by its metadata. That is what a run killed
 * between renaming last-epoch=M into place and linking best-epoch=M to it leaves behind:
 * the older best-epoch=N is then not the best any more. Its best-... name goes in
 * `best_name`. Returns the file's name (in `name`), or false when there is none. */
static bool find_best(const char *checkpoint_dir, char *name, char *best_name)
{
    char last[256], path[PATH_MAX];
    int64_t best_epoch = newest(checkpoint_dir, "best", name);
    int64_t last_epoch = newest(checkpoint_dir, "last", last);
    snprintf(best_name, 256, "%s", name);
    if (last_epoch > best_epoch &&
        (size_t)snprintf(path, sizeof(path), "%s/%s", checkpoint_dir, last) < sizeof(path) &&
        is_own_best(path, best_name, 256)) {
        strcpy(name, last);
        return true;
    }
    return best_epoch >= 0;
}

enum tsrnn_status tsrnn_checkpoint_locate(char *out, size_t capacity, const char *checkpoint_dir,
                                          const char *which)
{
    if (strcmp(which, "last") != 0 && strcmp(which, "best") != 0) {
        if ((size_t)snprintf(out, capacity, "%s", which) >= capacity)
            return tsrnn_error(TSRNN_ERR_USAGE, "checkpoint path too long: %s", which);
        return TSRNN_OK;
    }
    char name[256], best_name[256];
    bool found = strcmp(which, "best") == 0 ? find_best(checkpoint_dir, name, best_name)
                                            : newest(checkpoint_dir, "last", name) >= 0;
    if (!found)
        return tsrnn_error(TSRNN_ERR_USAGE,
                           "no %s checkpoint (%s-epoch=N*.safetensors) in %s; runs with [output] "
                           "save_checkpoints = true write them",
                           which, which, tsrnn_display_path(checkpoint_dir));
    if ((size_t)snprintf(out, capacity, "%s/%s", checkpoint_dir, name) >= capacity)
        return tsrnn_error(TSRNN_ERR_USAGE, "checkpoint path too long in %s", checkpoint_dir);
    return TSRNN_OK;
}

enum tsrnn_status tsrnn_checkpoint_read_run(struct tsrnn_checkpoint *ck, const char *run_dir,
                                            const char *which, bool fallback, bool *fell_back,
                                            const char *busy_hint)
{
    struct tsrnn_run_lock lock = { .fd = -1 };
    char dir[PATH_MAX], path[PATH_MAX];
    enum tsrnn_status status = TSRNN_OK;
    *fell_back = false;
    if (strcmp(which, "best") == 0 || strcmp(which, "last") == 0) {
        status = tsrnn_run_lock_acquire(&lock, run_dir, TSRNN_RUN_LOCK_SHARED);
        if (status == TSRNN_ERR_USAGE)
            tsrnn_error_append(status,
                               "; wait for it to end, or forecast from a copy of one of its "
                               "checkpoints%s",
                               busy_hint);
        if (status != TSRNN_OK)
            goto out;
    }
    if ((size_t)snprintf(dir, sizeof(dir), "%s/checkpoints", run_dir ? run_dir : ".") >=
        sizeof(dir)) {
        status = tsrnn_error(TSRNN_ERR_USAGE, "%s: the path is too long", run_dir);
        goto out;
    }
    status = tsrnn_checkpoint_locate(path, sizeof(path), dir, which);
    /* No best one: a run without validation, or an untrained one (max_steps = 0, an imported
     * model), has only its last checkpoint. */
    if (status != TSRNN_OK && fallback && strcmp(which, "best") == 0) {
        if (tsrnn_checkpoint_locate(path, sizeof(path), dir, "last") == TSRNN_OK) {
            tsrnn_error_clear();
            *fell_back = true;
            status = TSRNN_OK;
        } else { /* the message of the best one's search, not the last one's */
            status = tsrnn_checkpoint_locate(path, sizeof(path), dir, which);
        }
    }
    if (status != TSRNN_OK)
        goto out;
    status = tsrnn_checkpoint_read(ck, path);
out:
    tsrnn_run_lock_release(&lock);
    return status;
}

/* Copies `from` to `to` as an atomic file: a best checkpoint's bytes where the file system
 * has no hard links. */
static enum tsrnn_status copy_file(const char *from, const char *to)
{
    enum tsrnn_status status = TSRNN_OK;
    struct tsrnn_atomic_file af = { 0 };
    FILE *in = fopen(from, "rb");
    if (in == NULL) {
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot read %s", tsrnn_display_path(from));
        goto out;
    }
    status = tsrnn_atomic_file_open(&af, to);
    if (status != TSRNN_OK)
        goto out;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, af.file);
    if (ferror(in)) {
        status = tsrnn_error(TSRNN_ERR_IO, "cannot read %s", tsrnn_display_path(from));
        goto out;
    }
    status = tsrnn_atomic_file_commit(&af); /* frees af: the abort below does nothing */
out:
    tsrnn_atomic_file_abort(&af);
    if (in != NULL)
        fclose(in);
    return status;
}

enum tsrnn_status tsrnn_checkpoint_repair_best(const char *checkpoint_dir)
{
    char name[256], best_name[256], from[PATH_MAX], to[PATH_MAX];
    if (!find_best(checkpoint_dir, name, best_name))
        return TSRNN_OK;
    if (strcmp(name, best_name) != 0) {
        snprintf(from, sizeof(from), "%s/%s", checkpoint_dir, name);
        if ((size_t)snprintf(to, sizeof(to), "%s/%s", checkpoint_dir, best_name) >= sizeof(to))
            return tsrnn_error(TSRNN_ERR_IO, "checkpoint path too long in %s", checkpoint_dir);
        if (tsrnn_atomic_file_link(from, to) != TSRNN_OK) {
            tsrnn_error_clear();
            TSRNN_TRY(copy_file(from, to));
        }
        tsrnn_warn("%s is the best checkpoint so far but had no %s name (a run stopped between "
                   "writing the two): restored it",
                   tsrnn_display_path(from), best_name);
    }
    tsrnn_checkpoint_prune(checkpoint_dir, "best", best_name);
    return TSRNN_OK;
}

void tsrnn_checkpoint_prune(const char *checkpoint_dir, const char *which, const char *keep)
{
    DIR *dir = opendir(checkpoint_dir);
    if (dir == NULL)
        return;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(dir)) != NULL) {
        bool stale_tmp = strstr(e->d_name, ".safetensors.tmp.") != NULL;
        if (!stale_tmp && (checkpoint_epoch(e->d_name, which) < 0 || strcmp(e->d_name, keep) == 0))
            continue;
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", checkpoint_dir, e->d_name) >=
            sizeof(path))
            continue;
        if (unlink(path) != 0 && errno != ENOENT)
            tsrnn_warn("cannot remove the old checkpoint %s: %s", tsrnn_display_path(path),
                       strerror(errno));
    }
    closedir(dir);
}

void tsrnn_checkpoint_run_folder(const char *checkpoint, char *out, size_t capacity)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", checkpoint);
    char *slash = strrchr(dir, '/');
    if (slash == NULL) {
        snprintf(out, capacity, ".");
        return;
    }
    *slash = '\0';
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    if (strcmp(base, "checkpoints") == 0 && base == dir)
        snprintf(out, capacity, ".");
    else if (strcmp(base, "checkpoints") == 0)
        snprintf(out, capacity, "%.*s", base - dir > 1 ? (int)(base - dir - 1) : 1, dir);
    else
        snprintf(out, capacity, "%s", dir[0] != '\0' ? dir : "/");
}

/* Whether `path` (a file) lies inside the folder `dir`, both with their links resolved; "/"
 * holds everything and is no run folder. */
static bool lies_inside(const char *path, const char *dir)
{
    char real_path[PATH_MAX], real_dir[PATH_MAX];
    if (realpath(path, real_path) == NULL || realpath(dir, real_dir) == NULL)
        return false;
    size_t n = strlen(real_dir);
    return n > 1 && strncmp(real_path, real_dir, n) == 0 && real_path[n] == '/';
}

bool tsrnn_checkpoint_data_trusted(const struct tsrnn_checkpoint *ck, const char *run_dir)
{
    const char *data_path = ck->config.data_path;
    char ini[PATH_MAX + 16];
    snprintf(ini, sizeof(ini), "%s/config.ini", run_dir);
    struct tsrnn_config *own = calloc(1, sizeof(*own));
    bool named = false;
    if (own != NULL && tsrnn_config_init(own) == TSRNN_OK &&
        tsrnn_config_parse_file(own, ini) == TSRNN_OK)
        named = strcmp(own->data_path, data_path) == 0;
    free(own);
    tsrnn_error_clear();
    if (named)
        return true;
    struct tsrnn_data_paths paths = { 0 };
    bool inside = tsrnn_data_paths_expand(&paths, data_path, "the checkpoint") == TSRNN_OK;
    for (size_t i = 0; inside && i < paths.count; i++)
        inside = lies_inside(paths.paths[i], run_dir);
    tsrnn_data_paths_finish(&paths);
    tsrnn_error_clear();
    return inside;
}
