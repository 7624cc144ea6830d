/*
 * test_rec_append: librecord's whole appends (rec_append_whole, rec_appendv_whole): all the
 * pieces land after what the file held, in order; a write the file cannot take is cut back to
 * where it began, even when part of it went in first (RLIMIT_FSIZE makes writev write a part,
 * then fail), so the file still ends on a whole record.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "librecord/rec_util.h"

static int tmp_file(char *path)
{
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	return fd;
}

static off_t size_of(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return st.st_size;
}

static void test_pieces_in_order(void **state)
{
	char path[] = "/tmp/flightrec-test-append-XXXXXX", got[64];
	int fd = tmp_file(path);
	struct iovec v[3] = { { "abc", 3 }, { "", 0 }, { "defgh", 5 } };

	(void)state;
	assert_int_equal(rec_append_whole(fd, "0123", 4), 0);
	assert_int_equal(rec_appendv_whole(fd, v, 3), 0);
	/* nothing to write is written: an empty chunk (a filter that left every call out) */
	errno = 0;
	assert_int_equal(rec_append_whole(fd, "", 0), 0);
	assert_int_equal(rec_appendv_whole(fd, &v[1], 1), 0);
	assert_int_equal(errno, 0);
	close(fd);
	fd = open(path, O_RDONLY);
	assert_int_equal(read(fd, got, sizeof(got)), 12);
	assert_memory_equal(got, "0123abcdefgh", 12);
	close(fd);
	unlink(path);
}

static void test_cut_back(void **state)
{
	char path[] = "/tmp/flightrec-test-append-XXXXXX", a[40], b[40];
	int fd = tmp_file(path);
	struct iovec v[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	struct rlimit old, lim;
	void (*was)(int) = signal(SIGXFSZ, SIG_IGN);

	(void)state;
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	assert_int_equal(rec_append_whole(fd, a, 30), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 80; /* 30 held: 50 of the 80 fit, the first writev writes a part */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	errno = 0;
	assert_int_equal(rec_appendv_whole(fd, v, 2), -1);
	assert_int_equal(errno, EFBIG);
	assert_int_equal(size_of(fd), 30);
	assert_int_equal(rec_append_whole(fd, b, 40), 0); /* 70 fits */
	assert_int_equal(rec_append_whole(fd, a, 20), -1); /* 90 does not: cut back */
	assert_int_equal(size_of(fd), 70);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, was);
	close(fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces_in_order),
		cmocka_unit_test(test_cut_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
