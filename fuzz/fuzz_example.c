/* libFuzzer target: the tf.train.Example scan and fill over arbitrary records (specs/native.md §6).
 *
 * The input is cut into up to eight records (a leading count, then two length bytes before each);
 * they are copied into one allocation of exactly their size so that AddressSanitizer sees any
 * read past the batch.  A scan that succeeds is followed by a fill into arrays of exactly the
 * sizes it found, as the Python layer allocates them, and the fill must agree with the scan. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"

#define MAX_RECORDS 8

static int64_t *zeroed(size_t n) { return calloc(n ? n : 1, sizeof(int64_t)); }

static void fill_and_check(const ex_records *r, const ex_table *found, size_t batch_size) {
    size_t names = found->count, totals[4] = {0, 0, 0, 0};
    int64_t *plan = zeroed(3 * names);
    for (size_t k = 0; k < names; k++) {
        const ex_name *name = &found->names[k];
        if (name->other != -1)
            goto done; /* mixed kinds: the Python layer raises before any fill */
        int kind = name->kind == EX_NONE ? EX_INT64 : name->kind;
        plan[3 * k] = kind;
        plan[3 * k + 1] = (int64_t)totals[kind];
        plan[3 * k + 2] = name->total;
        totals[kind] += (size_t)name->total;
    }
    ex_out out = {zeroed(totals[EX_INT64]), totals[EX_INT64],
                  calloc(totals[EX_FLOAT] + 1, sizeof(uint32_t)), totals[EX_FLOAT],
                  zeroed(totals[EX_BYTES]), zeroed(totals[EX_BYTES]), totals[EX_BYTES],
                  zeroed(names * (r->n + 1)), calloc(names * r->n + 1, 1), plan, names};
    ex_table t;
    ex_table_init(&t);
    ex_result filled = ex_fill(r, &t, &out);
    ex_table_free(&t);
    if (filled.status != EX_OK)
        abort(); /* the same bytes: the fill must find what the scan found */
    for (size_t k = 0; k < names; k++) {
        const int64_t *splits = out.splits + k * (r->n + 1);
        for (size_t i = 0; i < r->n; i++)
            if (splits[i + 1] < splits[i])
                abort();
        if (splits[r->n] - splits[0] != plan[3 * k + 2])
            abort();
    }
    for (size_t v = 0; v < totals[EX_BYTES]; v++)
        if (out.starts[v] < 0 || out.lengths[v] < 0 ||
            (size_t)(out.starts[v] + out.lengths[v]) > batch_size)
            abort();
    free(out.ints);
    free(out.floats);
    free(out.starts);
    free(out.lengths);
    free(out.splits);
    free(out.present);
done:
    free(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
    if (size < 1)
        return 0;
    size_t n = (input[0] % MAX_RECORDS) + 1, at = 1, total = 0;
    size_t sizes[MAX_RECORDS], from[MAX_RECORDS];
    for (size_t i = 0; i < n; i++) {
        size_t want = at + 2 <= size ? (size_t)(input[at] | input[at + 1] << 8) : 0;
        at = at + 2 <= size ? at + 2 : size;
        sizes[i] = want < size - at ? want : size - at;
        from[i] = at;
        at += sizes[i];
        total += sizes[i];
    }
    uint8_t *batch = malloc(total ? total : 1);
    const uint8_t *data[MAX_RECORDS];
    int64_t base[MAX_RECORDS];
    for (size_t i = 0, off = 0; i < n; i++) {
        memcpy(batch + off, input + from[i], sizes[i]);
        data[i] = batch + off;
        base[i] = (int64_t)off;
        off += sizes[i];
    }
    ex_records records = {data, sizes, base, n};
    ex_table t;
    ex_table_init(&t);
    ex_result scanned = ex_scan(&records, &t);
    if (scanned.status == EX_OK)
        fill_and_check(&records, &t, total);
    else if (scanned.status != EX_FALLBACK && scanned.status != EX_NOMEM)
        abort();
    ex_table_free(&t);
    free(batch);
    return 0;
}
