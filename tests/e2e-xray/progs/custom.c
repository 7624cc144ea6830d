/*
 * custom.c - custom events (__xray_customevent) from a traced function, 4 times. The
 * function that emits them is in custom_ev.c, always built at -O0: clang 14 crashes or emits a
 * malformed custom-event sled at -O1 and above. Needs an XRay runtime at link time
 * (compiler-rt's or libxray-rt.a): __xray_CustomEvent is called directly.
 */
#include <stdio.h>
#include <string.h>
#include "xe2e.h"

XE2E_SINK_DEFINE;

void ce_emit(const char *msg, unsigned long n);

FN void ce_round(int i)
{
	char msg[32];

	snprintf(msg, sizeof(msg), "custom-event-%d", i);
	ce_emit(msg, strlen(msg));
}

int main(void)
{
	for (int i = 0; i < 4; i++)
		ce_round(i);
	printf("custom: done\n");
	return 0;
}
