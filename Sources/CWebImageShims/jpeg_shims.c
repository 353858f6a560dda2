#include "CWebImageShims.h"
#include "jpeg_internal.h"
#include "shims_clock.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

// JPEG through libjpeg-turbo. Its errors arrive by longjmp (error_exit, and our progress
// monitors for limits and stops); every public function here that calls into libjpeg sets its
// own jump point first and returns a status instead.
//
// Who owns what while decoding:
// - `wi_jpeg_decoder` is calloc'ed by `wi_jpeg_decoder_create` and freed only by
//   `wi_jpeg_decoder_destroy`; the jump points' branches only return, so a failed call leaves it
//   whole for the caller to destroy. State the branches read lives in it, never in locals.
// - The compressed bytes are the caller's (handed to libjpeg in place by `wi_jpeg_source`, a
//   marker segment or a scan's data at a time, never copied or freed): they must outlive the
//   decoder. The fake EOI at a short file's end is static.
// - Saved markers (the EXIF `wi_jpeg_exif` points into) live in libjpeg's pools until
//   `jpeg_finish_decompress`/`jpeg_abort_decompress` or destroy: copy them before `wi_jpeg_finish`.
// - The ICC profile `wi_jpeg_icc_profile` returns is malloc'ed by libjpeg's
//   `jpeg_read_icc_profile` and is the caller's to free.
// - Rows are written into the caller's buffer; libjpeg's own row buffers are in its pools.
// - A baseline scan read ahead at 1/8 (jpeg_scan_ahead.c) leaves its values on
//   `info.client_data`, malloc'ed there; `wi_jpeg_decoder_destroy` frees them after
//   `jpeg_destroy_decompress` (libjpeg never touches them; its replaced `decode_mcu` pointer
//   lives in its own pools).
// - A multi-scan image's coefficient arrays (progressive files) are libjpeg's, in its image pool
//   from `jpeg_start_decompress` to finish or abort. `wi_jpeg_coefficients` only records the
//   arrays as libjpeg requests them and, on Linux, hands back to the kernel the pages of block
//   rows the output has passed (`madvise(MADV_DONTNEED)`: the mapping stays, reads would see
//   zeros, and libjpeg frees the memory as usual).
// - A `wi_color_transform` given to `wi_jpeg_read_rows` stays the caller's: only read, it
//   converts each batch in the caller's buffer after `jpeg_read_scanlines` returned (a jump out
//   of libjpeg leaves no batch half converted and nothing of the transform to free).

struct wi_jpeg_error {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int hit_end_of_data;
    int limit_hit;
};

// The compressed bytes, handed to libjpeg one unit at a time (a marker segment, a scan's header,
// then its entropy-coded data, read in place), so that once `skips_unread_scans` is set the AC
// scans of a component whose scaled output reads only the DC are left out whole.
typedef struct {
    struct jpeg_source_mgr pub;
    const uint8_t *data;
    size_t size;
    /// The offset of the first byte not yet handed to libjpeg.
    size_t next;
    /// The last unit handed was a scan's header: the next is its entropy-coded data.
    int at_scan_data;
    /// Set: a scan's data is handed alone, up to the marker after it (a search through it), so
    /// that each later scan header comes through here and unread scans are left out. Unset: the
    /// data goes to libjpeg to the end at once, as `jpeg_mem_src` hands it (libjpeg, or the
    /// baseline read-ahead, stops at the marker after it), with no search.
    int skips_unread_scans;
    /// For each component: its id, and whether its scaled inverse DCT reads the DC alone.
    int component_ids[MAX_COMPONENTS];
    int reads_dc_only[MAX_COMPONENTS];
    int component_count;
} wi_jpeg_source;

