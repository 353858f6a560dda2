// Who owns what: source, destination and weight buffers are the caller's; nothing here allocates,
// and no library is called.
#include "CWebImageShims.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// Fixed-point resampling of opaque RGBA: weights scaled by 2^WI_RESAMPLE_BITS, products summed
// in 32 bits. The row pass keeps WI_RESAMPLE_FRACTION bits below each level in 16-bit values, so
// a Lanczos lobe's overshoot past 0 or 255 survives to the column pass (libvips rounds to bytes
// between its passes and clips it). The SSE2 loops compute exactly what the plain loops compute
// (integer arithmetic), so the result does not depend on the machine.
//
// No allocation, no jumps, no errors: every buffer is the caller's (Resampler.swift sizes them from
// the kernel), read and written within the bounds the header states.

enum {
    wi_row_shift = WI_RESAMPLE_BITS - WI_RESAMPLE_FRACTION,
    wi_column_shift = WI_RESAMPLE_BITS + WI_RESAMPLE_FRACTION,
};

static inline int16_t wi_row_value(int32_t sum) {
    int32_t value = (sum + (1 << (wi_row_shift - 1))) >> wi_row_shift;
    return (int16_t)(value < INT16_MIN ? INT16_MIN : (value > INT16_MAX ? INT16_MAX : value));
}

static inline uint8_t wi_column_value(int32_t sum) {
    int32_t value = (sum + (1 << (wi_column_shift - 1))) >> wi_column_shift;
    return (uint8_t)(value < 0 ? 0 : (value > 255 ? 255 : value));
}

void wi_resample_row_reference(const uint8_t *in, int16_t *out, size_t out_width, const intptr_t *starts,
                               const intptr_t *counts, const int16_t *weights, size_t stride) {
    for (size_t x = 0; x < out_width; x++) {
        const uint8_t *taps = in + starts[x] * 4;
        const int16_t *w = weights + x * stride;
        int32_t sums[4] = {0, 0, 0, 0};
        for (intptr_t k = 0; k < counts[x]; k++) {
            for (int c = 0; c < 4; c++) sums[c] += w[k] * taps[k * 4 + c];
        }
        for (int c = 0; c < 4; c++) out[x * 4 + c] = wi_row_value(sums[c]);
    }
}

static void wi_column_values(const int16_t *const *rows, const int16_t *weights, size_t count, uint8_t *out,
                             size_t from, size_t to) {
    for (size_t i = from; i < to; i++) {
        int32_t sum = 0;
        for (size_t k = 0; k < count; k++) sum += weights[k] * rows[k][i];
        out[i] = wi_column_value(sum);
    }
}

void wi_resample_column_reference(const int16_t *const *rows, const int16_t *weights, size_t count, uint8_t *out,
                                  size_t values) {
    wi_column_values(rows, weights, count, out, 0, values);
}

#if defined(__SSE2__)

static inline __m128i wi_pixel(const uint8_t *pixel) {
    int32_t bytes;
    memcpy(&bytes, pixel, 4);
    return _mm_cvtsi32_si128(bytes);
}

// Two pixels' channels interleaved (r0 r1 g0 g1 b0 b1 a0 a1) as 16-bit lanes, for _mm_madd_epi16
// with the two taps' weights alternating.
static inline __m128i wi_pair(const uint8_t *pixels, __m128i zero) {
    return _mm_unpacklo_epi8(_mm_unpacklo_epi8(wi_pixel(pixels), wi_pixel(pixels + 4)), zero);
}

static inline __m128i wi_weight_pair(int16_t first, int16_t second) {
    return _mm_set1_epi32((int32_t)(((uint32_t)(uint16_t)second << 16) | (uint16_t)first));
}

static inline __m128i wi_shift(__m128i sum, int shift) {
    return _mm_srai_epi32(_mm_add_epi32(sum, _mm_set1_epi32(1 << (shift - 1))), shift);
}

