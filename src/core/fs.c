/* File system helpers (include/tsrnn/fs.h). */
#include "tsrnn/fs.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum tsrnn_status tsrnn_make_dirs(const char *path)
{
    char partial[PATH_MAX];
    size_t len = strlen(path);

    if (len >= sizeof(partial))
        return tsrnn_error(TSRNN_ERR_IO, "path too long: %s", path);
    memcpy(partial, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (partial[i] != '/' && partial[i] != '\0')
            continue;
        char saved = partial[i];
        partial[i] = '\0';
        if (mkdir(partial, 0777) != 0 && errno != EEXIST)
            return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot create the folder %s",
                                     tsrnn_display_path(partial));
        partial[i] = saved;
    }
    return TSRNN_OK;
}

static char failed_path[PATH_MAX];
static int failed_errno;

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    int rc = type == FTW_DP ? rmdir(path) : unlink(path);
    if (rc != 0 && errno != ENOENT) {
        failed_errno = errno;
        snprintf(failed_path, sizeof(failed_path), "%s", path);
        return 1;
    }
    return 0;
}

enum tsrnn_status tsrnn_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 && errno == ENOENT)
        return TSRNN_OK;
    failed_errno = 0;
    /* Depth first (contents before their folder), physical (a link is removed, not
     * followed), on this file system only. */
    int rc = nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    if (rc == 0)
        return TSRNN_OK;
    if (failed_errno != 0)
        return tsrnn_error_errno(TSRNN_ERR_IO, failed_errno, "cannot remove %s",
                                 tsrnn_display_path(failed_path));
    return tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot walk %s", tsrnn_display_path(path));
}

bool tsrnn_folder_holds(const char *path, const char *needle)
{
    DIR *dir = opendir(path);
    if (dir == NULL)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(dir)) != NULL)
        found = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                strstr(e->d_name, needle) != NULL;
    closedir(dir);
    return found;
}
