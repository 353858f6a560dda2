#ifndef WEBIMAGE_CJPEG_SHIM_H
#define WEBIMAGE_CJPEG_SHIM_H
#include <stddef.h>
#include <stdio.h>
#include <jpeglib.h>
#include <jerror.h>
#endif
