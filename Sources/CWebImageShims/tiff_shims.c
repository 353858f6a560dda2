// TIFF through libtiff, from and to memory. libtiff reports errors through handlers, not longjmp;
// each open gets handlers that copy the message for the caller (TIFFOpenOptions, libtiff 4.5).
//
// Who owns what: decoding reads the caller's bytes in place (`wi_tiff_memory.bytes`, never
// written or freed: `writable` is 0) into a raster malloc'ed here, freed on every failure and
// handed to the caller (`*rgba`) on success. Encoding writes into `wi_tiff_memory.bytes`, ours,
// grown by realloc in `wi_tiff_write` (a failed realloc leaves the old block ours); libtiff only
// calls our callbacks and never frees it. `TIFFClose` may still write (it flushes the directory),
// so the block is read or freed only after it. No jump points: libtiff returns errors.

#include "CWebImageShims.h"
#include "shims_clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

/// The bytes being read or written, and the caller's message buffer.
struct wi_tiff_memory {
    uint8_t *bytes;
    size_t size;
    size_t capacity;
    size_t position;
    int writable;
    int failed;
    char *message;
};

static int wi_tiff_error(TIFF *tif, void *user, const char *module, const char *format, va_list args) {
    (void)tif;
    (void)module;
    struct wi_tiff_memory *memory = user;
    if (memory != NULL && memory->message != NULL && memory->message[0] == 0) {
        vsnprintf(memory->message, WI_MESSAGE_CAPACITY, format, args);
    }
    return 1;
}

static int wi_tiff_warning(TIFF *tif, void *user, const char *module, const char *format, va_list args) {
    (void)tif;
    (void)user;
    (void)module;
    (void)format;
    (void)args;
    return 1;  // warnings are not the caller's concern
}

static tmsize_t wi_tiff_read(thandle_t handle, void *buffer, tmsize_t size) {
    struct wi_tiff_memory *memory = handle;
    if (size <= 0 || memory->position >= memory->size) return 0;
    size_t count = (size_t)size;
    if (count > memory->size - memory->position) count = memory->size - memory->position;
    memcpy(buffer, memory->bytes + memory->position, count);
    memory->position += count;
    return (tmsize_t)count;
}

static tmsize_t wi_tiff_write(thandle_t handle, void *buffer, tmsize_t size) {
    struct wi_tiff_memory *memory = handle;
    if (!memory->writable || size < 0) return -1;
    size_t count = (size_t)size;
    if (memory->position > SIZE_MAX - count) return -1;
    size_t end = memory->position + count;
    if (end > memory->capacity) {
        size_t capacity = memory->capacity < 65536 ? 65536 : memory->capacity;
        while (capacity < end) {
            if (capacity > SIZE_MAX / 2) return -1;
            capacity *= 2;
        }
        uint8_t *grown = realloc(memory->bytes, capacity);
        if (grown == NULL) {
            memory->failed = 1;
            return -1;
        }
        memory->bytes = grown;
        memory->capacity = capacity;
    }
    if (memory->position > memory->size) memset(memory->bytes + memory->size, 0, memory->position - memory->size);
    memcpy(memory->bytes + memory->position, buffer, count);
    memory->position = end;
    if (end > memory->size) memory->size = end;
    return (tmsize_t)count;
}

static toff_t wi_tiff_seek(thandle_t handle, toff_t offset, int whence) {
    struct wi_tiff_memory *memory = handle;
    uint64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? memory->position : memory->size;
    if (offset > UINT64_MAX - base) return (toff_t)-1;
    uint64_t target = base + offset;
    if (target > SIZE_MAX || (!memory->writable && target > memory->size)) return (toff_t)-1;
    memory->position = (size_t)target;
    return (toff_t)target;
}

static int wi_tiff_close(thandle_t handle) {
    (void)handle;
    return 0;
}

static toff_t wi_tiff_size(thandle_t handle) { return ((struct wi_tiff_memory *)handle)->size; }

