/* The Parquet footer: magic numbers, FileMetaData (schema, row groups,
 * column chunks) and the schema tree with definition/repetition levels. */
#include "parquet_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk/thrift.h"

static const char lfs_prefix[] = "version https://git-lfs.github.com/spec/v1";

int pq_str_eq(pq_str s, const char *text)
{
    size_t n = strlen(text);
    return s.len == n && memcmp(s.data, text, n) == 0;
}

/* The field handlers below read one field of a struct each (see
 * qk_thrift_read_struct); unknown fields are skipped. */
static int schema_element_field(qk_thrift *t, int16_t id, int type,
                                void *ctx)
{
    pq_schema_node *n = ctx;
    switch (id) {
    case 1:
        n->has_type = 1;
        return qk_thrift_field_i32(t, type, &n->type);
    case 3:
        return qk_thrift_field_i32(t, type, &n->repetition);
    case 4:
        return qk_thrift_field_binary(t, type, &n->name.data, &n->name.len);
    case 5:
        return qk_thrift_field_i32(t, type, &n->num_children);
    default:
        return qk_thrift_skip(t, type);
    }
}

static int read_schema(qk_thrift *t, int type, pq_file_meta *m)
{
    uint32_t n;
    if (qk_thrift_field_list(t, type, QK_THRIFT_STRUCT, &n) != 0)
        return -1;
    m->schema = qk_calloc(n ? n : 1, sizeof *m->schema);
    m->nschema = n;
    for (uint32_t i = 0; i < n; i++) {
        pq_schema_node *node = &m->schema[i];
        node->repetition = PQ_REQUIRED;
        if (qk_thrift_struct_begin(t) != 0 ||
            qk_thrift_read_struct(t, schema_element_field, node) != 0)
            return -1;
        if (!node->name.data)
            return qk_thrift_error(t, "schema element without a name");
    }
    return 0;
}

static int read_path0(qk_thrift *t, int type, pq_column_meta *m)
{
    uint32_t n;
    if (qk_thrift_field_list(t, type, QK_THRIFT_BINARY, &n) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        pq_str s;
        if (qk_thrift_read_binary(t, &s.data, &s.len) != 0)
            return -1;
        if (i == 0)
            m->path0 = s;
    }
    return 0;
}

static int column_meta_field(qk_thrift *t, int16_t id, int type, void *ctx)
{
    pq_column_meta *m = ctx;
    switch (id) {
    case 1:
        return qk_thrift_field_i32(t, type, &m->type);
    case 3:
        return read_path0(t, type, m);
    case 4:
        return qk_thrift_field_i32(t, type, &m->codec);
    case 5:
        return qk_thrift_field_i64(t, type, &m->num_values);
    case 7:
        return qk_thrift_field_i64(t, type, &m->total_compressed_size);
    case 9:
        return qk_thrift_field_i64(t, type, &m->data_page_offset);
    case 11:
        return qk_thrift_field_i64(t, type, &m->dictionary_page_offset);
    default:
        return qk_thrift_skip(t, type);
    }
}

static int column_chunk_field(qk_thrift *t, int16_t id, int type, void *ctx)
{
    pq_chunk *c = ctx;
    switch (id) {
    case 1:
        c->has_file_path = 1;
        return qk_thrift_skip(t, type);
    case 3:
        c->has_meta = 1;
        c->meta.type = c->meta.codec = -1;
        c->meta.num_values = c->meta.total_compressed_size = -1;
        c->meta.data_page_offset = -1;
        if (qk_thrift_field_struct(t, type) != 0)
            return -1;
        return qk_thrift_read_struct(t, column_meta_field, &c->meta);
    default:
        return qk_thrift_skip(t, type);
    }
}

static int row_group_field(qk_thrift *t, int16_t id, int type, void *ctx)
{
    pq_row_group *rg = ctx;
    uint32_t n;
    switch (id) {
    case 1:
        if (rg->chunks)
            return qk_thrift_error(t, "row group lists its columns twice");
        if (qk_thrift_field_list(t, type, QK_THRIFT_STRUCT, &n) != 0)
            return -1;
        rg->chunks = qk_calloc(n ? n : 1, sizeof *rg->chunks);
        rg->nchunks = n;
        for (uint32_t i = 0; i < n; i++)
            if (qk_thrift_struct_begin(t) != 0 ||
                qk_thrift_read_struct(t, column_chunk_field,
                                      &rg->chunks[i]) != 0)
                return -1;
        return 0;
    case 3:
        return qk_thrift_field_i64(t, type, &rg->num_rows);
    default:
        return qk_thrift_skip(t, type);
    }
}

