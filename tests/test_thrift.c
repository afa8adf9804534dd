/* Tests of the Thrift compact protocol decoder on hand-built bytes. */
#include <stdint.h>
#include <string.h>

#include "qk/thrift.h"
#include "testutil.h"

/* A struct with one field of every type, in field-id order:
 *  1 i32 -3, 2 i64 1<<40, 3 bool true, 4 bool false, 5 byte -2,
 *  6 i16 300, 7 double 1.5, 8 binary "abc", 9 list<i32> {1,-1,2},
 *  10 set<i64> {7}, 11 map<binary,i32> {"k": 5},
 *  12 struct {1 i32 42, 20 i32 9 (long-form id)}, then 13 i32 77 (delta
 *  from the outer id 12), then -7 i32 8 (long-form negative id). */
static const uint8_t all_types[] = {
    0x15, 0x05,                         /* 1: i32 zigzag(-3) = 5 */
    0x16, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, /* 2: i64 zigzag(2^40) = 2^41 */
    0x11,                               /* 3: bool true in the header */
    0x12,                               /* 4: bool false */
    0x13, 0xfe,                         /* 5: byte -2 */
    0x14, 0xd8, 0x04,                   /* 6: i16 zigzag(300) = 600 */
    0x17, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, /* 7: double 1.5 LE */
    0x18, 0x03, 'a', 'b', 'c',          /* 8: binary "abc" */
    0x19, 0x35, 0x02, 0x01, 0x04,       /* 9: list of 3 i32: 1, -1, 2 */
    0x1a, 0x16, 0x0e,                   /* 10: set of 1 i64: 7 */
    0x1b, 0x01, 0x85, 0x01, 'k', 0x0a,  /* 11: map 1 entry binary->i32 */
    0x1c,                               /* 12: struct */
    0x15, 0x54,                         /*   1: i32 42 */
    0x05, 0x28, 0x12,                   /*   20 (long form): i32 9 */
    0x00,                               /*   stop */
    0x15, 0x9a, 0x01,                   /* 13: i32 77 */
    0x05, 0x0d, 0x10,                   /* -7 (long form): i32 8 */
    0x00};                              /* stop */

START_TEST(t_every_type)
{
    qk_err err;
    qk_thrift t;
    qk_thrift_init(&t, all_types, sizeof all_types, &err);
    ck_assert_int_eq(qk_thrift_struct_begin(&t), 0);
    int16_t id;
    int type;
    int32_t i32;
    int64_t i64;
    int8_t i8;
    int16_t i16;
    double dbl;
    int flag;
    const uint8_t *data;
    uint32_t len, count;
    int et, kt, vt;

    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(id, 1);
    ck_assert_int_eq(qk_thrift_field_i32(&t, type, &i32), 0);
    ck_assert_int_eq(i32, -3);

    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(id, 2);
    ck_assert_int_eq(qk_thrift_field_i64(&t, type, &i64), 0);
    ck_assert(i64 == (INT64_C(1) << 40));

    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(id, 3);
    ck_assert_int_eq(qk_thrift_field_bool(&t, type, &flag), 0);
    ck_assert_int_eq(flag, 1);

    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(id, 4);
    ck_assert_int_eq(qk_thrift_read_bool(&t, &flag), 0);
    ck_assert_int_eq(flag, 0);

    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(type, QK_THRIFT_BYTE);
    ck_assert_int_eq(qk_thrift_read_byte(&t, &i8), 0);
    ck_assert_int_eq(i8, -2);

    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(type, QK_THRIFT_I16);
    ck_assert_int_eq(qk_thrift_read_i16(&t, &i16), 0);
    ck_assert_int_eq(i16, 300);

    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(type, QK_THRIFT_DOUBLE);
    ck_assert_int_eq(qk_thrift_read_double(&t, &dbl), 0);
    ck_assert(dbl == 1.5);

    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(qk_thrift_field_binary(&t, type, &data, &len), 0);
    ck_assert_uint_eq(len, 3);
    ck_assert(memcmp(data, "abc", 3) == 0);

    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(id, 9);
    ck_assert_int_eq(qk_thrift_field_list(&t, type, QK_THRIFT_I32, &count),
                     0);
    ck_assert_uint_eq(count, 3);
    int32_t expect_list[3] = {1, -1, 2};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(qk_thrift_read_i32(&t, &i32), 0);
        ck_assert_int_eq(i32, expect_list[i]);
    }

    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(type, QK_THRIFT_SET);
    ck_assert_int_eq(qk_thrift_read_list(&t, &et, &count), 0);
    ck_assert_int_eq(et, QK_THRIFT_I64);
    ck_assert_uint_eq(count, 1);
    ck_assert_int_eq(qk_thrift_read_i64(&t, &i64), 0);
    ck_assert(i64 == 7);

    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(type, QK_THRIFT_MAP);
    ck_assert_int_eq(qk_thrift_read_map(&t, &kt, &vt, &count), 0);
    ck_assert_int_eq(kt, QK_THRIFT_BINARY);
    ck_assert_int_eq(vt, QK_THRIFT_I32);
    ck_assert_uint_eq(count, 1);
    ck_assert_int_eq(qk_thrift_read_binary(&t, &data, &len), 0);
    ck_assert(len == 1 && data[0] == 'k');
    ck_assert_int_eq(qk_thrift_read_i32(&t, &i32), 0);
    ck_assert_int_eq(i32, 5);

    /* the nested struct has its own field ids */
    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(id, 12);
    ck_assert_int_eq(qk_thrift_field_struct(&t, type), 0);
    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(id, 1);
    ck_assert_int_eq(qk_thrift_read_i32(&t, &i32), 0);
    ck_assert_int_eq(i32, 42);
    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(id, 20);
    ck_assert_int_eq(qk_thrift_read_i32(&t, &i32), 0);
    ck_assert_int_eq(i32, 9);
    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 0);
    ck_assert_int_eq(qk_thrift_struct_end(&t), 0);

    /* back in the outer struct, the delta continues from id 12 */
    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(id, 13);
    ck_assert_int_eq(qk_thrift_read_i32(&t, &i32), 0);
    ck_assert_int_eq(i32, 77);
    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(id, -7);
    ck_assert_int_eq(qk_thrift_read_i32(&t, &i32), 0);
    ck_assert_int_eq(i32, 8);
    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 0);
    ck_assert_int_eq(qk_thrift_struct_end(&t), 0);
    ck_assert_uint_eq(qk_thrift_offset(&t), sizeof all_types);
}
END_TEST

