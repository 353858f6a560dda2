// The matrix-shaper kernel in AVX-512 (F, BW, VBMI), 64 pixels a step, chosen at run time when
// the CPU has it (color_matrix_shaper.c keeps the scalar kernel for other CPUs).
// Per step: the R, G and B bytes of 64 RGBA pixels gathered into planes with `vpermt2b`; each
// level to linear light in Q15 through two 256-entry byte tables (low and high bytes, two
// `vpermi2b` and a blend each); the 3×3 matrix in 16-bit fixed point (`vpmulhrsw`, saturating
// adds); the sRGB encoding by linear interpolation in cells of 1/128 of the range, or of 1/2048
// below 1/16 where the curve bends most (base and rise from 128-entry byte tables; a step whose
// 64 values of a channel all fall in one of the two ranges looks up that one only); the planes
// joined back with the pixels' own alpha. The C harness holds it within one level of lcms on all
// 2²⁴ colours for the profiles it takes.
// Who owns what: a `wi_shaper_vector` is malloc'ed here and freed by `wi_shaper_vector_destroy`;
// the curves passed in stay the caller's; the last pixels of a call are copied into a 256-byte
// stack buffer and back. No library touches any of these buffers.

#include "color_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define WI_SHAPER_AVX512 1
#include <immintrin.h>
#endif

/// Encoding cells: `v` is linear light in Q14 (16,384 = 1.0). Cells of 128 above 1,024 (tier A,
/// indexed by `v >> 7`), of 8 below (tier B, indexed by `v >> 3`).
enum { WI_ENCODE_ONE = 16384, WI_TIER_B_END = 1024 };

struct wi_shaper_vector {
    /// Each input channel's level as linear light in Q15, low and high bytes.
    uint8_t linear_low[3][256], linear_high[3][256];
    /// The matrix in Q14, so `vpmulhrsw` against Q15 linear light gives Q14 sums.
    int16_t matrix[3][3];
    /// Per encoding cell (tier A, then tier B): the level × 256 at the cell's start plus 128 (the
    /// rounding), as low and high bytes, and the rise across the cell in 1/32 level.
    uint8_t base_low[2][128], base_high[2][128], rise[2][128];
};

#if WI_SHAPER_AVX512

/// The compiler's CPU model is filled by a constructor before `main`: reading it needs no
/// `__builtin_cpu_init` (which writes it again, from whichever thread builds a transform).
static int wi_cpu_has_avx512_vbmi(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
           && __builtin_cpu_supports("avx512vbmi");
}

/// The sRGB level (0–255, unrounded) of Q14 linear light `v`.
static double wi_encoded_level(const cmsToneCurve *encode, int v) {
    double linear = (double)v / WI_ENCODE_ONE;
    if (linear <= 0) return 0;
    if (linear >= 1) return 255;
    return cmsEvalToneCurveFloat(encode, (cmsFloat32Number)linear) * 255.0;
}

/// Fills one tier's cells; 0 when a rise does not fit its byte.
static int wi_encoding_cells(wi_shaper_vector *tables, int tier, int cell_size, const cmsToneCurve *encode) {
    // Tier A's first cells lie in tier B and are never read.
    for (int cell = tier == 0 ? WI_TIER_B_END / cell_size : 0; cell < 128; cell++) {
        int start = cell * cell_size;
        double from = wi_encoded_level(encode, start), to = wi_encoded_level(encode, start + cell_size);
        long base = lrint(from * 256) + 128;
        long rise = lrint((to - from) * 32);
        if (base < 0 || base > 65535 || rise < 0 || rise > 255) return 0;
        tables->base_low[tier][cell] = (uint8_t)(base & 0xFF);
        tables->base_high[tier][cell] = (uint8_t)(base >> 8);
        tables->rise[tier][cell] = (uint8_t)rise;
    }
    return 1;
}

wi_shaper_vector *wi_shaper_vector_create(double matrix[3][3], double linear[3][256], const cmsToneCurve *encode) {
    if (!wi_cpu_has_avx512_vbmi()) return NULL;
    // Every partial sum of a row must stay within ±2 in Q14, or a saturating add would clip it
    // (ProPhoto's red reaches 2.03: it stays on the scalar kernel).
    for (int k = 0; k < 3; k++) {
        double positive = 0, negative = 0;
        for (int c = 0; c < 3; c++) {
            if (matrix[k][c] > 0) positive += matrix[k][c]; else negative += matrix[k][c];
        }
        if (positive >= 1.99 || negative <= -1.99) return NULL;
    }
    wi_shaper_vector *tables = calloc(1, sizeof *tables);
    if (tables == NULL) return NULL;
    for (int k = 0; k < 3; k++) {
        for (int c = 0; c < 3; c++) tables->matrix[k][c] = (int16_t)lrint(matrix[k][c] * WI_ENCODE_ONE);
    }
    for (int c = 0; c < 3; c++) {
        for (int level = 0; level < 256; level++) {
            long q15 = lrint(linear[c][level] * 32768);
            if (q15 > 32767) q15 = 32767;
            tables->linear_low[c][level] = (uint8_t)(q15 & 0xFF);
            tables->linear_high[c][level] = (uint8_t)(q15 >> 8);
        }
    }
    if (!wi_encoding_cells(tables, 0, 128, encode) || !wi_encoding_cells(tables, 1, 8, encode)) {
        free(tables);
        return NULL;
    }
    return tables;
}

