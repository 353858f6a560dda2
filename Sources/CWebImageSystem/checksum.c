#include "CWebImageSystem.h"

#include <string.h>

// XXH64 (Yann Collet's public-domain specification): four independent multiply-rotate lanes over
// 32-byte stripes, then the tail and a final avalanche. Fast enough to verify every cache entry
// it is given, and any flipped byte changes the result.

static const uint64_t prime1 = 0x9E3779B185EBCA87ULL;
static const uint64_t prime2 = 0xC2B2AE3D27D4EB4FULL;
static const uint64_t prime3 = 0x165667B19E3779F9ULL;
static const uint64_t prime4 = 0x85EBCA77C2B2AE63ULL;
static const uint64_t prime5 = 0x27D4EB2F165667C5ULL;

static inline uint64_t rotate_left(uint64_t value, int bits) { return (value << bits) | (value >> (64 - bits)); }

static inline uint64_t read64(const unsigned char *bytes) {
    uint64_t value;
    memcpy(&value, bytes, sizeof value);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    value = __builtin_bswap64(value);
#endif
    return value;
}

static inline uint32_t read32(const unsigned char *bytes) {
    uint32_t value;
    memcpy(&value, bytes, sizeof value);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    value = __builtin_bswap32(value);
#endif
    return value;
}

static inline uint64_t lane_round(uint64_t accumulator, uint64_t input) {
    accumulator += input * prime2;
    accumulator = rotate_left(accumulator, 31);
    return accumulator * prime1;
}

static inline uint64_t merge_lane(uint64_t hash, uint64_t lane) {
    hash ^= lane_round(0, lane);
    return hash * prime1 + prime4;
}

uint64_t wi_checksum64(const void *data, size_t length, uint64_t seed) {
    const unsigned char *bytes = (const unsigned char *)data;
    const unsigned char *end = bytes + length;
    uint64_t hash;
    if (length >= 32) {
        uint64_t lane1 = seed + prime1 + prime2;
        uint64_t lane2 = seed + prime2;
        uint64_t lane3 = seed;
        uint64_t lane4 = seed - prime1;
        const unsigned char *last_stripe = end - 32;
        do {
            lane1 = lane_round(lane1, read64(bytes));
            lane2 = lane_round(lane2, read64(bytes + 8));
            lane3 = lane_round(lane3, read64(bytes + 16));
            lane4 = lane_round(lane4, read64(bytes + 24));
            bytes += 32;
        } while (bytes <= last_stripe);
        hash = rotate_left(lane1, 1) + rotate_left(lane2, 7) + rotate_left(lane3, 12) + rotate_left(lane4, 18);
        hash = merge_lane(hash, lane1);
        hash = merge_lane(hash, lane2);
        hash = merge_lane(hash, lane3);
        hash = merge_lane(hash, lane4);
    } else {
        hash = seed + prime5;
    }
    hash += (uint64_t)length;
    while (bytes + 8 <= end) {
        hash ^= lane_round(0, read64(bytes));
        hash = rotate_left(hash, 27) * prime1 + prime4;
        bytes += 8;
    }
    if (bytes + 4 <= end) {
        hash ^= (uint64_t)read32(bytes) * prime1;
        hash = rotate_left(hash, 23) * prime2 + prime3;
        bytes += 4;
    }
    while (bytes < end) {
        hash ^= (*bytes) * prime5;
        hash = rotate_left(hash, 11) * prime1;
        bytes++;
    }
    hash ^= hash >> 33;
    hash *= prime2;
    hash ^= hash >> 29;
    hash *= prime3;
    hash ^= hash >> 32;
    return hash;
}
