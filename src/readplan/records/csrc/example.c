#include "example.h"

#include <stdlib.h>
#include <string.h>

/* Wire types (the low 3 bits of a tag). */
#define WT_VARINT 0
#define WT_I64 1
#define WT_LEN 2
#define WT_I32 5

typedef struct {
    const uint8_t *p, *end;
} cursor;

/* A varint of at most 10 bytes; bits past 64 of a 10th byte are dropped, as the runtime does. */
static inline int read_varint(cursor *c, uint64_t *out) {
    const uint8_t *p = c->p;
    uint64_t v = 0;
    for (int i = 0; i < 10 && p < c->end; i++) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            c->p = p;
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* A tag (below 2^32) or a length (below 2^31): a varint of at most 5 bytes without padding
 * (a last byte of 0 after others).  Other spellings are left to the runtime. */
static inline int read_short(cursor *c, uint64_t *out, uint64_t most) {
    const uint8_t *start = c->p;
    if (read_varint(c, out) < 0 || c->p - start > 5 || *out > most ||
        (c->p - start > 1 && c->p[-1] == 0))
        return -1;
    return 0;
}

/* The next field: its number, wire type and (for WT_LEN) payload.  -1 at a malformed field. */
typedef struct {
    uint32_t number;
    int wire;
    uint64_t value; /* of a varint field */
    cursor payload; /* of the other wire types */
} field;

static inline int next_field(cursor *c, field *f) {
    uint64_t tag, length;
    if (read_short(c, &tag, 0xFFFFFFFFu) < 0 || (tag >> 3) == 0)
        return -1;
    f->number = (uint32_t)(tag >> 3);
    f->wire = (int)(tag & 7);
    f->payload = (cursor){c->p, c->p};
    switch (f->wire) {
    case WT_VARINT:
        return read_varint(c, &f->value);
    case WT_I64:
    case WT_I32: {
        size_t width = f->wire == WT_I64 ? 8 : 4;
        if ((size_t)(c->end - c->p) < width)
            return -1;
        f->payload.p = c->p;
        c->p += width;
        f->payload.end = c->p;
        return 0;
    }
    case WT_LEN:
        if (read_short(c, &length, 0x7FFFFFFFu) < 0 || length > (uint64_t)(c->end - c->p))
            return -1;
        f->payload.p = c->p;
        c->p += length;
        f->payload.end = c->p;
        return 0;
    default: /* groups and invalid wire types */
        return -1;
    }
}

/* --- the name table --------------------------------------------------------------------- */

void ex_table_init(ex_table *t) { memset(t, 0, sizeof *t); }

void ex_table_free(ex_table *t) {
    free(t->names);
    free(t->slots);
    ex_table_init(t);
}

static uint64_t hash_key(const uint8_t *key, size_t len) {
    uint64_t h = 0xCBF29CE484222325ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ key[i]) * 0x100000001B3ull;
    return h;
}

