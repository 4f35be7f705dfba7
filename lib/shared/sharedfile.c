/* sharedfile.c - opening or creating the files a deployment's processes
 * share, with the owner they need (see sharedfile.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sharedfile.h"

int sharedfile_give(int fd, const struct sharedfile_owner *owner)
{
	struct stat st;

	if (owner == NULL || !owner->set)
		return 0;
	if (fstat(fd, &st) != 0)
		return -1;
	if (st.st_uid == owner->uid && st.st_gid == owner->gid)
		return 0;
	return fchown(fd, owner->uid, owner->gid);
}

int sharedfile_open(const char *path, int flags, mode_t mode,
		    const struct sharedfile_owner *owner, bool *created)
{
	int fd, saved;

	flags = (flags & ~O_CREAT) | O_CLOEXEC;
	if (created != NULL)
		*created = false;
	/* Twice at most: a file removed between the two opens is made. */
	for (int attempt = 0; attempt < 2; attempt++) {
		fd = open(path, flags);
		if (fd >= 0 || errno != ENOENT)
			return fd;
		fd = open(path, flags | O_CREAT | O_EXCL, mode);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0)
			return -1;
		if (sharedfile_give(fd, owner) != 0) {
			saved = errno;
			unlink(path);
			close(fd);
			errno = saved;
			return -1;
		}
		if (created != NULL)
			*created = true;
		return fd;
	}
	return -1;
}
