/* Whole writes to a file descriptor (include/tsrnn/core.h). */
#include "tsrnn/core.h"

#include <errno.h>
#include <unistd.h>

size_t tsrnn_write_all(int fd, const void *data, size_t nbytes, int *err)
{
    const char *bytes = data;
    size_t done = 0;
    while (done < nbytes) {
        ssize_t n = write(fd, bytes + done, nbytes - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* a write of 0 bytes makes no progress: treat it as a full disk */
            *err = n < 0 ? errno : ENOSPC;
            break;
        }
        done += (size_t)n;
    }
    return done;
}