// A multi-scan image (progressive, or one scan per component) keeps every block's coefficients
// from `jpeg_start_decompress` to the end of the decode: 12 MP in 4:2:0 is 36 MB beside the 48 MB
// of RGBA rows, so two such decodes at once peaked 70 MB above two baseline ones. Output then
// moves down the image once and never reads a block row again after block smoothing's window
// (the two iMCU rows above the one being output) has passed it, so those rows' pages go back to
// the kernel as rows are read: a progressive decode peaks about where a baseline one does.
typedef jvirt_barray_ptr (*wi_jpeg_request_barray)(j_common_ptr, int, boolean, JDIMENSION, JDIMENSION, JDIMENSION);

typedef struct {
    /// libjpeg's own `request_virt_barray`, which ours wraps to record each array.
    wi_jpeg_request_barray request;
    /// The arrays in the order libjpeg's coefficient controller requests them: one per component.
    jvirt_barray_ptr arrays[MAX_COMPONENTS];
    JDIMENSION blocks_per_row[MAX_COMPONENTS];
    JDIMENSION rows[MAX_COMPONENTS];
    int count;
    /// Per array: its table of row pointers once a release has looked (libjpeg's, in its pool).
    JBLOCKARRAY row_table[MAX_COMPONENTS];
    /// Per array: the first byte not yet handed back (page-aligned), or UINTPTR_MAX when its
    /// rows are not one block of memory (left alone).
    uintptr_t released_end[MAX_COMPONENTS];
    /// Bytes handed back so far (for tests).
    size_t released_bytes;
    /// 0 until the first look; then 1 when handing rows back lowers the peak enough to pay for
    /// it, -1 when not.
    int worthwhile;
} wi_jpeg_coefficients;

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
    /// Progress calls so far: the clock is read on the first and every 16th (libjpeg calls the
    /// monitor for every one or two output rows; a clock read costs about 30 ns).
    unsigned progress_calls;
    const wi_stop *stop;
    wi_jpeg_source source;
    wi_jpeg_coefficients coefficients;
};

// libjpeg calls this every few rows of every pass, so it bounds both a scan bomb (a progressive
// file with thousands of scans, each a pass over the coefficients) and the time of any decode.
static void wi_jpeg_progress_monitor(j_common_ptr cinfo) {
    // `info` is the decoder's first member, so the decompressor's address is the decoder's.
    wi_jpeg_decoder *decoder = (wi_jpeg_decoder *)cinfo;
    struct wi_jpeg_error *error = &decoder->error;
    if (wi_stop_requested(decoder->stop)) {
        snprintf(error->message, sizeof error->message, "decoding was stopped");
    } else if (decoder->max_scans > 0 && decoder->info.input_scan_number > decoder->max_scans) {
        snprintf(error->message, sizeof error->message, "more than %d scans (a progressive JPEG has about 10)",
                 decoder->max_scans);
    } else if (decoder->deadline_ns != 0 && (decoder->progress_calls++ & 15) == 0 &&
               wi_monotonic_ns() > decoder->deadline_ns) {
        snprintf(error->message, sizeof error->message, "decoding took longer than the %.3g s limit",
                 decoder->budget_seconds);
    } else {
        return;
    }
    error->limit_hit = 1;
    longjmp(error->jump, 1);
}

static jvirt_barray_ptr wi_jpeg_record_barray(j_common_ptr cinfo, int pool, boolean pre_zero, JDIMENSION blocks_per_row,
                                              JDIMENSION rows, JDIMENSION max_access) {
    wi_jpeg_coefficients *coefficients = &((wi_jpeg_decoder *)cinfo)->coefficients;
    jvirt_barray_ptr array = coefficients->request(cinfo, pool, pre_zero, blocks_per_row, rows, max_access);
    if (coefficients->count < MAX_COMPONENTS) {
        int index = coefficients->count++;
        coefficients->arrays[index] = array;
        coefficients->blocks_per_row[index] = blocks_per_row;
        coefficients->rows[index] = rows;
        coefficients->row_table[index] = NULL;
        coefficients->released_end[index] = 0;
        coefficients->worthwhile = 0;
    }
    return array;
}