#define WI_AVX512 __attribute__((target("avx512f,avx512bw,avx512vbmi")))
/// Inlined into the step loop, so the tables stay in registers across steps as far as they fit.
#define WI_INLINE static inline __attribute__((always_inline))
/// The three output channels unrolled (clang keeps the loop otherwise, reloading per channel).
#if defined(__clang__)
#define WI_UNROLL_CHANNELS _Pragma("clang loop unroll(full)")
#else
#define WI_UNROLL_CHANNELS _Pragma("GCC unroll 3")
#endif

/// A 256-entry byte table (four registers) applied to 64 indices.
typedef struct {
    __m512i quarter[4];
} wi_table256;

WI_AVX512 WI_INLINE wi_table256 wi_load_table256(const uint8_t *table) {
    wi_table256 loaded;
    for (int i = 0; i < 4; i++) loaded.quarter[i] = _mm512_loadu_si512((const void *)(table + 64 * i));
    return loaded;
}

WI_AVX512 WI_INLINE __m512i wi_lookup256(const wi_table256 *table, __m512i index, __mmask64 upper) {
    __m512i low = _mm512_permutex2var_epi8(table->quarter[0], index, table->quarter[1]);
    __m512i high = _mm512_permutex2var_epi8(table->quarter[2], index, table->quarter[3]);
    return _mm512_mask_blend_epi8(upper, low, high);
}

typedef struct {
    wi_table256 linear_low[3], linear_high[3];
    __m512i matrix[3][3];
    __m512i top;
    /// Tier A's and tier B's halves (two registers each) of the base and rise tables.
    __m512i base_low[2][2], base_high[2][2], rise[2][2];
    /// Byte indices that gather R|G (B|A) planes from 32 pixels and weave planes back.
    __m512i gather_rg, gather_b, weave_rg[2], weave_rgb[4];
} wi_vector_state;

/// One channel's 64 levels as Q15 linear light: two vectors of 32 words, in `vpunpck` order.
WI_AVX512 WI_INLINE void wi_linearize(const wi_vector_state *s, int channel, __m512i levels, __m512i words[2]) {
    __mmask64 upper = _mm512_movepi8_mask(levels);
    __m512i low = wi_lookup256(&s->linear_low[channel], levels, upper);
    __m512i high = wi_lookup256(&s->linear_high[channel], levels, upper);
    words[0] = _mm512_unpacklo_epi8(low, high);
    words[1] = _mm512_unpackhi_epi8(low, high);
}

/// Which encoding tiers a step's 64 sums fall in: every one at or above 1/16 (tier A), every one
/// below (tier B), or both. A step in one tier skips the other's look-ups and the blend between
/// them: the same bytes from a third fewer of the encoding's operations.
enum { WI_TIER_A = 1, WI_TIER_B = 2, WI_TIERS_BOTH = 3 };

WI_AVX512 WI_INLINE __m512i wi_tier_lookup(const __m512i table[2][2], __m512i index_a, __m512i index_b,
                                               __mmask64 tier_b, int tiers) {
    if (tiers == WI_TIER_A) return _mm512_permutex2var_epi8(table[0][0], index_a, table[0][1]);
    __m512i b = _mm512_permutex2var_epi8(table[1][0], index_b, table[1][1]);
    if (tiers == WI_TIER_B) return b;
    __m512i a = _mm512_permutex2var_epi8(table[0][0], index_a, table[0][1]);
    return _mm512_mask_blend_epi8(tier_b, a, b);
}

