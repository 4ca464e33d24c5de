/* The gloo comm backend: Gloo (Debian's libgloo-dev, 0.0~git20220518) over TCP, behind the
 * extern "C" functions of gloo_shim.h. The only C++ file of tsrnn.
 *
 * Facts it relies on (shared/reference/distributed.md A3, B2):
 * - An exception that crosses extern "C" terminates the process, and gloo::EnforceNotMet
 *   derives from std::exception only: every entry point catches everything (guarded()).
 * - The context timeout must be set before connectFullMesh, which copies it into the
 *   transport; collectives get it again through their options.
 * - Gloo's rendezvous needs only a gloo::rendezvous::Store (set, get, wait). Ours is CStore,
 *   tsrnn's C store (store.h) seen through that interface, not Gloo's FileStore: one format
 *   and one deadline for every backend, and none of FileStore's flaws (get() waited
 *   Store::kDefaultTimeout, 30 s, whatever the context timeout: a missing rank 0 held every
 *   other rank for 31 s; its waits count whole seconds).
 * - tcp::Pair::close() is a hard close (SO_LINGER 0): the peers' pending operations fail at
 *   once with "Connection reset by peer", which is what abort wants.
 * - Gloo writes with writev(), which raises SIGPIPE on a connection the peer has reset: a
 *   peer killed during an allreduce killed the survivor too, in 6 of 30 runs, instead of
 *   failing its collective (SigpipeBlocked).
 * - Pairs run in Gloo's synchronous mode (Pair::setSync): the calling thread reads and writes
 *   the sockets itself instead of handing each message to the device's event-loop thread and
 *   sleeping on a condition variable. Each step's allreduce is a few such hand-offs, and each
 *   waking costs a context switch: on the 2-vCPU VM (2 ranks, bench-allreduce, medians of
 *   200) 483 floats took 0.48-0.70 ms through the event loop, 0.17 ms in sync mode with
 *   blocking reads and 0.027 ms busy-polling (Open MPI's shared memory: 0.004 ms); 265k
 *   floats 2.3-2.6, 1.1 and 0.72 ms. The Tourism example's LSTM-32 steps (0.6 ms of work)
 *   made 2 workers slower than 1 through the event loop. Busy-polling spins a core, so it is
 *   used only while the world has no more ranks than this machine has CPUs; above that the
 *   reads block. Sync mode keeps every deadline: the sockets get the context's timeout as
 *   SO_RCVTIMEO / SO_SNDTIMEO, and the busy-polling read checks it between tries.
 * - Sync pairs take no unbound buffers, which gloo::broadcast() and gloo::allreduce() use: a
 *   broadcast is an allreduce of 64-bit integers to which every rank but the root gives
 *   zeros, exact for any bytes (integer sums round nothing and keep a float's -0.0).
 */
#include "gloo_shim.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <gloo/allreduce_halving_doubling.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

extern "C" {
#include "tsrnn/core.h" /* a C header without extern "C" of its own */
}
#include "store.h"

/* The element types of a plan: the sums of floats and doubles, and broadcasts' words. */
enum class Element {
    f32,
    f64,
    u64
};

/* An allreduce of one size and type, kept for the next call of that size (every step reduces
 * the same gradient buffer): Gloo's classic AllreduceHalvingDoubling, which binds its buffer
 * when it is built, so the plan owns one and the caller's data is copied through it. Which
 * plan serves a call then depends only on (count, type), the same on every rank, never on
 * the caller's pointers.
 *
 * Why this algorithm (2-core VM, 2 ranks, Debian's Gloo): 150 us for 483 floats and 650 us
 * for 265k, against 2.7-3.6 ms for both through gloo::allreduce() (its unbound-buffer ring,
 * whose latency made a small model's step 40 times slower). It reduces each block on one
 * rank and copies it to the others, so every rank gets the same bits, for any world size;
 * AllreduceRing (each rank adds in its own order) and AllreduceBcube gave ranks results that
 * differ in the last bit with 3 ranks, which lets the replicas drift apart. */
