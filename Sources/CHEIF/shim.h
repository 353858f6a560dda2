#ifndef WEBIMAGE_CHEIF_SHIM_H
#define WEBIMAGE_CHEIF_SHIM_H
#include <libheif/heif.h>
#endif
