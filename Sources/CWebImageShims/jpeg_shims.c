#include "CWebImageShims.h"
#include "shims_clock.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

struct wi_jpeg_error {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int hit_end_of_data;
    int limit_hit;
};

struct wi_jpeg_decoder {
    struct jpeg_decompress_struct info;
    struct wi_jpeg_error error;
    const uint8_t *data;
    size_t size;
    int created;
    struct jpeg_progress_mgr progress;
    int max_scans;
    int64_t deadline_ns;
    double budget_seconds;
};

// libjpeg calls this every few rows of every pass, so it bounds both a scan bomb (a progressive
// file with thousands of scans, each a pass over the coefficients) and the time of any decode.
static void wi_jpeg_progress_monitor(j_common_ptr cinfo) {
    // `info` is the decoder's first member, so the decompressor's address is the decoder's.
    wi_jpeg_decoder *decoder = (wi_jpeg_decoder *)cinfo;
    struct wi_jpeg_error *error = &decoder->error;
    if (decoder->max_scans > 0 && decoder->info.input_scan_number > decoder->max_scans) {
        snprintf(error->message, sizeof error->message, "more than %d scans (a progressive JPEG has about 10)",
                 decoder->max_scans);
    } else if (decoder->deadline_ns != 0 && wi_monotonic_ns() > decoder->deadline_ns) {
        snprintf(error->message, sizeof error->message, "decoding took longer than the %.3g s limit",
                 decoder->budget_seconds);
    } else {
        return;
    }
    error->limit_hit = 1;
    longjmp(error->jump, 1);
}

static void wi_jpeg_error_exit(j_common_ptr cinfo) {
    struct wi_jpeg_error *error = (struct wi_jpeg_error *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, error->message);
    longjmp(error->jump, 1);
}

static void wi_jpeg_emit_message(j_common_ptr cinfo, int level) {
    struct wi_jpeg_error *error = (struct wi_jpeg_error *)cinfo->err;
    if (level < 0) {
        // Warnings: libjpeg recovers (corrupt data is skipped, a premature end gets a fake EOI).
        if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
            error->hit_end_of_data = 1;
        }
        cinfo->err->num_warnings++;
    }
}

static void wi_jpeg_output_message(j_common_ptr cinfo) { (void)cinfo; }

static void wi_jpeg_install_errors(struct wi_jpeg_error *error, struct jpeg_error_mgr **slot) {
    *slot = jpeg_std_error(&error->pub);
    error->pub.error_exit = wi_jpeg_error_exit;
    error->pub.emit_message = wi_jpeg_emit_message;
    error->pub.output_message = wi_jpeg_output_message;
    error->message[0] = 0;
    error->hit_end_of_data = 0;
    error->limit_hit = 0;
}

wi_jpeg_decoder *wi_jpeg_decoder_create(const uint8_t *data, size_t size) {
    wi_jpeg_decoder *decoder = calloc(1, sizeof(wi_jpeg_decoder));
    if (decoder == NULL) return NULL;
    decoder->data = data;
    decoder->size = size;
    wi_jpeg_install_errors(&decoder->error, &decoder->info.err);
    if (setjmp(decoder->error.jump)) {
        free(decoder);
        return NULL;
    }
    jpeg_create_decompress(&decoder->info);
    decoder->created = 1;
    jpeg_mem_src(&decoder->info, data, (unsigned long)size);
    return decoder;
}

void wi_jpeg_decoder_destroy(wi_jpeg_decoder *decoder) {
    if (decoder == NULL) return;
    if (decoder->created) jpeg_destroy_decompress(&decoder->info);
    free(decoder);
}

const char *wi_jpeg_decoder_message(const wi_jpeg_decoder *decoder) { return decoder->error.message; }

int wi_jpeg_decoder_hit_end_of_data(const wi_jpeg_decoder *decoder) { return decoder->error.hit_end_of_data; }

int wi_jpeg_decoder_limit_hit(const wi_jpeg_decoder *decoder) { return decoder->error.limit_hit; }