START_TEST(t_long_list_and_bools)
{
    /* 20 i32 elements (long-form size), then a list of 3 bools */
    uint8_t buf[64];
    size_t n = 0;
    buf[n++] = 0xf5;
    buf[n++] = 20;
    for (int i = 0; i < 20; i++)
        buf[n++] = (uint8_t)(2 * i); /* zigzag of i */
    buf[n++] = 0x31;                 /* 3 elements of type bool */
    buf[n++] = 1;
    buf[n++] = 2;
    buf[n++] = 1;
    qk_err err;
    qk_thrift t;
    qk_thrift_init(&t, buf, n, &err);
    int et;
    uint32_t count;
    ck_assert_int_eq(qk_thrift_read_list(&t, &et, &count), 0);
    ck_assert_int_eq(et, QK_THRIFT_I32);
    ck_assert_uint_eq(count, 20);
    for (int i = 0; i < 20; i++) {
        int32_t v;
        ck_assert_int_eq(qk_thrift_read_i32(&t, &v), 0);
        ck_assert_int_eq(v, i);
    }
    ck_assert_int_eq(qk_thrift_read_list(&t, &et, &count), 0);
    ck_assert_int_eq(et, QK_THRIFT_TRUE);
    ck_assert_uint_eq(count, 3);
    int expect[3] = {1, 0, 1};
    for (int i = 0; i < 3; i++) {
        int v;
        ck_assert_int_eq(qk_thrift_read_bool(&t, &v), 0);
        ck_assert_int_eq(v, expect[i]);
    }
    ck_assert_uint_eq(qk_thrift_offset(&t), n);
}
END_TEST

START_TEST(t_integer_limits)
{
    /* i32 INT32_MIN, i64 INT64_MIN, i64 INT64_MAX, i32 out of range */
    static const uint8_t buf[] = {
        0xff, 0xff, 0xff, 0xff, 0x0f,                               /* i32 */
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* i64 */
        0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* i64 */
        0x80, 0x80, 0x80, 0x80, 0x10};                             /* i32 */
    qk_err err;
    qk_thrift t;
    qk_thrift_init(&t, buf, sizeof buf, &err);
    int32_t i32;
    int64_t i64;
    ck_assert_int_eq(qk_thrift_read_i32(&t, &i32), 0);
    ck_assert_int_eq(i32, INT32_MIN);
    ck_assert_int_eq(qk_thrift_read_i64(&t, &i64), 0);
    ck_assert(i64 == INT64_MIN);
    ck_assert_int_eq(qk_thrift_read_i64(&t, &i64), 0);
    ck_assert(i64 == INT64_MAX);
    ck_assert_int_eq(qk_thrift_read_i32(&t, &i32), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "out of range"));
}
END_TEST

