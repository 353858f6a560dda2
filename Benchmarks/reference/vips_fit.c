// The libvips reference for Benchmarks/proxy-vs-vips.sh: what imgproxy does for
// rs:fit:512:512/q:80 on a JPEG (vips/vips.c: vips_jpegload_source_go, vips_resize_go,
// vips_jpegsave_go), called in-process with no HTTP at all. Each of THREADS threads takes every
// THREADS-th photo (read into memory before the clock starts) and, ROUNDS times, loads it with
// JPEG shrink-on-load (the largest of 2, 4 or 8 that keeps it at least the target size),
// resizes the rest of the way with vips_resize (lanczos3) and saves JPEG at Q 80. OPTIMIZE 1
// also optimises the Huffman tables as imgproxy does (optimize_coding); 0 writes the standard
// tables, as webimage does. libvips' own worker pool is one thread per image, as imgproxy sets
// it, so the parallelism is the threads'.
//
// Prints one JSON object: {"images": N, "seconds": S, "rate": N/S}.
//
//   cc -O2 -o vips_fit vips_fit.c $(pkg-config --cflags --libs vips) -lpthread
//   vips_fit THREADS ROUNDS OPTIMIZE FILE...

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <vips/vips.h>

struct photo {
    void *data;
    size_t size;
};

struct work {
    struct photo *photos;
    int count;
    int first;
    int step;
    int rounds;
    int optimize;
    int failures;
};

/// One photo fit into 512x512: shrink on load, lanczos3 for the rest, JPEG Q 80.
static int fit(const struct photo *photo, int optimize) {
    VipsImage *header = vips_image_new_from_buffer(photo->data, photo->size, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    if (header == NULL) return -1;
    double scale = 512.0 / (double)(header->Xsize > header->Ysize ? header->Xsize : header->Ysize);
    g_object_unref(header);
    int shrink = 1;
    while (shrink < 8 && 1.0 / scale >= shrink * 2) shrink *= 2;
    VipsImage *loaded = NULL, *resized = NULL;
    if (vips_jpegload_buffer(photo->data, photo->size, &loaded, "shrink", shrink, NULL)) return -1;
    int failed = vips_resize(loaded, &resized, scale * shrink, NULL);
    g_object_unref(loaded);
    if (failed) return -1;
    void *jpeg = NULL;
    size_t length = 0;
    failed = vips_jpegsave_buffer(resized, &jpeg, &length, "Q", 80, "optimize_coding", optimize, NULL);
    g_free(jpeg);
    g_object_unref(resized);
    return failed ? -1 : 0;
}

static void *run(void *argument) {
    struct work *work = argument;
    for (int round = 0; round < work->rounds; round++) {
        for (int index = work->first; index < work->count; index += work->step) {
            if (fit(&work->photos[index], work->optimize)) work->failures++;
            vips_thread_shutdown();  // this thread's buffers, as imgproxy frees them per request
        }
    }
    return NULL;
}

static double now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: vips_fit THREADS ROUNDS OPTIMIZE FILE...\n");
        return 2;
    }
    if (VIPS_INIT(argv[0])) vips_error_exit(NULL);
    vips_concurrency_set(1);
    vips_cache_set_max(0);
    int threads = atoi(argv[1]);
    int rounds = atoi(argv[2]);
    int optimize = atoi(argv[3]);
    int count = argc - 4;
    if (threads < 1 || rounds < 1) {
        fprintf(stderr, "vips_fit: THREADS and ROUNDS must be at least 1\n");
        return 2;
    }
    struct photo *photos = calloc((size_t)count, sizeof *photos);
    for (int index = 0; index < count; index++) {
        gchar *contents = NULL;
        gsize length = 0;
        if (!g_file_get_contents(argv[4 + index], &contents, &length, NULL)) {
            fprintf(stderr, "vips_fit: cannot read %s\n", argv[4 + index]);
            return 1;
        }
        photos[index] = (struct photo){contents, length};
    }
    // One image before the clock and the threads, so libvips sets up its operation types on one
    // thread: without it about one run in 40 crashed in malloc inside vips_image_new (heap
    // corruption, libvips 8.14 from Debian); with it 60 runs in a row were clean.
    if (fit(&photos[0], optimize)) {
        fprintf(stderr, "vips_fit: %s\n", vips_error_buffer());
        return 1;
    }
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    struct work *works = calloc((size_t)threads, sizeof *works);
    double started = now();
    for (int thread = 0; thread < threads; thread++) {
        works[thread] = (struct work){photos, count, thread, threads, rounds, optimize, 0};
        pthread_create(&ids[thread], NULL, run, &works[thread]);
    }
    int failures = 0;
    for (int thread = 0; thread < threads; thread++) {
        pthread_join(ids[thread], NULL);
        failures += works[thread].failures;
    }
    double seconds = now() - started;
    if (failures > 0) {
        fprintf(stderr, "vips_fit: %d images failed: %s\n", failures, vips_error_buffer());
        return 1;
    }
    int images = count * rounds;
    printf("{\"images\": %d, \"seconds\": %.3f, \"rate\": %.2f}\n", images, seconds, images / seconds);
    return 0;
}
