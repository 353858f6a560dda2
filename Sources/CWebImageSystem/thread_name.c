#define _GNU_SOURCE
#include "CWebImageSystem.h"

#include <pthread.h>
#include <string.h>

int wi_name_current_thread(const char *name) {
#if defined(__linux__)
    // Linux keeps 15 bytes and the terminating NUL; longer names are refused (ERANGE).
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = 0;
    return pthread_setname_np(pthread_self(), truncated);
#elif defined(__APPLE__)
    return pthread_setname_np(name);
#else
    (void)name;
    return -1;
#endif
}