/* Unknown fields of every type around one known field (id 30, i32). */
static const uint8_t skip_me[] = {
    0x11,                               /* 1: bool */
    0x13, 0x7f,                         /* 2: byte */
    0x14, 0x03,                         /* 3: i16 */
    0x15, 0x80, 0x01,                   /* 4: i32 */
    0x16, 0x02,                         /* 5: i64 */
    0x17, 1, 2, 3, 4, 5, 6, 7, 8,       /* 6: double */
    0x18, 0x02, 'h', 'i',               /* 7: binary */
    0x19, 0x27, 0, 0, 0, 0, 0, 0, 0, 0, /* 8: list of 2 doubles */
    1, 2, 3, 4, 5, 6, 7, 8,
    0x1a, 0x21, 1,                      /* 9: set of 2 bools */
    2,
    0x1b, 0x02, 0x57, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, /* 10: map i32->dbl */
    0x03, 0, 0, 0, 0, 0, 0, 0, 0,
    0x19, 0x2c,                         /* 11: list of 2 structs */
    0x15, 0x02, 0x19, 0x1c, 0x11, 0x00, 0x00, /* {1 i32, 2 list<struct>} */
    0x1b, 0x00, 0x00,                   /* {1 empty map} */
    0x1c, 0x1c, 0x1c, 0x00, 0x00, 0x00, /* 12: struct in struct in struct */
    0x1b, 0x01, 0x89, 0x01, 'k',        /* 13: map binary->list<i64> */
    0x26, 0x02, 0x04,
    0x05, 0x3c, 0x54,                   /* 30 (long form): i32 42 */
    0x00};

START_TEST(t_skip_every_type)
{
    qk_err err;
    qk_thrift t;
    qk_thrift_init(&t, skip_me, sizeof skip_me, &err);
    ck_assert_int_eq(qk_thrift_struct_begin(&t), 0);
    int found = 0;
    for (;;) {
        int16_t id;
        int type;
        int r = qk_thrift_field(&t, &id, &type);
        ck_assert_int_ge(r, 0);
        if (r == 0)
            break;
        if (id == 30) {
            int32_t v;
            ck_assert_int_eq(qk_thrift_field_i32(&t, type, &v), 0);
            ck_assert_int_eq(v, 42);
            found = 1;
        } else {
            ck_assert_msg(qk_thrift_skip(&t, type) == 0, "skip of field %d: %s",
                          id, err.msg);
        }
    }
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(qk_thrift_struct_end(&t), 0);
    ck_assert_uint_eq(qk_thrift_offset(&t), sizeof skip_me);

    /* skipping the whole thing as one struct consumes it exactly */
    qk_thrift_init(&t, skip_me, sizeof skip_me, &err);
    ck_assert_int_eq(qk_thrift_skip(&t, QK_THRIFT_STRUCT), 0);
    ck_assert_uint_eq(qk_thrift_offset(&t), sizeof skip_me);
}
END_TEST

START_TEST(t_truncated_input_fails)
{
    /* every proper prefix of both sequences is an error, not a crash */
    const uint8_t *seqs[2] = {all_types, skip_me};
    size_t lens[2] = {sizeof all_types, sizeof skip_me};
    for (int s = 0; s < 2; s++) {
        for (size_t n = 0; n < lens[s]; n++) {
            qk_err err;
            qk_thrift t;
            qk_thrift_init(&t, seqs[s], n, &err);
            ck_assert_msg(qk_thrift_skip(&t, QK_THRIFT_STRUCT) == -1,
                          "prefix %zu of sequence %d accepted", n, s);
            ck_assert_ptr_nonnull(strstr(err.msg, "unexpected end"));
            ck_assert_uint_le(qk_thrift_offset(&t), n);
        }
    }
}
END_TEST

static const char *skip_error(const uint8_t *buf, size_t len, qk_err *err)
{
    qk_thrift t;
    qk_thrift_init(&t, buf, len, err);
    ck_assert_int_eq(qk_thrift_skip(&t, QK_THRIFT_STRUCT), -1);
    return err->msg;
}