static int wi_tiff_map(thandle_t handle, void **base, toff_t *size) {
    (void)handle;
    (void)base;
    (void)size;
    return 0;
}

static void wi_tiff_unmap(thandle_t handle, void *base, toff_t size) {
    (void)handle;
    (void)base;
    (void)size;
}

static TIFF *wi_tiff_open(struct wi_tiff_memory *memory, const char *mode) {
    TIFFOpenOptions *options = TIFFOpenOptionsAlloc();
    if (options == NULL) return NULL;
    TIFFOpenOptionsSetErrorHandlerExtR(options, wi_tiff_error, memory);
    TIFFOpenOptionsSetWarningHandlerExtR(options, wi_tiff_warning, memory);
    TIFF *tif = TIFFClientOpenExt("memory", mode, memory, wi_tiff_read, wi_tiff_write, wi_tiff_seek, wi_tiff_close,
                                  wi_tiff_size, wi_tiff_map, wi_tiff_unmap, options);
    TIFFOpenOptionsFree(options);
    return tif;
}

wi_status wi_tiff_decode(const uint8_t *data, size_t size, uint64_t max_pixels, const wi_stop *stop,
                         int64_t budget_ns, uint32_t *width, uint32_t *height, uint8_t **rgba, int *has_alpha,
                         char *message) {
    const int64_t deadline_ns = wi_deadline_after(budget_ns);
    message[0] = 0;
    *rgba = NULL;
    struct wi_tiff_memory memory = {(uint8_t *)data, size, size, 0, 0, 0, message};
    TIFF *tif = wi_tiff_open(&memory, "rm");
    if (tif == NULL) return WI_ERROR;
    uint32_t w = 0, h = 0;
    uint16_t extra = 0;
    uint16_t *extra_types = NULL;
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &extra, &extra_types);
    *width = w;
    *height = h;
    *has_alpha = extra > 0;
    if (w == 0 || h == 0) {
        if (message[0] == 0) snprintf(message, WI_MESSAGE_CAPACITY, "invalid dimensions %ux%u", w, h);
        TIFFClose(tif);
        return WI_ERROR;
    }
    if ((uint64_t)w * h > max_pixels) {
        snprintf(message, WI_MESSAGE_CAPACITY, "%ux%u is over the %llu-pixel limit", w, h,
                 (unsigned long long)max_pixels);
        TIFFClose(tif);
        return WI_LIMIT_EXCEEDED;
    }
    TIFFRGBAImage image;
    char reason[1024] = {0};  // libtiff writes up to 1024 bytes here
    if (!TIFFRGBAImageOK(tif, reason) || !TIFFRGBAImageBegin(&image, tif, 0, reason)) {
        if (message[0] == 0) snprintf(message, WI_MESSAGE_CAPACITY, "%s", reason);
        TIFFClose(tif);
        return WI_ERROR;
    }
    image.req_orientation = ORIENTATION_TOPLEFT;
    uint32_t *raster = malloc((size_t)w * h * 4);
    if (raster == NULL) {
        TIFFRGBAImageEnd(&image);
        TIFFClose(tif);
        return WI_OUT_OF_MEMORY;
    }
    // Bands of rows, so a stop or the deadline is noticed between them.
    const uint32_t band = 64;
    for (uint32_t row = 0; row < h; row += band) {
        if (wi_stop_requested(stop) || (deadline_ns != 0 && wi_monotonic_ns() > deadline_ns)) {
            snprintf(message, WI_MESSAGE_CAPACITY, "%s",
                     wi_stop_requested(stop) ? "decoding was stopped" : "decoding took longer than its time limit");
            free(raster);
            TIFFRGBAImageEnd(&image);
            TIFFClose(tif);
            return WI_LIMIT_EXCEEDED;
        }
        uint32_t rows = h - row < band ? h - row : band;
        image.row_offset = (int)row;
        image.col_offset = 0;
        if (!TIFFRGBAImageGet(&image, raster + (size_t)row * w, w, rows)) {
            free(raster);
            TIFFRGBAImageEnd(&image);
            TIFFClose(tif);
            if (message[0] == 0) snprintf(message, WI_MESSAGE_CAPACITY, "the pixels cannot be read");
            return WI_ERROR;
        }
    }
    TIFFRGBAImageEnd(&image);
    TIFFClose(tif);
    // ABGR packed words: R in the low byte. Written out as bytes R, G, B, A on any host.
    uint8_t *bytes = (uint8_t *)raster;
    for (size_t index = 0; index < (size_t)w * h; index++) {
        uint32_t pixel = raster[index];
        bytes[index * 4] = (uint8_t)TIFFGetR(pixel);
        bytes[index * 4 + 1] = (uint8_t)TIFFGetG(pixel);
        bytes[index * 4 + 2] = (uint8_t)TIFFGetB(pixel);
        bytes[index * 4 + 3] = (uint8_t)TIFFGetA(pixel);
    }
    // libtiff's RGBA reader premultiplies; our bitmaps hold straight alpha.
    if (*has_alpha) {
        for (size_t index = 0; index < (size_t)w * h; index++) {
            uint32_t alpha = bytes[index * 4 + 3];
            if (alpha == 0 || alpha == 255) continue;
            for (int channel = 0; channel < 3; channel++) {
                uint32_t value = (bytes[index * 4 + channel] * 255u + alpha / 2) / alpha;
                bytes[index * 4 + channel] = (uint8_t)(value > 255 ? 255 : value);
            }
        }
    }
    *rgba = bytes;
    return WI_OK;
}

