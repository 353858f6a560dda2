#ifndef CWEBIMAGESHIMS_H
#define CWEBIMAGESHIMS_H

// Every setjmp/longjmp of swift-web-image lives behind these functions: libjpeg and libpng
// report fatal errors by longjmp, which Swift frames must never be unwound by. Each wrapper
// sets its own jump point, calls into the library, and turns a longjmp into a return code.
// Each .c file says who owns every buffer it or its library touches; a malloc'ed `*out` is the
// caller's to free(), and is NULL (with `*out_size` 0) whenever the status is not WI_OK.
// scripts/c-shims-check.sh runs every stop, deadline and error path under ASan and UBSan.

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WI_MESSAGE_CAPACITY 200

// MARK: Stopping long work

/// A flag another thread raises to stop an encode between rows (a timeout, a client gone).
typedef struct wi_stop wi_stop;

wi_stop *wi_stop_create(void);
void wi_stop_destroy(wi_stop *stop);
/// Raises the flag (from any thread).
void wi_stop_request(wi_stop *stop);
/// Whether the flag is raised; 0 for NULL.
int wi_stop_requested(const wi_stop *stop);
/// Arms the flag to raise itself at the `checks`-th `wi_stop_requested` from now (1: the next),
/// so a test can stop work at each of its check points in turn; 0 disarms it. Resets the count
/// of `wi_stop_checks`. Arm with INT64_MAX to count a whole run's checks.
void wi_stop_request_after(wi_stop *stop, int64_t checks);
/// The checks made since `wi_stop_request_after` armed the flag.
int64_t wi_stop_checks(const wi_stop *stop);

typedef enum {
    WI_OK = 0,
    WI_ERROR = -1,           // The library rejected the data; `message` says why.
    WI_LIMIT_EXCEEDED = -2,  // The image is larger than the caller's pixel limit.
    WI_OUT_OF_MEMORY = -3,
} wi_status;

// MARK: JPEG decoding

typedef struct wi_jpeg_decoder wi_jpeg_decoder;

/// Creates a decompressor reading `size` bytes at `data` (not copied: keep them alive).
wi_jpeg_decoder *wi_jpeg_decoder_create(const uint8_t *data, size_t size);
void wi_jpeg_decoder_destroy(wi_jpeg_decoder *decoder);
const char *wi_jpeg_decoder_message(const wi_jpeg_decoder *decoder);
/// 1 when the data ended before the image did (libjpeg then fills in the rest).
int wi_jpeg_decoder_hit_end_of_data(const wi_jpeg_decoder *decoder);
/// Makes decoding fail once the data has more than `max_scans` scans (0: no limit), decoding
/// has taken `budget_ns` nanoseconds from now (0: no limit) or `stop` is raised (NULL: never);
/// checked every 16 rows and every row group of a progressive file's scans. Set before `read_header`.
void wi_jpeg_decoder_set_limits(wi_jpeg_decoder *decoder, int max_scans, int64_t budget_ns, const wi_stop *stop);
/// 1 when a failure came from the limits of `wi_jpeg_decoder_set_limits`.
int wi_jpeg_decoder_limit_hit(const wi_jpeg_decoder *decoder);
/// Bytes of a multi-scan image's coefficients handed back to the system so far while its rows
/// were read (on Linux; 0 elsewhere, and for baseline images, which keep none).
size_t wi_jpeg_released_coefficient_bytes(const wi_jpeg_decoder *decoder);
/// The libjpeg state, for reading the header fields and setting decompression parameters
/// between `read_header` and `start`.
struct jpeg_decompress_struct *wi_jpeg_decoder_info(wi_jpeg_decoder *decoder);

/// Reads the header, keeping APP1 (EXIF) markers for orientation.
wi_status wi_jpeg_read_header(wi_jpeg_decoder *decoder);
/// Sets the output colour space: 0 = RGBA (from YCbCr, RGB or gray), 1 = CMYK as stored.
wi_status wi_jpeg_start(wi_jpeg_decoder *decoder, int cmyk_output);
typedef struct wi_color_transform wi_color_transform;
/// Reads rows into `dst` (output_width × 4 bytes each, `stride` apart) until `max_rows`
/// or the end of the image; `rows_read` gets the count. A `transform` (or NULL) converts each
/// batch of rows as soon as it is decoded.
wi_status wi_jpeg_read_rows(wi_jpeg_decoder *decoder, uint8_t *dst, size_t stride, uint32_t max_rows,
                            const wi_color_transform *transform, uint32_t *rows_read);
