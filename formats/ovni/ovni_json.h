/*
 * ovni_json: the small JSON tree ovni-rt keeps its thread and process metadata in.
 *
 * Objects keep their keys in insertion order and a replaced value keeps its place, so files
 * come out in the order libovni (parson) writes them. Numbers are doubles, as in parson.
 * Dot paths ("ovni.mark.1.title") walk nested objects; setting one creates the missing
 * objects on the way and fails if a step exists but is not an object.
 *
 * Slow-path code only: everything here allocates.
 */
#ifndef OVNI_JSON_H
#define OVNI_JSON_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

enum oj_type { OJ_NULL, OJ_BOOL, OJ_NUMBER, OJ_STRING, OJ_ARRAY, OJ_OBJECT };

struct oj {
	enum oj_type type;
	union {
		int boolean;
		double number;
		char *string;
		struct {
			struct oj **items;
			char **keys; /* objects only */
			size_t len, cap;
		} c; /* containers */
	} u;
};

struct oj *oj_new(enum oj_type type);
struct oj *oj_number(double v);
struct oj *oj_bool(int v);
struct oj *oj_string(const char *s); /* NULL if s is not valid UTF-8 */
void oj_free(struct oj *v);
struct oj *oj_copy(const struct oj *v);

/* Parse a whole JSON text; NULL on any error (trailing garbage included). */
struct oj *oj_parse(const char *text, size_t len);

/* Serialize; malloc'ed, NUL-terminated. pretty: 4-space indent as parson writes files. */
char *oj_serialize(const struct oj *v, int pretty, size_t *len);

/* Plain key lookup in an object (NULL if absent or v is not an object). */
struct oj *oj_get(const struct oj *obj, const char *key);
/* Dot-path lookup. */
struct oj *oj_dotget(const struct oj *obj, const char *path);
/* Dot-path set; takes ownership of val (freed on failure). 0 on success. */
int oj_dotset(struct oj *obj, const char *path, struct oj *val);
/* Remove a key (plain) from an object; 1 if something was removed. */
int oj_remove(struct oj *obj, const char *key);
/* Append to an array; takes ownership. 0 on success. */
int oj_append(struct oj *arr, struct oj *val);

#pragma GCC visibility pop

#endif
