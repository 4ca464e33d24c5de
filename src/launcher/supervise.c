/* Supervising the workers of an attempt, after torch.multiprocessing.spawn and torchrun
 * (reference/distributed.md A1): the first worker that fails makes the launcher SIGTERM the
 * others and SIGKILL them after a grace period; SIGINT/SIGTERM/SIGHUP are forwarded once,
 * a second one kills. An attempt ends once every worker is reaped and its pipes are drained,
 * and is then reported: which rank failed first, and how. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "job.h"

static bool any_alive(const struct launch *l)
{
    for (int r = 0; r < l->count; r++)
        if (l->workers[r].alive)
            return true;
    return false;
}

static bool exited_with(int status, int code)
{
    return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

static bool sent_by_launcher(const struct worker *w, int sig)
{
    return sig > 0 && sig < 32 && (w->sent & (1u << sig)) != 0;
}

/* "exit code 3 (a peer failed)", "killed by signal 9 (SIGKILL)". */
static void describe_exit(char *out, size_t capacity, int status)
{
    if (WIFEXITED(status)) {
        int code = WEXITSTATUS(status);
        const char *meaning = code == TSRNN_EXIT_USAGE         ? " (usage or config error)"
                              : code == TSRNN_EXIT_PEER        ? " (a peer failed)"
                              : code == TSRNN_EXIT_INTERRUPTED ? " (interrupted)"
                              : code == 126 || code == 127     ? " (the program could not run)"
                                                               : "";
        snprintf(out, capacity, "exit code %d%s", code, meaning);
        return;
    }
    int sig = WTERMSIG(status);
    const char *abbrev = sigabbrev_np(sig);
    snprintf(out, capacity, "killed by signal %d (SIG%s)%s", sig, abbrev ? abbrev : "?",
             WCOREDUMP(status) ? ", core dumped" : "");
}

/* The launcher's exit code for a failure that caused a job to stop (README "Exit codes"). */
static int failure_exit_code(int status)
{
    if (!WIFEXITED(status) || WEXITSTATUS(status) == TSRNN_EXIT_PEER)
        return TSRNN_EXIT_PEER;
    if (WEXITSTATUS(status) == TSRNN_EXIT_USAGE)
        return TSRNN_EXIT_USAGE;
    return TSRNN_EXIT_RUNTIME;
}

/* Exit code 3 ("a peer failed") usually follows another rank's death: it is a cause only
 * when nothing else failed. */
static bool primary_failure(const struct worker *w)
{
    return !exited_with(w->wait_status, TSRNN_EXIT_PEER);
}

static void signal_worker(struct worker *w, int sig)
{
    if (!w->alive || sent_by_launcher(w, sig))
        return;
    w->sent |= 1u << sig;
    /* Its whole process group: a wrapper script's children go too. */
    if (kill(-w->pid, sig) != 0)
        kill(w->pid, sig);
}

static void signal_all(struct launch *l, int sig)
{
    for (int r = 0; r < l->count; r++)
        signal_worker(&l->workers[r], sig);
}

static void set_kill_deadline(struct launch *l, double at, const char *reason)
{
    if (l->kill_at != 0 && l->kill_at <= at)
        return;
    l->kill_at = at;
    l->kill_from = tsrnn_clock_now_s();
    snprintf(l->kill_reason, sizeof(l->kill_reason), "%s", reason);
}

/* Ends an attempt (or a failed start): SIGKILLs and reaps whatever still runs, the workers
 * and anything they left in their process groups (the launcher is the subreaper of those),
 * waiting at most a second for the leftovers; then closes the pipes and logs. No orphan, no
 * zombie. */
void end_attempt(struct launch *l)
{
    double until = tsrnn_clock_now_s() + 1.0;
    bool left = true;

    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        if (w->alive) {
            signal_worker(w, SIGKILL);
            while (waitpid(w->pid, &w->wait_status, 0) < 0 && errno == EINTR)
                ;
            w->alive = false;
        } else if (w->pid > 0 && kill(-w->pid, 0) == 0) {
            kill(-w->pid, SIGKILL);
        }
    }
    while (left) {
        struct timespec pause = { .tv_nsec = 10 * 1000 * 1000 };
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        left = false;
        for (int r = 0; r < l->count; r++)
            left = left || (l->workers[r].pid > 0 && kill(-l->workers[r].pid, 0) == 0);
        if (left && tsrnn_clock_now_s() < until)
            nanosleep(&pause, NULL);
        else
            break;
    }
    for (int r = 0; r < l->count; r++) {
        close_stream(&l->workers[r].out);
        close_stream(&l->workers[r].err);
    }
    close_stream(&l->report_stream);
    close_logs(l);
}

/* The state letter of /proc/<pid>/stat ('R' running, 'S' sleeping, 'T' stopped, ...), or 0. */
static char process_state(pid_t pid)
{
    char path[64], text[512];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t len = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[len] = '\0';
    const char *paren = strrchr(text, ')'); /* the command name may hold spaces or ')' */
    return paren != NULL && paren[1] == ' ' ? paren[2] : 0;
}

