#include "CDirectCodecs.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gif_lib.h>
#include <jpeglib.h>
#include <png.h>
#include <webp/decode.h>

struct direct_jpeg_error {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
};

static void direct_jpeg_exit(j_common_ptr info) { longjmp(((struct direct_jpeg_error *)info->err)->jump, 1); }

/// Decodes to RGBA into a malloc'ed buffer (the caller frees it); NULL on failure.
static uint8_t *direct_jpeg_pixels(const uint8_t *data, size_t size, int scale_denom, uint32_t *width,
                                   uint32_t *height) {
    struct jpeg_decompress_struct info;
    struct direct_jpeg_error error;
    uint8_t *volatile pixels = NULL;
    info.err = jpeg_std_error(&error.pub);
    error.pub.error_exit = direct_jpeg_exit;
    if (setjmp(error.jump)) {
        jpeg_destroy_decompress(&info);
        free(pixels);
        return NULL;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, data, (unsigned long)size);
    jpeg_read_header(&info, TRUE);
    info.out_color_space = JCS_EXT_RGBA;
    info.scale_num = 1;
    info.scale_denom = (unsigned int)scale_denom;
    jpeg_start_decompress(&info);
    size_t stride = (size_t)info.output_width * 4;
    pixels = malloc(stride * info.output_height);
    JSAMPROW rows[16];
    while (info.output_scanline < info.output_height) {
        unsigned int batch = info.output_height - info.output_scanline;
        if (batch > 16) batch = 16;
        for (unsigned int i = 0; i < batch; i++) rows[i] = pixels + (size_t)(info.output_scanline + i) * stride;
        jpeg_read_scanlines(&info, rows, batch);
    }
    *width = info.output_width;
    *height = info.output_height;
    jpeg_finish_decompress(&info);
    jpeg_destroy_decompress(&info);
    return pixels;
}

int direct_jpeg_decode(const uint8_t *data, size_t size, int scale_denom, uint32_t *width, uint32_t *height) {
    uint8_t *pixels = direct_jpeg_pixels(data, size, scale_denom, width, height);
    free(pixels);
    return pixels == NULL ? -1 : 0;
}

int direct_png_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, size)) return -1;
    image.format = PNG_FORMAT_RGBA;
    uint8_t *pixels = malloc(PNG_IMAGE_SIZE(image));
    int ok = png_image_finish_read(&image, NULL, pixels, 0, NULL);
    *width = image.width;
    *height = image.height;
    free(pixels);
    png_image_free(&image);
    return ok ? 0 : -1;
}

int direct_webp_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height) {
    int w = 0, h = 0;
    if (!WebPGetInfo(data, size, &w, &h)) return -1;
    size_t stride = (size_t)w * 4;
    uint8_t *pixels = malloc(stride * (size_t)h);
    uint8_t *result = WebPDecodeRGBAInto(data, size, pixels, stride * (size_t)h, (int)stride);
    free(pixels);
    *width = (uint32_t)w;
    *height = (uint32_t)h;
    return result ? 0 : -1;
}

struct direct_gif_source {
    const uint8_t *data;
    size_t size;
    size_t offset;
};

static int direct_gif_read(GifFileType *gif, GifByteType *buffer, int count) {
    struct direct_gif_source *source = gif->UserData;
    size_t available = source->size - source->offset;
    size_t length = (size_t)count < available ? (size_t)count : available;
    memcpy(buffer, source->data + source->offset, length);
    source->offset += length;
    return (int)length;
}

int direct_gif_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height, uint32_t *frames) {
    struct direct_gif_source source = {data, size, 0};
    int error = 0;
    GifFileType *gif = DGifOpen(&source, direct_gif_read, &error);
    if (gif == NULL) return -1;
    if (DGifSlurp(gif) != GIF_OK) {
        DGifCloseFile(gif, &error);
        return -1;
    }
    size_t canvas_size = (size_t)gif->SWidth * gif->SHeight * 4;
    uint8_t *canvas = calloc(1, canvas_size);
    uint8_t **copies = calloc((size_t)gif->ImageCount, sizeof(uint8_t *));
    for (int index = 0; index < gif->ImageCount; index++) {
        SavedImage *frame = &gif->SavedImages[index];
        ColorMapObject *map = frame->ImageDesc.ColorMap ? frame->ImageDesc.ColorMap : gif->SColorMap;
        GraphicsControlBlock control = {0, false, 0, NO_TRANSPARENT_COLOR};
        DGifSavedExtensionToGCB(gif, index, &control);
        for (int y = 0; y < frame->ImageDesc.Height; y++) {
            int cy = frame->ImageDesc.Top + y;
            if (cy >= gif->SHeight) break;
            for (int x = 0; x < frame->ImageDesc.Width; x++) {
                int cx = frame->ImageDesc.Left + x;
                if (cx >= gif->SWidth) break;
                int color = frame->RasterBits[y * frame->ImageDesc.Width + x];
                if (color == control.TransparentColor || map == NULL || color >= map->ColorCount) continue;
                uint8_t *pixel = canvas + ((size_t)cy * gif->SWidth + cx) * 4;
                pixel[0] = map->Colors[color].Red;
                pixel[1] = map->Colors[color].Green;
                pixel[2] = map->Colors[color].Blue;
                pixel[3] = 255;
            }
        }
        copies[index] = malloc(canvas_size);  // each frame delivered as its own bitmap, kept
        memcpy(copies[index], canvas, canvas_size);
    }
    for (int index = 0; index < gif->ImageCount; index++) free(copies[index]);
    free(copies);
    *width = (uint32_t)gif->SWidth;
    *height = (uint32_t)gif->SHeight;
    *frames = (uint32_t)gif->ImageCount;
    free(canvas);
    DGifCloseFile(gif, &error);
    return 0;
}

// MARK: Colour: libjpeg, then Little CMS on the same pixels

#include <lcms2.h>

static cmsHTRANSFORM direct_srgb_transform;

int direct_color_transform_prepare(const uint8_t *icc, size_t size) {
    if (direct_srgb_transform != NULL) cmsDeleteTransform(direct_srgb_transform);
    cmsHPROFILE source = cmsOpenProfileFromMem(icc, (cmsUInt32Number)size);
    cmsHPROFILE srgb = cmsCreate_sRGBProfile();
    if (source == NULL || srgb == NULL) return -1;
    // What libvips's icc_transform asks of lcms (relative colorimetric, no black-point
    // compensation), in place.
    direct_srgb_transform = cmsCreateTransform(source, TYPE_RGBA_8, srgb, TYPE_RGBA_8, INTENT_RELATIVE_COLORIMETRIC,
                                               cmsFLAGS_NOCACHE);
    cmsCloseProfile(source);
    cmsCloseProfile(srgb);
    return direct_srgb_transform == NULL ? -1 : 0;
}

int direct_jpeg_decode_to_srgb(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height) {
    if (direct_srgb_transform == NULL) return -1;
    uint8_t *pixels = direct_jpeg_pixels(data, size, 1, width, height);
    if (pixels == NULL) return -1;
    cmsDoTransform(direct_srgb_transform, pixels, pixels, (cmsUInt32Number)(*width * *height));
    free(pixels);
    return 0;
}