wi_status wi_jpeg_finish(wi_jpeg_decoder *decoder);
/// The first saved APP1 marker whose payload starts with "Exif\0\0", or NULL.
const uint8_t *wi_jpeg_exif(wi_jpeg_decoder *decoder, size_t *length);
/// 1 when an Adobe APP14 marker was seen (CMYK data is then stored inverted).
int wi_jpeg_saw_adobe_marker(wi_jpeg_decoder *decoder);
/// The ICC profile of the APP2 `ICC_PROFILE` markers, segments assembled in order (after
/// `wi_jpeg_read_header`); malloc'ed (the caller frees), NULL when there is none or it is broken.
uint8_t *wi_jpeg_icc_profile(wi_jpeg_decoder *decoder, size_t *length);
/// The most bytes a baseline JPEG decoded at 1/8 holds besides libjpeg's own while its scan of
/// `blocks` 8×8 blocks (every component's, padded to whole MCUs) is read ahead of libjpeg
/// (jpeg_scan_ahead.c): a value store of 32 bytes a block, at most 64 MB, in chunks that may hold
/// a sixteenth more, and Huffman tables.
size_t wi_jpeg_scan_ahead_bytes(size_t blocks);

// MARK: JPEG encoding

typedef enum {
    WI_JPEG_RGB = 0,        // YCbCr JPEG (the usual kind).
    WI_JPEG_GRAYSCALE = 1,  // One luminance channel.
    WI_JPEG_CMYK = 2,       // Adobe CMYK, stored inverted as Photoshop writes it.
} wi_jpeg_color_model;

/// Encodes an RGBA8 image (alpha ignored). `exif` (TIFF bytes without the "Exif\0\0" prefix)
/// becomes an APP1 marker when not NULL, `icc` APP2 `ICC_PROFILE` markers. On success `*out` is a
/// malloc'ed buffer the caller frees. Stops with WI_LIMIT_EXCEEDED between rows once `stop` is requested or `budget_ns` has passed
/// (NULL, 0: never).
wi_status wi_jpeg_encode(const uint8_t *rgba, uint32_t width, uint32_t height, size_t stride, int quality,
                         int progressive, wi_jpeg_color_model color_model, const uint8_t *exif, size_t exif_length,
                         const uint8_t *icc, size_t icc_length, const wi_stop *stop, int64_t budget_ns,
                         uint8_t **out, size_t *out_size, char *message);

// MARK: PNG decoding (push/progressive reader)

typedef struct wi_png_decoder wi_png_decoder;

/// A push decoder producing RGBA8 (straight alpha; palette, gray and tRNS expanded, 16-bit
/// scaled to 8). `max_pixels` guards the allocation; 0 means no limit.
wi_png_decoder *wi_png_decoder_create(uint64_t max_pixels);
void wi_png_decoder_destroy(wi_png_decoder *decoder);
/// Makes the decoder write pixels into `pixels` (`capacity` bytes, rows width × 4 apart) instead
/// of allocating its own buffer; the header's size must fit or decoding fails.
void wi_png_decoder_use_buffer(wi_png_decoder *decoder, uint8_t *pixels, size_t capacity);
/// Makes feeding fail with WI_LIMIT_EXCEEDED once decoding has taken `budget_ns` nanoseconds
/// from now (checked every 256 KB of rows; 0: no limit) or `stop` is raised (checked every 16
/// rows of a pass; NULL: never).
void wi_png_decoder_set_limits(wi_png_decoder *decoder, int64_t budget_ns, const wi_stop *stop);
/// Feeds the next bytes of the file. May be called with any chunking.
wi_status wi_png_decoder_feed(wi_png_decoder *decoder, const uint8_t *data, size_t size);
const char *wi_png_decoder_message(const wi_png_decoder *decoder);

typedef struct {
    uint32_t width;
    uint32_t height;
    int header_ready;   // IHDR read and the pixel buffer allocated.
    int finished;       // IEND reached.
    int interlaced;     // Adam7.
    int has_alpha;      // Alpha channel or tRNS in the source.
    int bit_depth;
    int color_type;
    int pass;           // Current Adam7 pass (0...6), 0 when not interlaced.
    uint32_t rows_done; // Rows completed in the current pass (all rows when not interlaced).
    uint8_t *pixels;    // width × 4 × height bytes, owned by the decoder.
    size_t stride;
} wi_png_state;

wi_png_state wi_png_decoder_state(const wi_png_decoder *decoder);
/// The colour chunks other than iCCP, once the header is read.
typedef struct {
    int has_srgb;              // an sRGB chunk
    double gamma;              // gAMA's file gamma (0.45455 for 1/2.2); 0 when absent
    int has_chromaticities;    // a cHRM chunk
    double chromaticities[8];  // cHRM's x, y of red, green, blue and white
} wi_png_color_chunks;

