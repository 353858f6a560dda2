#ifndef WEBIMAGE_CLCMS2_SHIM_H
#define WEBIMAGE_CLCMS2_SHIM_H
#include <lcms2.h>
#endif
