#define _GNU_SOURCE
#include "CWebImageSystem.h"

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>

static double seconds(int64_t sec, int64_t nsec) { return (double)sec + (double)nsec / 1e9; }

int wi_file_times_at(int dir_fd, const char *path, wi_file_times *times) {
#ifdef STATX_BTIME
    struct statx sx;
    if (statx(dir_fd, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &sx) == 0) {
        times->size = (int64_t)sx.stx_size;
        times->access_time = seconds(sx.stx_atime.tv_sec, sx.stx_atime.tv_nsec);
        times->modification_time = seconds(sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec);
        times->creation_time = (sx.stx_mask & STATX_BTIME) ? seconds(sx.stx_btime.tv_sec, sx.stx_btime.tv_nsec)
                                                            : times->modification_time;
        times->is_regular = S_ISREG(sx.stx_mode);
        return 0;
    }
#endif
    struct stat st;
    if (fstatat(dir_fd, path, &st, AT_SYMLINK_NOFOLLOW) != 0) return -1;
    times->size = (int64_t)st.st_size;
    times->access_time = seconds(st.st_atim.tv_sec, st.st_atim.tv_nsec);
    times->modification_time = seconds(st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    times->creation_time = times->modification_time;
    times->is_regular = S_ISREG(st.st_mode);
    return 0;
}

static struct timespec timespec_from(double value) {
    struct timespec spec;
    if (value < 0) {
        spec.tv_sec = 0;
        spec.tv_nsec = UTIME_OMIT;
        return spec;
    }
    double whole = floor(value);
    spec.tv_sec = (time_t)whole;
    spec.tv_nsec = (long)((value - whole) * 1e9);
    return spec;
}

int wi_set_file_times(int fd, double access_time, double modification_time) {
    struct timespec specs[2] = {timespec_from(access_time), timespec_from(modification_time)};
    return futimens(fd, specs);
}

int wi_fstat_type_size(int fd, unsigned int *type_bits, int64_t *size) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    *type_bits = (unsigned int)(st.st_mode & S_IFMT);
    *size = (int64_t)st.st_size;
    return 0;
}

uint64_t wi_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}
