// Baseline JPEGs read at 1/8: the AC coefficients of the planes whose scaled inverse DCT reads
// the DC alone (the luma of every 1/8 thumbnail) skipped several Huffman codes at a time.
// libjpeg decodes each of those codes one by one only to drop it, which is most of a 1/8 decode.
//
// The whole scan is read here first, into the coefficient values the scaled output reads (each
// block's DC; every AC coefficient of planes that read more, such as 4:2:0 chroma at 1/8); only
// when the scan reads exactly is libjpeg's MCU decoder replaced by one that hands those values
// out. Anything unusual (an undefined code, a restart marker missing or out of order, data short
// or left over before the next marker, a value store past its cap) leaves libjpeg to decode the
// scan itself, with its own warnings and recovery; so the pixels are always libjpeg's.
//
// Who owns what: the `wi_jpeg_scan_values` (its Huffman tables and the value store's chunks) is
// malloc'ed here, hung on `info->client_data` from before the first read (so a longjmp from the
// progress monitor leaves it reachable, chunks included: each is linked in as it is made) and
// freed by `wi_jpeg_scan_values_free` (on a fallback here, otherwise by the decoder's owner after
// `jpeg_destroy_decompress`). The compressed bytes are libjpeg's source
// buffer, read in place and never written; on success the source is advanced past the scan.
// The `jpeg_entropy_decoder` whose `decode_mcu` is replaced stays libjpeg's (in its pools).

#include "jpeg_internal.h"

#include <jpegint.h>
#include <stdlib.h>
#include <string.h>

/// Bits each table look-up reads.
enum { WI_LOOKAHEAD = 12 };
/// The reader's steps, inlined into the MCU loop whatever the compiler's own choice (so the
/// reader's fields stay in registers); the rare paths are kept out of it and take the reader by
/// value (a reader whose address escaped would live in memory, every step a store and a load).
#define WI_INLINE static inline __attribute__((always_inline))
#define WI_RARE static __attribute__((noinline))
#define WI_LOOKAHEAD_MASK ((1u << WI_LOOKAHEAD) - 1)

/// The value store's room: 32 bytes a block (a quarter of libjpeg's coefficient buffer; photos
/// need 2–21, the DC alone 2), at most 64 MB (a 4:2:0 photo of about 40 MP); a scan that needs
/// more is left to libjpeg.
enum { WI_BYTES_PER_BLOCK = 32 };
#define WI_VALUES_CAP ((size_t)64 << 20)
/// The store is allocated a chunk at a time as the scan fills it, each a sixteenth of the room
/// and at most 1 MB: heap blocks the allocator hands out again to the next image (a store made
/// whole, 9 MB for 12 MP, is mapped fresh for each image: a page fault for every page written).
#define WI_CHUNK_VALUES_MAX (((size_t)1 << 20) / sizeof(int16_t))

/// One piece of the value store; whole MCUs only (a new chunk is begun before an MCU that might
/// not fit).
typedef struct wi_store_chunk {
    struct wi_store_chunk *next;
    /// Values written.
    size_t size;
    int16_t values[];
} wi_store_chunk;

typedef struct {
    /// Codes of up to `WI_LOOKAHEAD` bits, indexed by the next bits: length << 8 | symbol (0: a
    /// longer code, or none).
    uint16_t code[1u << WI_LOOKAHEAD];
    /// AC tables: the codes (with their value bits) of one block that fit in the look-ahead,
    /// skipped in one step: bits used | coefficients passed << 8 | 1 << 16 when the last is an
    /// end of block. 0 when the first code and its value bits do not fit.
    uint32_t skip[1u << WI_LOOKAHEAD];
    /// AC tables: one code with its value bits when they fit: bits used | run << 5 | value << 16.
    int32_t value[1u << WI_LOOKAHEAD];
    /// Codes longer than the look-ahead, canonically: the largest code of each length (-1: none)
    /// and what turns a code of that length into its symbol's index.
    int32_t max_code[17];
    int32_t index_offset[17];
    uint8_t symbols[256];
} wi_huffman;