wi_status wi_tiff_encode(const uint8_t *rgba, uint32_t width, uint32_t height, size_t stride, int keep_alpha,
                         const wi_stop *stop, int64_t budget_ns, uint8_t **out, size_t *out_size, char *message) {
    const int64_t deadline_ns = wi_deadline_after(budget_ns);
    message[0] = 0;
    *out = NULL;
    *out_size = 0;
    struct wi_tiff_memory memory = {NULL, 0, 0, 0, 1, 0, message};
    TIFF *tif = wi_tiff_open(&memory, "w");
    if (tif == NULL) return WI_ERROR;
    const uint16_t samples = keep_alpha ? 4 : 3;
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, width);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, height);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, samples);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_ORIENTATION, ORIENTATION_TOPLEFT);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
    TIFFSetField(tif, TIFFTAG_PREDICTOR, PREDICTOR_HORIZONTAL);
    if (keep_alpha) {
        uint16_t kind = EXTRASAMPLE_UNASSALPHA;  // straight alpha, as our bitmaps hold it
        TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, &kind);
    }
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, TIFFDefaultStripSize(tif, 0));
    uint8_t *row_buffer = malloc((size_t)width * samples);
    wi_status status = row_buffer == NULL ? WI_OUT_OF_MEMORY : WI_OK;
    for (uint32_t y = 0; status == WI_OK && y < height; y++) {
        if (y % 16 == 0 && (wi_stop_requested(stop) || (deadline_ns != 0 && wi_monotonic_ns() > deadline_ns))) {
            snprintf(message, WI_MESSAGE_CAPACITY, "%s",
                     wi_stop_requested(stop) ? "encoding was stopped" : "encoding took longer than its time limit");
            status = WI_LIMIT_EXCEEDED;
            break;
        }
        const uint8_t *source = rgba + (size_t)y * stride;
        for (uint32_t x = 0; x < width; x++) {
            memcpy(row_buffer + (size_t)x * samples, source + (size_t)x * 4, samples);
        }
        if (TIFFWriteScanline(tif, row_buffer, y, 0) < 0) status = memory.failed ? WI_OUT_OF_MEMORY : WI_ERROR;
    }
    free(row_buffer);
    if (status == WI_OK && !TIFFWriteDirectory(tif)) status = memory.failed ? WI_OUT_OF_MEMORY : WI_ERROR;
    TIFFClose(tif);
    if (status != WI_OK) {
        free(memory.bytes);
        return status;
    }
    *out = memory.bytes;
    *out_size = memory.size;
    return WI_OK;
}
