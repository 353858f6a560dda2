#include "CDirectCodecs.h"

#include <pthread.h>
#include <time.h>

// The machine's ceiling for any cache whose every hit takes one of a few shared locks: threads
// lock and unlock 16 striped mutexes (each on its own 128-byte line) at random, with no other
// work. When two threads do this no faster than one, every lock-based shared cache is bounded
// the same way on this machine.

#define STRIPES 16

typedef struct {
    pthread_mutex_t mutex;
    long value;
} __attribute__((aligned(128))) stripe_t;

typedef struct {
    stripe_t *stripes;
    long iterations;
    unsigned long seed;
} worker_t;

static void *striped_worker(void *argument) {
    worker_t *worker = argument;
    unsigned long seed = worker->seed;
    for (long i = 0; i < worker->iterations; i++) {
        seed = seed * 6364136223846793005UL + 1442695040888963407UL;
        stripe_t *stripe = &worker->stripes[(seed >> 33) % STRIPES];
        pthread_mutex_lock(&stripe->mutex);
        stripe->value++;
        pthread_mutex_unlock(&stripe->mutex);
    }
    return NULL;
}

double direct_striped_lock_rate(int threads, long iterations) {
    static stripe_t stripes[STRIPES];
    for (int i = 0; i < STRIPES; i++) pthread_mutex_init(&stripes[i].mutex, NULL);
    pthread_t ids[64];
    worker_t workers[64];
    if (threads > 64) threads = 64;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < threads; i++) {
        workers[i] = (worker_t){stripes, iterations, (unsigned long)i + 1};
        pthread_create(&ids[i], NULL, striped_worker, &workers[i]);
    }
    for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    for (int i = 0; i < STRIPES; i++) pthread_mutex_destroy(&stripes[i].mutex);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    return (double)threads * (double)iterations / seconds;
}
