/*
 * rec_config: read the environment once (see rec_config.h for the variables).
 * Invariant: after rec_config_parse returns, nothing in librecord calls getenv.
 */
#include "librecord/rec_config.h"
#include "librecord/rec_util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REC_DEFAULT_CHUNK_SIZE (1u << 20)
#define REC_DEFAULT_CHUNK_COUNT 8
#define REC_MIN_CHUNK_SIZE 4096u
#define REC_MAX_CHUNK_SIZE (256u << 20)
#define REC_MAX_CHUNK_COUNT 4096u
#define REC_DEFAULT_MAX_STACK 1024
#define REC_MAX_MAX_STACK 65536u
#define REC_DEFAULT_TP_STACK 512
#define REC_MAX_TP_STACK 65535u /* one tfile memory block */
#define REC_DEFAULT_TP_MAX_FRAMES 1000
#define REC_DEFAULT_RING_POOL 16
#define REC_MAX_RING_POOL 64

/* The longest value we accept for any variable; longer ones are treated as malformed. */
#define REC_ENV_MAX (REC_PATH_MAX - 1)

static const char *rec_env(const char *name)
{
	const char *v = rec_getenv(name);
	if (!v || !*v)
		return NULL;
	if (strnlen(v, REC_ENV_MAX + 1) > REC_ENV_MAX) {
		rec_warn("%s is longer than %d bytes, ignored", name, REC_ENV_MAX);
		return NULL;
	}
	return v;
}

int rec_config_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	unsigned shift = 0;

	v = strtoull(s, &end, 10); /* ULLONG_MAX on overflow: above the limit below */
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	/* compare before shifting: 17592186044418M shifted first wraps to 2 MiB */
	if (*end != '\0' || v > (1ull << 40) >> shift)
		return -1;
	*out = v << shift;
	return 0;
}

static uint64_t rec_env_number(const char *name, uint64_t def, uint64_t min, uint64_t max)
{
	const char *v = rec_env(name);
	uint64_t n;

	if (!v)
		return def;
	if (rec_config_parse_size(v, &n) < 0 || n < min || n > max) {
		rec_warn("%s=%s is not a number in [%llu, %llu], using %llu", name, v,
			 (unsigned long long)min, (unsigned long long)max,
			 (unsigned long long)def);
		return def;
	}
	return n;
}

/* 1/yes/on/true or 0/no/off/false; anything else: a warning and off */
static int rec_env_bool(const char *name)
{
	static const char *const on[] = { "1", "yes", "on", "true" };
	static const char *const off[] = { "0", "no", "off", "false" };
	const char *v = rec_env(name);

	if (!v)
		return 0;
	for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
		if (!strcasecmp(v, on[i]))
			return 1;
		if (!strcasecmp(v, off[i]))
			return 0;
	}
	rec_warn("%s=%s is not 1|yes|on|true or 0|no|off|false, using 0", name, v);
	return 0;
}

void rec_config_parse(struct rec_config *cfg, const struct rec_config_defaults *def)
{
	const char *v;
	uint32_t stack_max = def->max_stack_max ? def->max_stack_max : REC_MAX_MAX_STACK;
	uint32_t stack_def = def->max_stack ? def->max_stack : REC_DEFAULT_MAX_STACK;

	memset(cfg, 0, sizeof(*cfg));
	cfg->debug = rec_env_bool("FLIGHTREC_DEBUG");
	rec_debug_enabled = cfg->debug;

	v = rec_env("FLIGHTREC_DIR");
	if (!v && def->dir_env)
		v = rec_env(def->dir_env);
	if (!v)
		v = def->dir;
	rec_snprintf(cfg->dir, sizeof(cfg->dir), "%s", v);

	cfg->chunk_size = rec_env_number("FLIGHTREC_BUFSIZE", REC_DEFAULT_CHUNK_SIZE,
					 REC_MIN_CHUNK_SIZE, REC_MAX_CHUNK_SIZE);
	cfg->chunk_size = (cfg->chunk_size + 4095) & ~(size_t)4095;
	cfg->chunk_count = (uint32_t)rec_env_number("FLIGHTREC_BUFCOUNT", REC_DEFAULT_CHUNK_COUNT,
						   2, REC_MAX_CHUNK_COUNT);
	cfg->block_ms = (uint32_t)rec_env_number("FLIGHTREC_BLOCK_MS", 1000, 0, 3600000);
	/* the front end's own ceiling (libmcount: 1024, uftrace's 10-bit depth): a deeper
	 * request is refused with a warning rather than cut down silently */
	if (stack_def > stack_max)
		stack_def = stack_max;
	cfg->max_stack = (uint32_t)rec_env_number("FLIGHTREC_MAX_STACK", stack_def, 1, stack_max);

	v = rec_env("FLIGHTREC_FORMAT");
	if (v && strlen(v) < sizeof(cfg->format))
		memcpy(cfg->format, v, strlen(v) + 1);
	else if (v)
		rec_warn("FLIGHTREC_FORMAT=%s is not a format name, using the default", v);
	v = rec_env("FLIGHTREC_TRACEPOINTS");
	if (v)
		rec_snprintf(cfg->tracepoints, sizeof(cfg->tracepoints), "%s", v);
	cfg->tp_stack = (uint32_t)rec_env_number("FLIGHTREC_TP_STACK", REC_DEFAULT_TP_STACK, 0,
						 REC_MAX_TP_STACK);
	cfg->tp_max_frames = (uint32_t)rec_env_number("FLIGHTREC_TP_MAX_FRAMES",
						      REC_DEFAULT_TP_MAX_FRAMES, 1, 1u << 30);
	cfg->ring_pool = (uint32_t)rec_env_number("FLIGHTREC_RING_POOL", REC_DEFAULT_RING_POOL, 0,
						  REC_MAX_RING_POOL);
	cfg->writers = -1; /* unset: as threads grow (rec_flusher.c) */
	v = rec_env("FLIGHTREC_WRITERS");
	if (v) {
		uint64_t n;
		/* a bad value gets the unset behaviour, as every variable its default (not none) */
		if (rec_config_parse_size(v, &n) == 0 && n <= REC_WRITERS_MAX)
			cfg->writers = (int)n;
		else
			rec_warn("FLIGHTREC_WRITERS=%s is not a number in [0, %d], using the default "
				 "(writers as threads grow)", v, REC_WRITERS_MAX);
	}

	cfg->policy = def->policy;
	v = rec_env("FLIGHTREC_POLICY");
	if (v) {
		if (!strcmp(v, "drop"))
			cfg->policy = REC_POLICY_DROP;
		else if (!strcmp(v, "overwrite"))
			cfg->policy = REC_POLICY_OVERWRITE;
		else if (!strcmp(v, "block"))
			cfg->policy = REC_POLICY_BLOCK;
		else if (!strcmp(v, "drain"))
			cfg->policy = REC_POLICY_DRAIN;
		else if (!strcmp(v, "help"))
			cfg->policy = REC_POLICY_HELP;
		else
			rec_warn("FLIGHTREC_POLICY=%s is not drop|overwrite|block|drain|help, "
				 "using the default", v);
	}
}