// Hands back the pages of coefficient rows that output has passed, once at least 256 KB of them
// are free to go (fewer system calls and TLB flushes: about 150 for a 12 MP image). Only for a
// single pass over an image whose arrays libjpeg requested one per component, as its
// coefficient controller does.
static void wi_jpeg_release_coefficients(wi_jpeg_decoder *decoder) {
#if defined(__linux__) && defined(MADV_DONTNEED)
    struct jpeg_decompress_struct *info = &decoder->info;
    wi_jpeg_coefficients *coefficients = &decoder->coefficients;
    if (coefficients->count != info->num_components || info->buffered_image || info->output_iMCU_row < 3) return;
    // Block smoothing reads the two iMCU rows above the one it outputs; one more for good measure.
    JDIMENSION passed = info->output_iMCU_row - 3;
    if (coefficients->worthwhile == 0) {
        // The decode peaks at the coefficients plus the rows; handing rows back brings that to
        // the larger of the two. With rows under a quarter of the coefficients (a thumbnail read
        // at 1/8 or 1/4) that saves little, and the pages it drops the next decode's buffer may
        // have to fault in again (7 % more CPU for twelve progressive 12 MP thumbnails).
        size_t total = 0;
        for (int c = 0; c < coefficients->count; c++) {
            total += (size_t)coefficients->rows[c] * coefficients->blocks_per_row[c] * sizeof(JBLOCK);
        }
        size_t output = (size_t)info->output_width * info->output_height * (size_t)info->output_components;
        coefficients->worthwhile = output >= total / 4 ? 1 : -1;
    }
    if (coefficients->worthwhile < 0) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int c = 0; c < coefficients->count; c++) {
        if (coefficients->released_end[c] == UINTPTR_MAX) continue;
        JDIMENSION rows = passed * (JDIMENSION)info->comp_info[c].v_samp_factor;
        if (rows > coefficients->rows[c]) rows = coefficients->rows[c];
        if (rows == 0) continue;
        size_t row_bytes = (size_t)coefficients->blocks_per_row[c] * sizeof(JBLOCK);
        if (coefficients->row_table[c] == NULL) {
            // Row 0 has been output, so it is defined and a read-only access changes nothing. It
            // returns the array's table of row pointers: libjpeg-turbo's memory manager keeps
            // every virtual array whole in memory, so the table holds every row.
            coefficients->row_table[c] =
                info->mem->access_virt_barray((j_common_ptr)info, coefficients->arrays[c], 0, 1, FALSE);
            // One block (rows one after another) or left alone: libjpeg allocates rows in
            // chunks with a header before each, so a gap would show at the last row.
            uintptr_t first = (uintptr_t)coefficients->row_table[c][0];
            JDIMENSION last = coefficients->rows[c] - 1;
            if ((uintptr_t)coefficients->row_table[c][last] != first + (uintptr_t)last * row_bytes) {
                coefficients->released_end[c] = UINTPTR_MAX;
                continue;
            }
            coefficients->released_end[c] = (first + page - 1) & ~(page - 1);
        }
        uintptr_t start = coefficients->released_end[c];
        uintptr_t end = ((uintptr_t)coefficients->row_table[c][0] + (uintptr_t)rows * row_bytes) & ~(page - 1);
        if (end < start + ((uintptr_t)256 << 10)) continue;
        if (madvise((void *)start, end - start, MADV_DONTNEED) == 0) {
            coefficients->released_bytes += end - start;
            coefficients->released_end[c] = end;
        } else {
            coefficients->released_end[c] = UINTPTR_MAX;
        }
    }
#else
    (void)decoder;
#endif
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

// Where the entropy-coded data (or stray bytes) from `start` end: at the next marker, a 0xFF
// followed by neither a stuffed 0x00 nor a restart marker; the data's end when there is none.
static size_t wi_jpeg_next_marker(const uint8_t *data, size_t size, size_t start) {
    // memchr's vector search: a scan's data is most of the file, and 0xFF bytes are rare in it.
    for (size_t i = start; i + 1 < size; i++) {
        const uint8_t *candidate = memchr(data + i, 0xFF, size - 1 - i);
        if (candidate == NULL) break;
        i = (size_t)(candidate - data);
        if (data[i + 1] != 0x00 && (data[i + 1] < JPEG_RST0 || data[i + 1] > JPEG_RST0 + 7)) return i;
    }
    return size;
}

