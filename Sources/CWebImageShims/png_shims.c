// PNG through libpng. Its errors arrive by longjmp (png_error, raised by libpng and by our
// callbacks for limits and stops); `wi_png_decoder_feed` and `wi_png_encode` set the jump point.
//
// Who owns what while decoding:
// - `wi_png_decoder` is calloc'ed by `wi_png_decoder_create`, freed by `wi_png_decoder_destroy`
//   with libpng's structs (`png_destroy_read_struct`). A failed feed leaves it whole.
// - The pixel buffer is the caller's when given with `wi_png_decoder_use_buffer` (never freed
//   here); otherwise calloc'ed in the info callback, stored in `state.pixels` before any later
//   error can occur, and freed by destroy.
// - The iCCP copy (`icc`) is malloc'ed in the info callback and freed by destroy; libpng's own
//   copy lives in its info struct.
// - Fed bytes are read during `png_process_data` only (libpng copies what it keeps).

#include "CWebImageShims.h"
#include "shims_clock.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>
#include <zlib.h>

struct wi_png_decoder {
    png_structp png;
    png_infop info;
    char message[WI_MESSAGE_CAPACITY];
    uint64_t max_pixels;
    int limit_exceeded;
    int out_of_memory;
    uint8_t *external_pixels;
    size_t external_capacity;
    int64_t deadline_ns;
    double budget_seconds;
    const wi_stop *stop;
    /* Row bytes combined since the clock was last read: reading it per row cost as much as
       decoding a 1-pixel-wide row. */
    size_t bytes_since_clock_check;
    wi_png_state state;
    /* The iCCP chunk's profile, copied before the transforms; malloc'ed, NULL when none. */
    uint8_t *icc;
    size_t icc_length;
    wi_png_color_chunks color_chunks;
};

static void wi_png_error(png_structp png, png_const_charp text) {
    char *message = png_get_error_ptr(png);
    if (message != NULL) snprintf(message, WI_MESSAGE_CAPACITY, "%s", text);
    png_longjmp(png, 1);
}

static void wi_png_warning(png_structp png, png_const_charp text) {
    (void)png;
    (void)text;
}

static void wi_png_info_callback(png_structp png, png_infop info) {
    wi_png_decoder *decoder = png_get_progressive_ptr(png);
    png_uint_32 width = 0, height = 0;
    int bit_depth = 0, color_type = 0, interlace = 0;
    png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, NULL, NULL);
    decoder->state.width = width;
    decoder->state.height = height;
    decoder->state.bit_depth = bit_depth;
    decoder->state.color_type = color_type;
    decoder->state.interlaced = interlace != PNG_INTERLACE_NONE;
    decoder->state.has_alpha =
        (color_type & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(png, info, PNG_INFO_tRNS) != 0;

    png_charp icc_name = NULL;
    int icc_compression = 0;
    png_bytep icc = NULL;
    png_uint_32 icc_length = 0;
    if (decoder->icc == NULL &&
        png_get_iCCP(png, info, &icc_name, &icc_compression, &icc, &icc_length) == PNG_INFO_iCCP && icc != NULL &&
        icc_length > 0) {
        decoder->icc = malloc(icc_length);
        if (decoder->icc != NULL) {
            memcpy(decoder->icc, icc, icc_length);
            decoder->icc_length = icc_length;
        }
    }

    wi_png_color_chunks *chunks = &decoder->color_chunks;
    chunks->has_srgb = png_get_valid(png, info, PNG_INFO_sRGB) != 0;
    double gamma = 0;
    if (png_get_valid(png, info, PNG_INFO_gAMA) && png_get_gAMA(png, info, &gamma) && gamma > 0) chunks->gamma = gamma;
    double *c = chunks->chromaticities;
    chunks->has_chromaticities = png_get_valid(png, info, PNG_INFO_cHRM) &&
                                 png_get_cHRM(png, info, &c[6], &c[7], &c[0], &c[1], &c[2], &c[3], &c[4], &c[5]);

    uint64_t pixels = (uint64_t)width * (uint64_t)height;
    if (decoder->max_pixels != 0 && pixels > decoder->max_pixels) {
        decoder->limit_exceeded = 1;
        png_error(png, "image dimensions exceed the pixel limit");
    }

    // Everything becomes 8-bit RGBA with straight alpha.
    png_set_expand(png);
    png_set_scale_16(png);
    png_set_gray_to_rgb(png);
    png_set_add_alpha(png, 0xFF, PNG_FILLER_AFTER);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);

    size_t stride = (size_t)width * 4;
    if (png_get_rowbytes(png, info) != stride) png_error(png, "unexpected row size after transforms");
    uint8_t *pixels_buffer;
    if (decoder->external_pixels != NULL) {
        if (decoder->external_capacity / stride < height) png_error(png, "the output buffer is too small");
        pixels_buffer = decoder->external_pixels;
    } else {
        pixels_buffer = calloc(height, stride);
    }
    if (pixels_buffer == NULL) {
        decoder->out_of_memory = 1;
        png_error(png, "out of memory for the pixel buffer");
    }
    decoder->state.pixels = pixels_buffer;
    decoder->state.stride = stride;
    decoder->state.header_ready = 1;
}

