/* The tf.train.Example parse kernel (specs/native.md, "Example parse"): a batch of serialized
 * records walked into columns, record by record, in two passes (a scan that counts, a fill
 * that writes).
 *
 * The walk reads the subset of the protobuf wire format whose meaning it is sure of: unknown
 * fields (wire types 0, 1, 2, 5) at every level but inside a map entry, Example.features more
 * than once, a map entry's key and value in either order, several lists in one Feature (the
 * oneof keeps the last kind; lists of that kind since it was set are merged), packed and
 * unpacked numeric values mixed.  Anything else (malformed bytes, groups, over-long tags or
 * lengths, a map entry with its key or value twice or with another field, a name twice in one
 * record) stops the walk with EX_FALLBACK and the protobuf runtime decides, as on the pure
 * path.  Every length is checked against the bytes left before it is used, every write against
 * the output it goes to. */
#ifndef READPLAN_EXAMPLE_H
#define READPLAN_EXAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* The kinds are the Feature field numbers: bytes_list 1, float_list 2, int64_list 3. */
enum ex_kind { EX_NONE = 0, EX_BYTES = 1, EX_FLOAT = 2, EX_INT64 = 3 };

/* Why a walk stopped.  The values are part of the Python contract (records/example/_kernel.py). */
enum ex_status {
    EX_OK = 0,
    EX_FALLBACK = 1, /* a record leaves the subset read here; `at` is its index */
    EX_MISMATCH = 2, /* the fill found other names or counts than the scan (the bytes changed) */
    EX_NOMEM = 3,
};

/* One feature name of the batch, in first-seen order. */
typedef struct {
    const uint8_t *key;
    size_t key_len;
    uint64_t hash;
    int kind;              /* kind of the first record holding a list of it, EX_NONE before */
    int64_t first;         /* that record */
    int other_kind;        /* kind of the first record holding another kind */
    int64_t other;         /* that record, -1 when every holder agrees */
    int64_t total;         /* values over the batch */
    int64_t seen;          /* the last record naming it */
    int64_t cursor, limit; /* fill: next index in its kind's output, and its bound */
} ex_name;

typedef struct {
    ex_name *names;
    size_t count, capacity;
    int32_t *slots; /* open addressing over names, -1 empty; size mask + 1, a power of two */
    size_t mask;
    size_t predicted; /* the name expected next: records usually list names in one order */
} ex_table;

/* The records: record i is data[i][0:size[i]], at offset base[i] of the batch's bytes. */
typedef struct {
    const uint8_t *const *data;
    const size_t *size;
    const int64_t *base;
    size_t n;
} ex_records;

/* Where the fill writes; each name's values go to its kind's array, where the plan says. */
typedef struct {
    int64_t *ints;
    size_t n_ints;
    uint32_t *floats; /* the binary32 words, bit for bit */
    size_t n_floats;
    int64_t *starts, *lengths; /* bytes values, as spans of the batch's bytes */
    size_t n_bytes;
    int64_t *splits;  /* names x (n + 1) */
    uint8_t *present; /* names x n */
    const int64_t *plan; /* names x (kind, first index in its kind's array, values) */
    size_t n_names;
} ex_out;

typedef struct {
    int status;
    int64_t at; /* the record the walk stopped at */
} ex_result;

void ex_table_init(ex_table *t);
void ex_table_free(ex_table *t);

/* Pass 1: every name, its kind(s) and value count, into t. */
ex_result ex_scan(const ex_records *records, ex_table *t);

/* Pass 2: the values, splits and present flags into out, for the names a scan found. */
ex_result ex_fill(const ex_records *records, ex_table *t, const ex_out *out);

#endif