static int read_row_groups(qk_thrift *t, int type, pq_file_meta *m)
{
    uint32_t n;
    if (m->row_groups)
        return qk_thrift_error(t, "row groups listed twice");
    if (qk_thrift_field_list(t, type, QK_THRIFT_STRUCT, &n) != 0)
        return -1;
    m->row_groups = qk_calloc(n ? n : 1, sizeof *m->row_groups);
    m->nrow_groups = n;
    for (uint32_t i = 0; i < n; i++) {
        m->row_groups[i].num_rows = -1;
        if (qk_thrift_struct_begin(t) != 0 ||
            qk_thrift_read_struct(t, row_group_field, &m->row_groups[i]) != 0)
            return -1;
    }
    return 0;
}

typedef struct key_value {
    pq_str key;
    pq_str value;
} key_value;

static int key_value_field(qk_thrift *t, int16_t id, int type, void *ctx)
{
    key_value *kv = ctx;
    if (id == 1)
        return qk_thrift_field_binary(t, type, &kv->key.data, &kv->key.len);
    if (id == 2)
        return qk_thrift_field_binary(t, type, &kv->value.data,
                                      &kv->value.len);
    return qk_thrift_skip(t, type);
}

static int read_key_values(qk_thrift *t, int type, pq_file_meta *m)
{
    uint32_t n;
    if (qk_thrift_field_list(t, type, QK_THRIFT_STRUCT, &n) != 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        key_value kv = {{NULL, 0}, {NULL, 0}};
        if (qk_thrift_struct_begin(t) != 0 ||
            qk_thrift_read_struct(t, key_value_field, &kv) != 0)
            return -1;
        if (kv.key.data && kv.value.data &&
            pq_str_eq(kv.key, "ARROW:schema"))
            m->arrow_schema = kv.value;
    }
    return 0;
}

static int file_meta_field(qk_thrift *t, int16_t id, int type, void *ctx)
{
    pq_file_meta *m = ctx;
    switch (id) {
    case 2:
        if (m->schema)
            return qk_thrift_error(t, "schema listed twice");
        return read_schema(t, type, m);
    case 3:
        return qk_thrift_field_i64(t, type, &m->num_rows);
    case 4:
        return read_row_groups(t, type, m);
    case 5:
        return read_key_values(t, type, m);
    default:
        return qk_thrift_skip(t, type);
    }
}

