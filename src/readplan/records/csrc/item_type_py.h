/* Item: one delivered record and where it sits in the plan (specs/native.md, "Item"; the twin
 * is readplan.reading.items.ItemPure). */
#ifndef READPLAN_ITEM_TYPE_PY_H
#define READPLAN_ITEM_TYPE_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* A new item: it takes the reference to `record` (NULL: NULL returned, the caller's error kept)
 * and adds one to `prefix`, the tfds_id before "__<record_index>".  NULL with an error set. */
PyObject *item_new(PyObject *record, PyObject *prefix, int64_t epoch, int64_t position,
                   int64_t file_index, int64_t record_index);
/* 0 when cls is the core's Item type (the one class the kernels make); -1 and a TypeError naming
 * `who` otherwise. */
int item_check_type(PyObject *cls, const char *who);
/* An int the kernels put into items (an epoch, a file index): 0 and *out, or -1 and a
 * ValueError naming `who` when it is not a non-negative int64. */
int item_int64_of(PyObject *value, const char *who, int64_t *out);
/* Raises the TypeError of a file's prefix that is not a str; always NULL. */
PyObject *item_prefix_error(const char *who, int64_t file, PyObject *prefix);
/* Adds Item to the module; -1 with an error set. */
int item_type_add(PyObject *module);

#endif
