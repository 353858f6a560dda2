import CWebImageSystem

// `fstat` and `clock_gettime` go through C: with Foundation imported anywhere in the module,
// the compiler may attribute Glibc's `stat` and `timespec` structs to CoreFoundation's module
// (whichever it loaded first), and MemberImportVisibility then refuses their fields.

/// Now on the monotonic clock, in nanoseconds.
func monotonicNanoseconds() -> UInt64 { wi_monotonic_ns() }

/// An open file's type bits (`st_mode & S_IFMT`) and size from `fstat`; `nil` with `errno` set
/// when the call fails.
func fileTypeAndSize(_ descriptor: Int32) -> (type: UInt32, size: Int64)? {
    var type: UInt32 = 0
    var size: Int64 = 0
    guard wi_fstat_type_size(descriptor, &type, &size) == 0 else { return nil }
    return (type, size)
}
