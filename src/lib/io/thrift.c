/* Thrift compact protocol decoding with bounds checks on every read. */
#include "qk/thrift.h"

#include <string.h>

static int fail(qk_thrift *t, const char *what)
{
    if (!t->failed) {
        t->failed = 1;
        qk_fail(t->err, "%s at byte %zu", what, qk_thrift_offset(t));
    }
    return -1;
}

static int fail_at_end(qk_thrift *t)
{
    return fail(t, "unexpected end of data");
}

void qk_thrift_init(qk_thrift *t, const uint8_t *buf, size_t len,
                    qk_err *err)
{
    memset(t, 0, sizeof *t);
    t->start = t->pos = buf;
    t->end = buf + len;
    t->err = err;
}

size_t qk_thrift_offset(const qk_thrift *t)
{
    return (size_t)(t->pos - t->start);
}

static int read_u8(qk_thrift *t, uint8_t *v)
{
    if (t->failed)
        return -1;
    if (t->pos >= t->end)
        return fail_at_end(t);
    *v = *t->pos++;
    return 0;
}

/* Unsigned LEB128 of at most 10 bytes (64 bits). */
static int read_varint(qk_thrift *t, uint64_t *v)
{
    uint64_t result = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        uint8_t b;
        if (read_u8(t, &b) != 0)
            return -1;
        result |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = result;
            return 0;
        }
    }
    return fail(t, "varint longer than 10 bytes");
}

static int64_t unzigzag(uint64_t n)
{
    return (int64_t)(n >> 1) ^ -(int64_t)(n & 1);
}

static int read_zigzag(qk_thrift *t, int64_t *v)
{
    uint64_t raw;
    if (read_varint(t, &raw) != 0)
        return -1;
    *v = unzigzag(raw);
    return 0;
}

int qk_thrift_struct_begin(qk_thrift *t)
{
    if (t->failed)
        return -1;
    if (t->depth >= QK_THRIFT_MAX_DEPTH)
        return fail(t, "structures nested too deeply");
    t->last_id[t->depth++] = 0;
    return 0;
}

int qk_thrift_struct_end(qk_thrift *t)
{
    if (t->failed)
        return -1;
    if (t->depth == 0)
        return fail(t, "struct end without a struct");
    t->depth--;
    return 0;
}

int qk_thrift_field(qk_thrift *t, int16_t *id, int *type)
{
    uint8_t header;
    if (t->depth == 0)
        return fail(t, "field read outside a struct");
    if (read_u8(t, &header) != 0)
        return -1;
    if (header == QK_THRIFT_STOP)
        return 0;
    int field_type = header & 0x0f;
    if (field_type > QK_THRIFT_STRUCT || field_type == QK_THRIFT_STOP) {
        t->pos--; /* report the offset of the bad header */
        return fail(t, "bad field type code");
    }
    int delta = header >> 4;
    int16_t *last = &t->last_id[t->depth - 1];
    if (delta != 0) {
        *id = (int16_t)(*last + delta);
    } else {
        int64_t long_id;
        if (read_zigzag(t, &long_id) != 0)
            return -1;
        if (long_id < INT16_MIN || long_id > INT16_MAX)
            return fail(t, "field id out of range");
        *id = (int16_t)long_id;
    }
    *last = *id;
    t->bool_pending = field_type == QK_THRIFT_TRUE ||
                      field_type == QK_THRIFT_FALSE;
    t->bool_value = field_type == QK_THRIFT_TRUE;
    *type = field_type;
    return 1;
}

int qk_thrift_read_bool(qk_thrift *t, int *v)
{
    if (t->failed)
        return -1;
    if (t->bool_pending) {
        t->bool_pending = 0;
        *v = t->bool_value;
        return 0;
    }
    uint8_t b;
    if (read_u8(t, &b) != 0)
        return -1;
    *v = b == QK_THRIFT_TRUE;
    return 0;
}

int qk_thrift_read_byte(qk_thrift *t, int8_t *v)
{
    uint8_t b;
    if (read_u8(t, &b) != 0)
        return -1;
    *v = (int8_t)b;
    return 0;
}

int qk_thrift_read_i16(qk_thrift *t, int16_t *v)
{
    int64_t wide;
    if (read_zigzag(t, &wide) != 0)
        return -1;
    if (wide < INT16_MIN || wide > INT16_MAX)
        return fail(t, "i16 value out of range");
    *v = (int16_t)wide;
    return 0;
}

