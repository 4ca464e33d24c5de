/* A libcairo.so.2 that is not cairo (no cairo_* function): test_plot puts its folder first in
 * LD_LIBRARY_PATH to see what a picture says when the library it loads is not the build's. */
int tsrnn_not_cairo(void);

int tsrnn_not_cairo(void)
{
    return 0;
}