/// ``wi_encode`` once the cells are known, for the tiers `tiers` names (a constant).
WI_AVX512 WI_INLINE __m512i wi_encode_cells(const wi_vector_state *s, const __m512i v[2], __m512i cell_a,
                                                __mmask64 tier_b, int tiers) {
    __m512i cell_b = _mm512_setzero_si512();
    if (tiers != WI_TIER_A) {
        cell_b = _mm512_packus_epi16(_mm512_srli_epi16(v[0], 3), _mm512_srli_epi16(v[1], 3));
    }
    __m512i base_low = wi_tier_lookup(s->base_low, cell_a, cell_b, tier_b, tiers);
    __m512i base_high = wi_tier_lookup(s->base_high, cell_a, cell_b, tier_b, tiers);
    __m512i rise = wi_tier_lookup(s->rise, cell_a, cell_b, tier_b, tiers);
    __m512i levels[2];
    for (int t = 0; t < 2; t++) {
        __m512i base = t == 0 ? _mm512_unpacklo_epi8(base_low, base_high) : _mm512_unpackhi_epi8(base_low, base_high);
        __m512i rise_high = t == 0 ? _mm512_unpacklo_epi8(_mm512_setzero_si512(), rise)
                                   : _mm512_unpackhi_epi8(_mm512_setzero_si512(), rise);
        // The position in the cell in 1/2048: tier A's low 7 bits × 16, tier B's low 3 × 256.
        __m512i position;
        if (tiers == WI_TIER_A) {
            position = _mm512_slli_epi16(v[t], 9);
        } else if (tiers == WI_TIER_B) {
            position = _mm512_slli_epi16(v[t], 13);
        } else {
            __mmask32 in_b = _mm512_cmplt_epu16_mask(v[t], _mm512_set1_epi16(WI_TIER_B_END));
            position = _mm512_mask_slli_epi16(_mm512_slli_epi16(v[t], 9), in_b, v[t], 13);
        }
        position = _mm512_srli_epi16(position, 5);
        __m512i scaled = _mm512_adds_epu16(base, _mm512_mulhi_epu16(rise_high, position));
        levels[t] = _mm512_srli_epi16(scaled, 8);
    }
    return _mm512_packus_epi16(levels[0], levels[1]);
}

/// 64 sums (two vectors of words in `vpunpck` order) to 64 sRGB levels in pixel order.
WI_AVX512 WI_INLINE __m512i wi_encode(const wi_vector_state *s, __m512i sums[2]) {
    __m512i v[2];
    for (int t = 0; t < 2; t++) v[t] = _mm512_min_epi16(_mm512_max_epi16(sums[t], _mm512_setzero_si512()), s->top);
    __m512i cell_a = _mm512_packus_epi16(_mm512_srli_epi16(v[0], 7), _mm512_srli_epi16(v[1], 7));
    __mmask64 tier_b = _mm512_cmplt_epu8_mask(cell_a, _mm512_set1_epi8(WI_TIER_B_END >> 7));
    if (tier_b == 0) return wi_encode_cells(s, v, cell_a, tier_b, WI_TIER_A);
    if (tier_b == ~(__mmask64)0) return wi_encode_cells(s, v, cell_a, tier_b, WI_TIER_B);
    return wi_encode_cells(s, v, cell_a, tier_b, WI_TIERS_BOTH);
}

WI_AVX512 static void wi_vector_state_load(const wi_shaper_vector *tables, wi_vector_state *s) {
    for (int c = 0; c < 3; c++) {
        s->linear_low[c] = wi_load_table256(tables->linear_low[c]);
        s->linear_high[c] = wi_load_table256(tables->linear_high[c]);
        for (int k = 0; k < 3; k++) s->matrix[k][c] = _mm512_set1_epi16(tables->matrix[k][c]);
    }
    s->top = _mm512_set1_epi16(WI_ENCODE_ONE - 1);
    for (int tier = 0; tier < 2; tier++) {
        for (int half = 0; half < 2; half++) {
            s->base_low[tier][half] = _mm512_loadu_si512((const void *)(tables->base_low[tier] + 64 * half));
            s->base_high[tier][half] = _mm512_loadu_si512((const void *)(tables->base_high[tier] + 64 * half));
            s->rise[tier][half] = _mm512_loadu_si512((const void *)(tables->rise[tier] + 64 * half));
        }
    }
    uint8_t gather[2][64], weave_rg[2][64], weave_rgb[4][64];
    for (int j = 0; j < 32; j++) {
        gather[0][j] = (uint8_t)(4 * j);          // R of pixel j of 32
        gather[0][32 + j] = (uint8_t)(4 * j + 1);  // G
        gather[1][j] = (uint8_t)(4 * j + 2);      // B
        gather[1][32 + j] = (uint8_t)(4 * j + 3);  // A (unused)
        for (int half = 0; half < 2; half++) {
            weave_rg[half][2 * j] = (uint8_t)(32 * half + j);
            weave_rg[half][2 * j + 1] = (uint8_t)(64 + 32 * half + j);
        }
    }
    for (int quarter = 0; quarter < 4; quarter++) {
        for (int q = 0; q < 16; q++) {
            int pair = 32 * (quarter % 2) + 2 * q;
            weave_rgb[quarter][4 * q] = (uint8_t)pair;
            weave_rgb[quarter][4 * q + 1] = (uint8_t)(pair + 1);
            weave_rgb[quarter][4 * q + 2] = (uint8_t)(64 + 16 * quarter + q);
            weave_rgb[quarter][4 * q + 3] = (uint8_t)(64 + 16 * quarter + q);
        }
    }
    s->gather_rg = _mm512_loadu_si512((const void *)gather[0]);
    s->gather_b = _mm512_loadu_si512((const void *)gather[1]);
    for (int half = 0; half < 2; half++) s->weave_rg[half] = _mm512_loadu_si512((const void *)weave_rg[half]);
    for (int quarter = 0; quarter < 4; quarter++) {
        s->weave_rgb[quarter] = _mm512_loadu_si512((const void *)weave_rgb[quarter]);
    }
}

