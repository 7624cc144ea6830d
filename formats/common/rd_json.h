/*
 * rd_json: the JSON reader behind the ovni trace reader (metadata files).
 *
 * Role: parse one metadata file into a read-only tree and look keys up by plain name or by
 * dot path, the way ovniemu's parson calls do (json_object_dotget_*). Accepts what ovniemu
 * accepts, C and C++ style comments included; rejects everything else with the byte offset.
 *
 * Written apart from ovni-rt's own JSON writer on purpose, so that a bug in one is not
 * mirrored by the other.
 *
 * Invariants: never reads past the buffer; nesting is capped (OVJ_MAX_DEPTH); strings are
 * NUL-terminated copies (a \u0000 escape is refused, as parson does).
 */
#ifndef FLIGHTREC_READERS_OVNI_JSON_H
#define FLIGHTREC_READERS_OVNI_JSON_H

#include <stdbool.h>
#include <stddef.h>

#define OVJ_MAX_DEPTH 128

enum ovj_type { OVJ_NULL, OVJ_BOOL, OVJ_NUMBER, OVJ_STRING, OVJ_ARRAY, OVJ_OBJECT };

struct ovj {
	enum ovj_type type;
	bool boolean;
	double number;
	char *string;
	size_t n; /* items of an array or object */
	struct ovj **items;
	char **keys; /* objects: keys[i] names items[i] */
};

/* NULL on error; *ERR_OFF (if not NULL) is the offset where parsing stopped */
struct ovj *ovj_parse(const char *text, size_t len, size_t *err_off);
void ovj_free(struct ovj *v);

/* plain key of an object (the last one when repeated); NULL if absent or not an object */
const struct ovj *ovj_get(const struct ovj *obj, const char *key);
/* "a.b.c" through nested objects */
const struct ovj *ovj_dotget(const struct ovj *obj, const char *path);
/* typed lookups: NULL / false when absent or of another type */
const char *ovj_dotget_string(const struct ovj *obj, const char *path);
bool ovj_dotget_number(const struct ovj *obj, const char *path, double *out);

#endif /* FLIGHTREC_READERS_OVNI_JSON_H */
