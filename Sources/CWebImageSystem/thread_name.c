#define _GNU_SOURCE
#include "CWebImageSystem.h"

#include <pthread.h>
#include <string.h>

// Who owns what: `name` stays the caller's; the truncated copy is on this stack and the system
// copies it (pthread_setname_np keeps no pointer).
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
