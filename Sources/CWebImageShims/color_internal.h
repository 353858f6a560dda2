// Colour management's parts shared by color_shims.c and color_matrix_shaper.c (not public).
#ifndef WI_COLOR_INTERNAL_H
#define WI_COLOR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <lcms2.h>

/// Tables that convert a matrix-shaper RGB profile's RGBA8 pixels to sRGB (relative
/// colorimetric, no black-point compensation) without lcms; immutable once built, so one may
/// be applied from several threads at once.
typedef struct wi_matrix_shaper wi_matrix_shaper;

/// The tables for `source` → `srgb`, or NULL when `source` is not a plain matrix-shaper profile
/// (or has a look-up table for the intent) or the tables do not reproduce `reference` (lcms's
/// RGBA8 → RGBA8 transform for the same pair and intent) within one level on a grid of inputs.
wi_matrix_shaper *wi_matrix_shaper_create(cmsHPROFILE source, cmsHPROFILE srgb, cmsHTRANSFORM reference);
/// Converts `pixel_count` RGBA8 pixels in place; alpha is left alone.
void wi_matrix_shaper_apply(const wi_matrix_shaper *shaper, uint8_t *pixels, size_t pixel_count);
void wi_matrix_shaper_destroy(wi_matrix_shaper *shaper);
/// Whether `shaper` converts with the AVX-512 kernel (64 pixels a step) on this CPU.
int wi_matrix_shaper_is_vectorized(const wi_matrix_shaper *shaper);
/// Converts with the scalar kernel only (the reference the vector kernel is checked against).
void wi_matrix_shaper_apply_scalar(const wi_matrix_shaper *shaper, uint8_t *pixels, size_t pixel_count);

/// The AVX-512 (F, BW, VBMI) kernel's tables for the matrix `matrix` (source RGB to linear sRGB),
/// each channel's levels as linear light `linear` (clipped to [0, 1]) and sRGB's `encode` curve
/// (linear to encoded); NULL when the CPU lacks those extensions or the matrix is too large.
typedef struct wi_shaper_vector wi_shaper_vector;
wi_shaper_vector *wi_shaper_vector_create(double matrix[3][3], double linear[3][256], const cmsToneCurve *encode);
/// Converts `pixel_count` RGBA8 pixels in place (the last ones through a copy: no read or write
/// past them); alpha is left alone.
void wi_shaper_vector_apply(const wi_shaper_vector *tables, uint8_t *pixels, size_t pixel_count);
void wi_shaper_vector_destroy(wi_shaper_vector *tables);

#endif