static void wi_png_row_callback(png_structp png, png_bytep new_row, png_uint_32 row, int pass) {
    wi_png_decoder *decoder = png_get_progressive_ptr(png);
    if (decoder->state.pixels == NULL || row >= decoder->state.height) return;
    // For interlaced images this merges the pass's pixels into the row; otherwise it copies.
    png_progressive_combine_row(png, decoder->state.pixels + (size_t)row * decoder->state.stride, new_row);
    if (pass != decoder->state.pass) {
        decoder->state.pass = pass;
        decoder->state.rows_done = 0;
    }
    decoder->state.rows_done = row + 1;
    if (row % 16 == 0 && wi_stop_requested(decoder->stop)) {
        decoder->limit_exceeded = 1;
        png_error(png, "decoding was stopped");
    }
    if (decoder->deadline_ns == 0) return;
    decoder->bytes_since_clock_check += decoder->state.stride;
    if (decoder->bytes_since_clock_check < (256 << 10)) return;
    decoder->bytes_since_clock_check = 0;
    if (wi_monotonic_ns() > decoder->deadline_ns) {
        decoder->limit_exceeded = 1;
        char text[80];
        snprintf(text, sizeof text, "decoding took longer than the %.3g s limit", decoder->budget_seconds);
        png_error(png, text);
    }
}

static void wi_png_end_callback(png_structp png, png_infop info) {
    (void)info;
    wi_png_decoder *decoder = png_get_progressive_ptr(png);
    decoder->state.finished = 1;
}

wi_png_decoder *wi_png_decoder_create(uint64_t max_pixels) {
    wi_png_decoder *decoder = calloc(1, sizeof(wi_png_decoder));
    if (decoder == NULL) return NULL;
    decoder->max_pixels = max_pixels;
    decoder->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, decoder->message, wi_png_error, wi_png_warning);
    if (decoder->png == NULL) {
        free(decoder);
        return NULL;
    }
    decoder->info = png_create_info_struct(decoder->png);
    if (decoder->info == NULL) {
        png_destroy_read_struct(&decoder->png, NULL, NULL);
        free(decoder);
        return NULL;
    }
    // Our own pixel limit guards allocation; libpng's 1,000,000-per-side default would reject
    // valid tall images. Ancillary chunk memory stays bounded by libpng's defaults.
    png_set_user_limits(decoder->png, 0x7fffffff, 0x7fffffff);
    png_set_progressive_read_fn(decoder->png, decoder, wi_png_info_callback, wi_png_row_callback,
                                wi_png_end_callback);
    return decoder;
}

void wi_png_decoder_use_buffer(wi_png_decoder *decoder, uint8_t *pixels, size_t capacity) {
    decoder->external_pixels = pixels;
    decoder->external_capacity = capacity;
}

void wi_png_decoder_set_limits(wi_png_decoder *decoder, int64_t budget_ns, const wi_stop *stop) {
    decoder->stop = stop;
    decoder->deadline_ns = wi_deadline_after(budget_ns);
    decoder->budget_seconds = (double)budget_ns / 1e9;
}

void wi_png_decoder_destroy(wi_png_decoder *decoder) {
    if (decoder == NULL) return;
    png_destroy_read_struct(&decoder->png, &decoder->info, NULL);
    if (decoder->state.pixels != decoder->external_pixels) free(decoder->state.pixels);
    free(decoder->icc);
    free(decoder);
}

wi_png_color_chunks wi_png_decoder_color_chunks(const wi_png_decoder *decoder) { return decoder->color_chunks; }

const uint8_t *wi_png_decoder_icc_profile(const wi_png_decoder *decoder, size_t *length) {
    *length = decoder->icc_length;
    return decoder->icc;
}

wi_status wi_png_decoder_feed(wi_png_decoder *decoder, const uint8_t *data, size_t size) {
    if (setjmp(png_jmpbuf(decoder->png))) {
        if (decoder->limit_exceeded) return WI_LIMIT_EXCEEDED;
        if (decoder->out_of_memory) return WI_OUT_OF_MEMORY;
        return WI_ERROR;
    }
    png_process_data(decoder->png, decoder->info, (png_bytep)data, size);
    return WI_OK;
}

const char *wi_png_decoder_message(const wi_png_decoder *decoder) { return decoder->message; }

wi_png_state wi_png_decoder_state(const wi_png_decoder *decoder) { return decoder->state; }