void wi_jpeg_decoder_set_limits(wi_jpeg_decoder *decoder, int max_scans, int64_t budget_ns) {
    decoder->max_scans = max_scans;
    decoder->deadline_ns = wi_deadline_after(budget_ns);
    decoder->budget_seconds = (double)budget_ns / 1e9;
    decoder->progress.progress_monitor = wi_jpeg_progress_monitor;
    decoder->info.progress = &decoder->progress;
}

struct jpeg_decompress_struct *wi_jpeg_decoder_info(wi_jpeg_decoder *decoder) { return &decoder->info; }

wi_status wi_jpeg_read_header(wi_jpeg_decoder *decoder) {
    if (setjmp(decoder->error.jump)) return WI_ERROR;
    jpeg_save_markers(&decoder->info, JPEG_APP0 + 1, 0xFFFF);
    jpeg_save_markers(&decoder->info, JPEG_APP0 + 2, 0xFFFF);
    jpeg_save_markers(&decoder->info, JPEG_APP0 + 14, 0xFF);
    if (jpeg_read_header(&decoder->info, TRUE) != JPEG_HEADER_OK) {
        snprintf(decoder->error.message, sizeof decoder->error.message, "no JPEG image in the data");
        return WI_ERROR;
    }
    return WI_OK;
}

wi_status wi_jpeg_start(wi_jpeg_decoder *decoder, int cmyk_output) {
    if (setjmp(decoder->error.jump)) return WI_ERROR;
    decoder->info.out_color_space = cmyk_output ? JCS_CMYK : JCS_EXT_RGBA;
    if (!jpeg_start_decompress(&decoder->info)) {
        snprintf(decoder->error.message, sizeof decoder->error.message, "the JPEG data ended early");
        return WI_ERROR;
    }
    return WI_OK;
}

wi_status wi_jpeg_read_rows(wi_jpeg_decoder *decoder, uint8_t *dst, size_t stride, uint32_t max_rows,
                            uint32_t *rows_read) {
    *rows_read = 0;
    if (setjmp(decoder->error.jump)) return WI_ERROR;
    struct jpeg_decompress_struct *info = &decoder->info;
    JSAMPROW rows[16];
    while (*rows_read < max_rows && info->output_scanline < info->output_height) {
        uint32_t batch = max_rows - *rows_read;
        if (batch > 16) batch = 16;
        for (uint32_t i = 0; i < batch; i++) rows[i] = dst + (size_t)(*rows_read + i) * stride;
        JDIMENSION got = jpeg_read_scanlines(info, rows, batch);
        if (got == 0) break;
        *rows_read += got;
    }
    return WI_OK;
}

wi_status wi_jpeg_finish(wi_jpeg_decoder *decoder) {
    if (setjmp(decoder->error.jump)) return WI_ERROR;
    if (decoder->info.output_scanline < decoder->info.output_height) {
        jpeg_abort_decompress(&decoder->info);
    } else {
        jpeg_finish_decompress(&decoder->info);
    }
    return WI_OK;
}

const uint8_t *wi_jpeg_exif(wi_jpeg_decoder *decoder, size_t *length) {
    for (jpeg_saved_marker_ptr marker = decoder->info.marker_list; marker != NULL; marker = marker->next) {
        if (marker->marker == JPEG_APP0 + 1 && marker->data_length >= 6 &&
            memcmp(marker->data, "Exif\0\0", 6) == 0) {
            *length = marker->data_length - 6;
            return marker->data + 6;
        }
    }
    *length = 0;
    return NULL;
}

uint8_t *wi_jpeg_icc_profile(wi_jpeg_decoder *decoder, size_t *length) {
    *length = 0;
    JOCTET *volatile icc = NULL;
    unsigned int size = 0;
    if (setjmp(decoder->error.jump)) {
        free(icc);
        return NULL;
    }
    JOCTET *assembled = NULL;
    if (!jpeg_read_icc_profile(&decoder->info, &assembled, &size)) return NULL;
    icc = assembled;
    *length = size;
    return icc;
}

int wi_jpeg_saw_adobe_marker(wi_jpeg_decoder *decoder) { return decoder->info.saw_Adobe_marker ? 1 : 0; }