WI_AVX512 WI_INLINE void wi_shaper_vector_step(const wi_vector_state *s, uint8_t *pixels) {
    __m512i in[4];
    for (int i = 0; i < 4; i++) in[i] = _mm512_loadu_si512((const void *)(pixels + 64 * i));
    __m512i rg_low = _mm512_permutex2var_epi8(in[0], s->gather_rg, in[1]);
    __m512i rg_high = _mm512_permutex2var_epi8(in[2], s->gather_rg, in[3]);
    __m512i b_low = _mm512_permutex2var_epi8(in[0], s->gather_b, in[1]);
    __m512i b_high = _mm512_permutex2var_epi8(in[2], s->gather_b, in[3]);
    __m512i plane[3] = {
        _mm512_shuffle_i64x2(rg_low, rg_high, 0x44),
        _mm512_shuffle_i64x2(rg_low, rg_high, 0xEE),
        _mm512_shuffle_i64x2(b_low, b_high, 0x44),
    };
    __m512i linear[3][2];
    for (int c = 0; c < 3; c++) wi_linearize(s, c, plane[c], linear[c]);
    __m512i out[3];
    WI_UNROLL_CHANNELS
    for (int k = 0; k < 3; k++) {
        __m512i sums[2];
        for (int t = 0; t < 2; t++) {
            __m512i sum = _mm512_mulhrs_epi16(linear[0][t], s->matrix[k][0]);
            sum = _mm512_adds_epi16(sum, _mm512_mulhrs_epi16(linear[1][t], s->matrix[k][1]));
            sums[t] = _mm512_adds_epi16(sum, _mm512_mulhrs_epi16(linear[2][t], s->matrix[k][2]));
        }
        out[k] = wi_encode(s, sums);
    }
    // Join: R and G interleaved for pixels 0–31 and 32–63, B woven in, the pixels' alpha kept.
    __m512i rg[2];
    for (int half = 0; half < 2; half++) rg[half] = _mm512_permutex2var_epi8(out[0], s->weave_rg[half], out[1]);
    const __mmask64 alpha = 0x8888888888888888ULL;
    for (int quarter = 0; quarter < 4; quarter++) {
        __m512i rgb = _mm512_permutex2var_epi8(rg[quarter / 2], s->weave_rgb[quarter], out[2]);
        _mm512_storeu_si512((void *)(pixels + 64 * quarter), _mm512_mask_blend_epi8(alpha, rgb, in[quarter]));
    }
}

WI_AVX512 static void wi_shaper_vector_run(const wi_shaper_vector *tables, uint8_t *pixels, size_t pixel_count) {
    wi_vector_state state;
    wi_vector_state_load(tables, &state);
    size_t steps = pixel_count / 64, rest = pixel_count % 64;
    for (size_t step = 0; step < steps; step++) wi_shaper_vector_step(&state, pixels + step * 256);
    if (rest > 0) {
        // The last pixels through the same kernel, so a pixel's result never depends on where a
        // band ends.
        uint8_t last[256] = {0};
        memcpy(last, pixels + steps * 256, rest * 4);
        wi_shaper_vector_step(&state, last);
        memcpy(pixels + steps * 256, last, rest * 4);
    }
}

void wi_shaper_vector_apply(const wi_shaper_vector *tables, uint8_t *pixels, size_t pixel_count) {
    wi_shaper_vector_run(tables, pixels, pixel_count);
}

#else

wi_shaper_vector *wi_shaper_vector_create(double matrix[3][3], double linear[3][256], const cmsToneCurve *encode) {
    (void)matrix;
    (void)linear;
    (void)encode;
    return NULL;
}

void wi_shaper_vector_apply(const wi_shaper_vector *tables, uint8_t *pixels, size_t pixel_count) {
    (void)tables;
    (void)pixels;
    (void)pixel_count;
}

#endif

void wi_shaper_vector_destroy(wi_shaper_vector *tables) { free(tables); }