// MARK: Encoding
//
// Who owns what during an encode: `wi_png_output` and its `bytes` are ours (calloc'ed before the
// jump point, grown by realloc in the write callback, freed on every failure, handed to the
// caller on success). libpng only passes our `write` callback the bytes to append; it never sees
// the block. Everything the error branch reads is on the heap, so a longjmp from libpng (its
// errors, our stop check) finds the values last stored. libpng's own state is freed by
// `png_destroy_write_struct` on both paths.

struct wi_png_output {
    uint8_t *bytes;
    size_t size;
    size_t capacity;
    int out_of_memory;
    int stopped;
    int64_t deadline_ns;
};

static void wi_png_write(png_structp png, png_bytep data, png_size_t length) {
    struct wi_png_output *output = png_get_io_ptr(png);
    if (length > SIZE_MAX - output->size) png_error(png, "the encoded PNG is too large");
    if (output->size + length > output->capacity) {
        size_t capacity = output->capacity ? output->capacity : 64 * 1024;
        while (capacity < output->size + length) {
            if (capacity > SIZE_MAX / 2) png_error(png, "the encoded PNG is too large");
            capacity *= 2;
        }
        uint8_t *grown = realloc(output->bytes, capacity);
        if (grown == NULL) {
            output->out_of_memory = 1;
            png_error(png, "out of memory for the encoded PNG");
        }
        output->bytes = grown;
        output->capacity = capacity;
    }
    memcpy(output->bytes + output->size, data, length);
    output->size += length;
}

static void wi_png_flush(png_structp png) { (void)png; }

// MARK: zlib's strategy
//
// Photos compress no better with deflate's LZ77 search than with its run-length strategy
// (Z_RLE): after PNG's row filters their bytes are noise to a string matcher, which spends most
// of the encode searching (level 6: 3–6 times the CPU of Z_RLE) and often comes out larger.
// Drawings, text, flat colour and gray pictures stored as RGB compress far better with it.
// `wi_png_strategy` encodes a sample of rows both ways and keeps Z_RLE only for rows that
// compress poorly and where it is within 0.5 % (level 9: no larger). The sample's libpng state is
// created and destroyed in `wi_png_sample_size` on every path; the rows are the caller's, read
// only; the counted bytes are never stored.

enum { WI_PNG_SAMPLE_BAND = 8, WI_PNG_SAMPLE_BANDS = 4 };

static void wi_png_count(png_structp png, png_bytep data, png_size_t length) {
    (void)data;
    size_t *size = png_get_io_ptr(png);
    *size += length;
}

/// The bytes of a non-interlaced PNG of `rows` at `level` with libpng's filters and zlib's
/// `strategy` (-1: libpng's choice); 0 when libpng fails.
static size_t wi_png_sample_size(const uint8_t *const *rows, uint32_t count, uint32_t width, int keep_alpha, int level,
                                 int strategy) {
    char message[WI_MESSAGE_CAPACITY];
    // Set before setjmp and never changed after it; `size` is read only on the normal path.
    size_t size = 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, message, wi_png_error, wi_png_warning);
    png_infop info = png == NULL ? NULL : png_create_info_struct(png);
    if (info == NULL) {
        if (png != NULL) png_destroy_write_struct(&png, NULL);
        return 0;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return 0;
    }
    png_set_write_fn(png, &size, wi_png_count, wi_png_flush);
    png_set_compression_level(png, level);
    if (strategy >= 0) png_set_compression_strategy(png, strategy);
    png_set_IHDR(png, info, width, count, 8, keep_alpha ? PNG_COLOR_TYPE_RGBA : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    if (!keep_alpha) png_set_filler(png, 0, PNG_FILLER_AFTER);
    for (uint32_t y = 0; y < count; y++) png_write_row(png, (png_const_bytep)rows[y]);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return size;
}

