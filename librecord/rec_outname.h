/*
 * rec_outname: the names of a format's per-process output files (sink_tfile, sink_chrome):
 * <program><ext> for the first process of a recording, <program>.<pid><ext> for a fork child
 * or when the plain name is taken (the image an exec replaced wrote it, or a process of the
 * same program ran first), <program>.<pid>.<n><ext> after that. A file is written under a
 * temporary name and published with link(2), which never replaces an existing file: two
 * processes can never overwrite each other's trace, whatever order they finish in.
 */
#ifndef REC_OUTNAME_H
#define REC_OUTNAME_H

#include <stddef.h>
#include <sys/types.h>

#pragma GCC visibility push(hidden)

/* Publish dirfd/tmp as the first free name; its base (without ext) in base_out. 0 on success,
 * -1 with errno (tmp is removed either way). */
int rec_outname_publish(int dirfd, const char *tmp, const char *prog, const char *ext, int forked,
			pid_t pid, char *base_out, size_t size);

#pragma GCC visibility pop

#endif