/* A peer's timeout (exit code 3 while the others still run) points at a rank that stopped
 * answering: keep what each live worker was doing, for finish_attempt(). */
static void note_states(struct launch *l)
{
    for (int r = 0; r < l->count; r++)
        if (l->workers[r].alive)
            l->workers[r].state_at_failure = process_state(l->workers[r].pid);
}

static void on_worker_exit(struct launch *l, struct worker *w, int status)
{
    double now = tsrnn_clock_now_s();
    char how[96];

    w->alive = false;
    w->wait_status = status;
    if (exited_with(status, TSRNN_EXIT_OK))
        return;
    if (exited_with(status, TSRNN_EXIT_INTERRUPTED)) {
        /* Not a failure: someone stopped this worker, and the ranks agree on the step to stop
         * at, so the others follow within one collective's timeout. */
        if (!l->terminating && l->kill_at == 0 && any_alive(l)) {
            char reason[64];
            snprintf(reason, sizeof(reason), "rank %d stopped", w->rank);
            fprintf(stderr,
                    PROGRAM ": rank %d (pid %ld) was interrupted (exit code 130): waiting up to "
                            "%.0f s for the other workers to stop\n",
                    w->rank, (long)w->pid, l->cfg->timeout_s + STOP_EXTRA_S);
            set_kill_deadline(l, now + l->cfg->timeout_s + STOP_EXTRA_S, reason);
        }
        return;
    }
    if (WIFSIGNALED(status) && sent_by_launcher(w, WTERMSIG(status)))
        return;
    w->failure_order = ++l->failures;
    if (l->failures > 1 || !any_alive(l))
        return;
    if (exited_with(status, TSRNN_EXIT_PEER))
        note_states(l);
    describe_exit(how, sizeof(how), status);
    fprintf(stderr, PROGRAM ": rank %d (pid %ld): %s", w->rank, (long)w->pid, how);
    if (l->terminating)
        fprintf(stderr, "\n");
    else
        fprintf(stderr, "; stopping the other workers (SIGTERM, SIGKILL after %.0f s)\n", GRACE_S);
    signal_all(l, SIGTERM);
    l->terminating = true;
    set_kill_deadline(l, now + GRACE_S, "SIGTERM");
}

static void reap(struct launch *l)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (int r = 0; r < l->count; r++)
            if (l->workers[r].alive && l->workers[r].pid == pid) {
                on_worker_exit(l, &l->workers[r], status);
                break;
            }
}

static void on_interrupt(struct launch *l)
{
    l->interrupts++;
    if (!any_alive(l))
        return;
    if (l->interrupts > 1) {
        fprintf(stderr, PROGRAM ": interrupted again: killing the workers (SIGKILL)\n");
        signal_all(l, SIGKILL);
        l->kill_at = 0;
        return;
    }
    if (l->terminating) {
        fprintf(stderr, PROGRAM ": interrupted: the workers are already being stopped (a second "
                                "interrupt kills them)\n");
        return;
    }
    fprintf(stderr, PROGRAM ": interrupted: asking the workers to stop at the next step (rank 0 "
                            "writes a checkpoint)\n");
    signal_all(l, SIGTERM);
    l->terminating = true;
    set_kill_deadline(l, tsrnn_clock_now_s() + l->cfg->timeout_s + STOP_EXTRA_S, "the interrupt");
}