wi_png_color_chunks wi_png_decoder_color_chunks(const wi_png_decoder *decoder);
/// The iCCP chunk's profile (decompressed), once the header is read; NULL when there is none.
/// Owned by the decoder.
const uint8_t *wi_png_decoder_icc_profile(const wi_png_decoder *decoder, size_t *length);

// MARK: PNG encoding

/// zlib's strategy for a PNG of these pixels at `compression_level`: 3 (Z_RLE) when a sample of
/// 32 rows in four bands compresses poorly (to an eighth of its bytes or more) and Z_RLE is within
/// 0.5 % of libpng's usual strategy there (level 9: no larger), as for photos; otherwise -1
/// (libpng's own: LZ77). Level 0, images of 48 rows or fewer (the sample would cost more than
/// it saves) and failures give -1.
int wi_png_strategy(const uint8_t *rgba, uint32_t width, uint32_t height, size_t stride, int keep_alpha,
                    int compression_level);

/// Encodes RGBA8 as 8-bit RGBA, or RGB when `keep_alpha` is 0, Adam7-interlaced when
/// `interlaced` is not 0, with `icc` as an iCCP chunk and `exif` as an eXIf chunk when not NULL.
/// zlib's strategy is `wi_png_strategy`'s choice. `*out` is malloc'ed. Stops with
/// WI_LIMIT_EXCEEDED between rows once `stop` is requested or `budget_ns` has passed.
wi_status wi_png_encode(const uint8_t *rgba, uint32_t width, uint32_t height, size_t stride, int keep_alpha,
                        int interlaced, int compression_level, const uint8_t *icc, size_t icc_length, const uint8_t *exif,
                        size_t exif_length, const wi_stop *stop, int64_t budget_ns, uint8_t **out, size_t *out_size,
                        char *message);

// MARK: TIFF (libtiff)

/// Decodes the first image of a TIFF in memory to RGBA8 (`*rgba` malloc'ed, straight alpha),
/// refusing more than `max_pixels` before allocating; stops between bands of rows once `stop`
/// is requested or `budget_ns` has passed (WI_LIMIT_EXCEEDED). `*has_alpha`: the file has an
/// extra (alpha) sample.
wi_status wi_tiff_decode(const uint8_t *data, size_t size, uint64_t max_pixels, const wi_stop *stop,
                         int64_t budget_ns, uint32_t *width, uint32_t *height, uint8_t **rgba, int *has_alpha,
                         char *message);

/// Encodes RGBA8 as an 8-bit RGB (or RGBA, straight alpha, when `keep_alpha`) TIFF, deflate
/// compressed with the horizontal predictor. `*out` is malloc'ed.
wi_status wi_tiff_encode(const uint8_t *rgba, uint32_t width, uint32_t height, size_t stride, int keep_alpha,
                         const wi_stop *stop, int64_t budget_ns, uint8_t **out, size_t *out_size, char *message);

// MARK: Colour management (Little CMS 2)

/// How the pixels a colour transform reads are laid out; it always writes RGBA8.
typedef enum {
    WI_PIXELS_RGBA = 0,            // RGBA8; alpha is left alone.
    WI_PIXELS_GRAY_IN_RGBA = 1,    // RGBA8 whose first byte is the gray value; alpha is left alone.
    WI_PIXELS_CMYK = 2,            // CMYK8 as stored; the fourth byte becomes opaque alpha.
    WI_PIXELS_CMYK_INVERTED = 3,   // Adobe's inverted CMYK8 (0 = full ink).
} wi_pixel_layout;

/// The colour space of an ICC profile.
typedef enum {
    WI_PROFILE_UNREADABLE = 0,
    WI_PROFILE_RGB = 1,
    WI_PROFILE_GRAY = 2,
    WI_PROFILE_CMYK = 3,
    WI_PROFILE_OTHER = 4,
} wi_profile_space;

/// What lcms says of a profile: its colour space, and 1 in `*is_srgb` when its description names
/// sRGB (those skip the transform).
wi_profile_space wi_color_profile_inspect(const uint8_t *icc, size_t size, int *is_srgb);

typedef struct wi_color_transform wi_color_transform;

/// How a colour transform is built.
typedef enum {
    WI_COLOR_DEFAULT = 0,
    /// Black-point compensation (off by default: libvips's and so imgproxy's intent is relative
    /// colorimetric without it). Always converts through lcms.
    WI_COLOR_BLACK_POINT_COMPENSATION = 1,
    /// lcms for every profile, never the table paths (the reference the tables are checked against).
    WI_COLOR_LCMS_ONLY = 2,
} wi_color_options;

