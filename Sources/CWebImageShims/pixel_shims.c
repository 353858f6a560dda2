// Who owns what: every buffer is the caller's; nothing here allocates, and no library is called.
#include "CWebImageShims.h"

void wi_floats_to_bytes(const float *in, uint8_t *out, size_t count) {
    for (size_t i = 0; i < count; i++) {
        float value = in[i];
        // Written so NaN becomes 0: each comparison is false for it.
        float clamped = value > 0.0f ? (value < 255.0f ? value : 255.0f) : 0.0f;
        out[i] = (uint8_t)(int32_t)(clamped + 0.5f);
    }
}