struct wi_jpeg_scan_values {
    wi_huffman *dc_tables[NUM_HUFF_TBLS];
    wi_huffman *ac_tables[NUM_HUFF_TBLS];
    /// Per block of an MCU: the coefficients its plane's scaled inverse DCT reads (bit n: natural
    /// position n); those AC coefficients are stored, and the others skipped when it reads the DC alone.
    uint64_t reads[D_MAX_BLOCKS_IN_MCU];
    /// Per block, in decoding order: the DC; for planes that read AC coefficients, then their
    /// count and each one's natural position and value, in chunks from `first` (int16 throughout:
    /// stores of that type cannot alias the bit reader's fields, which then stay in registers).
    wi_store_chunk *first;
    /// Chunks made, and the chunk being served with the values served from it.
    size_t chunks;
    wi_store_chunk *serving;
    size_t served;
};

// MARK: Tables

/// Builds `table` from libjpeg's; 0 when the code lengths overflow or a DC symbol is over 15
/// (libjpeg refuses those too, earlier).
static int wi_huffman_build(wi_huffman *table, const JHUFF_TBL *source, int is_ac) {
    int count = 0;
    for (int length = 1; length <= 16; length++) count += source->bits[length];
    if (count > 256) return 0;
    memset(table->code, 0, sizeof table->code);
    memcpy(table->symbols, source->huffval, (size_t)count);
    int code = 0, index = 0;
    for (int length = 1; length <= 16; length++) {
        table->index_offset[length] = index - code;
        for (int i = 0; i < source->bits[length]; i++, index++, code++) {
            int symbol = source->huffval[index];
            if (!is_ac && symbol > 15) return 0;
            if (length <= WI_LOOKAHEAD) {
                int spare = WI_LOOKAHEAD - length;
                for (int low = 0; low < 1 << spare; low++) {
                    table->code[(code << spare) | low] = (uint16_t)(length << 8 | symbol);
                }
            }
        }
        if (code >= 1 << length) return 0;  // more codes than this length holds (or an all-ones code)
        table->max_code[length] = source->bits[length] ? code - 1 : -1;
        code <<= 1;
    }
    if (!is_ac) return 1;
    for (uint32_t bits = 0; bits <= WI_LOOKAHEAD_MASK; bits++) {
        int used = 0, passed = 0, ends = 0;
        for (;;) {
            uint16_t entry = table->code[(bits << used) & WI_LOOKAHEAD_MASK];
            int length = entry >> 8, size = entry & 15, run = (entry >> 4) & 15;
            if (entry == 0 || used + length + size > WI_LOOKAHEAD) break;
            used += length + size;
            if (size) {
                passed += run + 1;
            } else if (run == 15) {
                passed += 16;
            } else {
                ends = 1;
                break;
            }
        }
        table->skip[bits] = used ? (uint32_t)used | (uint32_t)passed << 8 | (uint32_t)ends << 16 : 0;
        uint16_t entry = table->code[bits];
        int length = entry >> 8, size = entry & 15;
        table->value[bits] = 0;
        if (entry != 0 && size != 0 && length + size <= WI_LOOKAHEAD) {
            int value = (int)(bits >> (WI_LOOKAHEAD - length - size)) & ((1 << size) - 1);
            if (value < 1 << (size - 1)) value -= (1 << size) - 1;
            table->value[bits] = (int32_t)((uint32_t)(length + size) | (uint32_t)((entry >> 4) & 15) << 5 |
                                           (uint32_t)value << 16);
        }
    }
    return 1;
}

// MARK: Bits

typedef struct {
    const uint8_t *next, *end;
    /// Unread bits, most significant first, and how many; the last `padding` of them are zeros
    /// added past the point where the data stopped (a marker or its end).
    uint64_t bits;
    int count, padding;
    /// Set where the data stopped: `next` is at the marker's 0xFF (or the end); `marker` is its
    /// code (-1: the end).
    int stopped, marker;
} wi_bit_reader;

WI_RARE wi_bit_reader wi_filled_bytewise(wi_bit_reader reader) {
    while (reader.count <= 56) {
        uint64_t byte = 0;
        if (!reader.stopped && reader.next < reader.end) {
            byte = *reader.next;
            if (byte != 0xFF) {
                reader.next++;
            } else if (reader.next + 1 < reader.end && reader.next[1] == 0) {
                reader.next += 2;
            } else {
                reader.stopped = 1;
                reader.marker = reader.next + 1 < reader.end ? reader.next[1] : -1;
                byte = 0;
            }
        } else {
            reader.stopped = 1;
            if (reader.marker == 0) reader.marker = -1;
        }
        if (reader.stopped) reader.padding += 8;
        reader.bits |= byte << (56 - reader.count);
        reader.count += 8;
    }
    return reader;
}

