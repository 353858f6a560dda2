// AVIF, HEIC and JPEG XL decoded directly through libavif, libheif and libjxl, single-threaded,
// to 8-bit RGBA, the way a C program would (the reference rows of webimage-modern-codec-benchmarks).
#include "CDirectCodecs.h"

#include <stdlib.h>

#include <avif/avif.h>
#include <jxl/decode.h>
#include <libheif/heif.h>

int direct_avif_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height) {
    avifDecoder *decoder = avifDecoderCreate();
    if (!decoder) return -1;
    decoder->maxThreads = 1;
    int status = -1;
    if (avifDecoderSetIOMemory(decoder, data, size) == AVIF_RESULT_OK && avifDecoderParse(decoder) == AVIF_RESULT_OK &&
        avifDecoderNextImage(decoder) == AVIF_RESULT_OK) {
        avifRGBImage rgb;
        avifRGBImageSetDefaults(&rgb, decoder->image);
        rgb.format = AVIF_RGB_FORMAT_RGBA;
        rgb.depth = 8;
        rgb.rowBytes = rgb.width * 4;
        rgb.pixels = malloc((size_t)rgb.rowBytes * rgb.height);
        if (rgb.pixels && avifImageYUVToRGB(decoder->image, &rgb) == AVIF_RESULT_OK) {
            *width = rgb.width;
            *height = rgb.height;
            status = 0;
        }
        free(rgb.pixels);
    }
    avifDecoderDestroy(decoder);
    return status;
}

int direct_heif_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height) {
    struct heif_context *context = heif_context_alloc();
    if (!context) return -1;
    heif_context_set_max_decoding_threads(context, 0);
    int status = -1;
    struct heif_image_handle *handle = NULL;
    struct heif_image *image = NULL;
    if (heif_context_read_from_memory_without_copy(context, data, size, NULL).code == heif_error_Ok &&
        heif_context_get_primary_image_handle(context, &handle).code == heif_error_Ok) {
        struct heif_decoding_options *options = heif_decoding_options_alloc();
        options->convert_hdr_to_8bit = 1;
        if (heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGBA, options).code ==
            heif_error_Ok) {
            int stride = 0;
            if (heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride)) {
                *width = (uint32_t)heif_image_get_width(image, heif_channel_interleaved);
                *height = (uint32_t)heif_image_get_height(image, heif_channel_interleaved);
                status = 0;
            }
            heif_image_release(image);
        }
        heif_decoding_options_free(options);
        heif_image_handle_release(handle);
    }
    heif_context_free(context);
    return status;
}

int direct_jxl_decode(const uint8_t *data, size_t size, uint32_t *width, uint32_t *height) {
    JxlDecoder *decoder = JxlDecoderCreate(NULL);
    if (!decoder) return -1;
    int status = -1;
    JxlBasicInfo info;
    JxlPixelFormat format = {4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0};
    uint8_t *pixels = NULL;
    JxlDecoderSubscribeEvents(decoder, JXL_DEC_BASIC_INFO | JXL_DEC_FULL_IMAGE);
    JxlDecoderSetInput(decoder, data, size);
    JxlDecoderCloseInput(decoder);
    for (;;) {
        JxlDecoderStatus event = JxlDecoderProcessInput(decoder);
        if (event == JXL_DEC_BASIC_INFO) {
            if (JxlDecoderGetBasicInfo(decoder, &info) != JXL_DEC_SUCCESS) break;
        } else if (event == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            size_t needed = 0;
            if (JxlDecoderImageOutBufferSize(decoder, &format, &needed) != JXL_DEC_SUCCESS) break;
            pixels = malloc(needed);
            if (!pixels || JxlDecoderSetImageOutBuffer(decoder, &format, pixels, needed) != JXL_DEC_SUCCESS) break;
        } else if (event == JXL_DEC_FULL_IMAGE) {
            *width = info.xsize;
            *height = info.ysize;
            status = 0;
            break;
        } else {
            break;  // errors, or the end without a full image
        }
    }
    free(pixels);
    JxlDecoderDestroy(decoder);
    return status;
}
