// Who owns what: a `wi_stop` is malloc'ed by `wi_stop_create` and freed by `wi_stop_destroy`, its
// creator's to destroy after every shim that was given it has returned; no library touches it.
#include "CWebImageShims.h"

#include <stdatomic.h>
#include <stdlib.h>

struct wi_stop {
    atomic_int requested;
    /* Checks left before the flag raises itself (wi_stop_request_after); 0 or less: not armed. */
    atomic_llong countdown;
    /* Checks made while armed. */
    atomic_llong checks;
};

wi_stop *wi_stop_create(void) {
    wi_stop *stop = malloc(sizeof *stop);
    if (stop != NULL) {
        atomic_init(&stop->requested, 0);
        atomic_init(&stop->countdown, 0);
        atomic_init(&stop->checks, 0);
    }
    return stop;
}

void wi_stop_destroy(wi_stop *stop) { free(stop); }

void wi_stop_request(wi_stop *stop) {
    if (stop != NULL) atomic_store_explicit(&stop->requested, 1, memory_order_relaxed);
}

void wi_stop_request_after(wi_stop *stop, int64_t checks) {
    if (stop == NULL) return;
    atomic_store_explicit(&stop->checks, 0, memory_order_relaxed);
    atomic_store_explicit(&stop->countdown, checks, memory_order_relaxed);
}

int64_t wi_stop_checks(const wi_stop *stop) {
    return stop == NULL ? 0 : atomic_load_explicit(&((wi_stop *)stop)->checks, memory_order_relaxed);
}

int wi_stop_requested(const wi_stop *stop) {
    if (stop == NULL) return 0;
    /* The flag is only ever read and written atomically; the cast drops a const the atomics
       cannot take. */
    wi_stop *flag = (wi_stop *)stop;
    if (atomic_load_explicit(&flag->requested, memory_order_relaxed)) return 1;
    if (atomic_load_explicit(&flag->countdown, memory_order_relaxed) <= 0) return 0;
    atomic_fetch_add_explicit(&flag->checks, 1, memory_order_relaxed);
    if (atomic_fetch_sub_explicit(&flag->countdown, 1, memory_order_relaxed) == 1) {
        atomic_store_explicit(&flag->requested, 1, memory_order_relaxed);
        return 1;
    }
    return 0;
}
