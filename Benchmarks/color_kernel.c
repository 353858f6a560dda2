// The matrix-shaper colour kernels alone (issue 46): for Display P3, Adobe RGB, ProPhoto and
// Rec. 2020 to sRGB, which kernel this CPU takes, how far each is from Little CMS over all 2²⁴
// colours, and, for P3, the time of the scalar and the chosen kernel over a 12 MP photo-like
// image in 16-row bands (as a JPEG decode hands them over), best of 15. Built and run by
// Benchmarks/color-kernel.sh against the shims' own sources.
#include "CWebImageShims.h"
#include "color_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

typedef void (*kernel)(const wi_matrix_shaper *, uint8_t *, size_t);

static double best_of_15(const wi_matrix_shaper *shaper, kernel apply, uint8_t *image, size_t width, size_t height) {
    double best = 1e9;
    for (int round = 0; round < 15; round++) {
        double start = seconds();
        for (size_t y = 0; y < height; y += 16) {
            size_t rows = height - y < 16 ? height - y : 16;
            apply(shaper, image + 4 * y * width, width * rows);
        }
        double elapsed = seconds() - start;
        if (elapsed < best) best = elapsed;
    }
    return best;
}

static void measure(const char *name, const double primaries[8], const double curve[5], int timing) {
    uint8_t *icc = NULL;
    size_t icc_length = 0;
    if (wi_color_profile_create_rgb(primaries, curve, &icc, &icc_length) != WI_OK) {
        fprintf(stderr, "%s: no profile\n", name);
        exit(1);
    }
    cmsHPROFILE source = cmsOpenProfileFromMem(icc, (cmsUInt32Number)icc_length);
    cmsHPROFILE srgb = cmsCreate_sRGBProfile();
    cmsHTRANSFORM lcms = cmsCreateTransform(source, TYPE_RGBA_8, srgb, TYPE_RGBA_8, INTENT_RELATIVE_COLORIMETRIC, 0);
    if (source == NULL || lcms == NULL) {
        fprintf(stderr, "%s: lcms cannot read the profile or build the transform\n", name);
        exit(1);
    }
    wi_matrix_shaper *shaper = wi_matrix_shaper_create(source, srgb, lcms);
    if (shaper == NULL) {
        fprintf(stderr, "%s: no tables\n", name);
        exit(1);
    }
    const size_t all = (size_t)1 << 24;
    uint8_t *chosen = malloc(all * 4), *scalar = malloc(all * 4), *expected = malloc(all * 4);
    if (chosen == NULL || scalar == NULL || expected == NULL) {
        fprintf(stderr, "%s: out of memory for the 2^24 colours\n", name);
        exit(1);
    }
    for (size_t i = 0; i < all; i++) {
        const uint8_t pixel[4] = {(uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i, 255};
        memcpy(chosen + i * 4, pixel, 4);
    }
    memcpy(scalar, chosen, all * 4);
    memcpy(expected, chosen, all * 4);
    wi_matrix_shaper_apply(shaper, chosen, all);
    wi_matrix_shaper_apply_scalar(shaper, scalar, all);
    cmsDoTransform(lcms, expected, expected, (cmsUInt32Number)all);
    size_t chosen_off = 0, scalar_off = 0;
    int chosen_worst = 0, scalar_worst = 0;
    for (size_t i = 0; i < all * 4; i++) {
        int a = abs((int)chosen[i] - (int)expected[i]), b = abs((int)scalar[i] - (int)expected[i]);
        chosen_off += a != 0;
        scalar_off += b != 0;
        if (a > chosen_worst) chosen_worst = a;
        if (b > scalar_worst) scalar_worst = b;
    }
    printf("| %s | %s | %d (%zu channels off) | %d (%zu channels off) |", name,
           wi_matrix_shaper_is_vectorized(shaper) ? "AVX-512" : "scalar", chosen_worst, chosen_off, scalar_worst,
           scalar_off);
    if (timing) {
        const size_t width = 4000, height = 3000;
        uint8_t *image = malloc(width * height * 4);
        if (image == NULL) {
            fprintf(stderr, "%s: out of memory for the 12 MP image\n", name);
            exit(1);
        }
        unsigned state = 1;
        for (size_t y = 0; y < height; y++) {
            for (size_t x = 0; x < width; x++) {
                state = state * 1103515245u + 12345u;
                uint8_t *p = image + 4 * (y * width + x);
                p[0] = (uint8_t)(x * 255 / width + (state >> 28));
                p[1] = (uint8_t)(y * 255 / height + ((state >> 24) & 15));
                p[2] = (uint8_t)((x + y) * 128 / width + ((state >> 20) & 15));
                p[3] = 255;
            }
        }
        double scalar_time = best_of_15(shaper, wi_matrix_shaper_apply_scalar, image, width, height);
        double chosen_time = best_of_15(shaper, wi_matrix_shaper_apply, image, width, height);
        printf(" %.3f | %.3f |", scalar_time * 1e9 / (double)(width * height), chosen_time * 1e9 / (double)(width * height));
        free(image);
    } else {
        printf(" – | – |");
    }
    printf("\n");
    free(chosen);
    free(scalar);
    free(expected);
    wi_matrix_shaper_destroy(shaper);
    cmsDeleteTransform(lcms);
    cmsCloseProfile(source);
    cmsCloseProfile(srgb);
    free(icc);
}

int main(void) {
    const double srgb_curve[5] = {2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045};
    const double gamma_22[5] = {563.0 / 256, 1, 0, 1, 0}, gamma_18[5] = {1.8, 1, 0, 1, 0};
    const double bt2020_curve[5] = {1 / 0.45, 1 / 1.0993, 0.0993 / 1.0993, 1 / 4.5, 0.081};
    const double p3[8] = {0.680, 0.320, 0.265, 0.690, 0.150, 0.060, 0.3127, 0.3290};
    const double adobe[8] = {0.64, 0.33, 0.21, 0.71, 0.15, 0.06, 0.3127, 0.3290};
    const double prophoto[8] = {0.7347, 0.2653, 0.1596, 0.8404, 0.0366, 0.0001, 0.3457, 0.3585};
    const double rec2020[8] = {0.708, 0.292, 0.170, 0.797, 0.131, 0.046, 0.3127, 0.3290};
    printf("| profile → sRGB | kernel taken | levels from lcms, taken (all 2²⁴) | scalar | scalar ns/pixel | taken "
           "ns/pixel |\n|---|---|---|---|---:|---:|\n");
    measure("Display P3", p3, srgb_curve, 1);
    measure("Adobe RGB", adobe, gamma_22, 0);
    measure("ProPhoto", prophoto, gamma_18, 0);
    measure("Rec. 2020", rec2020, bt2020_curve, 0);
    return 0;
}