/// Which path a transform converts through.
typedef enum {
    WI_COLOR_PATH_LCMS = 0,
    WI_COLOR_PATH_MATRIX_SHAPER = 1,  // an RGB matrix-shaper profile: tables, within one level of lcms
    WI_COLOR_PATH_GRAY_TABLE = 2,     // a gray profile: lcms's answer for each of the 256 levels
} wi_color_path;

/// A transform from `icc` (in `layout`) to sRGB RGBA8, relative colorimetric as libvips
/// converts (black-point compensation only when `options` asks). Safe to apply from several
/// threads at once (no cache). NULL when the profile cannot be read or does not fit the layout;
/// `message` says why.
wi_color_transform *wi_color_transform_create(const uint8_t *icc, size_t size, wi_pixel_layout layout,
                                              wi_color_options options, char *message);
/// The path `transform` converts through.
wi_color_path wi_color_transform_path(const wi_color_transform *transform);
/// Transforms `pixel_count` pixels in place (4 bytes each).
void wi_color_transform_apply(const wi_color_transform *transform, uint8_t *pixels, size_t pixel_count);
void wi_color_transform_destroy(wi_color_transform *transform);

/// A matrix-shaper RGB profile from chromaticities (x, y of red, green, blue and white) and a
/// transfer curve in lcms's parametric type 4 (g, a, b, c, d: Y = (aX + b)^g for X >= d, else cX).
/// `*out` is malloc'ed.
wi_status wi_color_profile_create_rgb(const double chromaticities[8], const double curve_parameters[5], uint8_t **out,
                                      size_t *out_size);
int wi_lcms_version(void);
/// lcms's built-in sRGB profile ("sRGB built-in"). `*out` is malloc'ed.
wi_status wi_color_profile_create_srgb(uint8_t **out, size_t *out_size);
/// A gray profile (D50 white) with a pure power `gamma`. `*out` is malloc'ed.
wi_status wi_color_profile_create_gray(double gamma, uint8_t **out, size_t *out_size);

// MARK: Pixel loops

/// `out[i] = floor(clamp(in[i], 0, 255) + 0.5)` for `count` floats: the resampler's last step,
/// here because Swift checks every float-to-integer conversion and so cannot vectorise it.
void wi_floats_to_bytes(const float *in, uint8_t *out, size_t count);

/// The fixed-point weights' scale: a weight of 1 is `1 << WI_RESAMPLE_BITS`.
#define WI_RESAMPLE_BITS 14
/// The bits below each level the row pass keeps (its values are levels × 2^this).
#define WI_RESAMPLE_FRACTION 6
/// One row of opaque RGBA filtered to `out_width` pixels: channel `c` of pixel `x` is the sum of
/// `weights[x * stride + k] * in[(starts[x] + k) * 4 + c]` over `k < counts[x]`, rounded to
/// WI_RESAMPLE_FRACTION bits (SSE2 when the target has it; the same integers either way).
void wi_resample_row(const uint8_t *in, int16_t *out, size_t out_width, const intptr_t *starts,
                     const intptr_t *counts, const int16_t *weights, size_t stride);
/// `out[i]` is the sum of `weights[k] * rows[k][i]` over `k < count`, rounded and clamped to a
/// byte. Each call's weights (row or column) must sum to less than 2 × 2^WI_RESAMPLE_BITS in
/// absolute value, which keeps every sum within 32 bits.
void wi_resample_column(const int16_t *const *rows, const int16_t *weights, size_t count, uint8_t *out,
                        size_t values);
/// The plain loops `wi_resample_row` and `wi_resample_column` must agree with, for tests.
void wi_resample_row_reference(const uint8_t *in, int16_t *out, size_t out_width, const intptr_t *starts,
                               const intptr_t *counts, const int16_t *weights, size_t stride);
void wi_resample_column_reference(const int16_t *const *rows, const int16_t *weights, size_t count, uint8_t *out,
                                  size_t values);

#ifdef __cplusplus
}
#endif

/// The codec libraries loaded on first use (codec_loader.c) rather than at process start.
typedef enum { WI_LIBRARY_AVIF = 0, WI_LIBRARY_HEIF = 1, WI_LIBRARY_JXL = 2 } wi_codec_library;

/// Loads `library` (once per process; thread-safe) so its functions may be called: 1 when
/// loaded, else 0 with the reason (not found, or a version other than the headers') in
/// `message` (`WI_MESSAGE_CAPACITY` bytes, may be NULL). A failure is remembered.
int wi_codec_library_load(wi_codec_library library, char *message);

#endif
