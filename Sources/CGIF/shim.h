#ifndef WEBIMAGE_CGIF_SHIM_H
#define WEBIMAGE_CGIF_SHIM_H
#include <gif_lib.h>
#endif
