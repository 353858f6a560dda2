#ifndef WEBIMAGE_CJXL_SHIM_H
#define WEBIMAGE_CJXL_SHIM_H
#include <jxl/decode.h>
#include <jxl/encode.h>
#include <jxl/butteraugli.h>
#endif
