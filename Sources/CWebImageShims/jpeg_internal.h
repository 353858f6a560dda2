// JPEG parts shared by jpeg_shims.c and jpeg_scan_ahead.c (not public).
#ifndef WI_JPEG_INTERNAL_H
#define WI_JPEG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jpeglib.h>

/// What `wi_jpeg_scan_ahead` read of a baseline scan: every block's coefficients that the scaled
/// output reads, served to libjpeg in place of its Huffman decoder.
typedef struct wi_jpeg_scan_values wi_jpeg_scan_values;

/// For a sequential Huffman-coded 8-bit image about to be decoded at a scale where some planes'
/// scaled inverse DCT reads the DC alone (1/8): reads the whole scan first, skipping the AC
/// coefficients of those planes several codes at a time (libjpeg decodes them one by one to
/// drop them), and when every MCU reads exactly (every code defined, restart markers in order,
/// no byte short or left over) replaces libjpeg's MCU decoder with one that hands out the values
/// read. Otherwise changes nothing and libjpeg decodes the scan itself, with its own warnings and
/// recovery. Call after `jpeg_start_decompress`, before any row is read. Calls the progress
/// monitor once per MCU row (which may longjmp); the values stay reachable from
/// `info->client_data` for `wi_jpeg_scan_values_free`, so a jump leaks nothing.
/// Returns 1 when libjpeg's decoder was replaced.
int wi_jpeg_scan_ahead(j_decompress_ptr info);

/// The coefficients a plane's scaled inverse DCT reads (bit n: natural position n): the DC alone
/// (1) at 1×1; rows and columns 0, 1, 3, 5 and 7 at 2×2 (libjpeg's `jpeg_idct_2x2`, and its SIMD
/// versions, never read 2, 4 and 6); every one at larger sizes. Valid once the output
/// dimensions are calculated.
uint64_t wi_jpeg_coefficients_read(const jpeg_component_info *component);

/// How many chunks the value store was read into (0 for NULL); for tests.
size_t wi_jpeg_scan_chunks(const wi_jpeg_scan_values *values);

/// Frees what `wi_jpeg_scan_ahead` left in `info->client_data` (NULL is fine). Call after
/// `jpeg_destroy_decompress`.
void wi_jpeg_scan_values_free(wi_jpeg_scan_values *values);

#endif
