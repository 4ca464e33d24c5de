/* Frequencies of a time index (include/tsrnn/data.h): inferred as pandas.infer_freq() infers
 * them, named as pandas prints them, stepped as pandas' offsets step a stamp.
 *
 * Reference: pandas 3.1, pandas/tseries/frequencies.py (_FrequencyInferer: the rules below
 * run in its order), month_position_check() in pandas/_libs/tslibs/fields.pyx, the offsets
 * of pandas/_libs/tslibs/offsets.pyx; Darts 0.48, darts/timeseries.py
 * (_observed_freq_datetime_index, _observed_freq_integer_index, _restore_range_indexed).
 * tests/fixtures/freq_*.txt hold what pandas says for each case (scripts/gen-freq-fixtures.py).
 *
 * Arithmetic on stamps is checked: an integer index may hold any int64, and a count or a
 * step may be large, so every product and sum that could overflow says so instead.
 */
#include "tsrnn/data.h"

#include <stdio.h>
#include <string.h>

#include "calendar.h"

/* The stamps tsrnn parses and formats: 0000-01-01 00:00:00 .. 9999-12-31 23:59:59. */
#define STAMP_MIN INT64_C(-62167219200)
#define STAMP_MAX INT64_C(253402300799)

/* Counts above this are refused by the parser: no series needs them, and it keeps the
 * products of the calendar arithmetic far from overflow. */
#define ALIAS_COUNT_MAX 1000000000