/// At least 57 bits in `bits`: whole bytes at once while none of them is 0xFF.
WI_INLINE void wi_fill(wi_bit_reader *reader) {
    if (reader->count > 56) return;
    if (!reader->stopped && reader->end - reader->next >= 8) {
        uint64_t word;
        memcpy(&word, reader->next, 8);
        word = __builtin_bswap64(word);
        uint64_t inverted = ~word;  // a 0xFF byte of `word` is a zero byte here
        if (((inverted - 0x0101010101010101u) & ~inverted & 0x8080808080808080u) == 0) {
            int bytes = (64 - reader->count) >> 3;
            reader->bits |= word >> (64 - 8 * bytes) << (64 - reader->count - 8 * bytes);
            reader->next += bytes;
            reader->count += 8 * bytes;
            return;
        }
    }
    *reader = wi_filled_bytewise(*reader);
}

WI_INLINE void wi_drop(wi_bit_reader *reader, int count) {
    reader->bits <<= count;
    reader->count -= count;
}

/// The next `size` bits (1–15) as a coefficient value (JPEG's sign extension).
WI_INLINE int wi_read_value(wi_bit_reader *reader, int size) {
    wi_fill(reader);
    int value = (int)(reader->bits >> (64 - size));
    wi_drop(reader, size);
    return value < 1 << (size - 1) ? value - (1 << size) + 1 : value;
}

/// A code longer than the look-ahead at the start of `bits`, as the table's entries have it
/// (length << 8 | symbol); 0 for bits that are no code.
WI_RARE int wi_long_code(uint64_t bits, const wi_huffman *table) {
    for (int length = WI_LOOKAHEAD + 1; length <= 16; length++) {
        int32_t code = (int32_t)(bits >> (64 - length));
        if (code <= table->max_code[length]) {
            return length << 8 | table->symbols[(code + table->index_offset[length]) & 0xFF];
        }
    }
    return 0;
}

/// The next symbol; -1 for bits that are no code.
WI_INLINE int wi_read_symbol(wi_bit_reader *reader, const wi_huffman *table) {
    wi_fill(reader);
    int entry = table->code[reader->bits >> (64 - WI_LOOKAHEAD)];
    if (entry == 0 && (entry = wi_long_code(reader->bits, table)) == 0) return -1;
    wi_drop(reader, entry >> 8);
    return entry & 0xFF;
}

/// Whether the reader stands at the data's stop with at most a partial byte unread.
WI_INLINE int wi_at_stop(wi_bit_reader *reader) {
    wi_fill(reader);
    return reader->stopped && reader->count - reader->padding < 8;
}

// MARK: Blocks

/// Passes over one block's AC codes; 0 on an undefined code.
WI_INLINE int wi_skip_ac(wi_bit_reader *reader, const wi_huffman *table) {
    int k = 1;
    for (;;) {
        // Four look-ups of at most 12 bits each after one fill of at least 57.
        wi_fill(reader);
        int step = 0;
        for (; step < 4; step++) {
            uint32_t entry = table->skip[reader->bits >> (64 - WI_LOOKAHEAD)];
            int passed = (int)(entry >> 8) & 0xFF, ends = (int)(entry >> 16);
            // Only when the block does not end inside the entry: libjpeg stops at the 64th
            // coefficient, and an end of block there would be the next block's DC code.
            if (entry == 0 || k + passed + ends > 64) break;
            wi_drop(reader, (int)(entry & 0xFF));
            k += passed;
            if (ends || k >= 64) return 1;
        }
        if (step < 4) {
            int symbol = wi_read_symbol(reader, table);
            if (symbol < 0) return 0;
            int size = symbol & 15, run = symbol >> 4;
            if (size) {
                wi_fill(reader);
                wi_drop(reader, size);
                k += run + 1;
            } else if (run == 15) {
                k += 16;
            } else {
                return 1;
            }
            if (k >= 64) return 1;
        }
    }
}

