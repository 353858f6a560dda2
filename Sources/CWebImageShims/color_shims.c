// Colour management through Little CMS 2. lcms returns errors (NULL, FALSE); it never jumps.
// Who owns what: profiles opened here are closed here on every path (`cmsCloseProfile` right
// after the transform is built, which keeps what it needs); a `wi_color_transform` is the
// caller's, freed with `wi_color_transform_destroy` (which deletes the lcms transform); profile
// bytes saved by `wi_save_profile` are malloc'ed and the caller's. Pixels are transformed in the
// caller's buffer.

#include "CWebImageShims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lcms2.h>

struct wi_color_transform {
    cmsHTRANSFORM transform;
    wi_pixel_layout layout;
};

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

wi_color_transform *wi_color_transform_create(const uint8_t *icc, size_t size, wi_pixel_layout layout, char *message) {
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
    cmsUInt32Number flags = cmsFLAGS_NOCACHE | cmsFLAGS_BLACKPOINTCOMPENSATION;
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
    cmsCloseProfile(source);
    if (srgb != NULL) cmsCloseProfile(srgb);
    if (transform == NULL) {
        snprintf(message, WI_MESSAGE_CAPACITY, "lcms cannot build a transform from the ICC profile to sRGB");
        return NULL;
    }
    wi_color_transform *result = malloc(sizeof *result);
    if (result == NULL) {
        cmsDeleteTransform(transform);
        snprintf(message, WI_MESSAGE_CAPACITY, "out of memory");
        return NULL;
    }
    result->transform = transform;
    result->layout = layout;
    return result;
}

void wi_color_transform_apply(const wi_color_transform *transform, uint8_t *pixels, size_t pixel_count) {
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
    cmsDeleteTransform(transform->transform);
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
