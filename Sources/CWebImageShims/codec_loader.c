// libavif, libheif and libjxl loaded when first used, not when the process starts. Linked
// normally they cost every process about 25 ms before `main` (measured with dlopen: libheif
// 9–11 ms, libjxl 8–10 ms, libavif 6–8 ms): 30 more shared libraries mapped and relocated (x265,
// libde265, aom, dav1d, rav1e, SVT-AV1, libgav1 and 15 abseil libraries, libhwy, brotli) and the
// static initialisers of libde265 and libhwy, which time the clock by spinning.
//
// How: each library function we call is defined here as a two-instruction stub (`jmp` through a
// pointer), hidden, so it binds only our own calls and never interposes on the library's. Each
// pointer starts at a binder that saves the argument registers, loads the library (once, under
// a mutex), points every stub of that library at its real function, restores the registers and
// jumps to the real function: a call before the library is loaded works, and arguments of any
// kind pass through untouched. `wi_codec_library_load` loads ahead of use and reports a missing
// or mismatched library as a message (the coders' errors); a binder that cannot load one writes
// the reason to standard error and aborts, which only a call that skipped that check can reach.
//
// Which file: the shared object name this build was compiled for (from the headers' version),
// then the unversioned development link; a library whose version differs from the headers' in
// major or minor number is refused, as its structures may differ.
// Who owns what: the `dlopen` handles are held for the process's lifetime (never closed: the
// stubs point into them; a handle whose version or symbols were refused stays open too). No
// buffer crosses into the libraries here; the strings `dlerror` and `avifVersion` return are
// theirs and only copied. The buffers the coders hand libavif, libheif and libjxl are owned as
// their Swift callers say.

#include "CWebImageShims.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <avif/avif.h>
#include <jxl/version.h>
#include <libheif/heif_version.h>

#define WI_AVIF_SYMBOLS(X)                                                                                      \
    X(avif, avifCodecChoiceFromName)                                                                            \
    X(avif, avifCodecName) X(avif, avifCodecVersions) X(avif, avifDecoderCreate) X(avif, avifDecoderDestroy)   \
    X(avif, avifDecoderNextImage) X(avif, avifDecoderNthImage) X(avif, avifDecoderNthImageTiming)              \
    X(avif, avifDecoderParse) X(avif, avifDecoderSetIOMemory) X(avif, avifEncoderAddImage)                     \
    X(avif, avifEncoderCreate) X(avif, avifEncoderDestroy) X(avif, avifEncoderFinish) X(avif, avifEncoderWrite) \
    X(avif, avifImageCreate) X(avif, avifImageDestroy) X(avif, avifImageRGBToYUV)                              \
    X(avif, avifImageSetMetadataExif) X(avif, avifImageSetProfileICC) X(avif, avifImageYUVToRGB)               \
    X(avif, avifRGBImageSetDefaults) X(avif, avifRWDataFree) X(avif, avifResultToString) X(avif, avifVersion)

#define WI_HEIF_SYMBOLS(X)                                                                                     \
    X(heif, heif_context_alloc)                                                                                \
    X(heif, heif_context_encode_image) X(heif, heif_context_encode_thumbnail) X(heif, heif_context_free)       \
    X(heif, heif_context_get_encoder_for_format) X(heif, heif_context_get_primary_image_handle)                \
    X(heif, heif_context_read_from_memory_without_copy) X(heif, heif_context_set_max_decoding_threads)         \
    X(heif, heif_context_set_primary_image) X(heif, heif_context_write) X(heif, heif_decode_image)             \
    X(heif, heif_decoding_options_alloc) X(heif, heif_decoding_options_free) X(heif, heif_encoder_release)     \
    X(heif, heif_encoder_set_lossless) X(heif, heif_encoder_set_lossy_quality)                                 \
    X(heif, heif_encoding_options_alloc) X(heif, heif_encoding_options_free) X(heif, heif_get_version)         \
    X(heif, heif_image_add_plane) X(heif, heif_image_create) X(heif, heif_image_get_bits_per_pixel)            \
    X(heif, heif_image_get_height) X(heif, heif_image_get_plane) X(heif, heif_image_get_plane_readonly)        \
    X(heif, heif_image_get_width) X(heif, heif_image_handle_get_color_profile_type)                            \
    X(heif, heif_image_handle_get_height) X(heif, heif_image_handle_get_list_of_thumbnail_IDs)                 \
    X(heif, heif_image_handle_get_nclx_color_profile) X(heif, heif_image_handle_get_number_of_thumbnails)      \
    X(heif, heif_image_handle_get_raw_color_profile) X(heif, heif_image_handle_get_raw_color_profile_size)     \
    X(heif, heif_image_handle_get_thumbnail) X(heif, heif_image_handle_get_width)                              \
    X(heif, heif_image_handle_has_alpha_channel) X(heif, heif_image_handle_release) X(heif, heif_image_release) \
    X(heif, heif_image_set_raw_color_profile) X(heif, heif_nclx_color_profile_free)

