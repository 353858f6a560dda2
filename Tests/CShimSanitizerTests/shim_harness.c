// Every error, stop and deadline path of the C shims, run under AddressSanitizer and
// UndefinedBehaviorSanitizer with optimisation on (scripts/c-shims-check.sh builds and runs it;
// scripts/test.sh calls that). Each encoder and row-wise decoder is stopped at each of its
// check points in turn (the stop flag armed to raise itself at the k-th check), and again with a
// spent deadline, on images large enough that the encoded output grows several times past its
// first buffer. LeakSanitizer runs at exit: any leak, double free, overflow or undefined
// behaviour fails the run, as does any CHECK.

#include "CWebImageShims.h"
#include "CWebImageSystem.h"
#include "color_internal.h"
#include "jpeg_internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include <avif/avif.h>
#include <jxl/decode.h>
#include <libheif/heif.h>

static int failures = 0;
static int checks_run = 0;

#define CHECK(condition, ...)                                                  \
    do {                                                                       \
        checks_run++;                                                          \
        if (!(condition)) {                                                    \
            failures++;                                                        \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

// MARK: Images

typedef struct {
    uint8_t *pixels;
    uint32_t width, height;
    size_t stride;
} image;

static uint32_t random_state = 0x2545F491u;

static uint32_t next_random(void) {
    random_state ^= random_state << 13;
    random_state ^= random_state >> 17;
    random_state ^= random_state << 5;
    return random_state;
}

/// Noise over a gradient, with a stride wider than the row so a reader that ignores it fails.
static image make_image(uint32_t width, uint32_t height, int translucent) {
    image result = {NULL, width, height, (size_t)width * 4 + 12};
    result.pixels = malloc(result.stride * height);
    for (uint32_t y = 0; y < height; y++) {
        uint8_t *row = result.pixels + (size_t)y * result.stride;
        for (uint32_t x = 0; x < width; x++) {
            uint32_t noise = next_random();
            row[x * 4] = (uint8_t)((x * 255 / width + (noise & 63)) & 0xFF);
            row[x * 4 + 1] = (uint8_t)((y * 255 / height + ((noise >> 8) & 63)) & 0xFF);
            row[x * 4 + 2] = (uint8_t)(noise >> 16);
            row[x * 4 + 3] = translucent ? (uint8_t)(noise >> 24) : 255;
        }
        memset(row + (size_t)width * 4, 0xEE, 12);
    }
    return result;
}

// MARK: Stopping at every check

/// One run of a stoppable piece of work: `stop` (may be NULL) and `budget_ns` (0: none) as the
/// shim takes them. Frees whatever a successful run made.
typedef wi_status (*stoppable_run)(void *context, const wi_stop *stop, int64_t budget_ns, char *message);

/// Runs `run` once unstopped (it must succeed, counting its checks), then once stopped at each
/// check point in turn (all of them up to 400, evenly spread beyond), then with a deadline spent
/// before the first check. Every stopped run must fail with WI_LIMIT_EXCEEDED and say why.
static void sweep(const char *name, stoppable_run run, void *context, const char *stopped_words) {
    char message[WI_MESSAGE_CAPACITY];
    wi_stop *counter = wi_stop_create();
    wi_stop_request_after(counter, INT64_MAX);
    wi_status status = run(context, counter, 0, message);
    int64_t total = wi_stop_checks(counter);
    wi_stop_destroy(counter);
    CHECK(status == WI_OK, "%s: the unstopped run failed (%d: %s)", name, status, message);
    CHECK(total >= 4, "%s: only %lld check points", name, (long long)total);

    int64_t step = total / 400 + 1;
    int stops = 0;
    for (int64_t k = 1; k <= total; k += step) {
        wi_stop *stop = wi_stop_create();
        wi_stop_request_after(stop, k);
        message[0] = 0;
        status = run(context, stop, 0, message);
        wi_stop_destroy(stop);
        CHECK(status == WI_LIMIT_EXCEEDED, "%s: stopped at check %lld of %lld, it returned %d (%s)", name,
              (long long)k, (long long)total, status, message);
        CHECK(strstr(message, stopped_words) != NULL, "%s: stopped at check %lld, the message is \"%s\"", name,
              (long long)k, message);
        stops++;
    }
    // A stop raised before the work starts.
    wi_stop *raised = wi_stop_create();
    wi_stop_request(raised);
    status = run(context, raised, 0, message);
    wi_stop_destroy(raised);
    CHECK(status == WI_LIMIT_EXCEEDED, "%s: a stop raised before the start returned %d", name, status);
    // A deadline already spent at the first check (1 ns from the start).
    message[0] = 0;
    status = run(context, NULL, 1, message);
    CHECK(status == WI_LIMIT_EXCEEDED, "%s: a 1 ns deadline returned %d (%s)", name, status, message);
    CHECK(strstr(message, "longer") != NULL, "%s: the deadline's message is \"%s\"", name, message);
    fprintf(stderr, "  %-44s %5lld check points, %4d stopped runs\n", name, (long long)total, stops);
}

// MARK: JPEG

typedef struct {
    const image *source;
    int quality, progressive;
    wi_jpeg_color_model model;
    const uint8_t *exif, *icc;
    size_t exif_length, icc_length;
    size_t last_size;
} jpeg_encode_job;

static wi_status run_jpeg_encode(void *context, const wi_stop *stop, int64_t budget_ns, char *message) {
    jpeg_encode_job *job = context;
    uint8_t *out = (uint8_t *)0x1;  // must be set to NULL by the shim whatever happens
    size_t size = 1;
    wi_status status = wi_jpeg_encode(job->source->pixels, job->source->width, job->source->height,
                                      job->source->stride, job->quality, job->progressive, job->model, job->exif,
                                      job->exif_length, job->icc, job->icc_length, stop, budget_ns, &out, &size,
                                      message);
    if (status == WI_OK) {
        CHECK(out != NULL && size > 4 && out[0] == 0xFF && out[1] == 0xD8 && out[size - 2] == 0xFF &&
                  out[size - 1] == 0xD9,
              "the encoded JPEG does not start with SOI and end with EOI");
        job->last_size = size;
    } else {
        CHECK(out == NULL && size == 0, "a failed JPEG encode handed back output");
    }
    free(out);
    return status;
}

typedef struct {
    const uint8_t *data;
    size_t size;
    uint32_t width, height;
    int cmyk;
    /// Converts each batch of rows as it is decoded, or NULL.
    const wi_color_transform *transform;
    /// Output scale in eighths (0: full size); the scan limit (0: 1000).
    unsigned scale_num;
    int max_scans;
    /// When set, gets the decoded pixels (the caller frees them) and the scans read.
    uint8_t **pixels_out;
    int *scans_read;
    /// Rows read a call (0: 64); when set, gets the coefficient bytes handed back.
    uint32_t batch;
    size_t *released;
} jpeg_decode_job;

static wi_status run_jpeg_decode(void *context, const wi_stop *stop, int64_t budget_ns, char *message) {
    jpeg_decode_job *job = context;
    wi_jpeg_decoder *decoder = wi_jpeg_decoder_create(job->data, job->size);
    if (decoder == NULL) return WI_OUT_OF_MEMORY;
    wi_jpeg_decoder_set_limits(decoder, job->max_scans > 0 ? job->max_scans : 1000, budget_ns, stop);
    uint8_t *pixels = NULL;
    wi_status status = wi_jpeg_read_header(decoder);
    if (status == WI_OK) {
        size_t length = 0;
        uint8_t *icc = wi_jpeg_icc_profile(decoder, &length);
        free(icc);
        if (job->scale_num > 0) {
            wi_jpeg_decoder_info(decoder)->scale_num = job->scale_num;
            wi_jpeg_decoder_info(decoder)->scale_denom = 8;
        }
        status = wi_jpeg_start(decoder, job->cmyk);
    }
    if (status == WI_OK) {
        struct jpeg_decompress_struct *info = wi_jpeg_decoder_info(decoder);
        size_t stride = (size_t)info->output_width * 4;
        pixels = malloc(stride * info->output_height);
        uint32_t done = 0;
        while (status == WI_OK && done < info->output_height) {
            uint32_t rows = 0;
            uint32_t most = job->batch > 0 ? job->batch : 64;
            uint32_t batch = info->output_height - done < most ? info->output_height - done : most;
            status = wi_jpeg_read_rows(decoder, pixels + done * stride, stride, batch, job->transform, &rows);
            if (rows == 0) break;
            done += rows;
        }
        if (job->scans_read != NULL) *job->scans_read = info->input_scan_number;
        if (status == WI_OK) status = wi_jpeg_finish(decoder);
    }
    snprintf(message, WI_MESSAGE_CAPACITY, "%s", wi_jpeg_decoder_message(decoder));
    if (job->released != NULL) *job->released = wi_jpeg_released_coefficient_bytes(decoder);
    if (status != WI_OK && wi_jpeg_decoder_limit_hit(decoder)) status = WI_LIMIT_EXCEEDED;
    if (job->pixels_out != NULL && status == WI_OK) {
        *job->pixels_out = pixels;
    } else {
        free(pixels);
    }
    wi_jpeg_decoder_destroy(decoder);
    return status;
}

struct harness_jpeg_error {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
};

static void harness_jpeg_error_exit(j_common_ptr info) { longjmp(((struct harness_jpeg_error *)info->err)->jump, 1); }

static void harness_jpeg_quiet(j_common_ptr info, int level) { (void)info; (void)level; }

// libjpeg alone from memory, every scan read, at `scale_num`/8 (RGBA, or CMYK): the reference for
// the scaled reads. The pixels (the caller frees them; `pixels_size` may be NULL) and the scans
// read, or NULL when libjpeg fails.
static uint8_t *reference_jpeg_decode(const uint8_t *data, size_t size, unsigned scale_num, int cmyk, int *scans,
                                      size_t *pixels_size) {
    struct jpeg_decompress_struct info;
    struct harness_jpeg_error error;
    info.err = jpeg_std_error(&error.pub);
    error.pub.error_exit = harness_jpeg_error_exit;
    error.pub.emit_message = harness_jpeg_quiet;
    uint8_t *volatile pixels = NULL;
    if (setjmp(error.jump)) {
        jpeg_destroy_decompress(&info);
        free(pixels);
        return NULL;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, data, (unsigned long)size);
    jpeg_read_header(&info, TRUE);
    info.scale_num = scale_num;
    info.scale_denom = 8;
    info.out_color_space = cmyk ? JCS_CMYK : JCS_EXT_RGBA;
    jpeg_start_decompress(&info);
    size_t stride = (size_t)info.output_width * 4;
    pixels = malloc(stride * info.output_height);
    if (pixels_size != NULL) *pixels_size = stride * info.output_height;
    while (info.output_scanline < info.output_height) {
        JSAMPROW row = pixels + info.output_scanline * stride;
        jpeg_read_scanlines(&info, &row, 1);
    }
    if (scans != NULL) *scans = info.input_scan_number;
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    return pixels;
}

static uint8_t *encode_jpeg(const image *source, int progressive, wi_jpeg_color_model model, const uint8_t *icc,
                            size_t icc_length, size_t *size);

// A progressive file read at a reduced scale leaves out the scans its output never reads: the
// same pixels as reading them all, fewer scans at 1/8, and every stop, deadline, scan cap and
// short file handled as before.
static void test_jpeg_scaled_progressive(const image *photo) {
    size_t length = 0;
    uint8_t *data = encode_jpeg(photo, 1, WI_JPEG_RGB, NULL, 0, &length);
    if (data == NULL) return;
    for (unsigned scale = 1; scale < 8; scale++) {
        int all_scans = 0, scans_read = 0;
        uint8_t *expected = reference_jpeg_decode(data, length, scale, 0, &all_scans, NULL);
        uint8_t *pixels = NULL;
        jpeg_decode_job job = {data, length, 0, 0, 0, NULL, scale, 0, &pixels, &scans_read, 0, NULL};
        char message[WI_MESSAGE_CAPACITY];
        CHECK(run_jpeg_decode(&job, NULL, 0, message) == WI_OK && pixels != NULL, "progressive at %u/8 failed: %s",
              scale, message);
        size_t size = ((size_t)photo->width * scale + 7) / 8 * 4 * (((size_t)photo->height * scale + 7) / 8);
        CHECK(pixels != NULL && memcmp(pixels, expected, size) == 0,
              "progressive at %u/8: the pixels differ from reading every scan", scale);
        CHECK(scans_read <= all_scans, "progressive at %u/8 read %d scans, more than the %d there are", scale, scans_read, all_scans);
        if (scale == 1) {
            CHECK(scans_read < all_scans, "progressive at 1/8 read all %d scans", all_scans);
        }
        free(pixels);
        free(expected);
    }
    jpeg_decode_job eighth = {data, length, 0, 0, 0, NULL, 1, 0, NULL, NULL, 0, NULL};
    sweep("decode progressive at 1/8", run_jpeg_decode, &eighth, "stopped");
    // The scan limit holds in the loop that reads only the needed scans.
    jpeg_decode_job limited = eighth;
    limited.max_scans = 2;
    char message[WI_MESSAGE_CAPACITY];
    CHECK(run_jpeg_decode(&limited, NULL, 0, message) == WI_LIMIT_EXCEEDED && strstr(message, "scans") != NULL,
          "progressive at 1/8 with a 2-scan limit: \"%s\"", message);
    for (size_t cut = 2; cut < length; cut = cut * 2 + 101) {
        jpeg_decode_job truncated = eighth;
        truncated.size = cut;
        (void)run_jpeg_decode(&truncated, NULL, 0, message);
    }
    // Damaged bytes, anywhere (markers, lengths, scan headers, entropy-coded data), and 0xFF
    // bytes that make markers where there were none: the units the source hands out stay
    // within the data, and nothing leaks.
    uint8_t *damaged = malloc(length);
    for (int trial = 0; trial < 200; trial++) {
        memcpy(damaged, data, length);
        for (int flips = 0; flips < 6; flips++) {
            size_t at = next_random() % length;
            damaged[at] = trial % 2 ? 0xFF : (uint8_t)(damaged[at] ^ (1 + next_random() % 255));
        }
        jpeg_decode_job broken = eighth;
        broken.data = damaged;
        broken.size = trial % 3 ? length : next_random() % length;
        (void)run_jpeg_decode(&broken, NULL, 0, message);
    }
    free(damaged);
    free(data);
}

static uint8_t *encode_jpeg(const image *source, int progressive, wi_jpeg_color_model model, const uint8_t *icc,
                            size_t icc_length, size_t *size) {
    char message[WI_MESSAGE_CAPACITY];
    uint8_t *out = NULL;
    wi_status status = wi_jpeg_encode(source->pixels, source->width, source->height, source->stride, 92,
                                      progressive, model, NULL, 0, icc, icc_length, NULL, 0, &out, size, message);
    CHECK(status == WI_OK, "a JPEG for the decoder tests failed: %s", message);
    return out;
}

static void test_jpeg(const image *photo, const uint8_t *icc, size_t icc_length) {
    fprintf(stderr, "JPEG\n");
    uint8_t exif[600];
    for (size_t i = 0; i < sizeof exif; i++) exif[i] = (uint8_t)(i * 7);
    static const struct {
        const char *name;
        int progressive;
        wi_jpeg_color_model model;
    } kinds[] = {
        {"encode baseline RGB", 0, WI_JPEG_RGB},
        {"encode progressive RGB", 1, WI_JPEG_RGB},
        {"encode baseline grayscale", 0, WI_JPEG_GRAYSCALE},
        {"encode progressive CMYK", 1, WI_JPEG_CMYK},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        jpeg_encode_job job = {photo, 95, kinds[i].progressive, kinds[i].model, exif, icc, sizeof exif, icc_length, 0};
        sweep(kinds[i].name, run_jpeg_encode, &job, "stopped");
        // The output must have outgrown its first buffer (a quarter byte a pixel) more than twice, so
        // the stops above fell after reallocations.
        size_t first_buffer = (size_t)photo->width * photo->height / 4 + 4096;
        CHECK(job.last_size > 2 * first_buffer, "%s: %zu bytes did not outgrow %zu bytes twice",
              kinds[i].name, job.last_size, first_buffer);
    }

    // Errors from libjpeg itself (its error_exit) after and before output exists.
    char message[WI_MESSAGE_CAPACITY];
    uint8_t *out = NULL;
    size_t size = 0;
    wi_status status = wi_jpeg_encode(photo->pixels, 0, photo->height, photo->stride, 80, 0, WI_JPEG_RGB, NULL, 0,
                                      NULL, 0, NULL, 0, &out, &size, message);
    CHECK(status == WI_ERROR && out == NULL && message[0] != 0, "a 0-wide JPEG encoded (%d)", status);
    status = wi_jpeg_encode(photo->pixels, 70000, 1, photo->stride, 80, 0, WI_JPEG_RGB, NULL, 0, NULL, 0, NULL, 0,
                            &out, &size, message);
    CHECK(status == WI_ERROR && out == NULL, "a 70000-wide JPEG encoded (%d)", status);
    // An EXIF block too large for one marker is left out, not written half.
    uint8_t *large_exif = calloc(1, 70000);
    status = wi_jpeg_encode(photo->pixels, 64, 64, photo->stride, 80, 0, WI_JPEG_RGB, large_exif, 70000, NULL, 0,
                            NULL, 0, &out, &size, message);
    CHECK(status == WI_OK && out != NULL, "a JPEG with a 70000-byte EXIF block failed: %s", message);
    free(out);
    free(large_exif);

    // Decoding: baseline, progressive (its scans are read in jpeg_start_decompress), CMYK.
    static const struct {
        const char *name;
        int progressive;
        wi_jpeg_color_model model;
    } sources[] = {
        {"decode baseline", 0, WI_JPEG_RGB},
        {"decode progressive", 1, WI_JPEG_RGB},
        {"decode CMYK", 0, WI_JPEG_CMYK},
    };
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
        size_t length = 0;
        uint8_t *data = encode_jpeg(photo, sources[i].progressive, sources[i].model, icc, icc_length, &length);
        if (data == NULL) continue;
        jpeg_decode_job job = {data, length, photo->width, photo->height, sources[i].model == WI_JPEG_CMYK, NULL, 0, 0, NULL, NULL, 0, NULL};
        sweep(sources[i].name, run_jpeg_decode, &job, "stopped");
        // Again with the rows converted as they come (the P3 tables; lcms for CMYK's naive case
        // has no profile here, so RGB only).
        if (sources[i].model == WI_JPEG_RGB) {
            char why[WI_MESSAGE_CAPACITY];
            wi_color_transform *transform = wi_color_transform_create(icc, icc_length, WI_PIXELS_RGBA, WI_COLOR_DEFAULT, why);
            CHECK(transform != NULL, "%s: no P3 transform: %s", sources[i].name, why);
            job.transform = transform;
            if (transform != NULL) sweep(sources[i].name, run_jpeg_decode, &job, "stopped");
            wi_color_transform_destroy(transform);
            job.transform = NULL;
        }

        // The profile comes back whole.
        wi_jpeg_decoder *decoder = wi_jpeg_decoder_create(data, length);
        CHECK(wi_jpeg_read_header(decoder) == WI_OK, "%s: no header", sources[i].name);
        size_t icc_read = 0;
        uint8_t *profile = wi_jpeg_icc_profile(decoder, &icc_read);
        CHECK(profile != NULL && icc_read == icc_length && memcmp(profile, icc, icc_length) == 0,
              "%s: the ICC profile did not come back", sources[i].name);
        free(profile);
        wi_jpeg_decoder_destroy(decoder);

        // Cut short at several lengths: libjpeg warns and pads (a baseline file) or fails; either
        // way nothing leaks. Corrupted bytes in the entropy data and in the header likewise.
        for (size_t cut = 2; cut < length; cut = cut * 3 + 17) {
            jpeg_decode_job truncated = job;
            truncated.size = cut;
            char ignored[WI_MESSAGE_CAPACITY];
            (void)run_jpeg_decode(&truncated, NULL, 0, ignored);
        }
        uint8_t *damaged = malloc(length);
        for (int trial = 0; trial < 40; trial++) {
            memcpy(damaged, data, length);
            for (int flips = 0; flips < 8; flips++) damaged[next_random() % length] ^= (uint8_t)(1 + next_random() % 255);
            jpeg_decode_job broken = {damaged, length, 0, 0, job.cmyk, NULL, 0, 0, NULL, NULL, 0, NULL};
            char ignored[WI_MESSAGE_CAPACITY];
            (void)run_jpeg_decode(&broken, NULL, 0, ignored);
        }
        free(damaged);
        // Not a JPEG at all.
        static const uint8_t junk[] = "this is not a JPEG file at all";
        jpeg_decode_job not_jpeg = {junk, sizeof junk, 0, 0, 0, NULL, 0, 0, NULL, NULL, 0, NULL};
        char junk_message[WI_MESSAGE_CAPACITY];
        CHECK(run_jpeg_decode(&not_jpeg, NULL, 0, junk_message) == WI_ERROR && junk_message[0] != 0,
              "junk decoded as JPEG");
        free(data);
    }
}

// MARK: JPEG, baseline at 1/8

/// How a test JPEG is made by libjpeg itself: the luma's (or first plane's) sampling factors, the
/// colour space, restart interval (in MCUs), Huffman tables fitted to the image or not.
typedef struct {
    int h, v;
    J_COLOR_SPACE space;
    unsigned restart;
    int optimize, quality;
    /// libjpeg's own progressive scan script (`jpeg_simple_progression`) when set.
    int progressive;
} jpeg_recipe;

/// `source` as a JPEG by libjpeg (baseline unless the recipe says progressive) (the caller frees it; jpeg_mem_dest's buffer is
/// malloc'ed by libjpeg and handed over whole at jpeg_finish_compress).
static uint8_t *encode_jpeg_recipe(const image *source, jpeg_recipe recipe, size_t *size) {
    struct jpeg_compress_struct info;
    struct harness_jpeg_error error;
    info.err = jpeg_std_error(&error.pub);
    error.pub.error_exit = harness_jpeg_error_exit;
    unsigned char *out = NULL;
    unsigned long length = 0;
    if (setjmp(error.jump)) {
        jpeg_destroy_compress(&info);
        free(out);
        CHECK(0, "libjpeg could not encode the test JPEG");
        return NULL;
    }
    jpeg_create_compress(&info);
    jpeg_mem_dest(&info, &out, &length);
    info.image_width = source->width;
    info.image_height = source->height;
    info.input_components = 4;
    // CMYK planes straight from the RGBA bytes: any four planes do.
    info.in_color_space = recipe.space == JCS_CMYK ? JCS_CMYK : JCS_EXT_RGBA;
    jpeg_set_defaults(&info);
    jpeg_set_colorspace(&info, recipe.space == JCS_CMYK ? JCS_CMYK : recipe.space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_YCbCr);
    jpeg_set_quality(&info, recipe.quality, TRUE);
    info.comp_info[0].h_samp_factor = recipe.h;
    info.comp_info[0].v_samp_factor = recipe.v;
    for (int c = 1; c < info.num_components; c++) info.comp_info[c].h_samp_factor = info.comp_info[c].v_samp_factor = 1;
    info.restart_interval = recipe.restart;
    info.optimize_coding = recipe.optimize;
    if (recipe.progressive) jpeg_simple_progression(&info);
    jpeg_start_compress(&info, TRUE);
    while (info.next_scanline < info.image_height) {
        JSAMPROW row = source->pixels + (size_t)info.next_scanline * source->stride;
        jpeg_write_scanlines(&info, &row, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    *size = length;
    return out;
}

/// The chunks of the last scan `eighth_matches_libjpeg` read ahead (0: not read ahead).
static size_t last_scan_chunks;

/// Whether the shim decodes `data` at 1/8 as libjpeg alone does: both fail, or both give the same
/// pixels. `skipped` (may be NULL) is set when the scan was read ahead, not by libjpeg.
// Whether our decoder at `scale_num`/8 gives libjpeg's pixels from `jpeg_mem_src` (or fails where
// libjpeg fails). `skipped`: whether the scan was read ahead.
static int scaled_matches_libjpeg(const uint8_t *data, size_t size, unsigned scale_num, int cmyk, int *skipped) {
    size_t expected_size = 0;
    uint8_t *expected = reference_jpeg_decode(data, size, scale_num, cmyk, NULL, &expected_size);
    wi_jpeg_decoder *decoder = wi_jpeg_decoder_create(data, size);
    if (decoder == NULL) {
        free(expected);
        return 0;
    }
    struct jpeg_decompress_struct *info = wi_jpeg_decoder_info(decoder);
    uint8_t *pixels = NULL;
    wi_status status = wi_jpeg_read_header(decoder);
    if (status == WI_OK) {
        info->scale_num = scale_num;
        info->scale_denom = 8;
        status = wi_jpeg_start(decoder, cmyk);
    }
    if (skipped != NULL) *skipped = status == WI_OK && info->client_data != NULL;
    last_scan_chunks = status == WI_OK ? wi_jpeg_scan_chunks(info->client_data) : 0;
    size_t stride = status == WI_OK ? (size_t)info->output_width * 4 : 0;
    if (status == WI_OK) pixels = calloc(1, stride * info->output_height + 1);
    uint32_t done = 0;
    while (status == WI_OK && done < info->output_height) {
        uint32_t rows = 0;
        status = wi_jpeg_read_rows(decoder, pixels + done * stride, stride, info->output_height - done, NULL, &rows);
        if (rows == 0) break;
        done += rows;
    }
    if (status == WI_OK) status = wi_jpeg_finish(decoder);
    int same = expected == NULL ? status != WI_OK
                                : status == WI_OK && stride * info->output_height == expected_size &&
                                      memcmp(pixels, expected, expected_size) == 0;
    wi_jpeg_decoder_destroy(decoder);
    free(pixels);
    free(expected);
    return same;
}

static int eighth_matches_libjpeg(const uint8_t *data, size_t size, int cmyk, int *skipped) {
    return scaled_matches_libjpeg(data, size, 1, cmyk, skipped);
}

/// Smooth gradients with a little noise, as photos are: their blocks have a few AC coefficients
/// (`make_image`'s full-range noise has them all).
static image make_smooth_image(uint32_t width, uint32_t height) {
    image result = make_image(width, height, 0);
    for (uint32_t y = 0; y < height; y++) {
        uint8_t *row = result.pixels + (size_t)y * result.stride;
        for (uint32_t x = 0; x < width; x++) {
            uint32_t noise = next_random();
            row[x * 4] = (uint8_t)(x * 200 / width + (noise & 7));
            row[x * 4 + 1] = (uint8_t)(y * 200 / height + ((noise >> 8) & 7));
            row[x * 4 + 2] = (uint8_t)((x + y) * 100 / (width + height) + ((noise >> 16) & 15));
        }
    }
    return result;
}

// A baseline JPEG read at 1/8 has its DC-only planes' AC codes skipped ahead of libjpeg
// (jpeg_scan_ahead.c): the pixels are libjpeg's for every sampling, colour space, restart
// interval, Huffman table and size, and for damaged files (which libjpeg then decodes itself).
static void test_jpeg_scan_ahead(const image *photo) {
    fprintf(stderr, "JPEG, baseline at 1/8\n");
    static const struct {
        const char *name;
        int h, v;
        J_COLOR_SPACE space;
    } layouts[] = {
        {"4:4:4", 1, 1, JCS_YCbCr}, {"4:2:2", 2, 1, JCS_YCbCr}, {"4:2:0", 2, 2, JCS_YCbCr},
        {"4:4:0", 1, 2, JCS_YCbCr}, {"4:1:1", 4, 1, JCS_YCbCr}, {"gray", 1, 1, JCS_GRAYSCALE},
        {"CMYK", 1, 1, JCS_CMYK},   {"CMYK 2x2", 2, 2, JCS_CMYK},
    };
    static const uint32_t sizes[][2] = {{301, 203}, {1, 1}, {8, 8}, {17, 9}, {64, 3}};
    int checked = 0;
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
        for (int variant = 0; variant < 8; variant++) {
            jpeg_recipe recipe = {layouts[l].h, layouts[l].v, layouts[l].space, variant & 1 ? 3 : 0, (variant >> 1) & 1,
                                  variant & 4 ? 100 : 75, 0};
            const uint32_t *size = sizes[variant % 5];
            image picture = make_smooth_image(size[0], size[1]);
            size_t length = 0;
            uint8_t *data = encode_jpeg_recipe(&picture, recipe, &length);
            int skipped = 0;
            CHECK(data != NULL && eighth_matches_libjpeg(data, length, layouts[l].space == JCS_CMYK, &skipped),
                  "%s, restart %u, optimized %d, q%d, %ux%u: the pixels at 1/8 differ from libjpeg's", layouts[l].name,
                  recipe.restart, recipe.optimize, recipe.quality, size[0], size[1]);
            CHECK(skipped, "%s, restart %u, optimized %d, %ux%u: the scan was not read ahead", layouts[l].name,
                  recipe.restart, recipe.optimize, size[0], size[1]);
            // At full size the scan's data goes to libjpeg whole, as from jpeg_mem_src.
            CHECK(scaled_matches_libjpeg(data, length, 8, layouts[l].space == JCS_CMYK, NULL),
                  "%s, restart %u, optimized %d, %ux%u: the pixels at full size differ from libjpeg's",
                  layouts[l].name, recipe.restart, recipe.optimize, size[0], size[1]);
            free(data);
            free(picture.pixels);
            checked++;
        }
    }

    // Full-range noise at quality 100 needs more room than the value store has (32 bytes a
    // block): left to libjpeg, the same pixels.
    jpeg_recipe noisy_recipe = {2, 2, JCS_YCbCr, 0, 0, 100, 0};
    size_t length = 0;
    uint8_t *data = encode_jpeg_recipe(photo, noisy_recipe, &length);
    int skipped = 1;
    CHECK(data != NULL && eighth_matches_libjpeg(data, length, 0, &skipped) && !skipped,
          "noise at q100: read ahead %d, or the pixels differ from libjpeg's", skipped);
    free(data);

    // A photo-like image, 4:2:0 with restarts every 5 MCUs: pixels, every stop and deadline in
    // the read ahead.
    image smooth = make_smooth_image(photo->width, photo->height);
    jpeg_recipe photo_recipe = {2, 2, JCS_YCbCr, 5, 0, 90, 0};
    data = encode_jpeg_recipe(&smooth, photo_recipe, &length);
    free(smooth.pixels);
    if (data == NULL) return;
    skipped = 0;
    CHECK(eighth_matches_libjpeg(data, length, 0, &skipped) && skipped, "the photo at 1/8: read ahead %d, or the pixels differ from libjpeg's", skipped);
    // Its values fill more than one chunk of the store (a sixteenth of its room each), every
    // MCU served whole across the chunks' seams.
    CHECK(last_scan_chunks > 1, "the photo at 1/8: its values filled %zu chunk(s), expected several", last_scan_chunks);
    jpeg_decode_job eighth = {data, length, 0, 0, 0, NULL, 1, 0, NULL, NULL, 0, NULL};
    sweep("decode baseline at 1/8", run_jpeg_decode, &eighth, "stopped");

    // Damaged: bytes flipped or made 0xFF (stray markers, a restart marker out of order), bytes
    // left out or added (the scan short, or data left over before EOI), the file cut anywhere.
    // Either way the pixels (or the failure) are libjpeg's; some damage reads exactly, most not.
    uint8_t *damaged = malloc(length + 8);
    int fell_back = 0, read_ahead = 0;
    for (int trial = 0; trial < 300; trial++) {
        memcpy(damaged, data, length);
        size_t damaged_length = length;
        size_t at = length / 8 + next_random() % (length - length / 8 - 2);
        switch (trial % 5) {
        case 0: damaged[at] ^= (uint8_t)(1 + next_random() % 255); break;
        case 1: damaged[at] = 0xFF; damaged[at + 1] = (uint8_t)(0xD0 + next_random() % 8); break;
        case 2:
            memmove(damaged + at, damaged + at + 1, length - at - 1);
            damaged_length--;
            break;
        case 3:
            // Bytes before the EOI: left-over data after the last MCU.
            memmove(damaged + length - 2 + 3, damaged + length - 2, 2);
            memset(damaged + length - 2, 0x5A, 3);
            damaged_length += 3;
            break;
        default: damaged_length = at; break;
        }
        int ahead = 0;
        CHECK(eighth_matches_libjpeg(damaged, damaged_length, 0, &ahead), "damage %d at %zu: the pixels at 1/8 differ from libjpeg's",
              trial % 5, at);
        // A scan cut short (a cut file, or one still arriving) is not read ahead.
        CHECK(trial % 5 != 4 || !ahead, "a file cut at %zu was read ahead", at);
        CHECK(scaled_matches_libjpeg(damaged, damaged_length, 8, 0, NULL),
              "damage %d at %zu: the pixels at full size differ from libjpeg's", trial % 5, at);
        if (ahead) read_ahead++; else fell_back++;
    }
    CHECK(fell_back > 100, "only %d damaged files were left to libjpeg", fell_back);
    free(damaged);
    free(data);
    fprintf(stderr, "  %d layouts and recipes match libjpeg; damaged: %d read ahead, %d left to libjpeg\n", checked,
            read_ahead, fell_back);
}

// MARK: PNG

typedef struct {
    const image *source;
    int keep_alpha, interlaced;
    const uint8_t *icc, *exif;
    size_t icc_length, exif_length;
} png_encode_job;

static wi_status run_png_encode(void *context, const wi_stop *stop, int64_t budget_ns, char *message) {
    png_encode_job *job = context;
    uint8_t *out = (uint8_t *)0x1;
    size_t size = 1;
    wi_status status =
        wi_png_encode(job->source->pixels, job->source->width, job->source->height, job->source->stride,
                      job->keep_alpha, job->interlaced, 1, job->icc, job->icc_length, job->exif, job->exif_length,
                      stop, budget_ns, &out, &size, message);
    if (status == WI_OK) {
        CHECK(out != NULL && size > 8 && memcmp(out, "\x89PNG", 4) == 0, "the encoded PNG has no signature");
    } else {
        CHECK(out == NULL && size == 0, "a failed PNG encode handed back output");
    }
    free(out);
    return status;
}

typedef struct {
    const uint8_t *data;
    size_t size;
    size_t chunk;         // bytes fed per call
    size_t stop_after;    // feeds before the decoder is destroyed mid-way (0: never)
    int external_buffer;  // decode into a caller's buffer of width × height × 4
    uint64_t max_pixels;
} png_decode_job;

static wi_status run_png_decode(void *context, const wi_stop *stop, int64_t budget_ns, char *message) {
    png_decode_job *job = context;
    wi_png_decoder *decoder = wi_png_decoder_create(job->max_pixels);
    if (decoder == NULL) return WI_OUT_OF_MEMORY;
    wi_png_decoder_set_limits(decoder, budget_ns, stop);
    uint8_t *external = NULL;
    if (job->external_buffer && job->size >= 24) {
        uint32_t width = (uint32_t)job->data[16] << 24 | job->data[17] << 16 | job->data[18] << 8 | job->data[19];
        uint32_t height = (uint32_t)job->data[20] << 24 | job->data[21] << 16 | job->data[22] << 8 | job->data[23];
        size_t capacity = (size_t)width * height * 4;
        if (capacity > 0 && capacity < (256u << 20)) {
            external = malloc(capacity);
            wi_png_decoder_use_buffer(decoder, external, capacity);
        }
    }
    wi_status status = WI_OK;
    size_t feeds = 0;
    for (size_t offset = 0; status == WI_OK && offset < job->size; offset += job->chunk) {
        if (job->stop_after != 0 && feeds == job->stop_after) break;
        size_t count = job->size - offset < job->chunk ? job->size - offset : job->chunk;
        status = wi_png_decoder_feed(decoder, job->data + offset, count);
        feeds++;
    }
    wi_png_state state = wi_png_decoder_state(decoder);
    if (status == WI_OK && job->stop_after == 0 && !state.finished) status = WI_ERROR;
    size_t icc_length = 0;
    (void)wi_png_decoder_icc_profile(decoder, &icc_length);
    snprintf(message, WI_MESSAGE_CAPACITY, "%s", wi_png_decoder_message(decoder));
    wi_png_decoder_destroy(decoder);
    free(external);
    return status;
}

/// Whether `data` decodes to `source`'s pixels (alpha 255 where `keep_alpha` is 0).
static int png_round_trips(const uint8_t *data, size_t length, const image *source, int keep_alpha) {
    wi_png_decoder *decoder = wi_png_decoder_create(0);
    int same = wi_png_decoder_feed(decoder, data, length) == WI_OK;
    wi_png_state state = wi_png_decoder_state(decoder);
    same = same && state.finished && state.width == source->width && state.height == source->height;
    for (uint32_t y = 0; same && y < source->height; y++) {
        const uint8_t *expected = source->pixels + (size_t)y * source->stride;
        const uint8_t *actual = state.pixels + (size_t)y * state.stride;
        for (uint32_t x = 0; same && x < source->width; x++) {
            same = memcmp(expected + x * 4, actual + x * 4, 3) == 0 &&
                   actual[x * 4 + 3] == (keep_alpha ? expected[x * 4 + 3] : 255);
        }
    }
    wi_png_decoder_destroy(decoder);
    return same;
}

// zlib's strategy: Z_RLE for rows that compress poorly (noise over gradients, as photos), LZ77
// for drawn ones (repeating tiles), none at level 0; both round-trip.
static void test_png_strategy(const image *photo, const image *translucent) {
    fprintf(stderr, "PNG strategy\n");
    image tiles = make_image(300, 200, 0);
    for (uint32_t y = 0; y < tiles.height; y++) {
        uint8_t *row = tiles.pixels + (size_t)y * tiles.stride;
        for (uint32_t x = 0; x < tiles.width; x++) {
            row[x * 4] = (uint8_t)((x % 24) * 10);
            row[x * 4 + 1] = (uint8_t)((y % 16) * 15);
            row[x * 4 + 2] = (uint8_t)(((x / 24 + y / 16) & 1) * 200);
        }
    }
    CHECK(wi_png_strategy(photo->pixels, photo->width, photo->height, photo->stride, 0, 6) == 3,
          "noisy RGB rows did not take Z_RLE");
    CHECK(wi_png_strategy(translucent->pixels, translucent->width, translucent->height, translucent->stride, 1, 6) == 3,
          "noisy RGBA rows did not take Z_RLE");
    CHECK(wi_png_strategy(photo->pixels, photo->width, 49, photo->stride, 0, 9) == 3,
          "49 noisy rows at level 9 did not take Z_RLE");
    CHECK(wi_png_strategy(photo->pixels, photo->width, 48, photo->stride, 0, 6) == -1,
          "48 noisy rows (too few to pay for the sample) chose a strategy");
    CHECK(wi_png_strategy(tiles.pixels, tiles.width, tiles.height, tiles.stride, 0, 6) == -1,
          "repeating tiles took Z_RLE");
    CHECK(wi_png_strategy(photo->pixels, photo->width, photo->height, photo->stride, 0, 0) == -1,
          "level 0 chose a strategy");
    CHECK(wi_png_strategy(photo->pixels, photo->width, 0, photo->stride, 0, 6) == -1, "no rows chose a strategy");
    // libpng refuses the sample (over its default 1,000,000 columns): its error path frees all.
    // One row of memory read as 49 (a stride of 0).
    image wide = make_image(1000001, 1, 0);
    CHECK(wi_png_strategy(wide.pixels, wide.width, 49, 0, 0, 6) == -1, "a refused sample chose a strategy");
    free(wide.pixels);
    const image *sources[] = {photo, translucent, &tiles};
    for (int i = 0; i < 3; i++) {
        int keep_alpha = sources[i] == translucent;
        for (int interlaced = 0; interlaced <= 1; interlaced++) {
            char message[WI_MESSAGE_CAPACITY];
            uint8_t *data = NULL;
            size_t length = 0;
            wi_status status = wi_png_encode(sources[i]->pixels, sources[i]->width, sources[i]->height,
                                             sources[i]->stride, keep_alpha, interlaced, 6, NULL, 0, NULL, 0, NULL, 0,
                                             &data, &length, message);
            CHECK(status == WI_OK && png_round_trips(data, length, sources[i], keep_alpha),
                  "PNG %d (interlaced %d) did not round-trip: %s", i, interlaced, message);
            free(data);
        }
    }
    free(tiles.pixels);
}

static void test_png(const image *photo, const image *translucent, const uint8_t *icc, size_t icc_length) {
    fprintf(stderr, "PNG\n");
    uint8_t exif[300];
    for (size_t i = 0; i < sizeof exif; i++) exif[i] = (uint8_t)i;
    static const struct {
        const char *name;
        int alpha, interlaced;
    } kinds[] = {
        {"encode RGB", 0, 0},
        {"encode RGBA", 1, 0},
        {"encode RGBA interlaced", 1, 1},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        png_encode_job job = {kinds[i].alpha ? translucent : photo, kinds[i].alpha, kinds[i].interlaced, icc, exif,
                              icc_length, sizeof exif};
        sweep(kinds[i].name, run_png_encode, &job, "stopped");
    }
    char message[WI_MESSAGE_CAPACITY];
    uint8_t *out = NULL;
    size_t size = 0;
    wi_status status = wi_png_encode(photo->pixels, 0, 10, photo->stride, 0, 0, 1, NULL, 0, NULL, 0, NULL, 0, &out,
                                     &size, message);
    CHECK(status == WI_ERROR && out == NULL && message[0] != 0, "a 0-wide PNG encoded (%d)", status);

    for (int interlaced = 0; interlaced <= 1; interlaced++) {
        uint8_t *data = NULL;
        size_t length = 0;
        status = wi_png_encode(translucent->pixels, translucent->width, translucent->height, translucent->stride, 1,
                               interlaced, 1, icc, icc_length, NULL, 0, NULL, 0, &data, &length, message);
        CHECK(status == WI_OK, "a PNG for the decoder tests failed: %s", message);
        if (status != WI_OK) continue;
        png_decode_job whole = {data, length, length, 0, 0, 0};
        png_decode_job chunked = {data, length, 4093, 0, 1, 0};
        sweep(interlaced ? "decode interlaced, in one feed" : "decode, in one feed", run_png_decode, &whole,
              "stopped");
        sweep(interlaced ? "decode interlaced, 4 KB feeds, own buffer" : "decode, 4 KB feeds, own buffer",
              run_png_decode, &chunked, "stopped");
        // Destroyed mid-way after every few feeds; truncated; damaged; over the pixel limit; a
        // caller's buffer too small.
        for (size_t after = 1; after * 4093 < length; after += 7) {
            png_decode_job abandoned = {data, length, 4093, after, (int)(after & 1), 0};
            CHECK(run_png_decode(&abandoned, NULL, 0, message) == WI_OK, "an abandoned PNG decode failed early: %s",
                  message);
        }
        for (size_t cut = 8; cut < length; cut = cut * 3 + 11) {
            png_decode_job truncated = {data, cut, 1000, 0, 0, 0};
            CHECK(run_png_decode(&truncated, NULL, 0, message) != WI_OK, "a PNG cut at %zu decoded", cut);
        }
        uint8_t *damaged = malloc(length);
        for (int trial = 0; trial < 40; trial++) {
            memcpy(damaged, data, length);
            for (int flips = 0; flips < 6; flips++) damaged[next_random() % length] ^= (uint8_t)(1 + next_random() % 255);
            png_decode_job broken = {damaged, length, 777, 0, trial & 1, 0};
            (void)run_png_decode(&broken, NULL, 0, message);
        }
        free(damaged);
        png_decode_job limited = {data, length, length, 0, 0, 1000};
        CHECK(run_png_decode(&limited, NULL, 0, message) == WI_LIMIT_EXCEEDED, "the pixel limit did not hold");
        wi_png_decoder *small = wi_png_decoder_create(0);
        uint8_t tiny[64];
        wi_png_decoder_use_buffer(small, tiny, sizeof tiny);
        CHECK(wi_png_decoder_feed(small, data, length) == WI_ERROR, "a PNG decoded into a 64-byte buffer");
        wi_png_decoder_destroy(small);
        free(data);
    }
}

// MARK: TIFF

typedef struct {
    const image *source;
    int keep_alpha;
    uint8_t *encoded;
    size_t encoded_size;
} tiff_job;

static wi_status run_tiff_encode(void *context, const wi_stop *stop, int64_t budget_ns, char *message) {
    tiff_job *job = context;
    uint8_t *out = (uint8_t *)0x1;
    size_t size = 1;
    wi_status status = wi_tiff_encode(job->source->pixels, job->source->width, job->source->height,
                                      job->source->stride, job->keep_alpha, stop, budget_ns, &out, &size, message);
    if (status == WI_OK) {
        free(job->encoded);
        job->encoded = out;
        job->encoded_size = size;
    } else {
        CHECK(out == NULL && size == 0, "a failed TIFF encode handed back output");
    }
    return status;
}

typedef struct {
    const uint8_t *data;
    size_t size;
    uint64_t max_pixels;
} tiff_decode_job;

static wi_status run_tiff_decode(void *context, const wi_stop *stop, int64_t budget_ns, char *message) {
    tiff_decode_job *job = context;
    uint32_t width = 0, height = 0;
    uint8_t *rgba = NULL;
    int has_alpha = 0;
    wi_status status = wi_tiff_decode(job->data, job->size, job->max_pixels, stop, budget_ns, &width, &height, &rgba,
                                      &has_alpha, message);
    if (status != WI_OK) CHECK(rgba == NULL, "a failed TIFF decode handed back pixels");
    free(rgba);
    return status;
}

static void test_tiff(const image *photo, const image *translucent) {
    fprintf(stderr, "TIFF\n");
    tiff_job opaque = {photo, 0, NULL, 0};
    tiff_job alpha = {translucent, 1, NULL, 0};
    sweep("encode RGB", run_tiff_encode, &opaque, "stopped");
    sweep("encode RGBA", run_tiff_encode, &alpha, "stopped");
    tiff_decode_job decode = {alpha.encoded, alpha.encoded_size, UINT64_MAX};
    sweep("decode RGBA", run_tiff_decode, &decode, "stopped");
    char message[WI_MESSAGE_CAPACITY];
    tiff_decode_job limited = {opaque.encoded, opaque.encoded_size, 1000};
    CHECK(run_tiff_decode(&limited, NULL, 0, message) == WI_LIMIT_EXCEEDED, "the TIFF pixel limit did not hold");
    for (size_t cut = 4; cut < opaque.encoded_size; cut = cut * 3 + 5) {
        tiff_decode_job truncated = {opaque.encoded, cut, UINT64_MAX};
        (void)run_tiff_decode(&truncated, NULL, 0, message);
    }
    uint8_t *damaged = malloc(opaque.encoded_size);
    for (int trial = 0; trial < 30; trial++) {
        memcpy(damaged, opaque.encoded, opaque.encoded_size);
        for (int flips = 0; flips < 4; flips++) damaged[next_random() % 4096] ^= (uint8_t)(1 + next_random() % 255);
        tiff_decode_job broken = {damaged, opaque.encoded_size, 4u << 20};
        (void)run_tiff_decode(&broken, NULL, 0, message);
    }
    free(damaged);
    uint8_t *out = NULL;
    size_t size = 0;
    CHECK(wi_tiff_encode(photo->pixels, 0, 0, photo->stride, 0, NULL, 0, &out, &size, message) != WI_OK || out != NULL,
          "an empty TIFF encode");
    free(out);
    free(opaque.encoded);
    free(alpha.encoded);
}

// MARK: Colour

/// The largest difference per channel from lcms's answer over `count` pixels; alpha must be as it
/// was (`original`).
static int color_distance(const uint8_t *pixels, const uint8_t *expected, const uint8_t *original, size_t count) {
    int worst = 0;
    for (size_t i = 0; i < count * 4; i++) {
        int difference = abs((int)pixels[i] - (int)expected[i]);
        if (i % 4 == 3) difference = pixels[i] == original[i] ? 0 : 256;
        if (difference > worst) worst = difference;
    }
    return worst;
}

/// The AVX-512 kernel where the CPU has it: taken for P3, Adobe RGB and Rec. 2020 (not ProPhoto,
/// whose matrix overflows its fixed point); every one of the 2²⁴ colours within one level of
/// lcms with alpha kept; counts around the 64-pixel step at an odd address.
static void test_color_vector(void) {
    fprintf(stderr, "Colour, the vector kernel\n");
    __builtin_cpu_init();
    int has_vector = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                     __builtin_cpu_supports("avx512vbmi");
    if (!has_vector) fprintf(stderr, "  this CPU has no AVX-512 VBMI: the scalar kernel only\n");
    const double srgb_curve[5] = {2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045};
    const double gamma_22[5] = {563.0 / 256, 1, 0, 1, 0}, gamma_18[5] = {1.8, 1, 0, 1, 0};
    const double bt2020_curve[5] = {1 / 0.45, 1 / 1.0993, 0.0993 / 1.0993, 1 / 4.5, 0.081};
    const struct {
        const char *name;
        double primaries[8];
        const double *curve;
        int vectorizes;
    } profiles[] = {
        {"Display P3", {0.680, 0.320, 0.265, 0.690, 0.150, 0.060, 0.3127, 0.3290}, srgb_curve, 1},
        {"Adobe RGB", {0.64, 0.33, 0.21, 0.71, 0.15, 0.06, 0.3127, 0.3290}, gamma_22, 1},
        {"Rec. 2020", {0.708, 0.292, 0.170, 0.797, 0.131, 0.046, 0.3127, 0.3290}, bt2020_curve, 1},
        {"ProPhoto", {0.7347, 0.2653, 0.1596, 0.8404, 0.0366, 0.0001, 0.3457, 0.3585}, gamma_18, 0},
    };
    const size_t all = (size_t)1 << 24;
    uint8_t *original = malloc(all * 4), *pixels = malloc(all * 4 + 1), *expected = malloc(all * 4);
    for (size_t i = 0; i < all; i++) {
        const uint8_t pixel[4] = {(uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i, (uint8_t)(i * 7)};
        memcpy(original + i * 4, pixel, 4);
    }
    for (size_t p = 0; p < sizeof profiles / sizeof profiles[0]; p++) {
        uint8_t *icc = NULL;
        size_t icc_length = 0;
        CHECK(wi_color_profile_create_rgb(profiles[p].primaries, profiles[p].curve, &icc, &icc_length) == WI_OK,
              "no %s profile", profiles[p].name);
        cmsHPROFILE source = icc == NULL ? NULL : cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_length);
        cmsHPROFILE srgb = cmsCreate_sRGBProfile();
        cmsHTRANSFORM reference =
            source == NULL ? NULL
                           : cmsCreateTransform(source, TYPE_RGBA_8, srgb, TYPE_RGBA_8, INTENT_RELATIVE_COLORIMETRIC, 0);
        wi_matrix_shaper *shaper = reference == NULL ? NULL : wi_matrix_shaper_create(source, srgb, reference);
        CHECK(shaper != NULL, "%s has no tables", profiles[p].name);
        if (shaper != NULL) {
            CHECK(wi_matrix_shaper_is_vectorized(shaper) == (has_vector && profiles[p].vectorizes),
                  "%s: vector kernel %d on a CPU with it %d", profiles[p].name, wi_matrix_shaper_is_vectorized(shaper),
                  has_vector);
            memcpy(expected, original, all * 4);
            cmsDoTransform(reference, expected, expected, (cmsUInt32Number)all);
            memcpy(pixels, original, all * 4);
            wi_matrix_shaper_apply(shaper, pixels, all);
            int worst = color_distance(pixels, expected, original, all);
            CHECK(worst <= 1, "%s: %d levels from lcms over all colours (256: alpha changed)", profiles[p].name, worst);
            memcpy(pixels, original, all * 4);
            wi_matrix_shaper_apply_scalar(shaper, pixels, all);
            worst = color_distance(pixels, expected, original, all);
            CHECK(worst <= 1, "%s, scalar: %d levels from lcms (256: alpha changed)", profiles[p].name, worst);
            // Around the step, from an odd address: the pixels past the count stay as they were.
            const size_t counts[] = {1, 63, 64, 65, 127, 128, 129, 1000};
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                size_t start = 4099 * (c + 1);
                memcpy(pixels + 1, original + start * 4, (counts[c] + 1) * 4);
                wi_matrix_shaper_apply(shaper, pixels + 1, counts[c]);
                worst = color_distance(pixels + 1, expected + start * 4, original + start * 4, counts[c]);
                CHECK(worst <= 1, "%s, %zu pixels: %d levels from lcms", profiles[p].name, counts[c], worst);
                CHECK(memcmp(pixels + 1 + counts[c] * 4, original + (start + counts[c]) * 4, 4) == 0,
                      "%s, %zu pixels: the pixel after them changed", profiles[p].name, counts[c]);
            }
            // A pixel's result does not depend on where a band ends (rows convert as they decode).
            memcpy(pixels, original, 100000 * 4);
            wi_matrix_shaper_apply(shaper, pixels, 100000);
            memcpy(expected, original, 100000 * 4);
            for (size_t done = 0, band = 1; done < 100000; done += band, band = band * 3 % 97 + 1) {
                wi_matrix_shaper_apply(shaper, expected + done * 4, done + band > 100000 ? 100000 - done : band);
            }
            CHECK(memcmp(pixels, expected, 100000 * 4) == 0, "%s: bands of 1–97 pixels convert differently",
                  profiles[p].name);
            // Nor on its neighbours: a colour converts alike among 63 copies of itself (a step in
            // one encoding tier per channel, which skips the other tier) and among black and white
            // (a step in both tiers).
            size_t tier_mismatches = 0;
            for (size_t colour = 0; colour < all; colour += 4093) {
                uint8_t alone[64 * 4], mixed[64 * 4];
                for (size_t i = 0; i < 64; i++) {
                    memcpy(alone + i * 4, original + colour * 4, 4);
                    memset(mixed + i * 4, i % 2 ? 0 : 255, 4);
                }
                memcpy(mixed, original + colour * 4, 4);
                wi_matrix_shaper_apply(shaper, alone, 64);
                wi_matrix_shaper_apply(shaper, mixed, 64);
                tier_mismatches += memcmp(alone, mixed, 4) != 0;
            }
            CHECK(tier_mismatches == 0, "%s: %zu colours convert differently beside other tiers", profiles[p].name,
                  tier_mismatches);
        }
        wi_matrix_shaper_destroy(shaper);
        if (reference != NULL) cmsDeleteTransform(reference);
        if (source != NULL) cmsCloseProfile(source);
        cmsCloseProfile(srgb);
        free(icc);
    }
    free(original);
    free(pixels);
    free(expected);
}

static void test_color(const uint8_t *p3, size_t p3_length) {
    fprintf(stderr, "Colour\n");
    char message[WI_MESSAGE_CAPACITY];
    size_t count = 300001;  // odd, and not a multiple of any vector width
    uint8_t *pixels = malloc(count * 4);
    for (size_t i = 0; i < count * 4; i++) pixels[i] = (uint8_t)next_random();
    // The tables and lcms on the same random pixels: within one level, alpha untouched.
    wi_color_transform *transform = wi_color_transform_create(p3, p3_length, WI_PIXELS_RGBA, WI_COLOR_DEFAULT, message);
    wi_color_transform *reference = wi_color_transform_create(p3, p3_length, WI_PIXELS_RGBA, WI_COLOR_LCMS_ONLY, message);
    wi_color_transform *compensated =
        wi_color_transform_create(p3, p3_length, WI_PIXELS_RGBA, WI_COLOR_BLACK_POINT_COMPENSATION, message);
    CHECK(transform != NULL && reference != NULL && compensated != NULL, "no transform from Display P3: %s", message);
    if (transform != NULL && reference != NULL && compensated != NULL) {
        CHECK(wi_color_transform_path(transform) == WI_COLOR_PATH_MATRIX_SHAPER, "P3 did not take the tables");
        CHECK(wi_color_transform_path(reference) == WI_COLOR_PATH_LCMS, "LCMS_ONLY took the tables");
        CHECK(wi_color_transform_path(compensated) == WI_COLOR_PATH_LCMS, "BPC took the tables");
        uint8_t *expected = malloc(count * 4);
        memcpy(expected, pixels, count * 4);
        wi_color_transform_apply(transform, pixels, count);
        wi_color_transform_apply(reference, expected, count);
        int worst = 0;
        for (size_t i = 0; i < count * 4; i++) {
            int difference = abs((int)pixels[i] - (int)expected[i]);
            if (difference > worst) worst = difference;
        }
        CHECK(worst <= 1, "the P3 tables are %d levels from lcms", worst);
        wi_color_transform_apply(compensated, expected, count);
        free(expected);
    }
    wi_color_transform_destroy(transform);
    wi_color_transform_destroy(reference);
    wi_color_transform_destroy(compensated);
    uint8_t *gray = NULL;
    size_t gray_length = 0;
    CHECK(wi_color_profile_create_gray(1.8, &gray, &gray_length) == WI_OK, "no gray profile");
    transform = wi_color_transform_create(gray, gray_length, WI_PIXELS_GRAY_IN_RGBA, WI_COLOR_DEFAULT, message);
    CHECK(transform != NULL && wi_color_transform_path(transform) == WI_COLOR_PATH_GRAY_TABLE,
          "no gray table transform: %s", message);
    if (transform != NULL) wi_color_transform_apply(transform, pixels, count);
    wi_color_transform_destroy(transform);
    // Each way a profile can be refused: mismatched layout, too short, garbage, truncated.
    CHECK(wi_color_transform_create(p3, p3_length, WI_PIXELS_CMYK, WI_COLOR_DEFAULT, message) == NULL && message[0] != 0,
          "an RGB profile made a CMYK transform");
    CHECK(wi_color_transform_create(gray, gray_length, WI_PIXELS_RGBA, WI_COLOR_DEFAULT, message) == NULL, "gray profile for RGBA");
    CHECK(wi_color_transform_create(p3, 100, WI_PIXELS_RGBA, WI_COLOR_DEFAULT, message) == NULL, "a 100-byte profile");
    CHECK(wi_color_transform_create(NULL, 0, WI_PIXELS_RGBA, WI_COLOR_DEFAULT, message) == NULL, "no profile");
    uint8_t *garbage = malloc(p3_length);
    for (size_t i = 0; i < p3_length; i++) garbage[i] = (uint8_t)next_random();
    CHECK(wi_color_transform_create(garbage, p3_length, WI_PIXELS_RGBA, WI_COLOR_DEFAULT, message) == NULL, "a garbage profile");
    int is_srgb = 1;
    CHECK(wi_color_profile_inspect(garbage, p3_length, &is_srgb) == WI_PROFILE_UNREADABLE && is_srgb == 0,
          "garbage inspected as a profile");
    for (size_t cut = 128; cut < p3_length; cut += 37) {
        wi_color_transform_destroy(wi_color_transform_create(p3, cut, WI_PIXELS_RGBA, WI_COLOR_DEFAULT, message));
        (void)wi_color_profile_inspect(p3, cut, &is_srgb);
    }
    uint8_t *damaged = malloc(p3_length);
    for (int trial = 0; trial < 200; trial++) {
        memcpy(damaged, p3, p3_length);
        for (int flips = 0; flips < 3; flips++) damaged[next_random() % p3_length] ^= (uint8_t)(1 + next_random() % 255);
        wi_color_transform *attempt = wi_color_transform_create(damaged, p3_length, WI_PIXELS_RGBA, WI_COLOR_DEFAULT, message);
        if (attempt != NULL) wi_color_transform_apply(attempt, pixels, 1000);
        wi_color_transform_destroy(attempt);
    }
    wi_color_transform_destroy(NULL);
    free(damaged);
    free(garbage);
    free(gray);
    free(pixels);
}

// MARK: Resampling loops

static void test_resample(void) {
    fprintf(stderr, "Resample\n");
    for (int trial = 0; trial < 200; trial++) {
        size_t in_width = 1 + next_random() % 300;
        size_t out_width = 1 + next_random() % 300;
        size_t taps = 1 + next_random() % 12;
        if (taps > in_width) taps = in_width;
        // Exactly sized buffers: an over-read or over-write is an ASan report.
        uint8_t *in = malloc(in_width * 4);
        for (size_t i = 0; i < in_width * 4; i++) in[i] = (uint8_t)next_random();
        intptr_t *starts = malloc(out_width * sizeof *starts);
        intptr_t *counts = malloc(out_width * sizeof *counts);
        int16_t *weights = malloc(out_width * taps * sizeof *weights);
        for (size_t x = 0; x < out_width; x++) {
            counts[x] = (intptr_t)(1 + next_random() % taps);
            starts[x] = (intptr_t)(next_random() % (in_width - (size_t)counts[x] + 1));
            int sum = 0;
            for (intptr_t k = 0; k < counts[x]; k++) {
                int weight = (int)(next_random() % 6000) - 1000;
                if (k == counts[x] - 1) weight = (1 << WI_RESAMPLE_BITS) - sum;
                weights[x * taps + (size_t)k] = (int16_t)weight;
                sum += weight;
            }
        }
        int16_t *row = malloc(out_width * 4 * sizeof *row);
        int16_t *reference = malloc(out_width * 4 * sizeof *reference);
        wi_resample_row(in, row, out_width, starts, counts, weights, taps);
        wi_resample_row_reference(in, reference, out_width, starts, counts, weights, taps);
        CHECK(memcmp(row, reference, out_width * 4 * sizeof *row) == 0, "the row loops differ (trial %d)", trial);

        size_t values = out_width * 4;
        int16_t **rows = malloc(taps * sizeof *rows);
        int16_t *column_weights = malloc(taps * sizeof *column_weights);
        int sum = 0;
        for (size_t k = 0; k < taps; k++) {
            rows[k] = malloc(values * sizeof **rows);
            for (size_t i = 0; i < values; i++) rows[k][i] = (int16_t)((int)(next_random() % (300 << 6)) - (20 << 6));
            int weight = k == taps - 1 ? (1 << WI_RESAMPLE_BITS) - sum : (int)(next_random() % 5000) - 800;
            column_weights[k] = (int16_t)weight;
            sum += weight;
        }
        uint8_t *column = malloc(values);
        uint8_t *column_reference = malloc(values);
        wi_resample_column((const int16_t *const *)rows, column_weights, taps, column, values);
        wi_resample_column_reference((const int16_t *const *)rows, column_weights, taps, column_reference, values);
        CHECK(memcmp(column, column_reference, values) == 0, "the column loops differ (trial %d)", trial);

        float *floats = malloc(values * sizeof *floats);
        for (size_t i = 0; i < values; i++) floats[i] = (float)((int)(next_random() % 4000) - 1000) / 7.0f;
        if (values > 2) floats[1] = 0.0f / 0.0f;  // NaN becomes 0
        wi_floats_to_bytes(floats, column, values);
        if (values > 2) CHECK(column[1] == 0, "NaN did not become 0");

        for (size_t k = 0; k < taps; k++) free(rows[k]);
        free(floats);
        free(column_reference);
        free(column);
        free(column_weights);
        free(rows);
        free(reference);
        free(row);
        free(weights);
        free(counts);
        free(starts);
        free(in);
    }
}

int wi_codec_library_open(int library, const char *file, char *message);

/// The lazily loaded codec libraries (codec_loader.c): a call before any load goes through the
/// binder (argument registers saved and restored) and gets the library's answer; an explicit
/// load after it agrees; a call with several arguments of both register kinds passes them intact.
// The server's memory release: malloc_trim over fragmented arenas, and the resident-size
// reader's parse of /proc/self/statm, malformed lines included.
static void test_memory_release(void) {
    CHECK(wi_resident_bytes_from_statm("1000 250 30 10 0 400 0\n", 4096) == 250LL * 4096, "statm parse");
    CHECK(wi_resident_bytes_from_statm("1000 0 0", 4096) == 0, "statm with nothing resident");
    const char *malformed[] = {"", "abc", "1000", "1000 ", "1000 x", "-1 5", "1000 -5", "9 99999999999999999999"};
    for (size_t i = 0; i < sizeof malformed / sizeof *malformed; i++) {
        CHECK(wi_resident_bytes_from_statm(malformed[i], 4096) == -1, "statm '%s' refused", malformed[i]);
    }
    CHECK(wi_resident_bytes_from_statm(NULL, 4096) == -1, "statm NULL");
    CHECK(wi_resident_bytes_from_statm("1 2", 0) == -1, "statm page size 0");
    CHECK(wi_resident_bytes_from_statm("1 4611686018427387904", 4096) == -1, "statm overflow");
    // Every other block of a few megabytes freed: holes a release can hand back.
    enum { count = 64 };
    void *blocks[count];
    for (int i = 0; i < count; i++) {
        blocks[i] = malloc(96 * 1024);
        if (blocks[i] != NULL) memset(blocks[i], i, 96 * 1024);
    }
    for (int i = 0; i < count; i += 2) {
        free(blocks[i]);
        blocks[i] = NULL;
    }
    long long before = wi_resident_bytes();
    int released = wi_release_free_memory();
    long long after = wi_resident_bytes();
    CHECK(released == 0 || released == 1, "release returns 0 or 1, not %d", released);
    CHECK(before > 0 && after > 0, "resident bytes readable: %lld, %lld", before, after);
    for (int i = 1; i < count; i += 2) free(blocks[i]);
}

static void test_codec_loader(void) {
    // Before any load: the binder loads libjxl and this call returns its version.
    uint32_t jxl_version = JxlDecoderVersion();
    CHECK(jxl_version == JPEGXL_MAJOR_VERSION * 1000000u + JPEGXL_MINOR_VERSION * 1000u + JPEGXL_PATCH_VERSION,
          "libjxl through the binder reports %u", jxl_version);
    char message[WI_MESSAGE_CAPACITY];
    CHECK(wi_codec_library_load(WI_LIBRARY_JXL, message) == 1, "libjxl did not load: %s", message);
    // Four arguments through the binder, checked by what the library wrote.
    avifImage *image = avifImageCreate(17, 9, 8, AVIF_PIXEL_FORMAT_YUV420);
    CHECK(image != NULL && image->width == 17 && image->height == 9 && image->depth == 8,
          "avifImageCreate through the binder: %p", (void *)image);
    if (image != NULL) avifImageDestroy(image);
    CHECK(wi_codec_library_load(WI_LIBRARY_AVIF, message) == 1, "libavif did not load: %s", message);
    CHECK(wi_codec_library_load(WI_LIBRARY_HEIF, message) == 1, "libheif did not load: %s", message);
    CHECK(message[0] == 0, "a successful load left a message: %s", message);
    CHECK(strcmp(heif_get_version(), LIBHEIF_VERSION) == 0, "libheif reports %s", heif_get_version());
    CHECK(wi_codec_library_load((wi_codec_library)7, message) == 0, "an unknown library loaded");
    // The failure paths: a file that is not there, and a library that is not the one asked for.
    CHECK(wi_codec_library_open(WI_LIBRARY_HEIF, "libwebimage-none.so.1", message) == 0 &&
              strstr(message, "libheif could not be loaded") != NULL,
          "a missing library: \"%s\"", message);
    CHECK(wi_codec_library_open(WI_LIBRARY_JXL, "libpng16.so.16", message) == 0 &&
              strstr(message, "libjxl is version 0.0 (libpng16.so.16)") != NULL,
          "another library as libjxl: \"%s\"", message);
    CHECK(strcmp(heif_get_version(), LIBHEIF_VERSION) == 0, "the failed opens changed libheif's stubs");
}

// MARK: JPEG, coefficients handed back

/// Decodes `data` whole through the shim, `batch` rows at a time. Returns the pixels (the caller
/// frees them) or NULL on failure; `released` gets the coefficient bytes handed back.
static uint8_t *shim_decode_in_batches(const uint8_t *data, size_t size, int cmyk, uint32_t batch, size_t *released) {
    uint8_t *pixels = NULL;
    jpeg_decode_job job = {data, size, 0, 0, cmyk, NULL, 0, 0, &pixels, NULL, batch, released};
    char message[WI_MESSAGE_CAPACITY];
    (void)run_jpeg_decode(&job, NULL, 0, message);
    return pixels;
}

// A multi-scan JPEG keeps every coefficient until its output has passed them; the shim hands the
// passed rows' pages back while reading rows. The pixels stay libjpeg's (block smoothing reads
// two iMCU rows above the one it outputs), for every sampling, row batch and a file cut short.
static void test_jpeg_coefficient_release(void) {
    fprintf(stderr, "JPEG, coefficients handed back\n");
    image smooth = make_smooth_image(2048, 1536);
    static const struct {
        const char *name;
        jpeg_recipe recipe;
    } files[] = {
        {"progressive 4:2:0", {2, 2, JCS_YCbCr, 0, 1, 90, 1}},
        {"progressive 4:4:4", {1, 1, JCS_YCbCr, 0, 1, 90, 1}},
        {"progressive 4:2:2", {2, 1, JCS_YCbCr, 0, 1, 90, 1}},
        {"progressive gray", {1, 1, JCS_GRAYSCALE, 0, 1, 90, 1}},
        {"progressive CMYK", {1, 1, JCS_CMYK, 0, 1, 90, 1}},
        {"baseline 4:2:0", {2, 2, JCS_YCbCr, 0, 1, 90, 0}},
    };
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t length = 0;
        uint8_t *data = encode_jpeg_recipe(&smooth, files[f].recipe, &length);
        if (data == NULL) continue;
        int cmyk = files[f].recipe.space == JCS_CMYK;
        size_t expected_size = 0;
        uint8_t *expected = reference_jpeg_decode(data, length, 8, cmyk, NULL, &expected_size);
        static const uint32_t batches[] = {1, 16, 4096};
        for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
            size_t released = 0;
            uint8_t *pixels = shim_decode_in_batches(data, length, cmyk, batches[b], &released);
            CHECK(pixels != NULL && expected != NULL && memcmp(pixels, expected, expected_size) == 0,
                  "%s, %u rows at a time: the pixels differ from libjpeg's", files[f].name, batches[b]);
#if defined(__linux__)
            if (files[f].recipe.progressive) {
                // 2048×1536: the first plane's coefficients alone are 6 MB.
                CHECK(released >= (size_t)4 << 20, "%s, %u rows at a time: %zu bytes handed back, expected 4 MB or more",
                      files[f].name, batches[b], released);
            }
#endif
            if (!files[f].recipe.progressive) {
                CHECK(released == 0, "%s: %zu bytes handed back, but a baseline file keeps no coefficients",
                      files[f].name, released);
            }
            free(pixels);
        }
        // Cut short: libjpeg zeroes the coefficients no scan reached; the same pixels as its own.
        if (files[f].recipe.progressive) {
            for (size_t cut = length / 5; cut < length; cut += length / 5) {
                size_t cut_size = 0, released = 0;
                uint8_t *cut_expected = reference_jpeg_decode(data, cut, 8, cmyk, NULL, &cut_size);
                uint8_t *pixels = shim_decode_in_batches(data, cut, cmyk, 16, &released);
                CHECK(cut_expected != NULL && pixels != NULL && memcmp(pixels, cut_expected, cut_size) == 0,
                      "%s cut to %zu of %zu bytes: the pixels differ from libjpeg's", files[f].name, cut, length);
                free(pixels);
                free(cut_expected);
            }
        }
        free(expected);
        free(data);
    }
    free(smooth.pixels);
}