static int grow_slots(ex_table *t) {
    size_t size = t->slots ? 2 * (t->mask + 1) : 64;
    int32_t *slots = malloc(size * sizeof *slots);
    if (slots == NULL)
        return -1;
    memset(slots, 0xFF, size * sizeof *slots);
    for (size_t i = 0; i < t->count; i++) {
        size_t s = (size_t)t->names[i].hash & (size - 1);
        while (slots[s] >= 0)
            s = (s + 1) & (size - 1);
        slots[s] = (int32_t)i;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = size - 1;
    return 0;
}

static inline int same_key(const ex_name *name, const uint8_t *key, size_t len) {
    return name->key_len == len && memcmp(name->key, key, len) == 0;
}

/* The index of the name, added when `add`; -1 when absent (and not added), -2 out of memory. */
static int64_t find_name(ex_table *t, const uint8_t *key, size_t len, int add) {
    size_t guess = t->predicted;
    if (guess < t->count && same_key(&t->names[guess], key, len)) {
        t->predicted = guess + 1;
        return (int64_t)guess;
    }
    uint64_t h = hash_key(key, len);
    if (t->slots == NULL && grow_slots(t) < 0)
        return -2;
    size_t s = (size_t)h & t->mask;
    for (; t->slots[s] >= 0; s = (s + 1) & t->mask) {
        ex_name *name = &t->names[t->slots[s]];
        if (name->hash == h && same_key(name, key, len)) {
            t->predicted = (size_t)t->slots[s] + 1;
            return t->slots[s];
        }
    }
    if (!add)
        return -1;
    if (t->count == t->capacity) {
        size_t capacity = t->capacity ? 2 * t->capacity : 16;
        ex_name *names = realloc(t->names, capacity * sizeof *names);
        if (names == NULL || capacity > INT32_MAX) {
            if (names != NULL)
                t->names = names;
            return -2;
        }
        t->names = names;
        t->capacity = capacity;
    }
    ex_name *name = &t->names[t->count];
    memset(name, 0, sizeof *name);
    name->key = key;
    name->key_len = len;
    name->hash = h;
    name->first = name->other = name->seen = -1;
    t->slots[s] = (int32_t)t->count;
    t->count++;
    t->predicted = t->count;
    if (2 * t->count > t->mask && grow_slots(t) < 0)
        return -2;
    return (int64_t)t->count - 1;
}

/* --- one Feature ------------------------------------------------------------------------- */

static inline int is_list(const field *f) {
    return f->wire == WT_LEN && f->number >= EX_BYTES && f->number <= EX_INT64;
}

/* A Feature's list fields: the kind of the last (EX_NONE without any), where the run of that
 * kind starts, how many there are, and the last one's payload. */
typedef struct {
    int kind, lists;
    const uint8_t *run;
    cursor last;
} feature_lists;

static int feature_kind(cursor feature, feature_lists *found) {
    field f;
    *found = (feature_lists){EX_NONE, 0, feature.p, feature};
    while (feature.p < feature.end) {
        const uint8_t *at = feature.p;
        if (next_field(&feature, &f) < 0)
            return -1;
        if (!is_list(&f))
            continue;
        found->lists++;
        found->last = f.payload;
        if ((int)f.number != found->kind) {
            found->kind = (int)f.number;
            found->run = at;
        }
    }
    return 0;
}

/* Where one list's values go: counted only (scan), or written from `at` below `limit`. */
typedef struct {
    const ex_out *out; /* NULL: count only */
    int64_t count;     /* values seen */
    int64_t at, limit;
    int64_t base; /* the record's offset in the batch, for bytes spans */
    const uint8_t *record;
} sink;

static inline int put_int(sink *s, uint64_t v) {
    if (s->out != NULL) {
        if (s->at >= s->limit)
            return -1;
        s->out->ints[s->at++] = (int64_t)v;
    }
    s->count++;
    return 0;
}

static int int64_values(cursor list, sink *s) {
    field f;
    while (list.p < list.end) {
        if (next_field(&list, &f) < 0)
            return -1;
        if (f.number != 1)
            continue;
        uint64_t v;
        if (f.wire == WT_VARINT) {
            if (put_int(s, f.value) < 0)
                return -1;
        } else if (f.wire == WT_LEN) {
            while (f.payload.p < f.payload.end)
                if (read_varint(&f.payload, &v) < 0 || put_int(s, v) < 0)
                    return -1;
        }
    }
    return 0;
}

static inline int put_words(sink *s, const uint8_t *p, size_t words) {
    if (s->out != NULL) {
        if ((int64_t)words > s->limit - s->at)
            return -1;
        memcpy(s->out->floats + s->at, p, 4 * words);
        s->at += (int64_t)words;
    }
    s->count += (int64_t)words;
    return 0;
}

static int float_values(cursor list, sink *s) {
    field f;
    while (list.p < list.end) {
        if (next_field(&list, &f) < 0)
            return -1;
        if (f.number != 1 || (f.wire != WT_I32 && f.wire != WT_LEN))
            continue;
        size_t size = (size_t)(f.payload.end - f.payload.p);
        if (size % 4 != 0 || put_words(s, f.payload.p, size / 4) < 0)
            return -1;
    }
    return 0;
}

static int bytes_values(cursor list, sink *s) {
    field f;
    while (list.p < list.end) {
        if (next_field(&list, &f) < 0)
            return -1;
        if (f.number != 1 || f.wire != WT_LEN)
            continue;
        if (s->out != NULL) {
            if (s->at >= s->limit)
                return -1;
            s->out->starts[s->at] = s->base + (f.payload.p - s->record);
            s->out->lengths[s->at++] = f.payload.end - f.payload.p;
        }
        s->count++;
    }
    return 0;
}

static int list_values(int kind, cursor list, sink *s) {
    return kind == EX_INT64   ? int64_values(list, s)
           : kind == EX_FLOAT ? float_values(list, s)
                              : bytes_values(list, s);
}

/* The lists before `run` that a later kind replaced: the runtime reads (and checks) them too. */
static int check_replaced(cursor feature, const uint8_t *run) {
    field f;
    feature.end = run;
    while (feature.p < feature.end) {
        sink counter = {NULL, 0, 0, 0, 0, NULL};
        if (next_field(&feature, &f) < 0 ||
            (is_list(&f) && list_values((int)f.number, f.payload, &counter) < 0))
            return -1;
    }
    return 0;
}

/* The values of the Feature's lists of `kind` from `run` on. */
static int feature_values(cursor feature, int kind, sink *s) {
    field f;
    while (feature.p < feature.end) {
        if (next_field(&feature, &f) < 0)
            return -1;
        if (f.wire != WT_LEN || (int)f.number != kind)
            continue;
        if (list_values(kind, f.payload, s) < 0)
            return -1;
    }
    return 0;
}

/* --- records ----------------------------------------------------------------------------- */

typedef struct {
    const ex_records *records;
    ex_table *table;
    const ex_out *out; /* NULL while scanning */
    int64_t index;
    const uint8_t *record;
    int status;
} walk;

/* A name's kind bookkeeping during the scan. */
static void note_kind(ex_name *name, int kind, int64_t index) {
    if (name->kind == EX_NONE) {
        name->kind = kind;
        name->first = index;
    } else if (kind != name->kind && name->other < 0) {
        name->other_kind = kind;
        name->other = index;
    }
}

/* A name first met by the fill: its kind and output span, as the scan planned them. */
static int plan_name(walk *w, int64_t id, ex_name *name) {
    if ((size_t)id >= w->out->n_names) {
        w->status = EX_MISMATCH;
        return -1;
    }
    const int64_t *plan = w->out->plan + 3 * id;
    name->kind = (int)plan[0];
    name->cursor = plan[1];
    name->limit = plan[1] + plan[2];
    return 0;
}

/* The values of a name's Feature in this record: counted (scan) or written (fill). */
static int take_values(walk *w, int64_t id, ex_name *name, cursor value) {
    feature_lists found;
    if (feature_kind(value, &found) < 0 ||
        (found.lists > 1 && check_replaced(value, found.run) < 0))
        return -1;
    if (found.kind == EX_NONE)
        return 0;
    sink s = {w->out, 0, name->cursor, name->limit, w->records->base[w->index], w->record};
    if (w->out != NULL) {
        if (found.kind != name->kind) {
            w->status = EX_MISMATCH;
            return -1;
        }
        w->out->present[(size_t)id * w->records->n + (size_t)w->index] = 1;
    }
    value.p = found.run;
    /* One list field, the usual case: its payload is known already. */
    if ((found.lists == 1 ? list_values(found.kind, found.last, &s)
                          : feature_values(value, found.kind, &s)) < 0)
        return -1;
    if (w->out == NULL) {
        note_kind(name, found.kind, w->index);
        name->total += s.count;
    } else {
        name->cursor = s.at;
    }
    return 0;
}

static int take_entry(walk *w, cursor key, cursor value) {
    int64_t id = find_name(w->table, key.p, (size_t)(key.end - key.p), 1);
    if (id < 0) {
        w->status = EX_NOMEM;
        return -1;
    }
    ex_name *name = &w->table->names[id];
    if (w->out != NULL && name->seen < 0 && plan_name(w, id, name) < 0)
        return -1;
    if (name->seen == w->index)
        return -1; /* a name twice in one record: the runtime keeps the last */
    name->seen = w->index;
    return take_values(w, id, name, value);
}

/* A map entry: the key (field 1, "" when absent) and the Feature (field 2), each at most once,
 * and nothing else. */
static int walk_entry(walk *w, cursor entry) {
    cursor key = {entry.p, entry.p}, value = {entry.p, entry.p};
    int keys = 0, values = 0;
    field f;
    while (entry.p < entry.end) {
        if (next_field(&entry, &f) < 0)
            return -1;
        if (f.wire == WT_LEN && f.number == 1) {
            key = f.payload;
            keys++;
        } else if (f.wire == WT_LEN && f.number == 2) {
            value = f.payload;
            values++;
        } else {
            return -1; /* the runtime keeps such an entry out of the map, as an unknown field */
        }
    }
    if (keys > 1 || values > 1)
        return -1;
    return take_entry(w, key, value);
}

static int walk_record(walk *w, cursor record) {
    field f, g;
    while (record.p < record.end) {
        if (next_field(&record, &f) < 0)
            return -1;
        if (f.wire != WT_LEN || f.number != 1)
            continue;
        cursor features = f.payload; /* Example.features, maybe one of several: they merge */
        while (features.p < features.end) {
            if (next_field(&features, &g) < 0)
                return -1;
            if (g.wire == WT_LEN && g.number == 1 && walk_entry(w, g.payload) < 0)
                return -1;
        }
    }
    return 0;
}

static ex_result run(walk *w) {
    const ex_records *r = w->records;
    for (w->index = 0; (size_t)w->index < r->n; w->index++) {
        w->record = r->data[w->index];
        w->table->predicted = 0;
        cursor record = {w->record, w->record + r->size[w->index]};
        w->status = EX_FALLBACK;
        if (walk_record(w, record) < 0)
            return (ex_result){w->status, w->index};
        if (w->out != NULL) {
            size_t names = w->table->count;
            for (size_t k = 0; k < names; k++)
                w->out->splits[k * (r->n + 1) + (size_t)w->index + 1] =
                    w->table->names[k].cursor - w->out->plan[3 * k + 1];
        }
    }
    return (ex_result){EX_OK, -1};
}

ex_result ex_scan(const ex_records *records, ex_table *t) {
    walk w = {records, t, NULL, 0, NULL, EX_OK};
    return run(&w);
}

/* Every planned span must lie in its kind's output. */
static int check_plan(const ex_out *out) {
    for (size_t k = 0; k < out->n_names; k++) {
        const int64_t *plan = out->plan + 3 * k;
        size_t size = plan[0] == EX_INT64   ? out->n_ints
                      : plan[0] == EX_FLOAT ? out->n_floats
                      : plan[0] == EX_BYTES ? out->n_bytes
                                            : 0;
        if (plan[0] < EX_NONE || plan[0] > EX_INT64 || plan[1] < 0 || plan[2] < 0 ||
            (uint64_t)plan[1] > size || (uint64_t)plan[2] > size - (uint64_t)plan[1])
            return -1;
    }
    return 0;
}

ex_result ex_fill(const ex_records *records, ex_table *t, const ex_out *out) {
    if (check_plan(out) < 0)
        return (ex_result){EX_MISMATCH, -1};
    walk w = {records, t, out, 0, NULL, EX_OK};
    ex_result r = run(&w);
    if (r.status == EX_FALLBACK)
        r.status = EX_MISMATCH; /* the scan took these bytes: they changed since */
    if (r.status == EX_OK && t->count != out->n_names)
        r.status = EX_MISMATCH;
    return r;
}