#define WI_JXL_SYMBOLS(X)                                                                                      \
    X(jxl, JxlButteraugliApiCreate)                                                                            \
    X(jxl, JxlButteraugliApiDestroy) X(jxl, JxlButteraugliCompute) X(jxl, JxlButteraugliResultDestroy)         \
    X(jxl, JxlButteraugliResultGetDistance) X(jxl, JxlColorEncodingSetToSRGB) X(jxl, JxlDecoderCloseInput)     \
    X(jxl, JxlDecoderCreate) X(jxl, JxlDecoderDestroy) X(jxl, JxlDecoderGetBasicInfo)                          \
    X(jxl, JxlDecoderGetColorAsEncodedProfile) X(jxl, JxlDecoderGetColorAsICCProfile)                          \
    X(jxl, JxlDecoderGetFrameHeader) X(jxl, JxlDecoderGetICCProfileSize) X(jxl, JxlDecoderImageOutBufferSize)  \
    X(jxl, JxlDecoderProcessInput) X(jxl, JxlDecoderSetImageOutBuffer) X(jxl, JxlDecoderSetInput)              \
    X(jxl, JxlDecoderSetKeepOrientation) X(jxl, JxlDecoderSetPreferredColorProfile)                            \
    X(jxl, JxlDecoderSetUnpremultiplyAlpha) X(jxl, JxlDecoderSkipCurrentFrame) X(jxl, JxlDecoderSubscribeEvents) \
    X(jxl, JxlDecoderVersion) X(jxl, JxlEncoderAddImageFrame) X(jxl, JxlEncoderCloseInput)                     \
    X(jxl, JxlEncoderCreate) X(jxl, JxlEncoderDestroy) X(jxl, JxlEncoderFrameSettingsCreate)                   \
    X(jxl, JxlEncoderFrameSettingsSetOption) X(jxl, JxlEncoderGetError) X(jxl, JxlEncoderInitBasicInfo)        \
    X(jxl, JxlEncoderInitFrameHeader) X(jxl, JxlEncoderProcessOutput) X(jxl, JxlEncoderSetBasicInfo)           \
    X(jxl, JxlEncoderSetColorEncoding) X(jxl, JxlEncoderSetFrameDistance) X(jxl, JxlEncoderSetFrameHeader)     \
    X(jxl, JxlEncoderSetFrameLossless) X(jxl, JxlEncoderSetICCProfile)

#define WI_STRINGIFY_(x) #x
#define WI_STRINGIFY(x) WI_STRINGIFY_(x)

// ---- The stubs and binders (x86-64 and AArch64, ELF) ----

