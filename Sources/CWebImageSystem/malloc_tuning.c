// glibc's allocator settings and release, and the process's resident size.
//
// Buffers: none changes hands here. malloc_trim walks glibc's own arenas (memory glibc owns and
// keeps; it frees nothing in use, only hands free pages back with madvise). /proc/self/statm is
// read into a 128-byte stack buffer owned by wi_resident_bytes, NUL-terminated at the count read
// returned; the descriptor is closed on every path before the text is parsed.

#include "CWebImageSystem.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

int wi_tune_malloc(int trim_threshold, int mmap_threshold) {
#if defined(__GLIBC__)
    return mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1 && mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1;
#else
    (void)trim_threshold;
    (void)mmap_threshold;
    return 0;
#endif
}

int wi_release_free_memory(void) {
#if defined(__GLIBC__)
    return malloc_trim(0);
#else
    return 0;
#endif
}

long long wi_resident_bytes_from_statm(const char *text, long page_size) {
    if (text == NULL || page_size <= 0) return -1;
    char *size_end = NULL;
    long long size = strtoll(text, &size_end, 10);
    if (size_end == text || size < 0) return -1;
    char *resident_end = NULL;
    long long pages = strtoll(size_end, &resident_end, 10);
    if (resident_end == size_end || pages < 0 || pages > LLONG_MAX / page_size) return -1;
    return pages * page_size;
}

long long wi_resident_bytes(void) {
    int descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return -1;
    char text[128];
    ssize_t count = read(descriptor, text, sizeof text - 1);
    close(descriptor);
    if (count <= 0) return -1;
    text[count] = '\0';
    return wi_resident_bytes_from_statm(text, sysconf(_SC_PAGESIZE));
}
