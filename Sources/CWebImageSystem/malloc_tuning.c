#include "CWebImageSystem.h"

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
