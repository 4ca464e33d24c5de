/* The workers' network, private to the job.
 *
 * Why: Debian's Gloo (0.0~git20220518, tcp transport, built without TLS) gives each pair of
 * ranks a listening socket on 127.0.0.1 and takes the first connection that comes to it. Any
 * local user who connects first (the ports are in /proc/net/tcp, which everyone may read)
 * takes a peer's place: it received the first 48 bytes of rank 0's broadcast, and the real
 * peer's connect was refused, so the launch failed. Gloo has no hook to check who connected,
 * and a check after the connection would still fail the launch. So the workers talk where
 * nobody else can reach them: a network namespace of the job's own, which holds only a
 * loopback interface and which every worker of every attempt joins before exec. Its 127.0.0.1
 * is not the machine's: no process outside can connect to it, whatever its uid. The launcher
 * itself stays in the machine's network.
 *
 * How, in order of preference:
 * - a network namespace alone, where the launcher may make one (CAP_SYS_ADMIN, as root): the
 *   workers keep every right they had;
 * - else inside a user namespace of the job's own, where the kernel lets users make one: the
 *   user's uid and gid map to themselves, so the workers' files belong to the user as before;
 *   the user namespace only gives the right to set up the network namespace it owns;
 * - else nothing: the launcher warns, once, and the workers share the machine's loopback as
 *   before (docs/distributed.md, "Who can reach the workers").
 *
 * A helper child makes the namespaces and the launcher keeps them open (/proc/<pid>/ns/...)
 * for the job, instead of unsharing itself: a step that fails halfway (a user namespace whose
 * uid map the kernel refuses, as Ubuntu's AppArmor policy does) would leave the launcher in a
 * namespace where it cannot even create files, and no process can go back to its parent user
 * namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job.h"

enum helper_step {
    STEP_DONE_NET,  /* a network namespace alone */
    STEP_DONE_USER, /* a user namespace and its network namespace */
    STEP_UNSHARE,
    STEP_UID_MAP,
    STEP_SETGROUPS,
    STEP_GID_MAP,
    STEP_LOOPBACK,
    STEP_OPEN,
};

static const char *const step_names[] = {
    [STEP_UNSHARE] = "unshare(CLONE_NEWUSER | CLONE_NEWNET)",
    [STEP_UID_MAP] = "write /proc/self/uid_map",
    [STEP_SETGROUPS] = "write /proc/self/setgroups",
    [STEP_GID_MAP] = "write /proc/self/gid_map",
    [STEP_LOOPBACK] = "bring up the loopback interface",
    [STEP_OPEN] = "open /proc/<helper>/ns",
};

struct helper_report {
    int step; /* enum helper_step */
    int errnum;
};

/* What the helper writes, prepared before fork(): its ids are unmapped (65534) once it is in
 * the new user namespace. */
struct id_maps {
    char uid[64], gid[64];
};

static bool write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t len = strlen(text);
    bool ok = write(fd, text, len) == (ssize_t)len;
    int err = errno;
    close(fd);
    errno = err;
    return ok;
}

/* A new network namespace starts with its loopback interface down; up, it has 127.0.0.1 and
 * ::1, as the machine's has. */
static bool loopback_up(void)
{
    struct ifreq ifr;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, "lo", 3);
    bool ok = ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
    ifr.ifr_flags |= IFF_UP;
    ok = ok && ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
    int err = errno;
    close(fd);
    errno = err;
    return ok;
}

/* The helper, between fork and _exit (the launcher is single-threaded, but it keeps to
 * system calls all the same): makes the namespaces, reports, and waits until the launcher
 * has opened them (`hold` reads end of file). */
static _Noreturn void helper(const struct id_maps *maps, int report_fd, int hold)
{
    struct helper_report r = { STEP_DONE_NET, 0 };
    if (unshare(CLONE_NEWNET) != 0) {
        r.step = STEP_UNSHARE;
        if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0)
            r.step = !write_file("/proc/self/uid_map", maps->uid)   ? STEP_UID_MAP
                     : !write_file("/proc/self/setgroups", "deny")  ? STEP_SETGROUPS
                     : !write_file("/proc/self/gid_map", maps->gid) ? STEP_GID_MAP
                                                                    : STEP_DONE_USER;
    }
    if (r.step <= STEP_DONE_USER && !loopback_up())
        r.step = STEP_LOOPBACK;
    r.errnum = r.step <= STEP_DONE_USER ? 0 : errno;
    if (write(report_fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(1);
    char byte;
    while (read(hold, &byte, 1) < 0 && errno == EINTR)
        ;
    _exit(0);
}

/* Opens the namespace `kind` ("net", "user") of process `pid`. */
static bool open_namespace(int *fd, pid_t pid, const char *kind)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/ns/%s", (long)pid, kind);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    return *fd >= 0;
}

enum tsrnn_status make_private_network(struct launch *l)
{
    struct id_maps maps;
    struct helper_report r = { STEP_UNSHARE, 0 };
    int report[2] = { -1, -1 }, hold[2] = { -1, -1 };
    enum tsrnn_status status = TSRNN_OK;

    l->userns_fd = l->netns_fd = -1;
    /* One worker talks to nobody. */
    if (l->count <= 1)
        return TSRNN_OK;
    snprintf(maps.uid, sizeof(maps.uid), "%ld %ld 1\n", (long)geteuid(), (long)geteuid());
    snprintf(maps.gid, sizeof(maps.gid), "%ld %ld 1\n", (long)getegid(), (long)getegid());
    if (pipe2(report, O_CLOEXEC) != 0 || pipe2(hold, O_CLOEXEC) != 0) {
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot make the workers' network: pipe");
        goto out;
    }
    pid_t pid = fork();
    if (pid < 0) {
        status = tsrnn_error_errno(TSRNN_ERR_IO, errno, "cannot make the workers' network: fork");
        goto out;
    }
    if (pid == 0) {
        close(report[0]);
        close(hold[1]);
        helper(&maps, report[1], hold[0]);
    }
    close(report[1]);
    report[1] = -1;
    ssize_t n;
    do
        n = read(report[0], &r, sizeof(r));
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(r))
        r = (struct helper_report){ STEP_UNSHARE, n < 0 ? errno : ECHILD };
    if (r.step <= STEP_DONE_USER &&
        ((r.step == STEP_DONE_USER && !open_namespace(&l->userns_fd, pid, "user")) ||
         !open_namespace(&l->netns_fd, pid, "net"))) {
        r = (struct helper_report){ STEP_OPEN, errno };
        close_private_network(l);
    }
    close(hold[1]); /* the helper may go */
    hold[1] = -1;
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (r.step > STEP_DONE_USER)
        fprintf(stderr,
                PROGRAM ": warning: no private network for the workers (%s: %s): any local user "
                        "can connect to their Gloo ports during the rendezvous and make the "
                        "launch fail; see docs/distributed.md#who-can-reach-the-workers\n",
                step_names[r.step], strerror(r.errnum));

out:
    for (int i = 0; i < 2; i++) {
        if (report[i] >= 0)
            close(report[i]);
        if (hold[i] >= 0)
            close(hold[i]);
    }
    return status;
}

void close_private_network(struct launch *l)
{
    if (l->userns_fd >= 0)
        close(l->userns_fd);
    if (l->netns_fd >= 0)
        close(l->netns_fd);
    l->userns_fd = l->netns_fd = -1;
}
