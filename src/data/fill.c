/* Missing values filled as Darts' MissingValuesFiller() fills them (include/tsrnn/data.h).
 *
 * Reference: Darts 0.48 darts/utils/missing_values.py (_auto_fill: pandas'
 * DataFrame.interpolate(method="linear", limit_direction="both")), which reaches numpy.interp
 * over the positions 0 .. L-1: slope = (y1 - y0) / (x1 - x0), value = slope * (x - x0) + y0,
 * in double, and the first (last) value for positions before (after) every value. The same
 * expression in the same order gives the same bits (the build forbids contracting it into a
 * fused multiply-add).
 */
#include "tsrnn/data.h"

#include <math.h>

size_t tsrnn_fill_interpolate(double *values, size_t length, size_t component_count,
                              size_t *filled_count)
{
    size_t C = component_count;
    *filled_count = 0;
    for (size_t c = 0; c < C; c++) {
        size_t first = 0;
        while (first < length && isnan(values[first * C + c]))
            first++;
        if (first == length) {
            if (length > 0)
                return c;
            continue;
        }
        size_t previous = first, next = first; /* the values around position t */
        for (size_t t = 0; t < length; t++) {
            double *v = &values[t * C + c];
            if (!isnan(*v)) {
                previous = t;
                continue;
            }
            (*filled_count)++;
            if (t < first) {
                *v = values[first * C + c];
                continue;
            }
            if (next < t) {
                next = t + 1;
                while (next < length && isnan(values[next * C + c]))
                    next++;
            }
            if (next == length) {
                *v = values[previous * C + c];
                continue;
            }
            double x0 = (double)previous, x1 = (double)next;
            double y0 = values[previous * C + c], y1 = values[next * C + c];
            double slope = (y1 - y0) / (x1 - x0);
            *v = slope * ((double)t - x0) + y0;
        }
    }
    return C;
}