/// Reads one block's AC coefficients as libjpeg does (a run past the 63rd lands on it) into
/// `pairs` (natural position, value); their count, or -1 on an undefined code.
WI_INLINE int wi_read_ac(wi_bit_reader *reader, const wi_huffman *table, uint64_t reads, int16_t *pairs) {
    int count = 0, k = 1;
    while (k < 64) {
        // Up to four codes with their values (12 bits at most each) from one fill of 57 bits.
        wi_fill(reader);
        int step = 0;
        for (; step < 4 && k < 64; step++) {
            int32_t entry = table->value[reader->bits >> (64 - WI_LOOKAHEAD)];
            if (entry == 0) break;
            wi_drop(reader, entry & 31);
            k += (entry >> 5) & 15;
            int position = jpeg_natural_order[k];
            pairs[2 * count] = (int16_t)position;
            pairs[2 * count + 1] = (int16_t)(entry >> 16);
            count += (int)(reads >> position & 1);
            k++;
        }
        if (step == 4 || k >= 64) continue;
        // An end of block, a run of 16 zeros, or a code too long for the table.
        int symbol = wi_read_symbol(reader, table);
        if (symbol < 0) return -1;
        int size = symbol & 15, run = symbol >> 4;
        if (size == 0) {
            if (run != 15) break;
            k += 16;
            continue;
        }
        int value = wi_read_value(reader, size);
        k += run;
        int position = jpeg_natural_order[k];
        pairs[2 * count] = (int16_t)position;
        pairs[2 * count + 1] = (int16_t)value;
        count += (int)(reads >> position & 1);
        k++;
    }
    return count;
}

// MARK: The store

/// The store's size in values for a scan of `blocks` blocks: the room above, and one MCU at its
/// largest (every block with 63 AC coefficients) so that a small image fits too.
static size_t wi_store_capacity(size_t blocks) {
    size_t room = blocks > WI_VALUES_CAP / WI_BYTES_PER_BLOCK ? WI_VALUES_CAP : blocks * WI_BYTES_PER_BLOCK;
    return room / sizeof(int16_t) + D_MAX_BLOCKS_IN_MCU * (2 + 63 * 2);
}

/// A chunk's room in values for a store of `capacity` values whose MCUs hold at most
/// `largest_mcu` values: a sixteenth of the store, at least 16 MCUs at their largest (so that a
/// chunk's unused end, less than an MCU, is at most a sixteenth of it), at most
/// `WI_CHUNK_VALUES_MAX`, and never more than the store.
static size_t wi_chunk_capacity(size_t capacity, size_t largest_mcu) {
    size_t values = capacity / 16;
    if (values < 16 * largest_mcu) values = 16 * largest_mcu;
    if (values > WI_CHUNK_VALUES_MAX) values = WI_CHUNK_VALUES_MAX;
    return values > capacity ? capacity : values;
}

/// The values the chunks of a store of `capacity` values may hold together: a sixteenth more,
/// for the chunks' unused ends.
static size_t wi_chunked_capacity(size_t capacity) { return capacity + capacity / 16; }

size_t wi_jpeg_scan_ahead_bytes(size_t blocks) {
    // Besides the values, each chunk's header: at most 16 chunks, or 68 of 1 MB (64 MB and a
    // sixteenth), and the last one short.
    return wi_chunked_capacity(wi_store_capacity(blocks)) * sizeof(int16_t) + 70 * sizeof(wi_store_chunk) +
           2 * NUM_HUFF_TBLS * sizeof(wi_huffman) + sizeof(wi_jpeg_scan_values);
}

size_t wi_jpeg_scan_chunks(const wi_jpeg_scan_values *values) { return values == NULL ? 0 : values->chunks; }

/// Begins a chunk of `capacity` values after `last` (NULL: the first), linked into `values` at
/// once so that it is freed on every path; NULL when out of memory.
static wi_store_chunk *wi_begin_chunk(wi_jpeg_scan_values *values, wi_store_chunk *last, size_t capacity) {
    wi_store_chunk *chunk = malloc(sizeof(wi_store_chunk) + capacity * sizeof(int16_t));
    if (chunk == NULL) return NULL;
    chunk->next = NULL;
    chunk->size = 0;
    if (last == NULL) {
        values->first = chunk;
    } else {
        last->next = chunk;
    }
    values->chunks++;
    return chunk;
}

// MARK: The scan