struct Plan {
    size_t count;
    Element type;
    std::vector<uint64_t> data; /* aligned for float and double */
    std::unique_ptr<gloo::Algorithm> algorithm;
};

struct tsrnn_gloo {
    std::shared_ptr<gloo::transport::Device> device;
    std::shared_ptr<gloo::Context> context; /* null once aborted */
    std::vector<Plan> plans;                /* most recently used first */
};

namespace
{

using Millis = std::chrono::milliseconds;

/* Gloo's rendezvous through tsrnn's store. Gloo's keys ("rank_1", "1") become "gloo.<key>",
 * apart from the C side's "joined.<rank>" (gloo.c). Every wait ends at the store's one
 * deadline, which gloo.c started with this timeout just before the context's: the timeout
 * Gloo passes (the context's, counted later) cannot come first, so it is not needed. A
 * failure of the store throws its message. */
class CStore : public gloo::rendezvous::Store
{
  public:
    explicit CStore(tsrnn_store *store) : store_(store)
    {
    }

    void set(const std::string &key, const std::vector<char> &data) override
    {
        check(tsrnn_store_set(store_, name(key).c_str(), data.data(), data.size()));
    }

    std::vector<char> get(const std::string &key) override
    {
        /* Gloo's values are a rank's addresses, 136 bytes per peer. A longer value than the
         * first guess is read again with the room the store says it needs; the guess is small
         * enough that 3 ranks or more take that path, so test_comm's worlds of 3 and 4 cover
         * it. */
        const std::string k = name(key);
        std::vector<char> value(256);
        for (int attempt = 0;; attempt++) {
            size_t nbytes = 0;
            enum tsrnn_status status =
                tsrnn_store_get(store_, k.c_str(), value.data(), value.size(), &nbytes);
            if (status == TSRNN_OK) {
                value.resize(nbytes);
                return value;
            }
            if (nbytes <= value.size() || attempt == 2)
                check(status);
            tsrnn_error_clear();
            value.resize(nbytes);
        }
    }

    void wait(const std::vector<std::string> &keys) override
    {
        std::vector<std::string> names;
        std::vector<const char *> c_names;
        names.reserve(keys.size());
        for (const std::string &key : keys)
            names.push_back(name(key));
        for (const std::string &n : names)
            c_names.push_back(n.c_str());
        check(tsrnn_store_wait(store_, c_names.data(), c_names.size()));
    }

    void wait(const std::vector<std::string> &keys, const Millis &timeout) override
    {
        (void)timeout;
        wait(keys);
    }

  private:
    tsrnn_store *store_;

    static std::string name(const std::string &key)
    {
        return "gloo." + key;
    }

