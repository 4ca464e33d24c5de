/* cuDNN's argument checks, without a GPU (the CUDA backend's layers.c; issue: a cuDNN call
 * refused on its first backward): every cuDNN call the backend makes, made through the
 * backend's own functions with the descriptors it sets (every cell, 1 to 3 layers, the shapes
 * of the conformance test and of the seed config) and a NULL handle, must fail on the handle
 * (CUDNN_STATUS_BAD_PARAM, cuDNN's message naming the handle), not on an argument. cuDNN
 * checks its arguments before the handle: a mode it does not support (CUDNN_WGRAD_MODE_SET
 * in cuDNN 9) is refused as CUDNN_STATUS_NOT_SUPPORTED first, which the last case shows, so
 * a call that would fail on a GPU for its arguments fails here. Built only with the CUDA
 * backend; needs cuDNN's library, not a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "src/compute/cuda/cuda.h"

/* Stand-ins for device buffers: cuDNN does not read them before it refuses the handle. */
static float space[1 << 16];

struct shape {
    size_t B, T, C, H;
};
/* The conformance test's draws (tests/test_backend_ops.c) and the seed config's. */
static const struct shape shapes[] = {
    { 2, 9, 1, 13 }, { 1, 2, 7, 2 }, { 8, 6, 12, 7 },   { 7, 8, 1, 11 },
    { 5, 7, 1, 2 },  { 6, 3, 1, 1 }, { 16, 20, 1, 20 },
};

static size_t calls;

/* A call's status: refused for the handle, and only for it. */
static void expect_handle_refused(cudnnStatus_t got, const char *call, const char *cell,
                                  size_t layers, const struct shape *s, const char *state)
{
    char message[512] = "";
    DL(cudnnGetLastErrorString)(message, sizeof(message));
    calls++;
    if (got != CUDNN_STATUS_BAD_PARAM || strstr(message, "handle") == NULL)
        fail_msg("%s of a %s, %zu layer%s, B %zu T %zu C %zu H %zu%s: %s (%s), not the NULL "
                 "handle's CUDNN_STATUS_BAD_PARAM: an argument is refused",
                 call, cell, layers, layers == 1 ? "" : "s", s->B, s->T, s->C, s->H, state,
                 DL(cudnnGetErrorString)(got), message[0] ? message : "no message");
}

static void check_layer(const struct tsrnn_cuda_rnn *rnn, const struct tsrnn_cuda_batch_desc *bd,
                        enum tsrnn_model_kind kind, size_t layers, const struct shape *s)
{
    const char *cell = tsrnn_model_kind_name(kind);
    bool lstm = kind == TSRNN_MODEL_LSTM;
    size_t nbytes = 0, work = 0, reserve = 0;
    void *m_addr = NULL, *b_addr = NULL;
    cudnnTensorDescriptor_t m_desc, b_desc;
    assert_int_equal(DL(cudnnCreateTensorDescriptor)(&m_desc), CUDNN_STATUS_SUCCESS);
    assert_int_equal(DL(cudnnCreateTensorDescriptor)(&b_desc), CUDNN_STATUS_SUCCESS);
    expect_handle_refused(tsrnn_cuda_rnn_weight_space_size(NULL, rnn, &nbytes),
                          "cudnnGetRNNWeightSpaceSize", cell, layers, s, "");
    expect_handle_refused(tsrnn_cuda_rnn_weight_params(NULL, rnn, rnn->weight_nbytes, space, 0,
                                                       m_desc, &m_addr, b_desc, &b_addr),
                          "cudnnGetRNNWeightParams", cell, layers, s, "");
    expect_handle_refused(tsrnn_cuda_rnn_temp_sizes(NULL, rnn, &work, &reserve),
                          "cudnnGetRNNTempSpaceSizes", cell, layers, s, "");
    /* From zero states (hx = NULL), and from saved ones, as a forecast's steps run. */
    for (int saved = 0; saved < 2; saved++) {
        struct tsrnn_cuda_rnn_call call = {
            .seq_lengths = (const int32_t *)space,
            .x = space,
            .y = space,
            .hx = saved ? space : NULL,
            .cx = saved && lstm ? space : NULL,
            .hy = space,
            .cy = lstm ? space : NULL,
            .dy = space,
            .dx = space,
            .weights = space,
            .dweights = space,
            .work = space,
            .work_nbytes = 1024,
            .reserve = space,
            .reserve_nbytes = 1024,
        };
        const char *state = saved ? ", from saved states" : "";
        expect_handle_refused(tsrnn_cuda_rnn_forward(NULL, rnn, bd, &call), "cudnnRNNForward", cell,
                              layers, s, state);
        expect_handle_refused(tsrnn_cuda_rnn_backward_data(NULL, rnn, bd, &call),
                              "cudnnRNNBackwardData_v8", cell, layers, s, state);
        expect_handle_refused(tsrnn_cuda_rnn_backward_weights(NULL, rnn, bd, &call),
                              "cudnnRNNBackwardWeights_v8", cell, layers, s, state);
    }
    DL(cudnnDestroyTensorDescriptor)(m_desc);
    DL(cudnnDestroyTensorDescriptor)(b_desc);
}