// The end of the unit at `start`: a fill byte, a marker without a segment, a marker segment (a
// scan's header alone), or stray bytes up to the next marker.
static size_t wi_jpeg_unit_end(const uint8_t *data, size_t size, size_t start) {
    if (data[start] != 0xFF || start + 1 >= size) return wi_jpeg_next_marker(data, size, start + 1);
    int marker = data[start + 1];
    if (marker == 0xFF) return start + 1;
    // SOI, EOI, TEM and the restart markers stand alone.
    if (marker == 0xD8 || marker == JPEG_EOI || marker == 0x01 || (marker >= JPEG_RST0 && marker <= JPEG_RST0 + 7)) {
        return start + 2;
    }
    if (start + 4 > size) return size;
    size_t end = start + 2 + ((size_t)data[start + 2] << 8 | data[start + 3]);
    return end > size ? size : end;
}

static int wi_jpeg_is_scan_header(const uint8_t *data, size_t size, size_t start) {
    return start + 1 < size && data[start] == 0xFF && data[start + 1] == 0xDA;
}

// Whether the scan whose header is [start, end) is one the output never reads: an AC scan of a
// component whose scaled inverse DCT reads the DC alone. (A component that reads some AC
// coefficients needs all its AC scans: a refinement scan's codes depend on every earlier scan of
// its band.)
static int wi_jpeg_scan_unread(const wi_jpeg_source *source, size_t start, size_t end) {
    const uint8_t *unit = source->data + start;
    size_t length = end - start;
    if (length < 10 || unit[0] != 0xFF || unit[1] != 0xDA || unit[4] != 1) return 0;
    int first_coefficient = unit[7];  // Ss, after the length, Ns, and the component's Cs and tables
    for (int c = 0; c < source->component_count; c++) {
        if (source->component_ids[c] == unit[5]) return first_coefficient > 0 && source->reads_dc_only[c];
    }
    return 0;
}

static void wi_jpeg_source_init(j_decompress_ptr info) { (void)info; }

static boolean wi_jpeg_source_fill(j_decompress_ptr info) {
    wi_jpeg_source *source = (wi_jpeg_source *)info->src;
    while (source->next < source->size) {
        size_t start = source->next;
        size_t end;
        if (source->at_scan_data) {
            source->at_scan_data = 0;
            end = source->skips_unread_scans ? wi_jpeg_next_marker(source->data, source->size, start) : source->size;
            source->next = end;
            if (end == start) continue;  // no data: the marker after the header is the next unit
        } else {
            end = wi_jpeg_unit_end(source->data, source->size, start);
            if (wi_jpeg_is_scan_header(source->data, source->size, start)) {
                if (source->skips_unread_scans && wi_jpeg_scan_unread(source, start, end)) {
                    source->next = wi_jpeg_next_marker(source->data, source->size, end);  // header and data
                    continue;
                }
                source->at_scan_data = 1;
            }
            source->next = end;
        }
        source->pub.next_input_byte = source->data + start;
        source->pub.bytes_in_buffer = end - start;
        return TRUE;
    }
    // The end of the data before the image's: a fake EOI, as jpeg_mem_src inserts, and a warning.
    static const JOCTET end_of_image[2] = {0xFF, JPEG_EOI};
    WARNMS(info, JWRN_JPEG_EOF);
    source->pub.next_input_byte = end_of_image;
    source->pub.bytes_in_buffer = 2;
    return TRUE;
}

static void wi_jpeg_source_skip(j_decompress_ptr info, long count) {
    struct jpeg_source_mgr *source = info->src;
    if (count <= 0) return;
    while (count > (long)source->bytes_in_buffer) {
        count -= (long)source->bytes_in_buffer;
        (void)(*source->fill_input_buffer)(info);  // never suspends; at the end, 2 bytes of fake EOI
    }
    source->next_input_byte += count;
    source->bytes_in_buffer -= (size_t)count;
}

