/*
 * lock_classes.c - the table of lock_classes.h as data: names for the class
 * initializers, rows and bands for the documentation and its test.
 */
#include "base/lock_classes.h"

const char lock_class_names[LOCK_CLASS_COUNT][LOCK_NAME_MAX] = {
#define LOCK_X_NAME(id, name, rank, type, kind, file, what) [LOCK_##id] = name,
	LOCK_CLASSES(LOCK_X_NAME)
#undef LOCK_X_NAME
};

const struct lock_class_row lock_class_rows[LOCK_CLASS_COUNT] = {
#define LOCK_X_ROW(id, name, rank, type, kind, file, what)                                         \
	[LOCK_##id] = {name, rank, LOCK_TYPE_##type, LOCK_KIND_##kind, file, what},
	LOCK_CLASSES(LOCK_X_ROW)
#undef LOCK_X_ROW
};

const struct lock_band lock_bands[] = {
#define LOCK_X_BAND(lo, hi, what) {lo, hi, what},
	LOCK_BANDS(LOCK_X_BAND)
#undef LOCK_X_BAND
};

const unsigned lock_band_count = sizeof(lock_bands) / sizeof(lock_bands[0]);
