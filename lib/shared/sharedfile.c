/* sharedfile.c - opening or creating the files a deployment's processes
 * share, with the owner they need (see sharedfile.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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

/* Whether the file open on fd is one a root process may write: a regular
 * file with one name and, when the deployment's owner is known, owned by
 * root or by them. A root master writes into folders its workers' user
 * may own (log_file's, metrics_file's), and that user could have put
 * another file there under the name: a symbolic link (never followed, see
 * sharedfile_open), or a hard link to a root-only file where the kernel
 * allows one. Returns 0, or -1 with err set. */
static int check_owned(int fd, const char *path,
		       const struct sharedfile_owner *owner, struct error *err)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return error_set(err, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return error_set(err, "%s: not a regular file (not opened)",
				 path);
	if (st.st_nlink > 1)
		return error_set(err, "%s: has %lu names (a hard link; not "
				 "opened)", path, (unsigned long)st.st_nlink);
	if (owner == NULL || !owner->set || st.st_uid == geteuid() ||
	    st.st_uid == owner->uid)
		return 0;
	return error_set(err, "%s: owned by uid %lu, neither root nor the "
			 "workers' user (not opened)", path,
			 (unsigned long)st.st_uid);
}

int sharedfile_open(const char *path, int flags, mode_t mode,
		    const struct sharedfile_owner *owner, bool *created,
		    struct error *err)
{
	int fd;

	/* Never through a symbolic link: see check_owned. */
	flags = (flags & ~O_CREAT) | O_CLOEXEC | O_NOFOLLOW;
	if (created != NULL)
		*created = false;
	/* Twice at most: a file removed between the two opens is made. */
	for (int attempt = 0; attempt < 2; attempt++) {
		fd = open(path, flags);
		if (fd >= 0) {
			if (geteuid() == 0 &&
			    check_owned(fd, path, owner, err) != 0) {
				close(fd);
				return -1;
			}
			return fd;
		}
		if (errno == ELOOP) {
			error_set(err, "%s: a symbolic link (payhook does not "
				  "follow one here)", path);
			return -1;
		}
		if (errno != ENOENT)
			break;
		/* O_EXCL: a link planted meanwhile is not followed either. */
		fd = open(path, flags | O_CREAT | O_EXCL, mode);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0)
			break;
		if (sharedfile_give(fd, owner) != 0) {
			int saved = errno;

			unlink(path);
			close(fd);
			error_set(err, "%s: cannot give it to its owner: %s",
				  path, strerror(saved));
			return -1;
		}
		if (created != NULL)
			*created = true;
		return fd;
	}
	error_set(err, "%s: %s", path, strerror(errno));
	return -1;
}

int sharedfile_check(const char *path, int flags, struct error *err)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	int fd = open(path, (flags & ~O_CREAT) | O_CLOEXEC | O_NOFOLLOW);

	if (fd >= 0) {
		int rc = geteuid() == 0 ? check_owned(fd, path, NULL, err) : 0;

		close(fd);
		return rc;
	}
	if (errno == ELOOP)
		return error_set(err, "%s: a symbolic link (payhook does not "
				 "follow one here)", path);
	if (errno != ENOENT)
		return error_set(err, "%s cannot be opened: %s", path,
				 strerror(errno));
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	/* access() says EROFS for a read-only mount (ProtectSystem=strict). */
	if (access(dir, W_OK | X_OK) != 0)
		return error_set(err, "%s does not exist and cannot be created "
				 "in %s: %s", path, dir, strerror(errno));
	return 0;
}
