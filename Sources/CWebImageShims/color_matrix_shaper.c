// The fast path for matrix-shaper RGB profiles (three tone curves and a 3×3 matrix: sRGB-like,
// Display P3, Adobe RGB, ProPhoto, Rec. 2020) to sRGB, relative colorimetric without black-point
// compensation. Per pixel: three look-ups of each input level's share of linear R, G and B (the
// source curve and the matrix folded into one table, the three shares packed in one 64-bit
// word), two integer adds, and three look-ups in a table of the sRGB encoding over the sums'
// whole range (so no clamping). Packing the shares keeps the sums in general registers: no
// vector adds and no moves between register files (22 % faster than 16-bit vector lanes).
// What lcms computes for the same pair, to within one level per channel: every table is built
// from lcms's own curves and colorants, and `wi_matrix_shaper_create` compares the result
// with lcms's on a grid of inputs before it is used. Where the CPU has AVX-512 with VBMI,
// color_matrix_shaper_avx512.c converts instead, from tables built here and checked the same way.
// Who owns what: a `wi_matrix_shaper`, its encode table and its vector tables (a
// `wi_shaper_vector`, made by color_matrix_shaper_avx512.c) are the shaper's, freed by
// `wi_matrix_shaper_destroy` (on every failed build path too); profiles and transforms passed in
// stay the caller's; tone curves and colorants from `cmsReadTag` belong to their profile (never
// freed here); the reversed curve from `cmsReverseToneCurve` is ours, freed before returning.

#include "color_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/// Fixed-point steps per unit of linear light: the sRGB curve's steepest slope (12.92) makes
/// one step worth 0.4 % of a level.
enum { WI_LINEAR_STEPS = 8192 };

/// Bits of each packed share: red's sum in bits 0–20, green's in 21–41, blue's from 42 on. A
/// sum spans under 3.9 × `WI_LINEAR_STEPS` (checked when the tables are built), far below 2²¹.
enum { WI_SHARE_BITS = 21 };
#define WI_SHARE_MASK ((UINT64_C(1) << WI_SHARE_BITS) - 1)

struct wi_matrix_shaper {
    /// For each input channel and level: its shares of linear R, G and B in `WI_LINEAR_STEPS`
    /// units, packed as `red + green << 21 + blue << 42` in two's complement. Red's table also
    /// carries `-lowest` in every field, so the three entries of a pixel add up to three
    /// non-negative fields (the packing is linear; only the total must decode).
    uint64_t share[3][256];
    /// The lowest sum the shares can make (negative for gamuts wider than sRGB).
    int32_t lowest;
    /// The sRGB level of each sum, offset by `-lowest`; sums outside [0, 1] clip to 0 and 255.
    uint8_t *encode;
    /// The AVX-512 kernel's tables when this CPU runs it and they agree with lcms; else NULL.
    wi_shaper_vector *vector;
};

static int wi_colorant_matrix(cmsHPROFILE profile, double m[3][3]) {
    const cmsCIEXYZ *columns[3] = {
        cmsReadTag(profile, cmsSigRedColorantTag),
        cmsReadTag(profile, cmsSigGreenColorantTag),
        cmsReadTag(profile, cmsSigBlueColorantTag),
    };
    for (int c = 0; c < 3; c++) {
        if (columns[c] == NULL) return 0;
        m[0][c] = columns[c]->X;
        m[1][c] = columns[c]->Y;
        m[2][c] = columns[c]->Z;
    }
    return 1;
}

static int wi_invert(const double m[3][3], double out[3][3]) {
    double cofactor[3][3];
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            int r0 = (i + 1) % 3, r1 = (i + 2) % 3, c0 = (j + 1) % 3, c1 = (j + 2) % 3;
            cofactor[i][j] = m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0];
        }
    }
    double determinant = m[0][0] * cofactor[0][0] + m[0][1] * cofactor[0][1] + m[0][2] * cofactor[0][2];
    if (!isfinite(determinant) || fabs(determinant) < 1e-9) return 0;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) out[i][j] = cofactor[j][i] / determinant;
    }
    return 1;
}