wi_status wi_jpeg_encode(const uint8_t *rgba, uint32_t width, uint32_t height, size_t stride, int quality,
                         int progressive, wi_jpeg_color_model color_model, const uint8_t *exif, size_t exif_length,
                         const uint8_t *icc, size_t icc_length, const wi_stop *stop, int64_t budget_ns,
                         uint8_t **out, size_t *out_size, char *message) {
    const int64_t deadline_ns = wi_deadline_after(budget_ns);
    struct jpeg_compress_struct info;
    struct wi_jpeg_error error;
    unsigned char *buffer = NULL;
    unsigned long size = 0;
    uint8_t *volatile cmyk_row = NULL;
    *out = NULL;
    *out_size = 0;
    memset(&info, 0, sizeof info);
    wi_jpeg_install_errors(&error, &info.err);
    if (setjmp(error.jump)) {
        snprintf(message, WI_MESSAGE_CAPACITY, "%s", error.message);
        jpeg_destroy_compress(&info);
        free(buffer);
        free(cmyk_row);
        return error.limit_hit ? WI_LIMIT_EXCEEDED : WI_ERROR;
    }
    jpeg_create_compress(&info);
    jpeg_mem_dest(&info, &buffer, &size);
    info.image_width = width;
    info.image_height = height;
    info.input_components = 4;
    info.in_color_space = color_model == WI_JPEG_CMYK ? JCS_CMYK : JCS_EXT_RGBA;
    jpeg_set_defaults(&info);
    if (color_model == WI_JPEG_GRAYSCALE) jpeg_set_colorspace(&info, JCS_GRAYSCALE);
    jpeg_set_quality(&info, quality, TRUE);
    if (progressive) jpeg_simple_progression(&info);
    if (color_model == WI_JPEG_CMYK) {
        cmyk_row = malloc((size_t)width * 4);
        if (cmyk_row == NULL) {
            snprintf(error.message, sizeof error.message, "out of memory");
            longjmp(error.jump, 1);
        }
    }
    jpeg_start_compress(&info, TRUE);
    if (exif != NULL && exif_length > 0 && exif_length <= 65533 - 6) {
        uint8_t *payload = malloc(exif_length + 6);
        if (payload != NULL) {
            memcpy(payload, "Exif\0\0", 6);
            memcpy(payload + 6, exif, exif_length);
            jpeg_write_marker(&info, JPEG_APP0 + 1, payload, (unsigned int)(exif_length + 6));
            free(payload);
        }
    }
    if (icc != NULL && icc_length > 0 && icc_length <= UINT32_MAX) {
        jpeg_write_icc_profile(&info, icc, (unsigned int)icc_length);
    }
    while (info.next_scanline < info.image_height) {
        if (info.next_scanline % 16 == 0 &&
            (wi_stop_requested(stop) || (deadline_ns != 0 && wi_monotonic_ns() > deadline_ns))) {
            snprintf(error.message, sizeof error.message, "%s",
                     wi_stop_requested(stop) ? "encoding was stopped" : "encoding took longer than its time limit");
            error.limit_hit = 1;
            longjmp(error.jump, 1);
        }
        const uint8_t *source = rgba + (size_t)info.next_scanline * stride;
        JSAMPROW row = (JSAMPROW)source;
        if (color_model == WI_JPEG_CMYK) {
            // Naive RGB -> CMYK with full black generation, stored inverted (Adobe convention).
            for (uint32_t x = 0; x < width; x++) {
                int r = source[x * 4], g = source[x * 4 + 1], b = source[x * 4 + 2];
                int max = r > g ? (r > b ? r : b) : (g > b ? g : b);
                int k = 255 - max;
                uint8_t *target = cmyk_row + (size_t)x * 4;
                if (max == 0) {
                    target[0] = target[1] = target[2] = 255;
                } else {
                    target[0] = (uint8_t)(255 - (max - r) * 255 / max);
                    target[1] = (uint8_t)(255 - (max - g) * 255 / max);
                    target[2] = (uint8_t)(255 - (max - b) * 255 / max);
                }
                target[3] = (uint8_t)(255 - k);
            }
            row = cmyk_row;
        }
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    free(cmyk_row);
    *out = buffer;
    *out_size = size;
    return WI_OK;
}
