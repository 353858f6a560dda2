#ifndef CWEBIMAGESHIMS_CLOCK_H
#define CWEBIMAGESHIMS_CLOCK_H

#include <stdint.h>
#include <time.h>

/// CLOCK_MONOTONIC in nanoseconds: the clock of the decoders' time budgets.
static inline int64_t wi_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/// The deadline `budget_ns` from now; 0 (no deadline) when the budget is 0 or less.
static inline int64_t wi_deadline_after(int64_t budget_ns) {
    if (budget_ns <= 0) return 0;
    int64_t now = wi_monotonic_ns();
    return budget_ns > INT64_MAX - now ? INT64_MAX : now + budget_ns;
}

#endif