int qk_thrift_read_i32(qk_thrift *t, int32_t *v)
{
    int64_t wide;
    if (read_zigzag(t, &wide) != 0)
        return -1;
    if (wide < INT32_MIN || wide > INT32_MAX)
        return fail(t, "i32 value out of range");
    *v = (int32_t)wide;
    return 0;
}

int qk_thrift_read_i64(qk_thrift *t, int64_t *v)
{
    return read_zigzag(t, v);
}

int qk_thrift_read_double(qk_thrift *t, double *v)
{
    if (t->failed)
        return -1;
    if (t->end - t->pos < 8)
        return fail_at_end(t);
    uint64_t bits = 0;
    for (int i = 7; i >= 0; i--)
        bits = (bits << 8) | t->pos[i];
    memcpy(v, &bits, sizeof *v);
    t->pos += 8;
    return 0;
}

int qk_thrift_read_binary(qk_thrift *t, const uint8_t **data, uint32_t *len)
{
    uint64_t n;
    if (read_varint(t, &n) != 0)
        return -1;
    if (n > QK_THRIFT_MAX_STRING)
        return fail(t, "string longer than the 100 MB limit");
    if (n > (uint64_t)(t->end - t->pos))
        return fail_at_end(t);
    *data = t->pos;
    *len = (uint32_t)n;
    t->pos += n;
    return 0;
}

/* Every element of a list or map takes at least one byte, so a count
 * larger than the bytes left is corrupt even below the sanity limit. */
static int check_count(qk_thrift *t, uint64_t count, uint64_t min_bytes)
{
    if (count > QK_THRIFT_MAX_LIST)
        return fail(t, "list longer than the 1M element limit");
    if (count * min_bytes > (uint64_t)(t->end - t->pos))
        return fail_at_end(t);
    return 0;
}

static int valid_elem_type(int type)
{
    return type >= QK_THRIFT_TRUE && type <= QK_THRIFT_STRUCT;
}

int qk_thrift_read_list(qk_thrift *t, int *elem_type, uint32_t *count)
{
    uint8_t header;
    if (read_u8(t, &header) != 0)
        return -1;
    uint64_t n = header >> 4;
    if (n == 15 && read_varint(t, &n) != 0)
        return -1;
    int type = header & 0x0f;
    if (!valid_elem_type(type))
        return fail(t, "bad list element type code");
    if (check_count(t, n, 1) != 0)
        return -1;
    t->bool_pending = 0;
    *elem_type = type;
    *count = (uint32_t)n;
    return 0;
}

int qk_thrift_read_map(qk_thrift *t, int *key_type, int *value_type,
                       uint32_t *count)
{
    uint64_t n;
    if (read_varint(t, &n) != 0)
        return -1;
    *key_type = *value_type = QK_THRIFT_STOP;
    if (n > 0) {
        uint8_t types;
        if (read_u8(t, &types) != 0)
            return -1;
        *key_type = types >> 4;
        *value_type = types & 0x0f;
        if (!valid_elem_type(*key_type) || !valid_elem_type(*value_type))
            return fail(t, "bad map key or value type code");
    }
    if (check_count(t, n, 2) != 0)
        return -1;
    t->bool_pending = 0;
    *count = (uint32_t)n;
    return 0;
}

int qk_thrift_read_struct(qk_thrift *t, qk_thrift_field_fn field, void *ctx)
{
    for (;;) {
        int16_t id;
        int type;
        int r = qk_thrift_field(t, &id, &type);
        if (r < 0)
            return -1;
        if (r == 0)
            return qk_thrift_struct_end(t);
        if (field(t, id, type, ctx) != 0)
            return -1;
    }
}

int qk_thrift_error(qk_thrift *t, const char *what)
{
    return fail(t, what);
}

static int expect_type(qk_thrift *t, int type, int expected)
{
    if (t->failed)
        return -1;
    if (type != expected)
        return fail(t, "field has an unexpected type");
    return 0;
}

int qk_thrift_field_i32(qk_thrift *t, int type, int32_t *v)
{
    if (expect_type(t, type, QK_THRIFT_I32) != 0)
        return -1;
    return qk_thrift_read_i32(t, v);
}

int qk_thrift_field_i64(qk_thrift *t, int type, int64_t *v)
{
    if (expect_type(t, type, QK_THRIFT_I64) != 0)
        return -1;
    return qk_thrift_read_i64(t, v);
}

