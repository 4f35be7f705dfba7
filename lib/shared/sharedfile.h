/* sharedfile.h - the files several processes of one deployment share
 * (log_file, metrics_file): opened where they are, created with the
 * deployment's owner where they are not. A pool's master runs as root and
 * its workers, payhook-dispatch and the operator's --check-config as the
 * workers' user: a file the master creates must be theirs, or they cannot
 * open it.
 */
#ifndef PAYHOOK_SHAREDFILE_H
#define PAYHOOK_SHAREDFILE_H

#include <stdbool.h>
#include <sys/types.h>

/* Who a created file belongs to: set by a master started as root with
 * --user/--group (its workers' identity); unset, a file is its creator's. */
struct sharedfile_owner {
	bool set;
	uid_t uid;
	gid_t gid;
};

/* Opens path with flags (O_CLOEXEC is added; no O_CREAT), or, when it does
 * not exist, creates it with mode (less the umask) and gives it to owner
 * when owner is set (owner may be NULL). *created (may be NULL) says whether
 * this call made the file. Returns the descriptor, or -1 with errno set
 * (nothing is left behind: a file made but not given to owner is removed). */
int sharedfile_open(const char *path, int flags, mode_t mode,
		    const struct sharedfile_owner *owner, bool *created);

/* Gives the file open on fd to owner (a file created before the owner was
 * known), when owner is set and the file is not already theirs. Returns 0,
 * or -1 with errno set (the file unchanged). */
int sharedfile_give(int fd, const struct sharedfile_owner *owner);

#endif
