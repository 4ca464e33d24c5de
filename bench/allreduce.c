/* The allreduce of one data-parallel step on this machine, apart from any training: two
 * forked ranks on 127.0.0.1 allreduce the buffer of an LSTM-256 step (265,475 floats: its
 * 265,473 parameters' gradients, the loss and the stop flag) and of the AirPassengers RNN-20
 * (483 floats) through tsrnn's Gloo backend, and print the median time of 200 calls.
 * Started by mpirun (`mpirun -np 2 bench-allreduce`), the same through the mpi backend, one
 * rank per process. Used by scripts/bench/ddp.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tsrnn/comm.h"
#include "tsrnn/core.h"
#include "tsrnn/world.h"

#define CALLS 200

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Times CALLS allreduces of `count` floats after 10 to warm up; rank 0 prints the median. */
static int time_allreduce(struct tsrnn_comm *comm, size_t count, const char *what)
{
    float *buf = calloc(count, sizeof(float));
    double times[CALLS];
    int rank = tsrnn_comm_rank(comm);
    if (buf == NULL)
        return 1;
    for (int i = 0; i < 10; i++)
        if (tsrnn_comm_allreduce_sum(comm, buf, count, TSRNN_COMM_F32) != TSRNN_OK) {
            fprintf(stderr, "bench-allreduce: %s\n", tsrnn_last_error());
            free(buf);
            return 1;
        }
    for (int i = 0; i < CALLS; i++) {
        double t0 = tsrnn_clock_now_s();
        if (tsrnn_comm_allreduce_sum(comm, buf, count, TSRNN_COMM_F32) != TSRNN_OK) {
            fprintf(stderr, "bench-allreduce: %s\n", tsrnn_last_error());
            free(buf);
            return 1;
        }
        times[i] = tsrnn_clock_now_s() - t0;
    }
    qsort(times, CALLS, sizeof(double), compare);
    if (rank == 0)
        printf("allreduce of %zu floats (%s), %d ranks, %s: %.3f ms (median of %d)\n", count, what,
               tsrnn_comm_world_size(comm), tsrnn_comm_backend_name(comm), 1e3 * times[CALLS / 2],
               CALLS);
    fflush(stdout);
    free(buf);
    return 0;
}

/* One forked Gloo rank: open, time, close. */
static int run_rank(int rank, const char *rendezvous, size_t count, const char *what)
{
    struct tsrnn_comm_options opt = {
        .rank = rank, .world_size = 2, .rendezvous = rendezvous, .timeout_s = 30
    };
    struct tsrnn_comm *comm;
    if (tsrnn_comm_open(&comm, &opt) != TSRNN_OK) {
        fprintf(stderr, "bench-allreduce: rank %d: %s\n", rank, tsrnn_last_error());
        return 1;
    }
    int failed = time_allreduce(comm, count, what);
    tsrnn_comm_close(comm);
    return failed;
}

/* Under mpirun: this process is one rank of the mpi backend. */
static int run_mpi(const struct tsrnn_world *world)
{
    struct tsrnn_comm_options opt = {
        .rank = world->rank,
        .world_size = world->world_size,
        .timeout_s = 30,
        .backend = world->comm_backend,
    };
    struct tsrnn_comm *comm;
    if (tsrnn_comm_open(&comm, &opt) != TSRNN_OK) {
        fprintf(stderr, "bench-allreduce: rank %d: %s\n", world->rank, tsrnn_last_error());
        return 1;
    }
    int failed = time_allreduce(comm, 265475, "LSTM-256 step") |
                 time_allreduce(comm, 483, "AirPassengers RNN-20 step");
    tsrnn_comm_close(comm);
    return failed;
}

static int measure(size_t count, const char *what)
{
    char dir[] = "/tmp/tsrnn-bench-allreduce-XXXXXX", rendezvous[64];
    int failed = 0;
    if (mkdtemp(dir) == NULL) {
        perror("bench-allreduce: mkdtemp");
        return 1;
    }
    snprintf(rendezvous, sizeof(rendezvous), "file:%s", dir);
    for (int rank = 0; rank < 2; rank++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(run_rank(rank, rendezvous, count, what));
        failed |= pid < 0;
    }
    int status;
    while (wait(&status) > 0)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    failed |= system(cmd) != 0;
    return failed;
}

int main(void)
{
    struct tsrnn_world world;
    if (tsrnn_world_from_env(&world) != TSRNN_OK) {
        fprintf(stderr, "bench-allreduce: %s\n", tsrnn_last_error());
        return 2;
    }
    if (world.mpi && world.world_size > 1)
        return run_mpi(&world);
    if (!tsrnn_comm_backend_available("gloo")) {
        fprintf(stderr, "bench-allreduce: this build has no Gloo (libgloo-dev)\n");
        return 1;
    }
    return measure(265475, "LSTM-256 step") | measure(483, "AirPassengers RNN-20 step");
}