int qk_thrift_field_bool(qk_thrift *t, int type, int *v)
{
    if (type == QK_THRIFT_FALSE)
        type = QK_THRIFT_TRUE;
    if (expect_type(t, type, QK_THRIFT_TRUE) != 0)
        return -1;
    return qk_thrift_read_bool(t, v);
}

int qk_thrift_field_binary(qk_thrift *t, int type, const uint8_t **data,
                           uint32_t *len)
{
    if (expect_type(t, type, QK_THRIFT_BINARY) != 0)
        return -1;
    return qk_thrift_read_binary(t, data, len);
}

int qk_thrift_field_list(qk_thrift *t, int type, int elem_type,
                         uint32_t *count)
{
    int actual;
    if (expect_type(t, type, QK_THRIFT_LIST) != 0 ||
        qk_thrift_read_list(t, &actual, count) != 0)
        return -1;
    if (*count > 0 && actual != elem_type)
        return fail(t, "list has an unexpected element type");
    return 0;
}

int qk_thrift_field_struct(qk_thrift *t, int type)
{
    if (expect_type(t, type, QK_THRIFT_STRUCT) != 0)
        return -1;
    return qk_thrift_struct_begin(t);
}

static int skip_value(qk_thrift *t, int type, int depth);

static int skip_struct(qk_thrift *t, int depth)
{
    if (qk_thrift_struct_begin(t) != 0)
        return -1;
    for (;;) {
        int16_t id;
        int type;
        int r = qk_thrift_field(t, &id, &type);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        if (skip_value(t, type, depth + 1) != 0)
            return -1;
    }
    return qk_thrift_struct_end(t);
}

static int skip_bytes(qk_thrift *t, uint64_t n)
{
    if (n > (uint64_t)(t->end - t->pos))
        return fail_at_end(t);
    t->pos += n;
    return 0;
}

static int skip_list(qk_thrift *t, int depth)
{
    int elem_type;
    uint32_t count;
    if (qk_thrift_read_list(t, &elem_type, &count) != 0)
        return -1;
    switch (elem_type) {
    case QK_THRIFT_TRUE:
    case QK_THRIFT_FALSE:
    case QK_THRIFT_BYTE:
        return skip_bytes(t, count);
    case QK_THRIFT_DOUBLE:
        return skip_bytes(t, (uint64_t)count * 8);
    default:
        for (uint32_t i = 0; i < count; i++)
            if (skip_value(t, elem_type, depth + 1) != 0)
                return -1;
        return 0;
    }
}

static int skip_map(qk_thrift *t, int depth)
{
    int key_type, value_type;
    uint32_t count;
    if (qk_thrift_read_map(t, &key_type, &value_type, &count) != 0)
        return -1;
    for (uint32_t i = 0; i < count; i++) {
        if (skip_value(t, key_type, depth + 1) != 0 ||
            skip_value(t, value_type, depth + 1) != 0)
            return -1;
    }
    return 0;
}

static int skip_value(qk_thrift *t, int type, int depth)
{
    if (t->failed)
        return -1;
    if (depth > QK_THRIFT_MAX_DEPTH)
        return fail(t, "values nested too deeply");
    int64_t ignored;
    const uint8_t *data;
    uint32_t len;
    int flag;
    switch (type) {
    case QK_THRIFT_TRUE:
    case QK_THRIFT_FALSE:
        return qk_thrift_read_bool(t, &flag);
    case QK_THRIFT_BYTE:
        return skip_bytes(t, 1);
    case QK_THRIFT_I16:
    case QK_THRIFT_I32:
    case QK_THRIFT_I64:
        return read_zigzag(t, &ignored);
    case QK_THRIFT_DOUBLE:
        return skip_bytes(t, 8);
    case QK_THRIFT_BINARY:
        return qk_thrift_read_binary(t, &data, &len);
    case QK_THRIFT_LIST:
    case QK_THRIFT_SET:
        return skip_list(t, depth);
    case QK_THRIFT_MAP:
        return skip_map(t, depth);
    case QK_THRIFT_STRUCT:
        return skip_struct(t, depth);
    default:
        return fail(t, "bad type code");
    }
}

int qk_thrift_skip(qk_thrift *t, int type)
{
    return skip_value(t, type, 0);
}

const char *qk_thrift_type_name(int type)
{
    static const char *const names[] = {
        "stop", "bool", "bool", "byte", "i16", "i32", "i64",
        "double", "binary", "list", "set", "map", "struct"};
    if (type < 0 || type > QK_THRIFT_STRUCT)
        return "unknown";
    return names[type];
}
