#ifndef WEBIMAGE_CPNG_SHIM_H
#define WEBIMAGE_CPNG_SHIM_H
#include <png.h>
#endif