/// Builds the tables; NULL when a tag is missing, the matrix is singular or the sums span 3.9 or
/// more (an encode table over 32 KB, past the L1 cache: no real profile pair).
static wi_matrix_shaper *wi_matrix_shaper_tables(cmsHPROFILE source, cmsHPROFILE srgb) {
    double from[3][3], to[3][3], inverse[3][3], m[3][3];
    if (!wi_colorant_matrix(source, from) || !wi_colorant_matrix(srgb, to) || !wi_invert(to, inverse)) return NULL;
    double lowest = 0, highest = 0;
    for (int k = 0; k < 3; k++) {
        double low = 0, high = 0;
        for (int c = 0; c < 3; c++) {
            m[k][c] = 0;
            for (int i = 0; i < 3; i++) m[k][c] += inverse[k][i] * from[i][c];
            if (!isfinite(m[k][c]) || fabs(m[k][c]) >= 3.5) return NULL;
            if (m[k][c] < 0) low += m[k][c]; else high += m[k][c];
        }
        if (low < lowest) lowest = low;
        if (high > highest) highest = high;
    }
    if (highest - lowest >= 3.9) return NULL;
    const cmsSignature curveTags[3] = {cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag};
    const cmsToneCurve *output = cmsReadTag(srgb, cmsSigRedTRCTag);
    cmsToneCurve *encodeCurve = output == NULL ? NULL : cmsReverseToneCurve(output);
    if (encodeCurve == NULL) return NULL;
    wi_matrix_shaper *shaper = calloc(1, sizeof *shaper);
    if (shaper == NULL) {
        cmsFreeToneCurve(encodeCurve);
        return NULL;
    }
    // Two steps of margin each side for the shares' rounding.
    shaper->lowest = (int32_t)floor(lowest * WI_LINEAR_STEPS) - 2;
    double linears[3][256];
    for (int c = 0; c < 3; c++) {
        const cmsToneCurve *curve = cmsReadTag(source, curveTags[c]);
        if (curve == NULL) {
            cmsFreeToneCurve(encodeCurve);
            wi_matrix_shaper_destroy(shaper);
            return NULL;
        }
        for (int level = 0; level < 256; level++) {
            double linear = cmsEvalToneCurveFloat(curve, (cmsFloat32Number)(level / 255.0));
            // Clipped to [0, 1] as lcms's 16-bit pipeline clips: the shares stay within the
            // matrix's bounds, so every sum indexes the encode table.
            if (!(linear > 0)) linear = 0;
            if (linear > 1) linear = 1;
            linears[c][level] = linear;
            int64_t packed = 0;
            for (int k = 0; k < 3; k++) {
                int64_t field = lrint(m[k][c] * linear * WI_LINEAR_STEPS) - (c == 0 ? shaper->lowest : 0);
                packed += field * ((int64_t)1 << (WI_SHARE_BITS * k));
            }
            shaper->share[c][level] = (uint64_t)packed;
        }
    }
    size_t size = (size_t)((int32_t)ceil(highest * WI_LINEAR_STEPS) + 2 - shaper->lowest + 1);
    shaper->encode = malloc(size);
    if (shaper->encode == NULL) {
        cmsFreeToneCurve(encodeCurve);
        wi_matrix_shaper_destroy(shaper);
        return NULL;
    }
    for (size_t i = 0; i < size; i++) {
        double linear = (double)((int32_t)i + shaper->lowest) / WI_LINEAR_STEPS;
        double level = linear <= 0 ? 0 : linear >= 1 ? 255 : cmsEvalToneCurveFloat(encodeCurve, (cmsFloat32Number)linear) * 255.0;
        shaper->encode[i] = (uint8_t)(level <= 0 ? 0 : level >= 255 ? 255 : lrint(level));
    }
    shaper->vector = wi_shaper_vector_create(m, linears, encodeCurve);
    cmsFreeToneCurve(encodeCurve);
    return shaper;
}

