#ifndef CWEBIMAGESYSTEM_H
#define CWEBIMAGESYSTEM_H

// Small POSIX helpers Swift's Glibc module does not expose (statx), and the cache's checksum.

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The times and size of one file, in seconds since 1970.
typedef struct {
    int64_t size;
    double access_time;
    double modification_time;
    /// The birth time when the file system reports one, else the modification time.
    double creation_time;
    int is_regular;
} wi_file_times;

/// Fills `times` for `path` (relative to the open directory `dir_fd`, or AT_FDCWD).
/// Does not follow symbolic links. Returns 0, or -1 with errno set.
int wi_file_times_at(int dir_fd, const char *path, wi_file_times *times);

/// Names the calling thread for debuggers, `top -H` and `ps -T` (Linux keeps the first 15
/// bytes). Returns 0, or an error number.
int wi_name_current_thread(const char *name);

/// Sets the access and modification times of an open file (seconds since 1970).
/// A negative value leaves that time unchanged. Returns 0, or -1 with errno set.
int wi_set_file_times(int fd, double access_time, double modification_time);

/// An open file's type bits (st_mode & S_IFMT) and size. Returns 0, or -1 with errno set.
int wi_fstat_type_size(int fd, unsigned int *type_bits, int64_t *size);

/// Now on the monotonic clock, in nanoseconds.
uint64_t wi_monotonic_ns(void);

/// glibc: sets malloc's trim and mmap thresholds (mallopt); 1 when both took, 0 otherwise
/// (another C library, or a value glibc refuses).
int wi_tune_malloc(int trim_threshold, int mmap_threshold);

/// glibc: hands the free pages of every malloc arena back to the kernel (malloc_trim(0)); 1 when
/// some memory was returned, 0 when none was or with another C library. Blocks while it walks
/// the arenas, each under its own lock: not for a thread that must not wait.
int wi_release_free_memory(void);

/// This process's resident memory in bytes (Linux: /proc/self/statm); -1 when it cannot be read.
long long wi_resident_bytes(void);

/// The resident bytes a /proc/PID/statm line gives ("size resident shared …", in pages of
/// `page_size` bytes); -1 when `text` does not start with two non-negative counts.
long long wi_resident_bytes_from_statm(const char *text, long page_size);

/// XXH64 of `length` bytes: the disk cache's entry checksum.
uint64_t wi_checksum64(const void *data, size_t length, uint64_t seed);

#ifdef __cplusplus
}
#endif

#endif