START_TEST(t_garbage_fails)
{
    qk_err err;
    static const uint8_t bad_type[] = {0x1d, 0x00};
    ck_assert_ptr_nonnull(
        strstr(skip_error(bad_type, sizeof bad_type, &err), "bad field type"));
    static const uint8_t bad_elem[] = {0x19, 0x1d, 0x00};
    ck_assert_ptr_nonnull(strstr(skip_error(bad_elem, sizeof bad_elem, &err),
                                 "bad list element type"));
    /* a list of 2^21 elements is over the 1M limit */
    static const uint8_t huge_list[] = {0x19, 0xf5, 0x80, 0x80, 0x80, 0x01};
    ck_assert_ptr_nonnull(strstr(skip_error(huge_list, sizeof huge_list, &err),
                                 "1M element limit"));
    /* a list claiming more elements than there are bytes */
    static const uint8_t short_list[] = {0x19, 0xf5, 0x64, 0x02, 0x00};
    ck_assert_ptr_nonnull(strstr(
        skip_error(short_list, sizeof short_list, &err), "unexpected end"));
    /* a string of 200 MB */
    static const uint8_t huge_string[] = {0x18, 0x80, 0x80, 0x80, 0x60};
    ck_assert_ptr_nonnull(strstr(
        skip_error(huge_string, sizeof huge_string, &err), "100 MB"));
    /* an 11-byte varint */
    static const uint8_t long_varint[] = {0x15, 0xff, 0xff, 0xff, 0xff,
                                          0xff, 0xff, 0xff, 0xff, 0xff,
                                          0xff, 0x01, 0x00};
    ck_assert_ptr_nonnull(strstr(
        skip_error(long_varint, sizeof long_varint, &err), "varint"));
    /* a map with a bad value type */
    static const uint8_t bad_map[] = {0x1b, 0x01, 0x5f, 0x00, 0x00};
    ck_assert_ptr_nonnull(
        strstr(skip_error(bad_map, sizeof bad_map, &err), "bad map"));
    /* structs nested 100 deep */
    uint8_t deep[201];
    for (int i = 0; i < 100; i++) {
        deep[i] = 0x1c;
        deep[100 + i] = 0x00;
    }
    deep[200] = 0x00;
    ck_assert_ptr_nonnull(
        strstr(skip_error(deep, sizeof deep, &err), "nested too deeply"));
    /* lists nested 100 deep */
    uint8_t deep_list[102];
    deep_list[0] = 0x19;
    for (int i = 1; i <= 100; i++)
        deep_list[i] = 0x19;
    deep_list[101] = 0x00;
    ck_assert_ptr_nonnull(strstr(skip_error(deep_list, sizeof deep_list, &err),
                                 "nested too deeply"));
}
END_TEST

START_TEST(t_wrong_field_type_fails)
{
    static const uint8_t buf[] = {0x18, 0x01, 'x', 0x00};
    qk_err err;
    qk_thrift t;
    qk_thrift_init(&t, buf, sizeof buf, &err);
    int16_t id;
    int type;
    int32_t v;
    ck_assert_int_eq(qk_thrift_struct_begin(&t), 0);
    ck_assert_int_eq(qk_thrift_field(&t, &id, &type), 1);
    ck_assert_int_eq(qk_thrift_field_i32(&t, type, &v), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unexpected type"));
    /* the error is sticky */
    ck_assert_int_eq(qk_thrift_skip(&t, type), -1);
}
END_TEST

START_TEST(t_random_bytes_never_crash)
{
    /* xorshift bytes, skipped as a struct: must end with 0 or -1 */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    uint8_t buf[256];
    int errors = 0;
    for (int iter = 0; iter < 5000; iter++) {
        size_t n = (size_t)(x % sizeof buf);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = (uint8_t)x;
        }
        qk_err err;
        qk_thrift t;
        qk_thrift_init(&t, buf, n, &err);
        int r = qk_thrift_skip(&t, QK_THRIFT_STRUCT);
        ck_assert(r == 0 || r == -1);
        ck_assert_uint_le(qk_thrift_offset(&t), n);
        errors += r != 0;
    }
    ck_assert_int_gt(errors, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("thrift");
    TCase *tc = tcase_create("compact");
    tcase_add_test(tc, t_every_type);
    tcase_add_test(tc, t_long_list_and_bools);
    tcase_add_test(tc, t_integer_limits);
    tcase_add_test(tc, t_skip_every_type);
    tcase_add_test(tc, t_truncated_input_fails);
    tcase_add_test(tc, t_garbage_fails);
    tcase_add_test(tc, t_wrong_field_type_fails);
    tcase_add_test(tc, t_random_bytes_never_crash);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
