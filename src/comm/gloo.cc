/* The gloo comm backend: Gloo (Debian's libgloo-dev, 0.0~git20220518) over TCP, behind the
 * extern "C" functions of gloo_shim.h. The only C++ file of tsrnn.
 *
 * Facts it relies on (shared/reference/distributed.md A3, B2):
 * - An exception that crosses extern "C" terminates the process, and gloo::EnforceNotMet
 *   derives from std::exception only: every entry point catches everything (guarded()).
 * - The context timeout must be set before connectFullMesh, which copies it into the
 *   transport; collectives get it again through their options.
 * - FileStore::get() waits through the one-argument wait(keys), which stock FileStore bounds
 *   by Store::kDefaultTimeout (30 s) whatever the context timeout is: a missing rank 0 held
 *   every other rank for 31 s. DeadlineStore replaces both waits, so the whole rendezvous
 *   ends at our deadline (and to the millisecond: stock FileStore compares whole seconds).
 * - tcp::Pair::close() is a hard close (SO_LINGER 0): the peers' pending operations fail at
 *   once with "Connection reset by peer", which is what abort wants.
 * - Gloo writes with writev(), which raises SIGPIPE on a connection the peer has reset: a
 *   peer killed during an allreduce killed the survivor too, in 6 of 30 runs, instead of
 *   failing its collective (SigpipeBlocked).
 */
#include "gloo_shim.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <gloo/allreduce_halving_doubling.h>
#include <gloo/broadcast.h>
#include <gloo/common/string.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <pthread.h>
#include <signal.h>
#include <time.h>

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
    bool f64;
    std::vector<uint64_t> data; /* aligned for float and double */
    std::unique_ptr<gloo::Algorithm> algorithm;
};

struct tsrnn_gloo {
    std::shared_ptr<gloo::transport::Device> device;
    std::shared_ptr<gloo::Context> context; /* null once aborted */
    std::chrono::milliseconds timeout;
    uint32_t tag;            /* one per collective, so a late message never matches the next one */
    std::vector<Plan> plans; /* most recently used first */
};

namespace
{

using Millis = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

/* Keys outside Gloo's namespace (its keys go through a PrefixStore) that say "this rank has
 * reached the rendezvous": what a timed-out rank reads to name the ones that never came. */
std::string joined_key(int rank)
{
    return "tsrnn-joined-" + std::to_string(rank);
}

/* A FileStore whose waits all end at one deadline, timeout after it was created. */
class DeadlineStore : public gloo::rendezvous::FileStore
{
  public:
    DeadlineStore(const std::string &dir, Millis timeout)
        : FileStore(dir), deadline_(Clock::now() + timeout)
    {
    }

    void wait(const std::vector<std::string> &keys) override
    {
        wait_until(keys, deadline_);
    }

    void wait(const std::vector<std::string> &keys, const Millis &timeout) override
    {
        wait_until(keys, std::min(deadline_, Clock::now() + timeout));
    }

    bool has(const std::string &key)
    {
        return check({ key });
    }

  private:
    Clock::time_point deadline_;

    void wait_until(const std::vector<std::string> &keys, Clock::time_point deadline)
    {
        /* Polling, as FileStore does: inotify does not work on shared filesystems. */
        while (!check(keys)) {
            if (Clock::now() >= deadline)
                throw std::runtime_error("timed out waiting for key(s) " + gloo::MakeString(keys));
            std::this_thread::sleep_for(Millis(10));
        }
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

/* "rank 1", "ranks 1, 3": the ranks whose joined key is missing; empty when all came. */
std::string missing_ranks(DeadlineStore &store, int world_size)
{
    std::string list;
    int count = 0;
    for (int r = 0; r < world_size; r++) {
        if (store.has(joined_key(r)))
            continue;
        list += (count++ ? ", " : "") + std::to_string(r);
    }
    return count == 0 ? list : (count == 1 ? "rank " : "ranks ") + list;
}

const std::shared_ptr<gloo::Context> &live_context(const tsrnn_gloo *g)
{
    if (!g->context)
        throw std::runtime_error("the communicator was aborted");
    return g->context;
}

/* Plans kept at once: the trainer uses two sizes (gradients, validation errors). */
constexpr size_t kMaxPlans = 4;

/* The plan for (count, T): reused, or built (evicting the least recently used), in the same
 * order on every rank since every rank makes the same calls. */
template <typename T> Plan &plan_for(tsrnn_gloo *g, size_t count)
{
    const bool f64 = std::is_same<T, double>::value;
    auto hit = std::find_if(g->plans.begin(), g->plans.end(),
                            [&](const Plan &p) { return p.count == count && p.f64 == f64; });
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
    plan.f64 = f64;
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
                               const char *store_dir, const char *host, long long timeout_ms,
                               char *err, size_t err_nbytes)
{
    *gloo = nullptr;
    return guarded(err, err_nbytes, [&] {
        auto g = std::make_unique<tsrnn_gloo>();
        g->timeout = Millis(timeout_ms);
        g->tag = 0;

        gloo::transport::tcp::attr attr;
        attr.hostname = host;
        g->device = gloo::transport::tcp::CreateDevice(attr);

        auto context = std::make_shared<gloo::rendezvous::Context>(rank, world_size);
        context->setTimeout(g->timeout);
        DeadlineStore files(store_dir, g->timeout);
        gloo::rendezvous::PrefixStore store("gloo", files);
        if (files.has(joined_key(rank)))
            throw std::runtime_error("rank " + std::to_string(rank) +
                                     " already joined the rendezvous in " + store_dir +
                                     ": a folder serves one run only, use a fresh one");
        files.set(joined_key(rank), { '1' });
        try {
            context->connectFullMesh(store, g->device);
        } catch (const std::exception &e) {
            std::string missing = missing_ranks(files, world_size);
            if (missing.empty())
                throw std::runtime_error("could not connect to the other ranks through " +
                                         std::string(store_dir) + ": " + e.what());
            throw std::runtime_error(missing + " did not join the rendezvous in " +
                                     std::string(store_dir) + " within " +
                                     gloo::MakeString(timeout_ms / 1000.0) + " s");
        }
        g->context = std::move(context);
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
    return guarded(err, err_nbytes, [&] {
        gloo::BroadcastOptions opts(live_context(g));
        opts.setOutput(static_cast<uint8_t *>(buf), nbytes);
        opts.setRoot(root);
        opts.setTag(g->tag++);
        opts.setTimeout(g->timeout);
        gloo::broadcast(opts);
    });
}

extern "C" int tsrnn_gloo_barrier(struct tsrnn_gloo *g, char *err, size_t err_nbytes)
{
    /* A one-element allreduce: no rank has the sum before every rank gave its part. Unlike
     * gloo::barrier(), whose unbound buffers noticed a reset peer only at the timeout, it
     * fails at once when a peer is gone (what tsrnn_comm_close() relies on). */
    return guarded(err, err_nbytes, [&] {
        float token = 0.0f;
        allreduce_sum(g, &token, 1);
    });
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
