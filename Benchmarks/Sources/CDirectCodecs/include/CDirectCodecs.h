#ifndef CDIRECTCODECS_H
#define CDIRECTCODECS_H

#include <stddef.h>
#include <stdint.h>

// Reference decoders that call the C libraries directly, the way a C program would: decode to
// RGBA into a freshly malloc'ed buffer (freed before returning). Each returns 0 on success and
// writes the output size.

int direct_jpeg_decode(const uint8_t *data, size_t size, int scale_denom, uint32_t *width, uint32_t *height);
int direct_png_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height);
int direct_webp_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height);
/// Decodes every frame (DGifSlurp) and composes each onto a fresh RGBA canvas copy.
int direct_gif_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height, uint32_t *frames);

/// The primary image (AVIF: the first frame), single-threaded, to 8-bit RGBA.
int direct_avif_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height);
int direct_heif_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height);
int direct_jxl_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height);

/// Builds the profile-to-sRGB transform direct_jpeg_decode_to_srgb applies (relative
/// colorimetric without black-point compensation, RGBA8 in place, as libvips converts).
int direct_color_transform_prepare(const uint8_t *icc, size_t size);
/// A full-size JPEG decode to RGBA, then Little CMS's cmsDoTransform over the pixels.
int direct_jpeg_decode_to_srgb(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height);

/// Lock/unlock operations per second when `threads` threads each take `iterations` of 16 striped
/// pthread mutexes at random (the ceiling of a lock-based shared cache on this machine).
double direct_striped_lock_rate(int threads, long iterations);

#endif
