#ifndef WEBIMAGE_CJXL_SHIM_H
#define WEBIMAGE_CJXL_SHIM_H
// libjxl, called from Swift directly (no C code of ours). Who owns what:
// - Decoding (JXLCoder): the input bytes are the caller's and outlive the decoder; each frame's
//   pixel buffer is ours, handed to JxlDecoderSetImageOutBuffer and only written by libjxl.
// - Encoding (JXLEncoding): JxlEncoderAddImageFrame copies the frame's pixels before it
//   returns; the output buffer is ours (a Data that doubles as it fills), libjxl writes into it
//   through JxlEncoderProcessOutput and never keeps, reallocates or frees it.
// - Butteraugli (ImageDifference.butteraugli): both pixel buffers are ours and read during the
//   call; the result is libjxl's, freed with JxlButteraugliResultDestroy.
#include <jxl/decode.h>
#include <jxl/encode.h>
#include <jxl/butteraugli.h>
#endif
