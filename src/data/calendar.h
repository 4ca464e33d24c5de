/* The proleptic Gregorian calendar under tsrnn's stamps (private to src/data/): days since
 * 1970-01-01 and civil dates, for any year (Howard Hinnant's days_from_civil algorithms). */
#ifndef TSRNN_DATA_CALENDAR_H
#define TSRNN_DATA_CALENDAR_H

#include <stdbool.h>
#include <stdint.h>

#define TSRNN_SECONDS_PER_DAY 86400

/* Days from 1970-01-01 to year-month-day (month 1..12, day 1..31). */
int64_t tsrnn_days_from_civil(int64_t y, int m, int d);

/* The civil date of `days` since 1970-01-01. */
void tsrnn_civil_from_days(int64_t days, int64_t *y, int *m, int *d);

bool tsrnn_is_leap_year(int64_t y);

int tsrnn_days_in_month(int64_t y, int m);

/* 0 = Monday .. 6 = Sunday, as Python's weekday(). */
int tsrnn_weekday(int64_t days);

/* Splits a stamp into whole days since 1970-01-01 and the seconds into that day, [0, 86400). */
void tsrnn_split_day(int64_t seconds, int64_t *days, int64_t *second_of_day);

#endif
