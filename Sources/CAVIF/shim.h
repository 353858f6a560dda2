#ifndef WEBIMAGE_CAVIF_SHIM_H
#define WEBIMAGE_CAVIF_SHIM_H
// libavif, called from Swift directly (no C code of ours). Who owns what:
// - Decoding (AVIFCoder): the input bytes are the caller's (or the embedded thumbnail's cut file,
//   a Data of ours) and outlive the decoder (avifDecoderSetIOMemory does not copy); the decoded
//   avifImage and its planes are libavif's, freed by avifDecoderDestroy; the RGBA buffer given to
//   avifImageYUVToRGB is ours, only written.
// - Sequences a frame at a time (AVIFFrameDecoder): the input is a copy of ours, allocated before
//   the decoder and freed in deinit after avifDecoderDestroy, so it outlives every
//   avifDecoderNthImage; the image each call leaves is libavif's until the next call.
// - Encoding (AVIFEncoding): the avifImage is ours to free (avifImageDestroy on every path); our
//   RGBA pixels are only read by avifImageRGBToYUV; avifImageSetProfileICC and
//   avifImageSetMetadataExif copy; the output avifRWData is allocated (and may be reallocated) by
//   libavif while it writes, copied into a Data, then freed with avifRWDataFree on every path.
// - Sequences a frame at a time (AVIFAnimationWriter): the encoder lives across adds, destroyed in
//   deinit; each frame's avifImage is ours, destroyed right after its avifEncoderAddImage (the
//   encoder keeps its own copy); the output is as above.
#include <avif/avif.h>
#endif