int wi_png_strategy(const uint8_t *rgba, uint32_t width, uint32_t height, size_t stride, int keep_alpha,
                    int compression_level) {
    // The sample (two encodes of 32 rows, the LZ77 one as dear as the image's own) pays for
    // itself only when Z_RLE saves more on the rest: on photos of over about 53 rows. Smaller
    // images keep libpng's strategy, encoded once.
    if (compression_level <= 0 || width == 0 || height <= WI_PNG_SAMPLE_BAND * WI_PNG_SAMPLE_BANDS * 3 / 2) return -1;
    const uint8_t *rows[WI_PNG_SAMPLE_BAND * WI_PNG_SAMPLE_BANDS];
    uint32_t count = 0;
    // Bands spread from the top to the bottom, so one flat sky does not decide alone.
    for (uint32_t band = 0; band < WI_PNG_SAMPLE_BANDS; band++) {
        uint32_t top = (uint32_t)((uint64_t)(height - WI_PNG_SAMPLE_BAND) * band / (WI_PNG_SAMPLE_BANDS - 1));
        for (uint32_t y = top; y < top + WI_PNG_SAMPLE_BAND; y++) rows[count++] = rgba + (size_t)y * stride;
    }
    size_t usual = wi_png_sample_size(rows, count, width, keep_alpha, compression_level, -1);
    size_t run_length = usual == 0 ? 0 : wi_png_sample_size(rows, count, width, keep_alpha, compression_level, Z_RLE);
    if (usual == 0 || run_length == 0) return -1;
    // Rows that compress to under an eighth of their bytes are drawn, not photographed: LZ77 is
    // both cheap and much better there.
    size_t raw = (size_t)width * (keep_alpha ? 4 : 3) * count;
    if (usual < raw / 8) return -1;
    size_t allowed = compression_level >= 9 ? usual : usual + usual / 200;
    return run_length <= allowed ? Z_RLE : -1;
}

wi_status wi_png_encode(const uint8_t *rgba, uint32_t width, uint32_t height, size_t stride, int keep_alpha,
                        int interlaced, int compression_level, const uint8_t *icc, size_t icc_length, const uint8_t *exif,
                        size_t exif_length, const wi_stop *stop, int64_t budget_ns, uint8_t **out, size_t *out_size,
                        char *message) {
    *out = NULL;
    *out_size = 0;
    message[0] = 0;
    // The strategy's sample (two encodes of up to 32 rows) runs only for work still wanted.
    const int64_t deadline_ns = wi_deadline_after(budget_ns);
    const int stopped = wi_stop_requested(stop);
    if (stopped || (deadline_ns != 0 && wi_monotonic_ns() > deadline_ns)) {
        snprintf(message, WI_MESSAGE_CAPACITY, "%s",
                 stopped ? "encoding was stopped" : "encoding took longer than its time limit");
        return WI_LIMIT_EXCEEDED;
    }
    const int strategy = wi_png_strategy(rgba, width, height, stride, keep_alpha, compression_level);
    // `output`, `png` and `info` are set before setjmp and never changed after it.
    struct wi_png_output *const output = calloc(1, sizeof *output);
    if (output == NULL) return WI_OUT_OF_MEMORY;
    output->deadline_ns = deadline_ns;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, message, wi_png_error, wi_png_warning);
    png_infop info = png == NULL ? NULL : png_create_info_struct(png);
    if (info == NULL) {
        if (png != NULL) png_destroy_write_struct(&png, NULL);
        free(output);
        return WI_OUT_OF_MEMORY;
    }
    if (setjmp(png_jmpbuf(png))) {
        wi_status status = output->stopped ? WI_LIMIT_EXCEEDED : output->out_of_memory ? WI_OUT_OF_MEMORY : WI_ERROR;
        png_destroy_write_struct(&png, &info);
        free(output->bytes);
        free(output);
        return status;
    }
    png_set_write_fn(png, output, wi_png_write, wi_png_flush);
    /* libpng's default refuses over 1,000,000 rows or columns; PNG allows 2^31 - 1, as our reader does. */
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    png_set_compression_level(png, compression_level);
    if (strategy >= 0) png_set_compression_strategy(png, strategy);
    png_set_IHDR(png, info, width, height, 8, keep_alpha ? PNG_COLOR_TYPE_RGBA : PNG_COLOR_TYPE_RGB,
                 interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (icc != NULL && icc_length > 0 && icc_length <= UINT32_MAX) {
        png_set_iCCP(png, info, "ICC profile", PNG_COMPRESSION_TYPE_BASE, icc, (png_uint_32)icc_length);
    }
    if (exif != NULL && exif_length > 0 && exif_length <= INT32_MAX) {
        png_set_eXIf_1(png, info, (png_uint_32)exif_length, (png_bytep)exif);
    }
    png_write_info(png, info);
    if (!keep_alpha) png_set_filler(png, 0, PNG_FILLER_AFTER);
    /* Interlaced: libpng takes every row once per pass (7) and keeps the pixels each pass needs. */
    const int passes = interlaced ? png_set_interlace_handling(png) : 1;
    for (int pass = 0; pass < passes; pass++) {
        for (uint32_t y = 0; y < height; y++) {
            if (y % 16 == 0 && (wi_stop_requested(stop) || (output->deadline_ns != 0 && wi_monotonic_ns() > output->deadline_ns))) {
                output->stopped = 1;
                png_error(png,
                          wi_stop_requested(stop) ? "encoding was stopped" : "encoding took longer than its time limit");
            }
            png_write_row(png, (png_const_bytep)(rgba + (size_t)y * stride));
        }
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    *out = output->bytes;
    *out_size = output->size;
    free(output);
    return WI_OK;
}