static void test_every_call_fails_on_the_handle_only(void **state)
{
    (void)state;
    char why[1024];
    if (!tsrnn_cuda_libs_load(why, sizeof(why)))
        fail_msg("%s", why);
    printf("# loaded: %s\n", tsrnn_cuda_libs_describe());
    static const enum tsrnn_model_kind kinds[] = { TSRNN_MODEL_RNN, TSRNN_MODEL_LSTM,
                                                   TSRNN_MODEL_GRU };
    /* The dropout descriptor needs a handle to be set: created, as the backend's is, and
     * left unset (p = 0 either way; cuDNN applies dropout between layers of one RNN only, and
     * each of tsrnn's RNNs is one layer). */
    cudnnDropoutDescriptor_t dropout;
    assert_int_equal(DL(cudnnCreateDropoutDescriptor)(&dropout), CUDNN_STATUS_SUCCESS);
    for (size_t k = 0; k < 3; k++)
        for (size_t layers = 1; layers <= 3; layers++)
            for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
                const struct shape *s = &shapes[i];
                struct tsrnn_cuda_rnn rnns[2] = { 0 };
                struct tsrnn_cuda_rnn *list[2] = { &rnns[0], &rnns[1] };
                struct tsrnn_cuda_batch_desc bd;
                size_t count = layers > 1 ? 2 : 1;
                for (size_t r = 0; r < count; r++)
                    assert_int_equal(tsrnn_cuda_rnn_describe(&rnns[r], kinds[k],
                                                             r == 0 ? s->C : s->H, s->H, dropout),
                                     TSRNN_OK);
                assert_int_equal(tsrnn_cuda_batch_desc_create(&bd, s->B), TSRNN_OK);
                assert_int_equal(tsrnn_cuda_batch_describe(&bd, list, count, s->B, s->T, s->H),
                                 TSRNN_OK);
                for (size_t r = 0; r < count; r++)
                    check_layer(&rnns[r], &bd, kinds[k], layers, s);
                tsrnn_cuda_batch_desc_destroy(&bd);
                for (size_t r = 0; r < count; r++)
                    tsrnn_cuda_rnn_destroy(&rnns[r]);
            }
    DL(cudnnDestroyDropoutDescriptor)(dropout);
    printf("# %zu cuDNN calls with the backend's descriptors: each refused for the NULL handle "
           "alone\n",
           calls);
}

/* The case that makes the test mean something: an argument cuDNN 9 refuses is refused before
 * the handle. The backend's copy path asked for CUDNN_WGRAD_MODE_SET, which no GPU run would
 * have survived; it asks for ADD (with the copy zeroed first). */
static void test_an_unsupported_mode_fails_before_the_handle(void **state)
{
    (void)state;
    assert_true(tsrnn_cuda_libs_load(NULL, 0));
    cudnnDropoutDescriptor_t dropout;
    assert_int_equal(DL(cudnnCreateDropoutDescriptor)(&dropout), CUDNN_STATUS_SUCCESS);
    struct tsrnn_cuda_rnn rnn;
    struct tsrnn_cuda_rnn *list[1] = { &rnn };
    struct tsrnn_cuda_batch_desc bd;
    assert_int_equal(tsrnn_cuda_rnn_describe(&rnn, TSRNN_MODEL_GRU, 7, 7, dropout), TSRNN_OK);
    assert_int_equal(tsrnn_cuda_batch_desc_create(&bd, 8), TSRNN_OK);
    assert_int_equal(tsrnn_cuda_batch_describe(&bd, list, 1, 8, 6, 7), TSRNN_OK);
    cudnnStatus_t set = DL(cudnnRNNBackwardWeights_v8)(
        NULL, rnn.desc, CUDNN_WGRAD_MODE_SET, (const int32_t *)space, rnn.x_desc, space, bd.h_desc,
        NULL, bd.y_desc, space, rnn.weight_nbytes, space, 1024, space, 1024, space);
    printf("# cudnnRNNBackwardWeights_v8 with CUDNN_WGRAD_MODE_SET and a NULL handle: %s\n",
           DL(cudnnGetErrorString)(set));
    assert_int_equal(set, CUDNN_STATUS_NOT_SUPPORTED);
    tsrnn_cuda_batch_desc_destroy(&bd);
    tsrnn_cuda_rnn_destroy(&rnn);
    DL(cudnnDestroyDropoutDescriptor)(dropout);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_call_fails_on_the_handle_only),
        cmocka_unit_test(test_an_unsupported_mode_fails_before_the_handle),
    };
    return cmocka_run_group_tests_name("cudnn_args", tests, NULL, NULL);
}
