// Colour management through Little CMS 2. lcms returns errors (NULL, FALSE); it never jumps.
// A transform takes one of three paths: matrix-shaper RGB profiles through tables of their own
// (color_matrix_shaper.c), gray profiles through a 256-level table lcms fills, everything else
// (CMYK, profiles with look-up tables, black-point compensation asked for) through lcms itself.
// Who owns what: profiles opened here are closed here on every path (`cmsCloseProfile` right
// after the transform is built, which keeps what it needs); a `wi_color_transform` is the
// caller's, freed with `wi_color_transform_destroy` (which frees whichever path it holds: the
// lcms transform, the matrix-shaper tables, or the malloc'ed gray table);
// profile bytes saved by `wi_save_profile` are malloc'ed and the caller's. Pixels are
// transformed in the caller's buffer.

#include "CWebImageShims.h"
#include "color_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lcms2.h>

struct wi_color_transform {
    /// Exactly one of the three is set.
    cmsHTRANSFORM transform;
    wi_matrix_shaper *shaper;
    /// Gray level → sRGB red, green, blue (lcms's answer for each of the 256 levels).
    uint8_t (*gray)[3];
    wi_pixel_layout layout;
};

/// lcms's answer for each gray level, read from `transform` (gray in the first of 4 bytes).
static uint8_t (*wi_gray_table(cmsHTRANSFORM transform))[3] {
    uint8_t pixels[256 * 4];
    for (int level = 0; level < 256; level++) {
        pixels[level * 4] = (uint8_t)level;
        pixels[level * 4 + 1] = pixels[level * 4 + 2] = 0;
        pixels[level * 4 + 3] = 255;
    }
    cmsDoTransform(transform, pixels, pixels, 256);
    uint8_t(*table)[3] = malloc(256 * sizeof *table);
    if (table == NULL) return NULL;
    for (int level = 0; level < 256; level++) memcpy(table[level], pixels + level * 4, 3);
    return table;
}

static wi_profile_space wi_space_of(cmsHPROFILE profile) {
    switch (cmsGetColorSpace(profile)) {
    case cmsSigRgbData: return WI_PROFILE_RGB;
    case cmsSigGrayData: return WI_PROFILE_GRAY;
    case cmsSigCmykData: return WI_PROFILE_CMYK;
    default: return WI_PROFILE_OTHER;
    }
}

wi_profile_space wi_color_profile_inspect(const uint8_t *icc, size_t size, int *is_srgb) {
    *is_srgb = 0;
    if (icc == NULL || size < 128 || size > UINT32_MAX) return WI_PROFILE_UNREADABLE;
    cmsHPROFILE profile = cmsOpenProfileFromMem(icc, (cmsUInt32Number)size);
    if (profile == NULL) return WI_PROFILE_UNREADABLE;
    wi_profile_space space = wi_space_of(profile);
    char description[256] = {0};
    cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", description, sizeof description);
    if (space == WI_PROFILE_RGB && strstr(description, "sRGB") != NULL) *is_srgb = 1;
    cmsCloseProfile(profile);
    return space;
}

wi_color_transform *wi_color_transform_create(const uint8_t *icc, size_t size, wi_pixel_layout layout,
                                              wi_color_options options, char *message) {
    message[0] = 0;
    if (icc == NULL || size < 128 || size > UINT32_MAX) {
        snprintf(message, WI_MESSAGE_CAPACITY, "the ICC profile is too short (%zu bytes)", size);
        return NULL;
    }
    cmsHPROFILE source = cmsOpenProfileFromMem(icc, (cmsUInt32Number)size);
    if (source == NULL) {
        snprintf(message, WI_MESSAGE_CAPACITY, "lcms cannot read the ICC profile");
        return NULL;
    }
    wi_profile_space space = wi_space_of(source);
    cmsUInt32Number input;
    cmsUInt32Number flags = cmsFLAGS_NOCACHE;
    if (options & WI_COLOR_BLACK_POINT_COMPENSATION) flags |= cmsFLAGS_BLACKPOINTCOMPENSATION;
    switch (layout) {
    // In place, lcms leaves the extra (alpha) byte as it was: cmsFLAGS_COPY_ALPHA would copy it
    // onto itself in a second pass (15 % of the transform's time).
    case WI_PIXELS_RGBA: input = TYPE_RGBA_8; break;
    case WI_PIXELS_GRAY_IN_RGBA: input = COLORSPACE_SH(PT_GRAY) | CHANNELS_SH(1) | BYTES_SH(1) | EXTRA_SH(3); break;
    case WI_PIXELS_CMYK: input = TYPE_CMYK_8; break;
    case WI_PIXELS_CMYK_INVERTED: input = TYPE_CMYK_8_REV; break;
    default: input = 0; break;
    }
    wi_profile_space expected = layout == WI_PIXELS_RGBA ? WI_PROFILE_RGB
                                : layout == WI_PIXELS_GRAY_IN_RGBA ? WI_PROFILE_GRAY
                                                                   : WI_PROFILE_CMYK;
    if (input == 0 || space != expected) {
        snprintf(message, WI_MESSAGE_CAPACITY, "the ICC profile's colour space does not match the pixels");
        cmsCloseProfile(source);
        return NULL;
    }
    cmsHPROFILE srgb = cmsCreate_sRGBProfile();
    cmsHTRANSFORM transform =
        srgb == NULL ? NULL : cmsCreateTransform(source, input, srgb, TYPE_RGBA_8, INTENT_RELATIVE_COLORIMETRIC, flags);
    wi_matrix_shaper *shaper = NULL;
    uint8_t(*gray)[3] = NULL;
    int tables = transform != NULL && !(options & (WI_COLOR_BLACK_POINT_COMPENSATION | WI_COLOR_LCMS_ONLY));
    if (tables && layout == WI_PIXELS_RGBA) shaper = wi_matrix_shaper_create(source, srgb, transform);
    if (tables && layout == WI_PIXELS_GRAY_IN_RGBA) gray = wi_gray_table(transform);
    cmsCloseProfile(source);
    if (srgb != NULL) cmsCloseProfile(srgb);
    if (transform == NULL) {
        snprintf(message, WI_MESSAGE_CAPACITY, "lcms cannot build a transform from the ICC profile to sRGB");
        return NULL;
    }
    if (shaper != NULL || gray != NULL) {
        cmsDeleteTransform(transform);
        transform = NULL;
    }
    wi_color_transform *result = malloc(sizeof *result);
    if (result == NULL) {
        if (transform != NULL) cmsDeleteTransform(transform);
        wi_matrix_shaper_destroy(shaper);
        free(gray);
        snprintf(message, WI_MESSAGE_CAPACITY, "out of memory");
        return NULL;
    }
    result->transform = transform;
    result->shaper = shaper;
    result->gray = gray;
    result->layout = layout;
    return result;
}

