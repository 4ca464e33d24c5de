/* Naive time stamps (no time zone), as pandas parses a CSV time column
 * (include/tsrnn/data.h). Days are counted with the proleptic Gregorian calendar. */
#include "tsrnn/data.h"

#include <stdio.h>
#include <string.h>

#include "calendar.h"

/* The year is shifted to start in March so that the leap day is the last day of a "year". */
int64_t tsrnn_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                  /* [0, 399] */
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1; /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;          /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

void tsrnn_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

bool tsrnn_is_leap_year(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int tsrnn_days_in_month(int64_t y, int m)
{
    static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    return m == 2 && tsrnn_is_leap_year(y) ? 29 : days[m - 1];
}

int tsrnn_weekday(int64_t days)
{
    /* 1970-01-01 was a Thursday (3). */
    int64_t r = (days + 3) % 7;
    return (int)(r < 0 ? r + 7 : r);
}

void tsrnn_split_day(int64_t seconds, int64_t *days, int64_t *second_of_day)
{
    int64_t q = seconds / TSRNN_SECONDS_PER_DAY, r = seconds % TSRNN_SECONDS_PER_DAY;
    if (r < 0) {
        q--;
        r += TSRNN_SECONDS_PER_DAY;
    }
    *days = q;
    *second_of_day = r;
}

/* Reads exactly `count` decimal digits. */
static bool digits(const char **p, int count, int *out)
{
    int v = 0;
    for (int i = 0; i < count; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *p += count;
    *out = v;
    return true;
}

bool tsrnn_time_parse(const char *text, int64_t *seconds, enum tsrnn_time_unit *unit)
{
    const char *p = text;
    int year, month = 1, day = 1, hour = 0, minute = 0, second = 0;
    enum tsrnn_time_unit u;

    if (!digits(&p, 4, &year))
        return false;
    u = TSRNN_TIME_YEAR;
    if (*p == '-') {
        p++;
        if (!digits(&p, 2, &month))
            return false;
        u = TSRNN_TIME_MONTH;
        if (*p == '-') {
            p++;
            if (!digits(&p, 2, &day))
                return false;
            u = TSRNN_TIME_DAY;
        }
    } else if (strlen(p) == 4) { /* YYYYMMDD, as pd.Timestamp("19590101") */
        if (!digits(&p, 2, &month) || !digits(&p, 2, &day))
            return false;
        u = TSRNN_TIME_DAY;
    }
    if (u == TSRNN_TIME_DAY && (*p == ' ' || *p == 'T')) {
        p++;
        if (!digits(&p, 2, &hour) || *p++ != ':' || !digits(&p, 2, &minute))
            return false;
        u = TSRNN_TIME_MINUTE;
        if (*p == ':') {
            p++;
            if (!digits(&p, 2, &second))
                return false;
            u = TSRNN_TIME_SECOND;
        }
    }
    if (*p != '\0')
        return false;
    if (month < 1 || month > 12 || day < 1 || day > tsrnn_days_in_month(year, month) || hour > 23 ||
        minute > 59 || second > 59)
        return false;
    *seconds = tsrnn_days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
    *unit = u;
    return true;
}

void tsrnn_time_format(int64_t seconds, enum tsrnn_time_unit unit, char *out, size_t capacity)
{
    if (unit == TSRNN_TIME_INDEX) {
        snprintf(out, capacity, "%lld", (long long)seconds);
        return;
    }
    int64_t days, rest, y;
    int m, d;
    tsrnn_split_day(seconds, &days, &rest);
    tsrnn_civil_from_days(days, &y, &m, &d);
    int hh = (int)(rest / 3600), mm = (int)(rest / 60 % 60), ss = (int)(rest % 60);
    switch (unit) {
    case TSRNN_TIME_YEAR:
        snprintf(out, capacity, "%04lld", (long long)y);
        break;
    case TSRNN_TIME_MONTH:
        snprintf(out, capacity, "%04lld-%02d", (long long)y, m);
        break;
    case TSRNN_TIME_DAY:
        snprintf(out, capacity, "%04lld-%02d-%02d", (long long)y, m, d);
        break;
    case TSRNN_TIME_MINUTE:
        snprintf(out, capacity, "%04lld-%02d-%02d %02d:%02d", (long long)y, m, d, hh, mm);
        break;
    case TSRNN_TIME_SECOND:
    case TSRNN_TIME_INDEX:
        snprintf(out, capacity, "%04lld-%02d-%02d %02d:%02d:%02d", (long long)y, m, d, hh, mm, ss);
        break;
    }
}