/// Whether the tables give lcms's answer, within one level, on a 16-level grid of inputs
/// (4,913 colours, the extremes among them).
static int wi_matrix_shaper_agrees(const wi_matrix_shaper *shaper, cmsHTRANSFORM reference) {
    enum { SIDE = 17, COUNT = SIDE * SIDE * SIDE };
    uint8_t *expected = malloc(COUNT * 4);
    uint8_t *actual = malloc(COUNT * 4);
    int agrees = expected != NULL && actual != NULL;
    if (agrees) {
        size_t i = 0;
        for (int r = 0; r < SIDE; r++) {
            for (int g = 0; g < SIDE; g++) {
                for (int b = 0; b < SIDE; b++, i++) {
                    const uint8_t pixel[4] = {(uint8_t)(r * 255 / 16), (uint8_t)(g * 255 / 16), (uint8_t)(b * 255 / 16), 255};
                    memcpy(expected + i * 4, pixel, 4);
                    memcpy(actual + i * 4, pixel, 4);
                }
            }
        }
        cmsDoTransform(reference, expected, expected, COUNT);
        wi_matrix_shaper_apply(shaper, actual, COUNT);
        for (i = 0; i < COUNT * 4 && agrees; i++) agrees = abs((int)expected[i] - (int)actual[i]) <= 1;
    }
    free(expected);
    free(actual);
    return agrees;
}

wi_matrix_shaper *wi_matrix_shaper_create(cmsHPROFILE source, cmsHPROFILE srgb, cmsHTRANSFORM reference) {
    // A profile with a look-up table for this intent is converted through it by lcms, not
    // through its matrix: those stay on lcms.
    if (!cmsIsMatrixShaper(source) || cmsIsCLUT(source, INTENT_RELATIVE_COLORIMETRIC, LCMS_USED_AS_INPUT)) {
        return NULL;
    }
    wi_matrix_shaper *shaper = wi_matrix_shaper_tables(source, srgb);
    if (shaper == NULL) return NULL;
    // The scalar kernel is checked first, then the vector one; a vector kernel that disagrees
    // is dropped, not the tables.
    wi_shaper_vector *vector = shaper->vector;
    shaper->vector = NULL;
    if (!wi_matrix_shaper_agrees(shaper, reference)) {
        wi_shaper_vector_destroy(vector);
        wi_matrix_shaper_destroy(shaper);
        return NULL;
    }
    shaper->vector = vector;
    if (vector != NULL && !wi_matrix_shaper_agrees(shaper, reference)) {
        wi_shaper_vector_destroy(vector);
        shaper->vector = NULL;
    }
    return shaper;
}

int wi_matrix_shaper_is_vectorized(const wi_matrix_shaper *shaper) { return shaper->vector != NULL; }

void wi_matrix_shaper_apply(const wi_matrix_shaper *shaper, uint8_t *pixels, size_t pixel_count) {
    if (shaper->vector != NULL) {
        wi_shaper_vector_apply(shaper->vector, pixels, pixel_count);
    } else {
        wi_matrix_shaper_apply_scalar(shaper, pixels, pixel_count);
    }
}

void wi_matrix_shaper_apply_scalar(const wi_matrix_shaper *shaper, uint8_t *pixels, size_t pixel_count) {
    const uint8_t *encode = shaper->encode;
    // Byte loads and stores: alpha is never touched, and no shifts assemble the pixel.
    for (uint8_t *pixel = pixels, *end = pixels + pixel_count * 4; pixel < end; pixel += 4) {
        uint64_t sums = shaper->share[0][pixel[0]] + shaper->share[1][pixel[1]] + shaper->share[2][pixel[2]];
        pixel[0] = encode[sums & WI_SHARE_MASK];
        pixel[1] = encode[(sums >> WI_SHARE_BITS) & WI_SHARE_MASK];
        pixel[2] = encode[sums >> (2 * WI_SHARE_BITS)];
    }
}

void wi_matrix_shaper_destroy(wi_matrix_shaper *shaper) {
    if (shaper == NULL) return;
    wi_shaper_vector_destroy(shaper->vector);
    free(shaper->encode);
    free(shaper);
}