wi_color_path wi_color_transform_path(const wi_color_transform *transform) {
    return transform->shaper != NULL ? WI_COLOR_PATH_MATRIX_SHAPER
           : transform->gray != NULL ? WI_COLOR_PATH_GRAY_TABLE
                                     : WI_COLOR_PATH_LCMS;
}

void wi_color_transform_apply(const wi_color_transform *transform, uint8_t *pixels, size_t pixel_count) {
    if (transform->shaper != NULL) {
        wi_matrix_shaper_apply(transform->shaper, pixels, pixel_count);
        return;
    }
    if (transform->gray != NULL) {
        for (size_t i = 0; i < pixel_count; i++) memcpy(pixels + i * 4, transform->gray[pixels[i * 4]], 3);
        return;
    }
    // In place: input and output take 4 bytes a pixel. lcms counts pixels in 32 bits.
    const size_t chunk = (size_t)1 << 24;
    for (size_t done = 0; done < pixel_count; done += chunk) {
        size_t count = pixel_count - done < chunk ? pixel_count - done : chunk;
        uint8_t *start = pixels + done * 4;
        cmsDoTransform(transform->transform, start, start, (cmsUInt32Number)count);
        if (transform->layout == WI_PIXELS_CMYK || transform->layout == WI_PIXELS_CMYK_INVERTED) {
            for (size_t i = 0; i < count; i++) start[i * 4 + 3] = 255;
        }
    }
}

void wi_color_transform_destroy(wi_color_transform *transform) {
    if (transform == NULL) return;
    if (transform->transform != NULL) cmsDeleteTransform(transform->transform);
    wi_matrix_shaper_destroy(transform->shaper);
    free(transform->gray);
    free(transform);
}

static wi_status wi_save_profile(cmsHPROFILE profile, uint8_t **out, size_t *out_size) {
    *out = NULL;
    *out_size = 0;
    if (profile == NULL) return WI_ERROR;
    cmsUInt32Number size = 0;
    if (!cmsSaveProfileToMem(profile, NULL, &size) || size == 0) {
        cmsCloseProfile(profile);
        return WI_ERROR;
    }
    uint8_t *bytes = malloc(size);
    if (bytes == NULL || !cmsSaveProfileToMem(profile, bytes, &size)) {
        free(bytes);
        cmsCloseProfile(profile);
        return WI_ERROR;
    }
    cmsCloseProfile(profile);
    *out = bytes;
    *out_size = size;
    return WI_OK;
}

wi_status wi_color_profile_create_rgb(const double chromaticities[8], const double curve_parameters[5], uint8_t **out,
                                      size_t *out_size) {
    cmsCIExyY white = {chromaticities[6], chromaticities[7], 1.0};
    cmsCIExyYTRIPLE primaries = {
        {chromaticities[0], chromaticities[1], 1.0},
        {chromaticities[2], chromaticities[3], 1.0},
        {chromaticities[4], chromaticities[5], 1.0},
    };
    // lcms's parametric type 4: Y = (aX + b)^g for X >= d, else cX.
    cmsFloat64Number parameters[5];
    memcpy(parameters, curve_parameters, sizeof parameters);
    cmsToneCurve *curve = cmsBuildParametricToneCurve(NULL, 4, parameters);
    if (curve == NULL) return WI_ERROR;
    cmsToneCurve *curves[3] = {curve, curve, curve};
    cmsHPROFILE profile = cmsCreateRGBProfile(&white, &primaries, curves);
    cmsFreeToneCurve(curve);
    return wi_save_profile(profile, out, out_size);
}

wi_status wi_color_profile_create_gray(double gamma, uint8_t **out, size_t *out_size) {
    cmsToneCurve *curve = cmsBuildGamma(NULL, gamma);
    if (curve == NULL) return WI_ERROR;
    cmsHPROFILE profile = cmsCreateGrayProfile(cmsD50_xyY(), curve);
    cmsFreeToneCurve(curve);
    return wi_save_profile(profile, out, out_size);
}

wi_status wi_color_profile_create_srgb(uint8_t **out, size_t *out_size) {
    return wi_save_profile(cmsCreate_sRGBProfile(), out, out_size);
}

int wi_lcms_version(void) { return cmsGetEncodedCMMversion(); }
