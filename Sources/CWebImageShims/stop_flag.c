#include "CWebImageShims.h"

#include <stdatomic.h>
#include <stdlib.h>

struct wi_stop {
    atomic_int requested;
};

wi_stop *wi_stop_create(void) {
    wi_stop *stop = malloc(sizeof *stop);
    if (stop != NULL) atomic_init(&stop->requested, 0);
    return stop;
}

void wi_stop_destroy(wi_stop *stop) { free(stop); }

void wi_stop_request(wi_stop *stop) {
    if (stop != NULL) atomic_store_explicit(&stop->requested, 1, memory_order_relaxed);
}

int wi_stop_requested(const wi_stop *stop) {
    return stop != NULL && atomic_load_explicit(&((wi_stop *)stop)->requested, memory_order_relaxed);
}