static const char *const month_names[] = { "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                           "JUL", "AUG", "SEP", "OCT", "NOV", "DEC" };
static const char *const weekday_names[] = { "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN" };

/* A stamp as the calendar sees it. */
struct civil {
    int64_t days, second_of_day, y;
    int m, d, weekday;
};

static struct civil civil_of(int64_t t)
{
    struct civil c;
    tsrnn_split_day(t, &c.days, &c.second_of_day);
    tsrnn_civil_from_days(c.days, &c.y, &c.m, &c.d);
    c.weekday = tsrnn_weekday(c.days);
    return c;
}

/* Months in one period of a month-like kind. */
static int64_t months_per_period(enum tsrnn_freq_kind kind)
{
    return kind == TSRNN_FREQ_YEAR ? 12 : kind == TSRNN_FREQ_QUARTER ? 3 : 1;
}

/* Seconds in one period of a fixed-length kind; 0 for the others. */
static int64_t seconds_per_period(enum tsrnn_freq_kind kind)
{
    switch (kind) {
    case TSRNN_FREQ_SECOND:
        return 1;
    case TSRNN_FREQ_MINUTE:
        return 60;
    case TSRNN_FREQ_HOUR:
        return 3600;
    case TSRNN_FREQ_DAY:
        return TSRNN_SECONDS_PER_DAY;
    case TSRNN_FREQ_WEEK:
        return 7 * TSRNN_SECONDS_PER_DAY;
    default:
        return 0;
    }
}

static bool month_like(enum tsrnn_freq_kind kind)
{
    return kind == TSRNN_FREQ_MONTH || kind == TSRNN_FREQ_QUARTER || kind == TSRNN_FREQ_YEAR;
}

/* The day of month y-m a month-like frequency falls on: the first or last day, or the first
 * or last weekday (pandas' BusinessMonthBegin / BusinessMonthEnd). */
static int period_day(int64_t y, int m, bool end, bool business)
{
    int last = tsrnn_days_in_month(y, m);
    if (!business)
        return end ? last : 1;
    if (end) {
        int wd = tsrnn_weekday(tsrnn_days_from_civil(y, m, last));
        return wd == 5 ? last - 1 : wd == 6 ? last - 2 : last;
    }
    int wd = tsrnn_weekday(tsrnn_days_from_civil(y, m, 1));
    return wd == 5 ? 3 : wd == 6 ? 2 : 1;
}

/* --- names ----------------------------------------------------------------------------- */

/* The base aliases pandas 3 accepts for each kind, in the table's order of lookup. */
struct alias {
    const char *name;
    enum tsrnn_freq_kind kind;
    bool end, business;
    int default_anchor; /* 0: no anchor may follow */
};

static const struct alias aliases[] = {
    { "s", TSRNN_FREQ_SECOND, false, false, 0 },
    { "min", TSRNN_FREQ_MINUTE, false, false, 0 },
    { "h", TSRNN_FREQ_HOUR, false, false, 0 },
    { "D", TSRNN_FREQ_DAY, false, false, 0 },
    { "B", TSRNN_FREQ_BUSINESS_DAY, false, false, 0 },
    { "W", TSRNN_FREQ_WEEK, false, false, 7 }, /* weekday 6 (Sunday) + 1 */
    { "MS", TSRNN_FREQ_MONTH, false, false, 0 },
    { "ME", TSRNN_FREQ_MONTH, true, false, 0 },
    { "BMS", TSRNN_FREQ_MONTH, false, true, 0 },
    { "BME", TSRNN_FREQ_MONTH, true, true, 0 },
    { "QS", TSRNN_FREQ_QUARTER, false, false, 1 },
    { "QE", TSRNN_FREQ_QUARTER, true, false, 12 },
    { "BQS", TSRNN_FREQ_QUARTER, false, true, 1 },
    { "BQE", TSRNN_FREQ_QUARTER, true, true, 12 },
    { "YS", TSRNN_FREQ_YEAR, false, false, 1 },
    { "YE", TSRNN_FREQ_YEAR, true, false, 12 },
    { "BYS", TSRNN_FREQ_YEAR, false, true, 1 },
    { "BYE", TSRNN_FREQ_YEAR, true, true, 12 },
};

#define ALIAS_COUNT (sizeof(aliases) / sizeof(aliases[0]))

static int find_name(const char *const *names, int count, const char *text)
{
    for (int i = 0; i < count; i++)
        if (strcmp(names[i], text) == 0)
            return i;
    return -1;
}

bool tsrnn_freq_parse(struct tsrnn_freq *f, const char *text)
{
    memset(f, 0, sizeof(*f));
    const char *p = text;
    int64_t n = 0;
    while (*p >= '0' && *p <= '9') {
        if (n > (INT64_MAX - (*p - '0')) / 10)
            return false;
        n = n * 10 + (*p++ - '0');
    }
    if (*p == '\0') { /* a number alone: an integer index's step */
        if (p == text || n < 1)
            return false;
        *f = (struct tsrnn_freq){ .kind = TSRNN_FREQ_STEP, .n = n };
        return true;
    }
    if (p == text)
        n = 1;
    if (n < 1 || n > ALIAS_COUNT_MAX)
        return false;

    char base[8];
    const char *dash = strchr(p, '-');
    size_t len = dash ? (size_t)(dash - p) : strlen(p);
    if (len == 0 || len >= sizeof(base))
        return false;
    memcpy(base, p, len);
    base[len] = '\0';
    for (size_t i = 0; i < ALIAS_COUNT; i++) {
        const struct alias *a = &aliases[i];
        if (strcmp(a->name, base) != 0)
            continue;
        int anchor = a->default_anchor;
        if (dash != NULL) {
            if (a->default_anchor == 0)
                return false;
            anchor = a->kind == TSRNN_FREQ_WEEK ? find_name(weekday_names, 7, dash + 1) + 1
                                                : find_name(month_names, 12, dash + 1) + 1;
            if (anchor == 0)
                return false;
        }
        *f = (struct tsrnn_freq){ .kind = a->kind, .n = n, .end = a->end, .business = a->business };
        f->anchor = a->kind == TSRNN_FREQ_WEEK ? anchor - 1 : anchor;
        return true;
    }
    return false;
}

void tsrnn_freq_name(const struct tsrnn_freq *f, char *out, size_t capacity)
{
    char count[24] = "";
    if (f->kind == TSRNN_FREQ_NONE) {
        snprintf(out, capacity, "none");
        return;
    }
    if (f->kind == TSRNN_FREQ_STEP) {
        snprintf(out, capacity, "%lld", (long long)f->n);
        return;
    }
    if (f->n != 1)
        snprintf(count, sizeof(count), "%lld", (long long)f->n);
    for (size_t i = 0; i < ALIAS_COUNT; i++) {
        const struct alias *a = &aliases[i];
        if (a->kind != f->kind ||
            (month_like(f->kind) && (a->end != f->end || a->business != f->business)))
            continue;
        if (f->kind == TSRNN_FREQ_WEEK)
            snprintf(out, capacity, "%s%s-%s", count, a->name, weekday_names[f->anchor % 7]);
        else if (a->default_anchor != 0)
            snprintf(out, capacity, "%s%s-%s", count, a->name, month_names[(f->anchor + 11) % 12]);
        else
            snprintf(out, capacity, "%s%s", count, a->name);
        return;
    }
    snprintf(out, capacity, "none");
}

bool tsrnn_freq_equal(const struct tsrnn_freq *a, const struct tsrnn_freq *b)
{
    if (a->kind != b->kind || a->n != b->n)
        return false;
    if (a->kind == TSRNN_FREQ_WEEK)
        return a->anchor == b->anchor;
    if (!month_like(a->kind))
        return true;
    if (a->end != b->end || a->business != b->business)
        return false;
    /* QS-JAN and QS-APR are the same dates: anchors count modulo the period. */
    int period = (int)months_per_period(a->kind);
    return (a->anchor - b->anchor) % period == 0;
}

enum tsrnn_time_unit tsrnn_freq_unit(const struct tsrnn_freq *f)
{
    switch (f->kind) {
    case TSRNN_FREQ_NONE:
    case TSRNN_FREQ_STEP:
        return TSRNN_TIME_INDEX;
    case TSRNN_FREQ_SECOND:
        return TSRNN_TIME_SECOND;
    case TSRNN_FREQ_MINUTE:
    case TSRNN_FREQ_HOUR:
        return TSRNN_TIME_MINUTE;
    case TSRNN_FREQ_DAY:
    case TSRNN_FREQ_BUSINESS_DAY:
    case TSRNN_FREQ_WEEK:
        return TSRNN_TIME_DAY;
    case TSRNN_FREQ_MONTH:
    case TSRNN_FREQ_QUARTER:
    case TSRNN_FREQ_YEAR:
        if (f->end || f->business)
            return TSRNN_TIME_DAY;
        return f->kind == TSRNN_FREQ_YEAR && f->anchor == 1 ? TSRNN_TIME_YEAR : TSRNN_TIME_MONTH;
    }
    return TSRNN_TIME_SECOND;
}

/* --- stepping -------------------------------------------------------------------------- */

bool tsrnn_freq_on(const struct tsrnn_freq *f, int64_t t)
{
    if (f->kind == TSRNN_FREQ_NONE)
        return false;
    if (f->kind == TSRNN_FREQ_STEP || seconds_per_period(f->kind) != 0) {
        if (f->kind != TSRNN_FREQ_WEEK)
            return true;
        return civil_of(t).weekday == f->anchor;
    }
    struct civil c = civil_of(t);
    if (f->kind == TSRNN_FREQ_BUSINESS_DAY)
        return c.weekday < 5;
    if (f->kind == TSRNN_FREQ_QUARTER && ((c.m - f->anchor) % 3 + 3) % 3 != 0)
        return false;
    if (f->kind == TSRNN_FREQ_YEAR && c.m != f->anchor)
        return false;
    return c.d == period_day(c.y, c.m, f->end, f->business);
}

static bool stamp_in_range(int64_t t)
{
    return t >= STAMP_MIN && t <= STAMP_MAX;
}

bool tsrnn_freq_advance(const struct tsrnn_freq *f, int64_t t, int64_t k, int64_t *out)
{
    int64_t steps, delta;
    if (k < 0 || f->n < 1 || f->kind == TSRNN_FREQ_NONE || __builtin_mul_overflow(k, f->n, &steps))
        return false;
    if (f->kind == TSRNN_FREQ_STEP)
        return !__builtin_add_overflow(t, steps, out);
    if (!stamp_in_range(t))
        return false;

    int64_t unit = seconds_per_period(f->kind);
    if (unit != 0) {
        if (__builtin_mul_overflow(steps, unit, &delta) || __builtin_add_overflow(t, delta, out))
            return false;
        return stamp_in_range(*out);
    }

    /* From here every result must stay within the 10000 years of stamps, which bounds the
     * days and months added long before any product could overflow. */
    struct civil c = civil_of(t);
    if (f->kind == TSRNN_FREQ_BUSINESS_DAY) {
        if (steps > 10000 * 366)
            return false;
        int64_t days = c.days;
        int wd = c.weekday;
        if (wd >= 5 && steps > 0) { /* pandas: a weekend + 1 business day is Monday */
            days -= wd - 4;
            wd = 4;
        }
        days += steps / 5 * 7 + steps % 5 + (wd + steps % 5 >= 5 ? 2 : 0);
        *out = days * TSRNN_SECONDS_PER_DAY + c.second_of_day;
        return stamp_in_range(*out);
    }
    int64_t months;
    if (steps > 10000 * 12 || __builtin_mul_overflow(steps, months_per_period(f->kind), &months))
        return false;
    int64_t index = c.y * 12 + (c.m - 1) + months;
    int64_t y = index / 12;
    int m = (int)(index % 12) + 1;
    if (y > 9999)
        return false;
    *out =
        tsrnn_days_from_civil(y, m, period_day(y, m, f->end, f->business)) * TSRNN_SECONDS_PER_DAY +
        c.second_of_day;
    return stamp_in_range(*out);
}

/* Weekdays in the days [from, to), `from` a weekday. */
static int64_t weekdays_between(int64_t from, int64_t to)
{
    int64_t span = to - from, count = span / 7 * 5;
    int wd = tsrnn_weekday(from);
    for (int64_t i = 0; i < span % 7; i++)
        count += (wd + i) % 7 < 5;
    return count;
}

bool tsrnn_freq_steps(const struct tsrnn_freq *f, int64_t from, int64_t to, int64_t *k)
{
    int64_t diff, periods;
    if (f->kind == TSRNN_FREQ_NONE || f->n < 1 || to < from ||
        __builtin_sub_overflow(to, from, &diff))
        return false;
    int64_t unit = f->kind == TSRNN_FREQ_STEP ? 1 : seconds_per_period(f->kind);
    if (unit != 0) {
        int64_t period;
        if (__builtin_mul_overflow(f->n, unit, &period) || diff % period != 0)
            return false;
        *k = diff / period;
        return true;
    }
    if (!stamp_in_range(from) || !stamp_in_range(to) || !tsrnn_freq_on(f, to))
        return false;
    struct civil a = civil_of(from), b = civil_of(to);
    if (a.second_of_day != b.second_of_day)
        return false;
    if (f->kind == TSRNN_FREQ_BUSINESS_DAY)
        periods = weekdays_between(a.days, b.days);
    else {
        int64_t months = (b.y * 12 + b.m) - (a.y * 12 + a.m), per = months_per_period(f->kind);
        if (months % per != 0)
            return false;
        periods = months / per;
    }
    if (periods % f->n != 0)
        return false;
    *k = periods / f->n;
    return true;
}

size_t tsrnn_freq_first_break(const struct tsrnn_freq *f, const int64_t *times, size_t length)
{
    if (length == 0 || !tsrnn_freq_on(f, times[0]))
        return 0;
    for (size_t i = 1; i < length; i++) {
        int64_t next;
        if (!tsrnn_freq_advance(f, times[i - 1], 1, &next) || next != times[i])
            return i;
    }
    return length;
}

/* --- inference ------------------------------------------------------------------------- */

/* pandas' month_position_check(): whether every stamp is on a month's calendar end ("ce"),
 * business end ("be"), calendar start ("cs") or business start ("bs"), the first that holds
 * in that order. pandas' business tests are loose on purpose (a 1st on a Saturday passes as a
 * business start); tsrnn_freq_infer() then checks the stamps against the offset itself. */
enum month_position {
    POSITION_NONE,
    POSITION_CALENDAR_END,
    POSITION_BUSINESS_END,
    POSITION_CALENDAR_START,
    POSITION_BUSINESS_START,
};

static enum month_position month_position(const int64_t *times, size_t length)
{
    bool cs = true, bs = true, ce = true, be = true;
    for (size_t i = 0; i < length && (cs || bs || ce || be); i++) {
        struct civil c = civil_of(times[i]);
        int last = tsrnn_days_in_month(c.y, c.m);
        cs &= c.d == 1;
        bs &= c.d == 1 || (c.d <= 3 && c.weekday == 0);
        ce &= c.d == last;
        be &= c.d == last || (last - c.d < 3 && c.weekday == 4);
    }
    return ce   ? POSITION_CALENDAR_END
           : be ? POSITION_BUSINESS_END
           : cs ? POSITION_CALENDAR_START
           : bs ? POSITION_BUSINESS_START
                : POSITION_NONE;
}

/* Whether every difference of consecutive values of `key` (years, or months counted from
 * year 0) is the same; it goes to *diff. */
static bool unique_field_diff(const int64_t *times, size_t length, bool months, int64_t *diff)
{
    int64_t previous = 0;
    for (size_t i = 0; i < length; i++) {
        struct civil c = civil_of(times[i]);
        int64_t value = months ? c.y * 12 + c.m : c.y;
        if (i == 1)
            *diff = value - previous;
        else if (i > 1 && value - previous != *diff)
            return false;
        previous = value;
    }
    return true;
}

/* pandas' _is_business_daily(): the steps are one and three days, and each three-day step
 * lands on a Monday and each one-day step on Tuesday .. Friday. */
static bool business_daily(const int64_t *times, size_t length)
{
    bool one = false, three = false;
    int wd = civil_of(times[0]).weekday;
    for (size_t i = 1; i < length; i++) {
        int64_t delta = times[i] - times[i - 1];
        if (delta != TSRNN_SECONDS_PER_DAY && delta != 3 * TSRNN_SECONDS_PER_DAY)
            return false;
        int shift = (int)(delta / TSRNN_SECONDS_PER_DAY);
        one |= shift == 1;
        three |= shift == 3;
        wd = (wd + shift) % 7;
        if (!((wd == 0 && shift == 3) || (wd >= 1 && wd <= 4 && shift == 1)))
            return false;
    }
    return one && three;
}

static struct tsrnn_freq month_like_freq(enum tsrnn_freq_kind kind, int64_t n, int anchor,
                                         enum month_position position)
{
    return (struct tsrnn_freq){
        .kind = kind,
        .n = n,
        .anchor = anchor,
        .end = position == POSITION_CALENDAR_END || position == POSITION_BUSINESS_END,
        .business = position == POSITION_BUSINESS_END || position == POSITION_BUSINESS_START,
    };
}

/* pandas' _infer_daily_rule(), for stamps whose smallest step is whole days. */
static struct tsrnn_freq daily_rule(const int64_t *times, size_t length, int64_t min_delta,
                                    bool unique_delta)
{
    struct tsrnn_freq none = { .kind = TSRNN_FREQ_NONE };
    struct civil first = civil_of(times[0]);
    enum month_position position = month_position(times, length);
    int64_t years = 0, months = 0;
    bool one_year_step = unique_field_diff(times, length, false, &years);
    bool one_month_step = unique_field_diff(times, length, true, &months);

    bool one_month = true;
    for (size_t i = 1; i < length && one_month; i++)
        one_month = civil_of(times[i]).m == first.m;
    if (one_year_step && one_month && position != POSITION_NONE && years >= 1)
        return month_like_freq(TSRNN_FREQ_YEAR, years, first.m, position);

    if (one_month_step && months >= 3 && months % 3 == 0 && position != POSITION_NONE) {
        /* The anchor month is known modulo 3 only; pandas names starts after the first
         * quarter of the calendar year (QS-JAN, -FEB, -MAR) and ends after its last (QE-DEC,
         * -NOV, -OCT). */
        static const int start_anchor[3] = { 3, 1, 2 }, end_anchor[3] = { 12, 10, 11 };
        bool end = position == POSITION_CALENDAR_END || position == POSITION_BUSINESS_END;
        int anchor = (end ? end_anchor : start_anchor)[first.m % 3];
        return month_like_freq(TSRNN_FREQ_QUARTER, months / 3, anchor, position);
    }
    if (one_month_step && months >= 1 && position != POSITION_NONE)
        return month_like_freq(TSRNN_FREQ_MONTH, months, 0, position);

    if (unique_delta) {
        int64_t days = min_delta / TSRNN_SECONDS_PER_DAY;
        if (days % 7 == 0)
            return (struct tsrnn_freq){ .kind = TSRNN_FREQ_WEEK,
                                        .n = days / 7,
                                        .anchor = first.weekday };
        return (struct tsrnn_freq){ .kind = TSRNN_FREQ_DAY, .n = days };
    }
    if (business_daily(times, length))
        return (struct tsrnn_freq){ .kind = TSRNN_FREQ_BUSINESS_DAY, .n = 1 };
    /* pandas' next rule, week of month ("WOM-1MON"), has no offset in tsrnn. */
    return none;
}

/* pandas' get_freq() for stamps, before the check that they follow what it names. */
static struct tsrnn_freq pandas_rule(const int64_t *times, size_t length)
{
    struct tsrnn_freq none = { .kind = TSRNN_FREQ_NONE };
    int64_t min_delta = INT64_MAX;
    bool unique_delta = true;
    for (size_t i = 1; i < length; i++) {
        int64_t delta = times[i] - times[i - 1];
        if (delta <= 0)
            return none;
        unique_delta &= i == 1 || delta == times[1] - times[0];
        if (delta < min_delta)
            min_delta = delta;
    }
    if (min_delta % TSRNN_SECONDS_PER_DAY == 0)
        return daily_rule(times, length, min_delta, unique_delta);
    /* Business hours ("bh") would be next; their steps are never one, and tsrnn has no such
     * offset, so they fall through to "none" like any intraday index with several steps. */
    if (!unique_delta)
        return none;
    if (min_delta % 3600 == 0)
        return (struct tsrnn_freq){ .kind = TSRNN_FREQ_HOUR, .n = min_delta / 3600 };
    if (min_delta % 60 == 0)
        return (struct tsrnn_freq){ .kind = TSRNN_FREQ_MINUTE, .n = min_delta / 60 };
    return (struct tsrnn_freq){ .kind = TSRNN_FREQ_SECOND, .n = min_delta };
}

bool tsrnn_freq_infer(struct tsrnn_freq *f, const int64_t *times, size_t length, bool integer_index)
{
    *f = (struct tsrnn_freq){ .kind = TSRNN_FREQ_NONE };
    if (integer_index) {
        int64_t step = 0, delta;
        for (size_t i = 1; i < length; i++) {
            if (__builtin_sub_overflow(times[i], times[i - 1], &delta) || delta <= 0 ||
                (i > 1 && delta != step))
                return false;
            step = delta;
        }
        if (length < 2)
            return false;
        *f = (struct tsrnn_freq){ .kind = TSRNN_FREQ_STEP, .n = step };
        return true;
    }
    if (length < 3)
        return false;
    for (size_t i = 0; i < length; i++)
        if (!stamp_in_range(times[i]))
            return false;
    struct tsrnn_freq rule = pandas_rule(times, length);
    /* pandas reads some rules off the smallest step or the day of the month alone; Darts then
     * sets the index's freq, which pandas refuses unless every stamp follows it. */
    if (rule.kind == TSRNN_FREQ_NONE || tsrnn_freq_first_break(&rule, times, length) != length)
        return false;
    *f = rule;
    return true;
}

size_t tsrnn_freq_observe(struct tsrnn_freq *observed, size_t *counts, size_t capacity,
                          const int64_t *times, size_t length, bool integer_index)
{
    size_t distinct = 0;
    size_t span = integer_index ? 2 : 3;
    for (size_t i = 0; i + span <= length; i++) {
        struct tsrnn_freq f;
        if (!tsrnn_freq_infer(&f, times + i, span, integer_index))
            continue;
        size_t j = 0;
        while (j < distinct && j < capacity && !tsrnn_freq_equal(&observed[j], &f))
            j++;
        if (j < distinct && j < capacity) {
            counts[j]++;
            continue;
        }
        if (j == distinct && distinct < capacity) {
            observed[distinct] = f;
            counts[distinct] = 1;
        }
        /* Seen before but beyond `capacity`, or new: only new ones count as distinct. */
        if (j == distinct)
            distinct++;
    }
    return distinct;
}
