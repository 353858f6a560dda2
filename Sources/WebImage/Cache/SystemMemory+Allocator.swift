import CWebImageSystem

extension SystemMemory {
    /// Tunes glibc's allocator for a process that decodes many images, as a service or a batch
    /// tool does: freed memory up to `trimThreshold` bytes stays with the process instead of
    /// going back to the kernel, and blocks under `mmapThreshold` bytes come from the heap, so a
    /// new bitmap reuses memory a freed one left instead of faulting fresh pages in. Bitmaps
    /// outlive their decode (they go to the caller), so glibc's default dynamic thresholds give
    /// memory back and fault it in again for almost every image: the downloader benchmark's
    /// decoded loads ran 0.83× raw AsyncHTTPClient + libjpeg-turbo by default and 0.95× tuned.
    ///
    /// Process-wide and never called by the library itself: call it once at start-up, before
    /// the decoding begins (the `webimage` tool does). The cost is resident memory: up to
    /// `trimThreshold` bytes of freed memory per malloc arena stay mapped. Equivalent to
    /// `GLIBC_TUNABLES=glibc.malloc.trim_threshold=…:glibc.malloc.mmap_threshold=…`.
    ///
    /// - Returns: `true` when both settings took (glibc); `false` with another C library.
    @discardableResult
    public static func tuneAllocatorForImageDecoding(
        trimThreshold: Int = 256 << 20,
        mmapThreshold: Int = 32 << 20
    ) -> Bool {
        // glibc caps the mmap threshold at 32 MiB on 64-bit systems (HEAP_MAX_SIZE / 2).
        wi_tune_malloc(Int32(clamping: trimThreshold), Int32(clamping: min(mmapThreshold, 32 << 20))) == 1
    }
}

extension SystemMemory {
    /// Hands the free memory of every malloc arena back to the kernel (glibc's `malloc_trim(0)`):
    /// what a burst of large images left behind, kept by the allocator for reuse (see
    /// ``tuneAllocatorForImageDecoding(trimThreshold:mmapThreshold:)``), stops counting as the
    /// process's resident memory. Memory in use is not touched; the next allocations that need
    /// the pages fault them in again.
    ///
    /// Blocking: it walks every arena under that arena's lock, for milliseconds with hundreds of
    /// megabytes free, and allocations in that arena wait meanwhile. Call it from a thread of
    /// your own (never the cooperative pool or an event loop), at a quiet moment or on a timer
    /// (`webimage serve --free-memory-interval`). Process-wide; never called by the library.
    ///
    /// - Returns: `true` when memory was returned; `false` when there was none to return, or
    ///   with a C library other than glibc.
    @discardableResult
    public static func releaseFreeMemory() -> Bool {
        wi_release_free_memory() == 1
    }

    /// This process's resident memory in bytes (Linux's `/proc/self/statm`), or `nil` when the
    /// system does not say. Cheap: one small read.
    public static var residentBytes: Int? {
        let bytes = wi_resident_bytes()
        return bytes >= 0 ? Int(bytes) : nil
    }
}
