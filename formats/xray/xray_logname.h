/*
 * xray_logname: the random suffix of an XRay log's name, as compiler-rt gives it
 * (<base><program>.XXXXXX: 6 characters of [A-Za-z0-9]), for the sink and the salvager alike.
 * No malloc, no stdio: the sink names its log in finish, which may run in a signal handler.
 */
#ifndef FORMATS_XRAY_LOGNAME_H
#define FORMATS_XRAY_LOGNAME_H

#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#include "librecord/rec_clock.h"

/* SFX: a fresh suffix, NUL-terminated; TRIES (the caller's attempt count) varies the fallback
 * when getrandom has nothing to give */
static inline void xray_log_suffix(char sfx[7], int tries)
{
	static const char chars[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	uint8_t r[6];

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		uint64_t x = rec_clock_tsc() * 0x9e3779b97f4a7c15ull + (uint64_t)tries;
		memcpy(r, &x, sizeof(r));
	}
	for (int i = 0; i < 6; i++)
		sfx[i] = chars[r[i] % (sizeof(chars) - 1)];
	sfx[6] = '\0';
}

#endif