void wi_resample_row(const uint8_t *in, int16_t *out, size_t out_width, const intptr_t *starts,
                     const intptr_t *counts, const int16_t *weights, size_t stride) {
    const __m128i zero = _mm_setzero_si128();
    for (size_t x = 0; x < out_width; x++) {
        const uint8_t *taps = in + starts[x] * 4;
        const int16_t *w = weights + x * stride;
        intptr_t count = counts[x];
        __m128i sum0 = zero;
        __m128i sum1 = zero;
        intptr_t k = 0;
        for (; k + 4 <= count; k += 4) {
            sum0 = _mm_add_epi32(sum0, _mm_madd_epi16(wi_pair(taps + k * 4, zero), wi_weight_pair(w[k], w[k + 1])));
            sum1 = _mm_add_epi32(sum1,
                                 _mm_madd_epi16(wi_pair(taps + k * 4 + 8, zero), wi_weight_pair(w[k + 2], w[k + 3])));
        }
        for (; k + 2 <= count; k += 2) {
            sum0 = _mm_add_epi32(sum0, _mm_madd_epi16(wi_pair(taps + k * 4, zero), wi_weight_pair(w[k], w[k + 1])));
        }
        if (k < count) {
            // The last tap alone: its neighbour may lie past the row's end, so it is not loaded.
            __m128i pixel = _mm_unpacklo_epi8(_mm_unpacklo_epi8(wi_pixel(taps + k * 4), zero), zero);
            sum1 = _mm_add_epi32(sum1, _mm_madd_epi16(pixel, wi_weight_pair(w[k], 0)));
        }
        __m128i value = wi_shift(_mm_add_epi32(sum0, sum1), wi_row_shift);
        _mm_storel_epi64((__m128i *)(void *)(out + x * 4), _mm_packs_epi32(value, value));
    }
}

void wi_resample_column(const int16_t *const *rows, const int16_t *weights, size_t count, uint8_t *out,
                        size_t values) {
    const __m128i zero = _mm_setzero_si128();
    size_t i = 0;
    for (; i + 16 <= values; i += 16) {
        __m128i sums[4] = {zero, zero, zero, zero};
        for (size_t k = 0; k < count; k += 2) {
            // An odd last row pairs with itself at weight 0.
            const int16_t *second = k + 1 < count ? rows[k + 1] : rows[k];
            __m128i w = wi_weight_pair(weights[k], k + 1 < count ? weights[k + 1] : 0);
            for (int half = 0; half < 2; half++) {
                __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(rows[k] + i + half * 8));
                __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(second + i + half * 8));
                sums[half * 2] = _mm_add_epi32(sums[half * 2], _mm_madd_epi16(_mm_unpacklo_epi16(a, b), w));
                sums[half * 2 + 1] = _mm_add_epi32(sums[half * 2 + 1], _mm_madd_epi16(_mm_unpackhi_epi16(a, b), w));
            }
        }
        __m128i first = _mm_packs_epi32(wi_shift(sums[0], wi_column_shift), wi_shift(sums[1], wi_column_shift));
        __m128i last = _mm_packs_epi32(wi_shift(sums[2], wi_column_shift), wi_shift(sums[3], wi_column_shift));
        _mm_storeu_si128((__m128i *)(void *)(out + i), _mm_packus_epi16(first, last));
    }
    wi_column_values(rows, weights, count, out, i, values);
}

#else

void wi_resample_row(const uint8_t *in, int16_t *out, size_t out_width, const intptr_t *starts,
                     const intptr_t *counts, const int16_t *weights, size_t stride) {
    wi_resample_row_reference(in, out, out_width, starts, counts, weights, stride);
}

void wi_resample_column(const int16_t *const *rows, const int16_t *weights, size_t count, uint8_t *out,
                        size_t values) {
    wi_column_values(rows, weights, count, out, 0, values);
}

#endif
