#ifndef WEBIMAGE_CTIFF_SHIM_H
#define WEBIMAGE_CTIFF_SHIM_H
#include <tiffio.h>
#endif