/// Reads every MCU of the scan into the store; 1 when it read exactly, with `*stop` at the
/// marker after it (or the data's end).
static int wi_read_scan(j_decompress_ptr info, wi_jpeg_scan_values *values, const uint8_t *data, size_t length,
                        const uint8_t **stop) {
    const wi_huffman *dc_of[D_MAX_BLOCKS_IN_MCU], *ac_of[D_MAX_BLOCKS_IN_MCU];
    int component_of[D_MAX_BLOCKS_IN_MCU];
    for (int block = 0; block < info->blocks_in_MCU; block++) {
        int c = info->MCU_membership[block];
        component_of[block] = c;
        dc_of[block] = values->dc_tables[info->cur_comp_info[c]->dc_tbl_no];
        ac_of[block] = values->ac_tables[info->cur_comp_info[c]->ac_tbl_no];
    }
    wi_bit_reader reader = {data, data + length, 0, 0, 0, 0, 0};
    int predictions[MAX_COMPS_IN_SCAN] = {0};
    unsigned restarts = 0, until_restart = info->restart_interval;
    size_t blocks = (size_t)info->MCU_rows_in_scan * info->MCUs_per_row * (size_t)info->blocks_in_MCU;
    // An MCU at its largest: every block with 63 AC coefficients.
    size_t largest_mcu = (size_t)info->blocks_in_MCU * (2 + 63 * 2);
    size_t capacity = wi_store_capacity(blocks), room = wi_chunked_capacity(capacity);
    size_t chunk_capacity = wi_chunk_capacity(capacity, largest_mcu);
    wi_store_chunk *chunk = NULL;
    int16_t *out = NULL, *chunk_end = NULL;
    for (JDIMENSION row = 0; row < info->MCU_rows_in_scan; row++) {
        if (info->progress != NULL) (*info->progress->progress_monitor)((j_common_ptr)info);
        for (JDIMENSION column = 0; column < info->MCUs_per_row; column++) {
            if (chunk == NULL || (size_t)(chunk_end - out) < largest_mcu) {
                if (chunk != NULL) chunk->size = (size_t)(out - chunk->values);
                // The last chunk may be short; a scan that needs more is left to libjpeg.
                size_t values_in_chunk = room < chunk_capacity ? room : chunk_capacity;
                if (values_in_chunk < largest_mcu) return 0;
                room -= values_in_chunk;
                if ((chunk = wi_begin_chunk(values, chunk, values_in_chunk)) == NULL) return 0;
                out = chunk->values;
                chunk_end = out + values_in_chunk;
            }
            if (info->restart_interval) {
                if (until_restart == 0) {
                    // Past the partial byte, the next marker must be this interval's RSTn.
                    if (!wi_at_stop(&reader) || reader.marker != (int)(JPEG_RST0 + (restarts & 7))) return 0;
                    wi_bit_reader fresh = {reader.next + 2, reader.end, 0, 0, 0, 0, 0};
                    reader = fresh;
                    memset(predictions, 0, sizeof predictions);
                    restarts++;
                    until_restart = info->restart_interval;
                }
                until_restart--;
            }
            for (int block = 0; block < info->blocks_in_MCU; block++) {
                int size = wi_read_symbol(&reader, dc_of[block]);
                if (size < 0) return 0;
                int difference = size ? wi_read_value(&reader, size) : 0;
                int c = component_of[block];
                predictions[c] = (int)((unsigned)predictions[c] + (unsigned)difference);
                *out++ = (int16_t)predictions[c];
                if (values->reads[block] == 1) {
                    if (!wi_skip_ac(&reader, ac_of[block])) return 0;
                } else {
                    int16_t *count = out++;
                    int read = wi_read_ac(&reader, ac_of[block], values->reads[block], out);
                    if (read < 0) return 0;
                    *count = (int16_t)read;
                    out += 2 * read;
                }
            }
            // Zeros past the data's stop read as codes: the scan is short.
            if (reader.count < reader.padding) return 0;
        }
    }
    if (chunk != NULL) chunk->size = (size_t)(out - chunk->values);
    if (!wi_at_stop(&reader)) return 0;
    *stop = reader.next;
    return 1;
}

/// libjpeg's `decode_mcu`, served from the store.
static boolean wi_serve_mcu(j_decompress_ptr info, JBLOCKROW *blocks) {
    wi_jpeg_scan_values *values = info->client_data;
    wi_store_chunk *chunk = values->serving;
    // An MCU never straddles two chunks: one that is used up is followed by the next.
    if (chunk != NULL && values->served == chunk->size && chunk->next != NULL) {
        chunk = values->serving = chunk->next;
        values->served = 0;
    }
    if (chunk == NULL) return TRUE;  // never: the store holds every MCU of the scan
    const int16_t *at = chunk->values + values->served, *end = chunk->values + chunk->size;
    for (int block = 0; block < info->blocks_in_MCU && at < end; block++) {
        JCOEF *coefficients = blocks[block][0];
        coefficients[0] = *at++;
        if (values->reads[block] == 1 || at == end) continue;
        int count = *at++;
        if (count > (end - at) / 2) count = (int)((end - at) / 2);  // never: the MCU is whole
        for (int i = 0; i < count; i++, at += 2) coefficients[at[0] & 63] = at[1];
    }
    values->served = (size_t)(at - chunk->values);
    return TRUE;
}