int main(void) {
    // Display P3: the profile every phone photo carries, made by lcms.
    const double p3_primaries[8] = {0.680, 0.320, 0.265, 0.690, 0.150, 0.060, 0.3127, 0.3290};
    const double srgb_curve[5] = {2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045};
    uint8_t *p3 = NULL;
    size_t p3_length = 0;
    if (wi_color_profile_create_rgb(p3_primaries, srgb_curve, &p3, &p3_length) != WI_OK) {
        fprintf(stderr, "cannot make a Display P3 profile\n");
        return 1;
    }
    image photo = make_image(1024, 768, 0);
    image translucent = make_image(640, 480, 1);
    test_jpeg(&photo, p3, p3_length);
    test_jpeg_scaled_progressive(&photo);
    test_jpeg_scan_ahead(&photo);
    test_jpeg_coefficient_release();
    test_png(&photo, &translucent, p3, p3_length);
    test_png_strategy(&photo, &translucent);
    test_tiff(&photo, &translucent);
    test_color(p3, p3_length);
    test_color_vector();
    test_resample();
    test_codec_loader();
    test_memory_release();
    free(translucent.pixels);
    free(photo.pixels);
    free(p3);
    fprintf(stderr, "%d checks, %d failed\n", checks_run, failures);
    return failures == 0 ? 0 : 1;
}