#if defined(__x86_64__)
#define WI_STUB(library, name)                                                                                 \
    __asm__(".pushsection .text\n.globl " #name "\n.hidden " #name "\n.type " #name ",@function\n.p2align 4\n" #name       \
            ":\n    jmp *wi_lazy_" #name "(%rip)\n.size " #name ",.-" #name "\n"                                  \
            ".type wi_bind_" #name ",@function\nwi_bind_" #name ":\n    leaq wi_lazy_" #name "(%rip), %r11\n"     \
            "    jmp wi_bind_library_" #library "\n.size wi_bind_" #name ",.-wi_bind_" #name "\n.popsection\n");
// Saves every register that may carry an argument (rdi, rsi, rdx, rcx, r8, r9; rax: the vector
// count of a variadic call; xmm0–7), binds the library, restores them and jumps through the
// pointer whose address r11 holds. 8 pushes + 128 bytes after rbp keep the call 16-byte aligned.
#define WI_BINDER(library, index)                                                                              \
    __asm__(".pushsection .text\n.type wi_bind_library_" #library ",@function\n.p2align 4\nwi_bind_library_" #library ":\n" \
            "    pushq %rbp\n    movq %rsp, %rbp\n"                                                               \
            "    pushq %rdi\n    pushq %rsi\n    pushq %rdx\n    pushq %rcx\n"                                    \
            "    pushq %r8\n    pushq %r9\n    pushq %rax\n    pushq %r11\n    subq $128, %rsp\n"                 \
            "    movdqu %xmm0, 0(%rsp)\n    movdqu %xmm1, 16(%rsp)\n    movdqu %xmm2, 32(%rsp)\n"                 \
            "    movdqu %xmm3, 48(%rsp)\n    movdqu %xmm4, 64(%rsp)\n    movdqu %xmm5, 80(%rsp)\n"                \
            "    movdqu %xmm6, 96(%rsp)\n    movdqu %xmm7, 112(%rsp)\n"                                           \
            "    movl $" WI_STRINGIFY(index) ", %edi\n    call wi_codec_library_bind\n"                          \
            "    movdqu 0(%rsp), %xmm0\n    movdqu 16(%rsp), %xmm1\n    movdqu 32(%rsp), %xmm2\n"                 \
            "    movdqu 48(%rsp), %xmm3\n    movdqu 64(%rsp), %xmm4\n    movdqu 80(%rsp), %xmm5\n"                \
            "    movdqu 96(%rsp), %xmm6\n    movdqu 112(%rsp), %xmm7\n    addq $128, %rsp\n"                      \
            "    popq %r11\n    popq %rax\n    popq %r9\n    popq %r8\n"                                          \
            "    popq %rcx\n    popq %rdx\n    popq %rsi\n    popq %rdi\n    popq %rbp\n"                         \
            "    jmp *(%r11)\n.size wi_bind_library_" #library ",.-wi_bind_library_" #library "\n.popsection\n");
#elif defined(__aarch64__)
#define WI_STUB(library, name)                                                                                 \
    __asm__(".pushsection .text\n.globl " #name "\n.hidden " #name "\n.type " #name ",%function\n.p2align 4\n" #name       \
            ":\n    adrp x16, wi_lazy_" #name "\n    ldr x16, [x16, :lo12:wi_lazy_" #name "]\n    br x16\n"       \
            ".size " #name ",.-" #name "\n.type wi_bind_" #name ",%function\nwi_bind_" #name ":\n"                 \
            "    adrp x16, wi_lazy_" #name "\n    add x16, x16, :lo12:wi_lazy_" #name "\n"                          \
            "    b wi_bind_library_" #library "\n.size wi_bind_" #name ",.-wi_bind_" #name "\n.popsection\n");
// Saves x0–x8 (x8: the indirect result address), q0–q7 and x16 (the pointer's address).
#define WI_BINDER(library, index)                                                                              \
    __asm__(".pushsection .text\n.type wi_bind_library_" #library ",%function\n.p2align 4\nwi_bind_library_" #library ":\n" \
            "    stp x29, x30, [sp, #-224]!\n    mov x29, sp\n"                                                   \
            "    stp x0, x1, [sp, #16]\n    stp x2, x3, [sp, #32]\n    stp x4, x5, [sp, #48]\n"                   \
            "    stp x6, x7, [sp, #64]\n    stp x8, x16, [sp, #80]\n"                                            \
            "    stp q0, q1, [sp, #96]\n    stp q2, q3, [sp, #128]\n    stp q4, q5, [sp, #160]\n"                 \
            "    stp q6, q7, [sp, #192]\n"                                                                        \
            "    mov w0, #" WI_STRINGIFY(index) "\n    bl wi_codec_library_bind\n"                                \
            "    ldp q6, q7, [sp, #192]\n    ldp q4, q5, [sp, #160]\n    ldp q2, q3, [sp, #128]\n"                \
            "    ldp q0, q1, [sp, #96]\n    ldp x8, x16, [sp, #80]\n    ldp x6, x7, [sp, #64]\n"                  \
            "    ldp x4, x5, [sp, #48]\n    ldp x2, x3, [sp, #32]\n    ldp x0, x1, [sp, #16]\n"                   \
            "    ldp x29, x30, [sp], #224\n    ldr x17, [x16]\n    br x17\n"                                      \
            ".size wi_bind_library_" #library ",.-wi_bind_library_" #library "\n.popsection\n");
#else
#error "codec_loader.c has stubs for x86-64 and AArch64 only"
#endif

// The pointers, each starting at its binder. Hidden: the stubs are their only readers.
#define WI_POINTER(library, name)                                                                              \
    extern void wi_bind_##name(void) __attribute__((visibility("hidden")));                                  \
    __attribute__((visibility("hidden"))) _Atomic(void *) wi_lazy_##name = (void *)wi_bind_##name;
#define WI_DEFINE(library, name) WI_STUB(library, name) WI_POINTER(library, name)

WI_AVIF_SYMBOLS(WI_DEFINE)
WI_HEIF_SYMBOLS(WI_DEFINE)
WI_JXL_SYMBOLS(WI_DEFINE)

__attribute__((visibility("hidden"))) void wi_codec_library_bind(int library);
WI_BINDER(avif, 0)
WI_BINDER(heif, 1)
WI_BINDER(jxl, 2)

// ---- Loading ----

typedef struct {
    const char *name;
    /// Shared object names to try, in order (NULL-terminated).
    const char *files[3];
    /// The headers' major and minor version.
    int major, minor;
} wi_library_description;

static const wi_library_description wi_libraries[3] = {
    {"libavif",
     {
#if AVIF_VERSION_MAJOR >= 1
         "libavif.so.16",
#elif AVIF_VERSION_MINOR == 11
         "libavif.so.15",
#elif AVIF_VERSION_MINOR == 10
         "libavif.so.14",
#endif
         "libavif.so", NULL},
     AVIF_VERSION_MAJOR, AVIF_VERSION_MINOR},
    {"libheif", {"libheif.so.1", "libheif.so", NULL}, LIBHEIF_NUMERIC_VERSION >> 24, (LIBHEIF_NUMERIC_VERSION >> 16) & 255},
    {"libjxl",
     {
#if JPEGXL_MAJOR_VERSION == 0
         "libjxl.so.0." WI_STRINGIFY(JPEGXL_MINOR_VERSION),
#else
         "libjxl.so." WI_STRINGIFY(JPEGXL_MAJOR_VERSION),
#endif
         "libjxl.so", NULL},
     JPEGXL_MAJOR_VERSION, JPEGXL_MINOR_VERSION},
};

static pthread_mutex_t wi_loader_lock = PTHREAD_MUTEX_INITIALIZER;
/// Per library: 0 not tried, 1 loaded and bound, -1 failed (with `wi_load_failure`).
static int wi_load_state[3];
static char wi_load_failure[3][WI_MESSAGE_CAPACITY];

/// The library's own major and minor version, asked through `handle`; 0 when it has no answer.
static int wi_loaded_version(void *handle, int library, int *major, int *minor) {
    if (library == WI_LIBRARY_AVIF) {
        const char *(*version)(void) = (const char *(*)(void))dlsym(handle, "avifVersion");
        return version != NULL && sscanf(version(), "%d.%d", major, minor) == 2;
    }
    if (library == WI_LIBRARY_HEIF) {
        uint32_t (*version)(void) = (uint32_t (*)(void))dlsym(handle, "heif_get_version_number");
        if (version == NULL) return 0;
        *major = (int)(version() >> 24);
        *minor = (int)((version() >> 16) & 255);
        return 1;
    }
    uint32_t (*version)(void) = (uint32_t (*)(void))dlsym(handle, "JxlDecoderVersion");
    if (version == NULL) return 0;
    *major = (int)(version() / 1000000);
    *minor = (int)(version() / 1000 % 1000);
    return 1;
}

/// Points every stub of `library` at `handle`'s functions; 0 (and the missing name in `message`)
/// when one is absent, in which case no pointer has changed.
static int wi_bind_all(void *handle, int library, char *message) {
#define WI_COUNT(library, name) +1
    enum {
        AVIF_COUNT = 0 WI_AVIF_SYMBOLS(WI_COUNT),
        HEIF_COUNT = 0 WI_HEIF_SYMBOLS(WI_COUNT),
        JXL_COUNT = 0 WI_JXL_SYMBOLS(WI_COUNT),
        MOST = 64,
    };
    _Static_assert(AVIF_COUNT <= MOST && HEIF_COUNT <= MOST && JXL_COUNT <= MOST, "found[] is too small");
#undef WI_COUNT
#define WI_ENTRY(library, name) {#name, &wi_lazy_##name},
    static const struct {
        const char *name;
        _Atomic(void *) *pointer;
    } avif[] = {WI_AVIF_SYMBOLS(WI_ENTRY)}, heif[] = {WI_HEIF_SYMBOLS(WI_ENTRY)}, jxl[] = {WI_JXL_SYMBOLS(WI_ENTRY)};
#undef WI_ENTRY
    const __typeof__(avif[0]) *entries = library == WI_LIBRARY_AVIF ? avif : library == WI_LIBRARY_HEIF ? heif : jxl;
    size_t count = library == WI_LIBRARY_AVIF ? AVIF_COUNT : library == WI_LIBRARY_HEIF ? HEIF_COUNT : JXL_COUNT;
    void *found[MOST];
    for (size_t i = 0; i < count; i++) {
        found[i] = dlsym(handle, entries[i].name);
        if (found[i] == NULL) {
            snprintf(message, WI_MESSAGE_CAPACITY, "%s has no function %s", wi_libraries[library].name, entries[i].name);
            return 0;
        }
    }
    // Release: a thread that jumps through a new pointer finds the library loaded.
    for (size_t i = 0; i < count; i++) atomic_store_explicit(entries[i].pointer, found[i], memory_order_release);
    return 1;
}

/// Opens `file` as `library`, checks its version against the headers' and binds every stub of
/// `library` to it: 1, or 0 with the reason in `message` and no stub changed. A file that opened
/// but failed stays open (dlclose of a C++ library may run destructors others rely on). Not in
/// the header: `wi_codec_library_load` and the C harness (its failure paths) call it.
__attribute__((visibility("hidden"))) int wi_codec_library_open(int library, const char *file, char *message);
int wi_codec_library_open(int library, const char *file, char *message) {
    const wi_library_description *description = &wi_libraries[library];
    void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(message, WI_MESSAGE_CAPACITY, "%s could not be loaded: %s", description->name, dlerror());
        return 0;
    }
    int major = 0, minor = 0;
    if (!wi_loaded_version(handle, library, &major, &minor) || major != description->major ||
        minor != description->minor) {
        snprintf(message, WI_MESSAGE_CAPACITY, "%s is version %d.%d (%s), this build needs %d.%d", description->name,
                 major, minor, file, description->major, description->minor);
        return 0;
    }
    return wi_bind_all(handle, library, message);
}

/// Loads and binds `library` under the lock, trying its files in order; the state says how it
/// went, and a failure keeps the first file's reason.
static int wi_load_locked(int library) {
    if (wi_load_state[library] != 0) return wi_load_state[library];
    const wi_library_description *description = &wi_libraries[library];
    char reason[WI_MESSAGE_CAPACITY];
    for (int i = 0; description->files[i] != NULL; i++) {
        if (wi_codec_library_open(library, description->files[i], reason)) {
            wi_load_state[library] = 1;
            return 1;
        }
        if (i == 0) memcpy(wi_load_failure[library], reason, WI_MESSAGE_CAPACITY);
    }
    wi_load_state[library] = -1;
    return -1;
}

int wi_codec_library_load(wi_codec_library library, char *message) {
    if (message != NULL) message[0] = 0;
    if ((unsigned)library > WI_LIBRARY_JXL) return 0;
    pthread_mutex_lock(&wi_loader_lock);
    int state = wi_load_locked((int)library);
    if (state < 0 && message != NULL) memcpy(message, wi_load_failure[library], WI_MESSAGE_CAPACITY);
    pthread_mutex_unlock(&wi_loader_lock);
    return state > 0;
}

/// Called by the binders (argument registers saved) on a library's first call.
void wi_codec_library_bind(int library) {
    char message[WI_MESSAGE_CAPACITY];
    if (!wi_codec_library_load((wi_codec_library)library, message)) {
        fprintf(stderr, "webimage: %s (called without wi_codec_library_load)\n", message);
        abort();
    }
}