static void wi_jpeg_source_term(j_decompress_ptr info) { (void)info; }

// Its own function, so the jump point's frame holds no local that changes after setjmp.
static wi_status wi_jpeg_decoder_start(wi_jpeg_decoder *decoder) {
    if (setjmp(decoder->error.jump)) return WI_ERROR;
    jpeg_create_decompress(&decoder->info);
    decoder->created = 1;
    decoder->coefficients.request = decoder->info.mem->request_virt_barray;
    decoder->info.mem->request_virt_barray = wi_jpeg_record_barray;
    wi_jpeg_source *source = &decoder->source;
    source->data = decoder->data;
    source->size = decoder->size;
    source->pub.init_source = wi_jpeg_source_init;
    source->pub.fill_input_buffer = wi_jpeg_source_fill;
    source->pub.skip_input_data = wi_jpeg_source_skip;
    source->pub.resync_to_restart = jpeg_resync_to_restart;
    source->pub.term_source = wi_jpeg_source_term;
    decoder->info.src = &source->pub;
    return WI_OK;
}

wi_jpeg_decoder *wi_jpeg_decoder_create(const uint8_t *data, size_t size) {
    wi_jpeg_decoder *decoder = calloc(1, sizeof(wi_jpeg_decoder));
    if (decoder == NULL) return NULL;
    decoder->data = data;
    decoder->size = size;
    wi_jpeg_install_errors(&decoder->error, &decoder->info.err);
    if (wi_jpeg_decoder_start(decoder) != WI_OK) {
        wi_jpeg_decoder_destroy(decoder);
        return NULL;
    }
    return decoder;
}

void wi_jpeg_decoder_destroy(wi_jpeg_decoder *decoder) {
    if (decoder == NULL) return;
    wi_jpeg_scan_values *values = decoder->info.client_data;
    if (decoder->created) jpeg_destroy_decompress(&decoder->info);
    wi_jpeg_scan_values_free(values);
    free(decoder);
}

const char *wi_jpeg_decoder_message(const wi_jpeg_decoder *decoder) { return decoder->error.message; }

int wi_jpeg_decoder_hit_end_of_data(const wi_jpeg_decoder *decoder) { return decoder->error.hit_end_of_data; }

int wi_jpeg_decoder_limit_hit(const wi_jpeg_decoder *decoder) { return decoder->error.limit_hit; }

size_t wi_jpeg_released_coefficient_bytes(const wi_jpeg_decoder *decoder) {
    return decoder->coefficients.released_bytes;
}

void wi_jpeg_decoder_set_limits(wi_jpeg_decoder *decoder, int max_scans, int64_t budget_ns, const wi_stop *stop) {
    decoder->max_scans = max_scans;
    decoder->stop = stop;
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
    struct jpeg_decompress_struct *info = &decoder->info;
    info->out_color_space = cmyk_output ? JCS_CMYK : JCS_EXT_RGBA;
    // A progressive image read at 1/8: the luma's (and any full-resolution plane's) scaled inverse
    // DCT reads the DC alone, so that plane's AC scans (most of the file) are left out unread.
    // For a whole file the pixels are those of reading every scan; block smoothing, which guesses
    // coefficients not yet received, is off (the ones it would guess are unread on purpose).
    if (jpeg_has_multiple_scans(info) && info->scale_num < info->scale_denom) {
        jpeg_calc_output_dimensions(info);
        wi_jpeg_source *source = &decoder->source;
        source->component_count = info->num_components < MAX_COMPONENTS ? info->num_components : MAX_COMPONENTS;
        int skips = 0;
        for (int c = 0; c < source->component_count; c++) {
            source->component_ids[c] = info->comp_info[c].component_id;
            source->reads_dc_only[c] = wi_jpeg_coefficients_read(&info->comp_info[c]) == 1;
            skips |= source->reads_dc_only[c];
        }
        source->skips_unread_scans = skips;
        if (skips) info->do_block_smoothing = FALSE;
    }
    if (!jpeg_start_decompress(info)) {
        snprintf(decoder->error.message, sizeof decoder->error.message, "the JPEG data ended early");
        return WI_ERROR;
    }
    // A baseline image at 1/8: the planes that read only the DC have their AC codes skipped in
    // bulk (jpeg_scan_ahead.c); the pixels are libjpeg's either way. The read-ahead stops at the
    // marker after the scan and gives up on a scan cut short (data still arriving, as for
    // previews): it could not read exactly. The scan's data is handed now if libjpeg has not
    // asked for it yet (it asks at the first row).
    if (info->scale_num < info->scale_denom) {
        if (info->src->bytes_in_buffer == 0 && decoder->source.at_scan_data) {
            (void)wi_jpeg_source_fill(info);  // never suspends; at the end, 2 bytes of fake EOI
        }
        (void)wi_jpeg_scan_ahead(info);
    }
    return WI_OK;
}