    static void check(enum tsrnn_status status)
    {
        if (status != TSRNN_OK)
            throw std::runtime_error(tsrnn_last_error());
    }
};

/* Keeps SIGPIPE from the writing threads without touching the process's disposition (that
 * belongs to main): blocked in the calling thread for the length of a call, and so in the
 * device's event-loop thread, which inherits the mask of the open call that creates it. A
 * SIGPIPE raised meanwhile is consumed (the write itself fails with EPIPE, which Gloo
 * reports), unless the caller had SIGPIPE blocked already. */
class SigpipeBlocked
{
  public:
    SigpipeBlocked()
    {
        sigemptyset(&pipe_);
        sigaddset(&pipe_, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    }

    ~SigpipeBlocked()
    {
        sigset_t pending;
        if (!sigismember(&old_, SIGPIPE) && sigpending(&pending) == 0 &&
            sigismember(&pending, SIGPIPE)) {
            const struct timespec now = { 0, 0 };
            sigtimedwait(&pipe_, nullptr, &now);
        }
        pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }

    SigpipeBlocked(const SigpipeBlocked &) = delete;
    SigpipeBlocked &operator=(const SigpipeBlocked &) = delete;

  private:
    sigset_t pipe_;
    sigset_t old_;
};

void set_error(char *err, size_t err_nbytes, const char *what)
{
    if (err_nbytes > 0)
        snprintf(err, err_nbytes, "%s", what);
}

/* Runs `body`, turning any exception into -1 and its message. */
template <typename Body> int guarded(char *err, size_t err_nbytes, Body body) noexcept
{
    SigpipeBlocked quiet;
    try {
        body();
        return 0;
    } catch (const std::bad_alloc &) {
        set_error(err, err_nbytes, "out of memory");
    } catch (const std::exception &e) {
        set_error(err, err_nbytes, e.what());
    } catch (...) {
        set_error(err, err_nbytes, "unknown C++ exception");
    }
    return -1;
}

const std::shared_ptr<gloo::Context> &live_context(const tsrnn_gloo *g)
{
    if (!g->context)
        throw std::runtime_error("the communicator was aborted");
    return g->context;
}

/* Plans kept at once: the trainer uses two sizes (gradients, validation errors); broadcasts
 * add one per size. */
constexpr size_t kMaxPlans = 4;

template <typename T> constexpr Element element_of()
{
    return std::is_same<T, float>::value    ? Element::f32
           : std::is_same<T, double>::value ? Element::f64
                                            : Element::u64;
}

/* The plan for (count, T): reused, or built (evicting the least recently used), in the same
 * order on every rank since every rank makes the same calls. */
template <typename T> Plan &plan_for(tsrnn_gloo *g, size_t count)
{
    const Element type = element_of<T>();
    auto hit = std::find_if(g->plans.begin(), g->plans.end(),
                            [&](const Plan &p) { return p.count == count && p.type == type; });
    if (hit != g->plans.end()) {
        std::rotate(g->plans.begin(), hit, hit + 1);
        return g->plans.front();
    }
    if (count > static_cast<size_t>(std::numeric_limits<int>::max() / sizeof(T)))
        throw std::runtime_error("more elements than Gloo's allreduce takes (" +
                                 std::to_string(std::numeric_limits<int>::max() / sizeof(T)) + ")");
    if (g->plans.size() == kMaxPlans)
        g->plans.pop_back();
    Plan plan;
    plan.count = count;
    plan.type = type;
    plan.data.resize((count * sizeof(T) + sizeof(uint64_t) - 1) / sizeof(uint64_t));
    T *data = reinterpret_cast<T *>(plan.data.data());
    plan.algorithm = std::make_unique<gloo::AllreduceHalvingDoubling<T>>(
        live_context(g), std::vector<T *>{ data }, static_cast<int>(count));
    g->plans.insert(g->plans.begin(), std::move(plan));
    return g->plans.front();
}

template <typename T> void allreduce_sum(tsrnn_gloo *g, T *buf, size_t count)
{
    live_context(g);
    if (g->context->size == 1)
        return;
    Plan &plan = plan_for<T>(g, count);
    std::copy(buf, buf + count, reinterpret_cast<T *>(plan.data.data()));
    plan.algorithm->run();
    std::copy_n(reinterpret_cast<const T *>(plan.data.data()), count, buf);
}

/* `nbytes` of `buf` from `root`: the root's bytes in 64-bit words (the last one padded with
 * zeros) summed with every other rank's zeros. */
void broadcast(tsrnn_gloo *g, void *buf, size_t nbytes, int root)
{
    live_context(g);
    if (g->context->size == 1)
        return;
    const size_t count = (nbytes + sizeof(uint64_t) - 1) / sizeof(uint64_t);
    Plan &plan = plan_for<uint64_t>(g, count);
    std::fill(plan.data.begin(), plan.data.end(), 0);
    if (g->context->rank == root)
        std::memcpy(plan.data.data(), buf, nbytes);
    plan.algorithm->run();
    std::memcpy(buf, plan.data.data(), nbytes);
}

/* A one-element allreduce: no rank has the sum before every rank gave its part. Unlike
 * gloo::barrier(), whose unbound buffers noticed a reset peer only at the timeout, it fails at
 * once when a peer is gone (what tsrnn_comm_close() relies on). */
void allreduce_barrier(tsrnn_gloo *g)
{
    float token = 0.0f;
    allreduce_sum(g, &token, 1);
}

/* Every pair in sync mode (see the top of the file), busy-polling while the ranks fit the
 * machine's CPUs. */
void make_sync(gloo::Context &context)
{
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const bool busy_poll = cpus > 0 && context.size <= cpus;
    for (int peer = 0; peer < context.size; peer++)
        if (peer != context.rank)
            context.getPair(peer)->setSync(true, busy_poll);
}

/* Pairs go before the device: they hold raw pointers to its event loop. The pairs'
 * destructors close their sockets plainly (FIN after any data still in flight). */
void release(tsrnn_gloo *g) noexcept
{
    g->plans.clear();
    g->context.reset();
    g->device.reset();
}

} // namespace

extern "C" int tsrnn_gloo_open(struct tsrnn_gloo **gloo, int rank, int world_size,
                               struct tsrnn_store *store, const char *host, long long timeout_ms,
                               char *err, size_t err_nbytes)
{
    *gloo = nullptr;
    return guarded(err, err_nbytes, [&] {
        auto g = std::make_unique<tsrnn_gloo>();

        gloo::transport::tcp::attr attr;
        attr.hostname = host;
        g->device = gloo::transport::tcp::CreateDevice(attr);

        auto context = std::make_shared<gloo::rendezvous::Context>(rank, world_size);
        context->setTimeout(Millis(timeout_ms));
        CStore rendezvous(store);
        context->connectFullMesh(rendezvous, g->device);
        make_sync(*context);
        g->context = std::move(context);
        /* connectFullMesh() returns on the connecting side of a pair once the kernel has
         * completed the handshake, before the listening peer's event-loop thread has accepted
         * the connection. A rank that failed right after (rank 0 refused the run folder's
         * lock) and aborted then reset a connection still waiting in the peer's backlog: that
         * thread's getpeername() failed with ENOTCONN, Gloo's exception left the thread, and
         * std::terminate killed the peer with SIGABRT, a crash that tsrnn-launch reported as
         * the job's cause (exit 3, not rank 0's 2; test_launch failed so in about 1 full-suite
         * run in 6, test_comm's test_peer_aborts_right_after_open makes it happen). No rank
         * leaves this barrier before every rank's pairs are connected: an abort from here on
         * fails the peers' collectives instead. */
        allreduce_barrier(g.get());
        *gloo = g.release();
    });
}

extern "C" int tsrnn_gloo_allreduce_sum(struct tsrnn_gloo *g, void *buf, size_t count, int is_f64,
                                        char *err, size_t err_nbytes)
{
    return guarded(err, err_nbytes, [&] {
        if (is_f64)
            allreduce_sum(g, static_cast<double *>(buf), count);
        else
            allreduce_sum(g, static_cast<float *>(buf), count);
    });
}

extern "C" int tsrnn_gloo_broadcast(struct tsrnn_gloo *g, void *buf, size_t nbytes, int root,
                                    char *err, size_t err_nbytes)
{
    return guarded(err, err_nbytes, [&] { broadcast(g, buf, nbytes, root); });
}

extern "C" int tsrnn_gloo_barrier(struct tsrnn_gloo *g, char *err, size_t err_nbytes)
{
    return guarded(err, err_nbytes, [&] { allreduce_barrier(g); });
}

extern "C" void tsrnn_gloo_abort(struct tsrnn_gloo *g)
{
    if (!g || !g->context)
        return;
    char ignored[1];
    guarded(ignored, sizeof(ignored), [&] { g->context->closeConnections(); });
    release(g);
}

/* Not an abort: a peer may still be reading the end of the last collective, which a reset
 * would destroy. */
extern "C" void tsrnn_gloo_close(struct tsrnn_gloo *g)
{
    if (!g)
        return;
    release(g);
    delete g;
}
