/* The fixed list size of a field from the ARROW:schema footer entry: a
 * base64 Arrow IPC message whose flatbuffer holds a Schema.  Used only to
 * give files without rows their vector length.  Every offset is checked
 * against the decoded bytes; anything unexpected yields 0. */
#include "parquet_internal.h"

#include <stdlib.h>
#include <string.h>

/* Flatbuffer layout constants of Arrow's Message.fbs / Schema.fbs. */
enum {
    MESSAGE_HEADER_TYPE = 1, MESSAGE_HEADER = 2, HEADER_SCHEMA = 1,
    SCHEMA_FIELDS = 1, FIELD_NAME = 0, FIELD_TYPE_TYPE = 2, FIELD_TYPE = 3,
    TYPE_FIXED_SIZE_LIST = 16, FIXED_SIZE_LIST_SIZE = 0
};

typedef struct fbuf {
    const uint8_t *data;
    size_t len;
} fbuf;

static int base64_value(uint8_t c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decodes base64 (stopping at '=' padding); returns NULL on bad input. */
static uint8_t *base64_decode(pq_str s, size_t *out_len)
{
    uint8_t *out = qk_malloc((size_t)s.len / 4 * 3 + 3);
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (uint32_t i = 0; i < s.len && s.data[i] != '='; i++) {
        int v = base64_value(s.data[i]);
        if (v < 0) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (uint8_t)(acc >> bits);
        }
    }
    *out_len = n;
    return out;
}

static int read_u32(const fbuf *b, uint64_t pos, uint32_t *v)
{
    if (pos + 4 > b->len)
        return -1;
    const uint8_t *p = b->data + pos;
    *v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
    return 0;
}

static int read_u16(const fbuf *b, uint64_t pos, uint32_t *v)
{
    if (pos + 2 > b->len)
        return -1;
    *v = (uint32_t)b->data[pos] | (uint32_t)b->data[pos + 1] << 8;
    return 0;
}

/* Position of field `index` of the table at `table`; -1 if absent. */
static int64_t table_field(const fbuf *b, uint64_t table, int index)
{
    uint32_t soffset, vt_size, field_off;
    if (read_u32(b, table, &soffset) != 0)
        return -1;
    int64_t vtable = (int64_t)table - (int32_t)soffset;
    if (vtable < 0 || read_u16(b, (uint64_t)vtable, &vt_size) != 0)
        return -1;
    uint64_t slot = (uint64_t)vtable + 4 + 2 * (uint64_t)index;
    if (4 + 2 * (uint32_t)index + 2 > vt_size ||
        read_u16(b, slot, &field_off) != 0 || field_off == 0)
        return -1;
    return (int64_t)(table + field_off);
}

/* Follows the offset stored in field `index` of a table. */
static int64_t table_ref(const fbuf *b, uint64_t table, int index)
{
    uint32_t rel;
    int64_t pos = table_field(b, table, index);
    if (pos < 0 || read_u32(b, (uint64_t)pos, &rel) != 0)
        return -1;
    return pos + (int64_t)rel;
}

static int field_byte(const fbuf *b, uint64_t table, int index)
{
    int64_t pos = table_field(b, table, index);
    return pos < 0 || (uint64_t)pos >= b->len ? -1 : b->data[pos];
}

static int name_is(const fbuf *b, uint64_t field, const char *name)
{
    uint32_t len;
    int64_t s = table_ref(b, field, FIELD_NAME);
    if (s < 0 || read_u32(b, (uint64_t)s, &len) != 0 ||
        (uint64_t)s + 4 + len > b->len)
        return 0;
    return len == strlen(name) && memcmp(b->data + s + 4, name, len) == 0;
}

static int list_size_of(const fbuf *b, uint64_t field)
{
    uint32_t size;
    if (field_byte(b, field, FIELD_TYPE_TYPE) != TYPE_FIXED_SIZE_LIST)
        return 0;
    int64_t type = table_ref(b, field, FIELD_TYPE);
    int64_t pos = type < 0 ? -1 : table_field(b, (uint64_t)type,
                                              FIXED_SIZE_LIST_SIZE);
    if (pos < 0 || read_u32(b, (uint64_t)pos, &size) != 0 ||
        size > INT32_MAX)
        return 0;
    return (int)size;
}

static int schema_list_size(const fbuf *b, const char *name)
{
    uint32_t root, count;
    if (read_u32(b, 0, &root) != 0 ||
        field_byte(b, root, MESSAGE_HEADER_TYPE) != HEADER_SCHEMA)
        return 0;
    int64_t schema = table_ref(b, root, MESSAGE_HEADER);
    int64_t fields = schema < 0 ? -1 : table_ref(b, (uint64_t)schema,
                                                 SCHEMA_FIELDS);
    if (fields < 0 || read_u32(b, (uint64_t)fields, &count) != 0)
        return 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t slot = (uint64_t)fields + 4 + 4 * (uint64_t)i;
        uint32_t rel;
        if (read_u32(b, slot, &rel) != 0)
            return 0;
        if (name_is(b, slot + rel, name))
            return list_size_of(b, slot + rel);
    }
    return 0;
}

int pq_arrow_list_size(pq_str arrow_schema, const char *field)
{
    size_t len;
    if (!arrow_schema.data)
        return 0;
    uint8_t *raw = base64_decode(arrow_schema, &len);
    if (!raw)
        return 0;
    /* IPC framing: optional 0xFFFFFFFF continuation, then the length of
     * the flatbuffer that follows. */
    fbuf all = {raw, len};
    uint32_t word, meta_len;
    uint64_t start = 4;
    int size = 0;
    if (read_u32(&all, 0, &word) == 0) {
        if (word == 0xFFFFFFFFu)
            start = 8;
        if (read_u32(&all, start - 4, &meta_len) == 0 &&
            meta_len <= len - start) {
            fbuf message = {raw + start, meta_len};
            size = schema_list_size(&message, field);
        }
    }
    free(raw);
    return size;
}