void read_signals(struct launch *l)
{
    struct signalfd_siginfo si;
    while (read(l->opt->signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
        if (si.ssi_signo != SIGCHLD)
            on_interrupt(l);
}

static void kill_stragglers(struct launch *l, double now)
{
    for (int r = 0; r < l->count; r++) {
        struct worker *w = &l->workers[r];
        if (!w->alive)
            continue;
        fprintf(stderr, PROGRAM ": rank %d (pid %ld) still running %.1f s after %s: SIGKILL\n",
                w->rank, (long)w->pid, now - l->kill_from, l->kill_reason);
        signal_worker(w, SIGKILL);
    }
    l->kill_at = 0;
}

static void poll_add(struct launch *l, int *n, struct stream *s, struct worker *w)
{
    if (s->fd < 0)
        return;
    l->pollfds[*n] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
    l->poll_streams[*n] = s;
    l->poll_workers[*n] = w;
    (*n)++;
}

/* The one loop of an attempt: signals, pipes and exits, until every worker is reaped and
 * its pipes are drained. Each wait is bounded: by a second while the workers run, by the
 * SIGKILL deadline while they stop, by DRAIN_S once they are gone. */
void supervise(struct launch *l)
{
    for (;;) {
        double now = tsrnn_clock_now_s();
        int n = 0;

        if (l->kill_at > 0 && now >= l->kill_at)
            kill_stragglers(l, now);
        l->pollfds[n++] = (struct pollfd){ .fd = l->opt->signal_fd, .events = POLLIN };
        poll_add(l, &n, &l->report_stream, &l->workers[0]);
        for (int r = 0; r < l->count; r++) {
            poll_add(l, &n, &l->workers[r].out, &l->workers[r]);
            poll_add(l, &n, &l->workers[r].err, &l->workers[r]);
        }
        if (!any_alive(l)) {
            if (n == 1)
                return;
            if (l->drain_until == 0)
                l->drain_until = now + DRAIN_S;
            if (now >= l->drain_until) {
                abandon_streams(l);
                return;
            }
        }

        double until = now + 1.0;
        if (l->kill_at > 0 && l->kill_at < until)
            until = l->kill_at;
        if (l->drain_until > 0 && l->drain_until < until)
            until = l->drain_until;
        int timeout_ms = until > now ? (int)((until - now) * 1000.0) + 1 : 0;
        if (poll(l->pollfds, (nfds_t)n, timeout_ms) < 0 && errno != EINTR) {
            struct timespec pause = { .tv_nsec = 100 * 1000 * 1000 };
            nanosleep(&pause, NULL); /* never spin on a persistent poll() error */
        }
        for (int i = 0; i < n; i++) {
            if ((l->pollfds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0)
                continue;
            if (i == 0)
                read_signals(l);
            else if (l->poll_streams[i]->fd >= 0)
                read_stream(l, l->poll_workers[i], l->poll_streams[i]);
        }
        reap(l);
    }
}

/* Reports how the attempt ended; returns the launcher's exit code for it. A failure names
 * its cause: the first failure that is not a consequence of another (exit code 3, "a peer
 * failed", is one when anything else failed). */
int finish_attempt(struct launch *l, bool *restartable)
{
    const struct worker *cause = NULL, *first = NULL;
    char how[96];

    *restartable = false;
    if (l->failures == 0) {
        for (int r = 0; r < l->count; r++)
            if (!exited_with(l->workers[r].wait_status, TSRNN_EXIT_OK))
                return TSRNN_EXIT_INTERRUPTED;
        return TSRNN_EXIT_OK;
    }
    for (int order = 1; order <= l->failures; order++)
        for (int r = 0; r < l->count; r++) {
            const struct worker *w = &l->workers[r];
            if (w->failure_order != order)
                continue;
            first = first ? first : w;
            cause = cause ? cause : primary_failure(w) ? w : NULL;
        }
    /* Only peers' timeouts: the rank they waited for is the one that neither answered them
     * nor stopped on SIGTERM (the launcher had to SIGKILL it). */
    const struct worker *silent = NULL;
    for (int r = 0; cause == NULL && silent == NULL && r < l->count; r++) {
        const struct worker *w = &l->workers[r];
        if (w->failure_order == 0 && WIFSIGNALED(w->wait_status) &&
            WTERMSIG(w->wait_status) == SIGKILL && sent_by_launcher(w, SIGKILL))
            silent = w;
    }
    cause = cause ? cause : first;
    if (silent != NULL) {
        char state[64] = "";
        if (silent->state_at_failure == 'T' || silent->state_at_failure == 't')
            snprintf(state, sizeof(state), "; it was in state %c (stopped%s)",
                     silent->state_at_failure,
                     silent->state_at_failure == 't' ? " by a debugger" : ", e.g. SIGSTOP");
        else if (silent->state_at_failure != 0)
            snprintf(state, sizeof(state), "; it was in state %c", silent->state_at_failure);
        fprintf(stderr,
                PROGRAM ": rank %d (pid %ld) stopped answering: rank %d timed out waiting for it "
                        "(timeout_s %g), and it did not stop on SIGTERM%s\n",
                silent->rank, (long)silent->pid, first->rank, l->cfg->timeout_s, state);
        print_tail(silent);
        cause = NULL; /* every failure below is a consequence */
    } else {
        describe_exit(how, sizeof(how), cause->wait_status);
        fprintf(stderr, PROGRAM ": rank %d (pid %ld) failed: %s\n", cause->rank, (long)cause->pid,
                how);
        print_tail(cause);
    }
    for (int order = 1; order <= l->failures; order++)
        for (int r = 0; r < l->count; r++) {
            const struct worker *w = &l->workers[r];
            if (w->failure_order != order || w == cause)
                continue;
            describe_exit(how, sizeof(how), w->wait_status);
            fprintf(stderr, PROGRAM ": rank %d (pid %ld) also failed: %s\n", w->rank, (long)w->pid,
                    how);
        }
    int code = silent != NULL ? TSRNN_EXIT_PEER : failure_exit_code(cause->wait_status);
    /* A usage or config error would only fail again. */
    *restartable = code != TSRNN_EXIT_USAGE && l->interrupts == 0;
    return code;
}
