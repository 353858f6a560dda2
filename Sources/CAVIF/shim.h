#ifndef WEBIMAGE_CAVIF_SHIM_H
#define WEBIMAGE_CAVIF_SHIM_H
#include <avif/avif.h>
#endif