int pq_prefix_error(qk_err *err, const char *fmt, ...)
{
    if (err) {
        char prefix[sizeof err->msg], inner[sizeof err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        memcpy(inner, err->msg, sizeof inner);
        qk_fail(err, "%s: %s", prefix, inner);
    }
    return -1;
}

static int parse_file_meta(const uint8_t *footer, size_t len,
                           pq_file_meta *m, qk_err *err)
{
    qk_thrift t;
    qk_thrift_init(&t, footer, len, err);
    m->num_rows = -1;
    if (qk_thrift_struct_begin(&t) != 0 ||
        qk_thrift_read_struct(&t, file_meta_field, m) != 0)
        return pq_prefix_error(err, "corrupt file metadata");
    if (!m->schema || m->nschema == 0)
        return qk_fail(err, "corrupt file metadata: no schema");
    if (m->num_rows < 0)
        return qk_fail(err, "corrupt file metadata: no row count");
    return 0;
}

static int check_container(const uint8_t *buf, size_t len, qk_err *err)
{
    if (len == 0)
        return qk_fail(err, "empty file (0 bytes)");
    size_t lfs_len = sizeof lfs_prefix - 1;
    if (len >= lfs_len && memcmp(buf, lfs_prefix, lfs_len) == 0)
        return qk_fail(err, "Git LFS pointer, not Parquet data: "
                            "run git lfs pull");
    if (len < 4 || memcmp(buf, "PAR1", 4) != 0)
        return qk_fail(err, "not a Parquet file (no PAR1 magic at the "
                            "start)");
    if (len < 12)
        return qk_fail(err, "truncated footer (expected at least 12 bytes, "
                            "found %zu)", len);
    if (memcmp(buf + len - 4, "PAR1", 4) != 0)
        return qk_fail(err, "no PAR1 magic at the end (truncated file?)");
    return 0;
}

int pq_read_footer(const uint8_t *buf, size_t len, pq_file_meta *meta,
                   size_t *data_end, qk_err *err)
{
    memset(meta, 0, sizeof *meta);
    if (check_container(buf, len, err) != 0)
        return -1;
    const uint8_t *p = buf + len - 8;
    uint32_t footer_len = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
                          (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    if ((uint64_t)footer_len > len - 12)
        return qk_fail(err, "truncated footer (footer length %u, but only "
                            "%zu bytes precede it)",
                       footer_len, len - 12);
    *data_end = len - 8 - footer_len;
    return parse_file_meta(buf + *data_end, footer_len, meta, err);
}

void pq_file_meta_free(pq_file_meta *meta)
{
    free(meta->schema);
    if (meta->row_groups)
        for (uint32_t i = 0; i < meta->nrow_groups; i++)
            free(meta->row_groups[i].chunks);
    free(meta->row_groups);
    memset(meta, 0, sizeof *meta);
}

/* Levels accumulated along the path from the root to a node. */
typedef struct path_levels {
    int def;
    int rep;
    int def_before_rep;
} path_levels;

typedef struct schema_walk {
    const pq_file_meta *meta;
    uint32_t next;
    pq_field *field;
    qk_err *err;
} schema_walk;

static int walk_node(schema_walk *w, path_levels levels, int depth)
{
    if (depth > 64)
        return qk_fail(w->err, "corrupt schema: nested too deeply");
    if (w->next >= w->meta->nschema)
        return qk_fail(w->err, "corrupt schema: fewer elements than the "
                               "tree needs");
    const pq_schema_node *node = &w->meta->schema[w->next++];
    if (node->repetition == PQ_OPTIONAL) {
        levels.def++;
    } else if (node->repetition == PQ_REPEATED) {
        if (levels.rep == 0)
            levels.def_before_rep = levels.def;
        levels.def++;
        levels.rep++;
    }
    if (node->num_children < 0)
        return qk_fail(w->err, "corrupt schema: negative child count");
    for (int32_t i = 0; i < node->num_children; i++)
        if (walk_node(w, levels, depth + 1) != 0)
            return -1;
    if (node->num_children == 0) {
        pq_field *f = w->field;
        if (f->nleaves++ == 0) {
            f->leaf = node;
            f->is_leaf = depth == 0;
            f->max_def = levels.def;
            f->max_rep = levels.rep;
            f->def_before_rep = levels.def_before_rep;
        }
    }
    return 0;
}

int pq_build_schema(const pq_file_meta *meta, pq_schema *schema,
                    qk_err *err)
{
    const pq_schema_node *root = &meta->schema[0];
    memset(schema, 0, sizeof *schema);
    if (root->num_children < 0 ||
        (uint32_t)root->num_children > meta->nschema - 1)
        return qk_fail(err, "corrupt schema: root has %d children but "
                            "only %u elements follow",
                       root->num_children, meta->nschema - 1);
    schema->fields = qk_calloc(root->num_children ? root->num_children : 1,
                               sizeof *schema->fields);
    schema->nfields = root->num_children;
    schema_walk w = {meta, 1, NULL, err};
    for (int i = 0; i < schema->nfields; i++) {
        w.field = &schema->fields[i];
        /* the field is named after its top node, which walk_node checks
         * exists */
        path_levels levels = {0, 0, 0};
        uint32_t first = w.next;
        if (walk_node(&w, levels, 0) != 0)
            return -1;
        w.field->name = meta->schema[first].name;
    }
    if (w.next != meta->nschema)
        return qk_fail(err, "corrupt schema: %u elements outside the tree",
                       meta->nschema - w.next);
    return 0;
}

void pq_schema_free(pq_schema *schema)
{
    free(schema->fields);
    schema->fields = NULL;
    schema->nfields = 0;
}

const pq_field *pq_schema_find(const pq_schema *schema, const char *name)
{
    for (int i = 0; i < schema->nfields; i++)
        if (pq_str_eq(schema->fields[i].name, name))
            return &schema->fields[i];
    return NULL;
}

const pq_chunk *pq_find_chunk(const pq_row_group *rg, const char *name)
{
    for (uint32_t i = 0; i < rg->nchunks; i++) {
        const pq_chunk *c = &rg->chunks[i];
        if (c->has_meta && c->meta.path0.data && pq_str_eq(c->meta.path0, name))
            return c;
    }
    return NULL;
}

int pq_chunk_range(const pq_column_meta *m, size_t data_end, uint64_t *start,
                   uint64_t *size, qk_err *err)
{
    int64_t first = m->data_page_offset;
    if (m->dictionary_page_offset > 0 && m->dictionary_page_offset < first)
        first = m->dictionary_page_offset;
    if (first < 4 || m->total_compressed_size < 0 ||
        (uint64_t)first > data_end ||
        (uint64_t)m->total_compressed_size > data_end - (uint64_t)first)
        return qk_fail(err, "column chunk (offset %lld, %lld bytes) runs "
                            "past the data area of the file (%zu bytes)",
                       (long long)first, (long long)m->total_compressed_size,
                       data_end);
    *start = (uint64_t)first;
    *size = (uint64_t)m->total_compressed_size;
    return 0;
}

int qk_parquet_chunk_range(const uint8_t *buf, size_t len, int row_group,
                           const char *column, uint64_t *start,
                           uint64_t *size, qk_err *err)
{
    pq_file_meta meta;
    size_t data_end;
    int rc = -1;
    if (pq_read_footer(buf, len, &meta, &data_end, err) != 0)
        goto done;
    if (row_group < 0 || (uint32_t)row_group >= meta.nrow_groups) {
        qk_fail(err, "no row group %d", row_group);
        goto done;
    }
    const pq_chunk *c = pq_find_chunk(&meta.row_groups[row_group], column);
    if (!c) {
        qk_fail(err, "missing column %s", column);
        goto done;
    }
    rc = pq_chunk_range(&c->meta, data_end, start, size, err);
done:
    pq_file_meta_free(&meta);
    return rc;
}
