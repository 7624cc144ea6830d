/*
 * rec_outname: first-free output names, published with link(2) (see rec_outname.h).
 * No malloc, no stdio: finish may run in a fatal-signal handler.
 */
#include "librecord/rec_outname.h"
#include "librecord/rec_util.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int rec_outname_publish(int dirfd, const char *tmp, const char *prog, const char *ext, int forked,
			pid_t pid, char *base_out, size_t size)
{
	char name[600];
	int err = EEXIST;

	for (int k = forked ? 1 : 0; k < 1000; k++) {
		if (k == 0)
			rec_snprintf(base_out, size, "%s", prog);
		else if (k == 1)
			rec_snprintf(base_out, size, "%s.%d", prog, (int)pid);
		else
			rec_snprintf(base_out, size, "%s.%d.%d", prog, (int)pid, k - 1);
		rec_snprintf(name, sizeof(name), "%s%s", base_out, ext);
		if (linkat(dirfd, tmp, dirfd, name, 0) == 0) {
			unlinkat(dirfd, tmp, 0);
			return 0;
		}
		err = errno;
		if (err != EEXIST)
			break;
	}
	unlinkat(dirfd, tmp, 0);
	errno = err;
	return -1;
}