uint64_t wi_jpeg_coefficients_read(const jpeg_component_info *component) {
#if JPEG_LIB_VERSION >= 70
    int size = component->DCT_h_scaled_size == component->DCT_v_scaled_size ? component->DCT_h_scaled_size : 8;
#else
    int size = component->DCT_scaled_size;
#endif
    if (size == 1) return 1;
    if (size != 2) return UINT64_MAX;
    static const int lines[5] = {0, 1, 3, 5, 7};
    uint64_t reads = 0;
    for (int row = 0; row < 5; row++) {
        for (int column = 0; column < 5; column++) reads |= (uint64_t)1 << (lines[row] * 8 + lines[column]);
    }
    return reads;
}

static void wi_free_tables(wi_jpeg_scan_values *values) {
    for (int i = 0; i < NUM_HUFF_TBLS; i++) {
        free(values->dc_tables[i]);
        free(values->ac_tables[i]);
        values->dc_tables[i] = values->ac_tables[i] = NULL;
    }
}

/// Builds the tables the scan uses; 0 when one is missing or malformed.
static int wi_build_tables(j_decompress_ptr info, wi_jpeg_scan_values *values) {
    for (int c = 0; c < info->comps_in_scan; c++) {
        const jpeg_component_info *component = info->cur_comp_info[c];
        int slots[2] = {component->dc_tbl_no, component->ac_tbl_no};
        for (int is_ac = 0; is_ac < 2; is_ac++) {
            int slot = slots[is_ac];
            if (slot < 0 || slot >= NUM_HUFF_TBLS) return 0;
            wi_huffman **table = is_ac ? &values->ac_tables[slot] : &values->dc_tables[slot];
            const JHUFF_TBL *source = is_ac ? info->ac_huff_tbl_ptrs[slot] : info->dc_huff_tbl_ptrs[slot];
            if (*table != NULL) continue;
            if (source == NULL || (*table = malloc(sizeof(wi_huffman))) == NULL) return 0;
            if (!wi_huffman_build(*table, source, is_ac)) return 0;
        }
    }
    return 1;
}

int wi_jpeg_scan_ahead(j_decompress_ptr info) {
    if (info->progressive_mode || info->arith_code || info->data_precision != 8 || info->buffered_image ||
        jpeg_has_multiple_scans(info) ||
        info->client_data != NULL || info->entropy == NULL || info->src == NULL || info->src->next_input_byte == NULL ||
        info->comps_in_scan < 1 || info->comps_in_scan > MAX_COMPS_IN_SCAN || info->blocks_in_MCU < 1 ||
        info->blocks_in_MCU > D_MAX_BLOCKS_IN_MCU) {
        return 0;
    }
    wi_jpeg_scan_values *values = calloc(1, sizeof *values);
    if (values == NULL) return 0;
    info->client_data = values;
    int skips = 0;
    for (int block = 0; block < info->blocks_in_MCU; block++) {
        values->reads[block] = wi_jpeg_coefficients_read(info->cur_comp_info[info->MCU_membership[block]]);
        skips |= values->reads[block] == 1;
    }
    const uint8_t *data = info->src->next_input_byte, *stop = NULL;
    size_t length = info->src->bytes_in_buffer;
    int exact = skips && wi_build_tables(info, values) && wi_read_scan(info, values, data, length, &stop);
    wi_free_tables(values);
    if (!exact) {
        info->client_data = NULL;
        wi_jpeg_scan_values_free(values);
        return 0;
    }
    // libjpeg goes on from the marker after the scan (or the data's end), as its own decoder would.
    info->src->bytes_in_buffer = (size_t)(data + length - stop);
    info->src->next_input_byte = stop;
    values->serving = values->first;
    values->served = 0;
    info->entropy->decode_mcu = wi_serve_mcu;
    return 1;
}

void wi_jpeg_scan_values_free(wi_jpeg_scan_values *values) {
    if (values == NULL) return;
    wi_free_tables(values);
    for (wi_store_chunk *chunk = values->first, *next; chunk != NULL; chunk = next) {
        next = chunk->next;
        free(chunk);
    }
    free(values);
}