wi_status wi_jpeg_read_rows(wi_jpeg_decoder *decoder, uint8_t *dst, size_t stride, uint32_t max_rows,
                            const wi_color_transform *transform, uint32_t *rows_read) {
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
        // Converted while the rows are still in cache: one pass over the image instead of two.
        for (JDIMENSION i = 0; transform != NULL && i < got; i++) {
            wi_color_transform_apply(transform, rows[i], info->output_width);
        }
        *rows_read += got;
        wi_jpeg_release_coefficients(decoder);
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

// MARK: Encoding
//
// Who owns what during an encode:
// - `wi_jpeg_encoder` (below) is ours: calloc'ed before the jump point, freed on every return.
//   Everything the error branch reads lives in it, on the heap, so a longjmp finds the values
//   the callbacks last stored (a local changed after setjmp would be indeterminate there).
// - `encoder->output` is ours alone: libjpeg writes into it through our destination manager
//   (`next_output_byte`, `free_in_buffer`) and asks us to grow it (`wi_jpeg_grow_output`); it
//   never allocates, moves or frees it. `jpeg_mem_dest` is not used: it reallocates behind the
//   caller's back and frees the block the caller's pointer still names, so an error after the
//   first 4 KB freed it twice. On success the block goes to the caller (`*out`); otherwise we free it.
// - `encoder->cmyk_rows` is ours; libjpeg only reads it during `jpeg_write_scanlines`.
// - libjpeg's own state lives in its pools, all freed by `jpeg_destroy_compress`, which is safe
//   after an error at any point once `jpeg_create_compress` has run (`created`).

/// Rows handed to libjpeg per call; the stop flag and the deadline are checked once per call
/// and once per row group of every pass in `jpeg_finish_compress` (the progress monitor).
#define WI_JPEG_ROW_BATCH 16

typedef struct {
    struct jpeg_compress_struct info;  // first member: the progress monitor casts back from it
    struct wi_jpeg_error error;
    struct jpeg_destination_mgr destination;
    struct jpeg_progress_mgr progress;
    const wi_stop *stop;
    int64_t deadline_ns;
    int created;
    uint8_t *output;
    size_t capacity;
    size_t size;
    uint8_t *cmyk_rows;
} wi_jpeg_encoder;

static void wi_jpeg_encoder_fail(wi_jpeg_encoder *encoder, int limit, const char *text) {
    snprintf(encoder->error.message, sizeof encoder->error.message, "%s", text);
    encoder->error.limit_hit = limit;
    longjmp(encoder->error.jump, 1);
}

static void wi_jpeg_start_output(j_compress_ptr cinfo) {
    wi_jpeg_encoder *encoder = (wi_jpeg_encoder *)cinfo;
    encoder->destination.next_output_byte = encoder->output;
    encoder->destination.free_in_buffer = encoder->capacity;
}

// Called by libjpeg when the whole buffer is full (free_in_buffer == 0): doubles it, keeping
// what is written. On failure the old block stays valid and ours, freed by the error branch.
static boolean wi_jpeg_grow_output(j_compress_ptr cinfo) {
    wi_jpeg_encoder *encoder = (wi_jpeg_encoder *)cinfo;
    size_t used = encoder->capacity;
    if (used > SIZE_MAX / 2) wi_jpeg_encoder_fail(encoder, 0, "the encoded JPEG is too large");
    uint8_t *grown = realloc(encoder->output, used * 2);
    if (grown == NULL) wi_jpeg_encoder_fail(encoder, 0, "out of memory for the encoded JPEG");
    encoder->output = grown;
    encoder->capacity = used * 2;
    encoder->destination.next_output_byte = grown + used;
    encoder->destination.free_in_buffer = encoder->capacity - used;
    return TRUE;
}

static void wi_jpeg_end_output(j_compress_ptr cinfo) {
    wi_jpeg_encoder *encoder = (wi_jpeg_encoder *)cinfo;
    encoder->size = encoder->capacity - encoder->destination.free_in_buffer;
}

// libjpeg calls this at each `jpeg_write_scanlines` and for each row group of every pass of
// `jpeg_finish_compress` (where a progressive or optimised encode spends most of its time).
static void wi_jpeg_encode_progress(j_common_ptr cinfo) {
    wi_jpeg_encoder *encoder = (wi_jpeg_encoder *)cinfo;
    if (wi_stop_requested(encoder->stop)) wi_jpeg_encoder_fail(encoder, 1, "encoding was stopped");
    if (encoder->deadline_ns != 0 && wi_monotonic_ns() > encoder->deadline_ns) {
        wi_jpeg_encoder_fail(encoder, 1, "encoding took longer than its time limit");
    }
}

/// A first guess at the encoded size (a photo at q80 takes about 2 bits a pixel), so most
/// encodes never grow the buffer and a huge one does not start huge.
static size_t wi_jpeg_initial_capacity(uint32_t width, uint32_t height) {
    uint64_t guess = (uint64_t)width * height / 4 + 4096;
    if (guess < 16384) guess = 16384;
    if (guess > (8u << 20)) guess = 8u << 20;
    return (size_t)guess;
}

/// RGB to CMYK with full black generation, stored inverted (the Adobe convention).
static void wi_jpeg_rgb_to_inverted_cmyk(const uint8_t *source, uint8_t *target, uint32_t width) {
    for (uint32_t x = 0; x < width; x++, source += 4, target += 4) {
        int r = source[0], g = source[1], b = source[2];
        int max = r > g ? (r > b ? r : b) : (g > b ? g : b);
        if (max == 0) {
            target[0] = target[1] = target[2] = 255;
        } else {
            target[0] = (uint8_t)(255 - (max - r) * 255 / max);
            target[1] = (uint8_t)(255 - (max - g) * 255 / max);
            target[2] = (uint8_t)(255 - (max - b) * 255 / max);
        }
        target[3] = (uint8_t)max;  // 255 - K, with K = 255 - max
    }
}

static void wi_jpeg_encoder_free(wi_jpeg_encoder *encoder) {
    if (encoder->created) jpeg_destroy_compress(&encoder->info);
    free(encoder->cmyk_rows);
    free(encoder->output);
    free(encoder);
}

wi_status wi_jpeg_encode(const uint8_t *rgba, uint32_t width, uint32_t height, size_t stride, int quality,
                         int progressive, wi_jpeg_color_model color_model, const uint8_t *exif, size_t exif_length,
                         const uint8_t *icc, size_t icc_length, const wi_stop *stop, int64_t budget_ns,
                         uint8_t **out, size_t *out_size, char *message) {
    *out = NULL;
    *out_size = 0;
    message[0] = 0;
    // Set once, before setjmp, and never changed: the error branch may read it.
    wi_jpeg_encoder *const encoder = calloc(1, sizeof(wi_jpeg_encoder));
    if (encoder == NULL) {
        snprintf(message, WI_MESSAGE_CAPACITY, "out of memory for the JPEG encoder");
        return WI_OUT_OF_MEMORY;
    }
    encoder->stop = stop;
    encoder->deadline_ns = wi_deadline_after(budget_ns);
    wi_jpeg_install_errors(&encoder->error, &encoder->info.err);
    if (setjmp(encoder->error.jump)) {
        snprintf(message, WI_MESSAGE_CAPACITY, "%s", encoder->error.message);
        wi_status status = encoder->error.limit_hit ? WI_LIMIT_EXCEEDED : WI_ERROR;
        wi_jpeg_encoder_free(encoder);
        return status;
    }
    jpeg_create_compress(&encoder->info);
    encoder->created = 1;
    struct jpeg_compress_struct *info = &encoder->info;

    encoder->capacity = wi_jpeg_initial_capacity(width, height);
    encoder->output = malloc(encoder->capacity);
    if (color_model == WI_JPEG_CMYK) encoder->cmyk_rows = malloc((size_t)width * 4 * WI_JPEG_ROW_BATCH);
    if (encoder->output == NULL || (color_model == WI_JPEG_CMYK && encoder->cmyk_rows == NULL)) {
        wi_jpeg_encoder_fail(encoder, 0, "out of memory for the JPEG encoder");
    }
    encoder->destination.init_destination = wi_jpeg_start_output;
    encoder->destination.empty_output_buffer = wi_jpeg_grow_output;
    encoder->destination.term_destination = wi_jpeg_end_output;
    info->dest = &encoder->destination;
    encoder->progress.progress_monitor = wi_jpeg_encode_progress;
    info->progress = &encoder->progress;

    info->image_width = width;
    info->image_height = height;
    info->input_components = 4;
    info->in_color_space = color_model == WI_JPEG_CMYK ? JCS_CMYK : JCS_EXT_RGBA;
    jpeg_set_defaults(info);
    if (color_model == WI_JPEG_GRAYSCALE) jpeg_set_colorspace(info, JCS_GRAYSCALE);
    jpeg_set_quality(info, quality, TRUE);
    if (progressive) jpeg_simple_progression(info);
    jpeg_start_compress(info, TRUE);
    // Markers byte by byte: nothing allocated that a longjmp out of libjpeg could leak.
    if (exif != NULL && exif_length > 0 && exif_length <= 65533 - 6) {
        jpeg_write_m_header(info, JPEG_APP0 + 1, (unsigned int)(exif_length + 6));
        static const uint8_t prefix[6] = {'E', 'x', 'i', 'f', 0, 0};
        for (size_t i = 0; i < 6; i++) jpeg_write_m_byte(info, prefix[i]);
        for (size_t i = 0; i < exif_length; i++) jpeg_write_m_byte(info, exif[i]);
    }
    if (icc != NULL && icc_length > 0 && icc_length <= UINT32_MAX) {
        jpeg_write_icc_profile(info, icc, (unsigned int)icc_length);
    }
    JSAMPROW rows[WI_JPEG_ROW_BATCH];
    while (info->next_scanline < info->image_height) {
        uint32_t first = info->next_scanline;
        uint32_t count = height - first < WI_JPEG_ROW_BATCH ? height - first : WI_JPEG_ROW_BATCH;
        for (uint32_t i = 0; i < count; i++) {
            const uint8_t *source = rgba + (size_t)(first + i) * stride;
            if (color_model == WI_JPEG_CMYK) {
                uint8_t *target = encoder->cmyk_rows + (size_t)i * width * 4;
                wi_jpeg_rgb_to_inverted_cmyk(source, target, width);
                rows[i] = target;
            } else {
                rows[i] = (JSAMPROW)source;
            }
        }
        jpeg_write_scanlines(info, rows, count);
    }
    jpeg_finish_compress(info);
    *out = encoder->output;
    *out_size = encoder->size;
    encoder->output = NULL;  // the caller's now
    wi_jpeg_encoder_free(encoder);
    return WI_OK;
}
