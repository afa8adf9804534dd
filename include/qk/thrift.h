/* Decoder for the Thrift compact protocol, the encoding of Parquet
 * metadata (file footer and page headers).
 *
 * A reader walks the bytes with a cursor: qk_thrift_struct_begin, then
 * qk_thrift_field in a loop until it reports the end of the struct, reading
 * or skipping each field's value, then qk_thrift_struct_end.  Every read is
 * bounds-checked; the first error is sticky (later calls fail too) and its
 * message is left in the qk_err given to qk_thrift_init. */
#ifndef QK_THRIFT_H
#define QK_THRIFT_H

#include <stddef.h>
#include <stdint.h>

#include "qk/common.h"

/* Type codes of the compact protocol. */
enum {
    QK_THRIFT_STOP = 0,
    QK_THRIFT_TRUE = 1,   /* a bool field whose value is in its header */
    QK_THRIFT_FALSE = 2,
    QK_THRIFT_BYTE = 3,
    QK_THRIFT_I16 = 4,
    QK_THRIFT_I32 = 5,
    QK_THRIFT_I64 = 6,
    QK_THRIFT_DOUBLE = 7,
    QK_THRIFT_BINARY = 8,
    QK_THRIFT_LIST = 9,
    QK_THRIFT_SET = 10,
    QK_THRIFT_MAP = 11,
    QK_THRIFT_STRUCT = 12
};

/* Sanity limits: anything larger is treated as corrupt data. */
#define QK_THRIFT_MAX_DEPTH 64
#define QK_THRIFT_MAX_STRING (100u * 1024u * 1024u)
#define QK_THRIFT_MAX_LIST (1u << 20)

typedef struct qk_thrift {
    const uint8_t *start;
    const uint8_t *pos;
    const uint8_t *end;
    /* last field id of each open struct (the ids are delta-encoded) */
    int16_t last_id[QK_THRIFT_MAX_DEPTH];
    int depth;
    /* value of a bool field carried in the field header, if pending */
    int bool_pending;
    int bool_value;
    int failed;
    qk_err *err;
} qk_thrift;

void qk_thrift_init(qk_thrift *t, const uint8_t *buf, size_t len,
                    qk_err *err);
/* Bytes consumed so far. */
size_t qk_thrift_offset(const qk_thrift *t);

int qk_thrift_struct_begin(qk_thrift *t);
int qk_thrift_struct_end(qk_thrift *t);
/* Reads the next field header of the open struct.  Returns 1 with *id and
 * *type set, 0 at the end of the struct (STOP), -1 on error. */
int qk_thrift_field(qk_thrift *t, int16_t *id, int *type);

/* Value readers.  read_bool takes the value from the field header when the
 * field was a bool, else reads one byte (bools inside lists). */
int qk_thrift_read_bool(qk_thrift *t, int *v);
int qk_thrift_read_byte(qk_thrift *t, int8_t *v);
int qk_thrift_read_i16(qk_thrift *t, int16_t *v);
int qk_thrift_read_i32(qk_thrift *t, int32_t *v);
int qk_thrift_read_i64(qk_thrift *t, int64_t *v);
int qk_thrift_read_double(qk_thrift *t, double *v);
/* Points *data into the buffer (no copy); *len is the byte length. */
int qk_thrift_read_binary(qk_thrift *t, const uint8_t **data, uint32_t *len);
/* List or set header: element type and element count. */
int qk_thrift_read_list(qk_thrift *t, int *elem_type, uint32_t *count);
/* Map header: key and value types (unset when the map is empty). */
int qk_thrift_read_map(qk_thrift *t, int *key_type, int *value_type,
                       uint32_t *count);

/* Reads the fields of an open struct up to its STOP, calling
 * field(t, id, type, ctx) for each (which must read or skip the value),
 * then closes the struct.  Returns 0 or -1. */
typedef int (*qk_thrift_field_fn)(qk_thrift *t, int16_t id, int type,
                                  void *ctx);
int qk_thrift_read_struct(qk_thrift *t, qk_thrift_field_fn field, void *ctx);

/* Field readers that first check the type from the field header: a field
 * of another type is corrupt data. */
int qk_thrift_field_i32(qk_thrift *t, int type, int32_t *v);
int qk_thrift_field_i64(qk_thrift *t, int type, int64_t *v);
int qk_thrift_field_bool(qk_thrift *t, int type, int *v);
int qk_thrift_field_binary(qk_thrift *t, int type, const uint8_t **data,
                           uint32_t *len);
/* A list field whose elements must have type elem_type. */
int qk_thrift_field_list(qk_thrift *t, int type, int elem_type,
                         uint32_t *count);
/* Checks that a struct field has type struct and opens it. */
int qk_thrift_field_struct(qk_thrift *t, int type);

/* Records a decoding error found by the caller (e.g. a field of the wrong
 * type), with the current byte offset; returns -1. */
int qk_thrift_error(qk_thrift *t, const char *what);

/* Skips one value of the given type, nested to any depth up to
 * QK_THRIFT_MAX_DEPTH. */
int qk_thrift_skip(qk_thrift *t, int type);

/* Name of a compact type code, for messages ("i32", "struct", ...). */
const char *qk_thrift_type_name(int type);

#endif
