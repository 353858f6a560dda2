#ifndef WEBIMAGE_CAVIF_SHIM_H
#define WEBIMAGE_CAVIF_SHIM_H
// libavif, called from Swift directly (no C code of ours). Who owns what:
// - Decoding (AVIFCoder): the input bytes are the caller's (or the embedded thumbnail's cut file,
//   a Data of ours) and outlive the decoder (avifDecoderSetIOMemory does not copy); the decoded
//   avifImage and its planes are libavif's, freed by avifDecoderDestroy; the RGBA buffer given to
//   avifImageYUVToRGB is ours, only written.
// - Encoding (AVIFEncoding): the avifImage is ours to free (avifImageDestroy on every path); our
//   RGBA pixels are only read by avifImageRGBToYUV; avifImageSetProfileICC and
//   avifImageSetMetadataExif copy; the output avifRWData is allocated (and may be reallocated) by
//   libavif while it writes, copied into a Data, then freed with avifRWDataFree on every path.
#include <avif/avif.h>
#endif
