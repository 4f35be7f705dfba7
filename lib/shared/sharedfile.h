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

#include "error.h"

/* Who a created file belongs to: set by a master started as root with
 * --user/--group (its workers' identity); unset, a file is its creator's. */
struct sharedfile_owner {
	bool set;
	uid_t uid;
	gid_t gid;
};

/* Opens path with flags (O_CLOEXEC and O_NOFOLLOW are added; no O_CREAT),
 * or, when it does not exist, creates it with mode (less the umask) and
 * gives it to owner when owner is set (owner may be NULL). *created (may be
 * NULL) says whether this call made the file. A symbolic link is never
 * followed; run as root, an existing file must also be a regular file with
 * one name and, when owner is set, be root's or owner's: root writes these
 * files in folders the workers' user may own. Returns the descriptor, or -1 with err set to
 * "<path>: <why>" (nothing is left behind: a file made but not given to
 * owner is removed). */
int sharedfile_open(const char *path, int flags, mode_t mode,
		    const struct sharedfile_owner *owner, bool *created,
		    struct error *err);

/* What --check-config asks of a shared file: that path opens with flags
 * under sharedfile_open's rules (no owner known), or, when it
 * does not exist, that its folder lets this process create it (a read-only
 * mount included). Creates nothing. Returns 0, or -1 with err saying why. */
int sharedfile_check(const char *path, int flags, struct error *err);

/* Gives the file open on fd to owner (a file created before the owner was
 * known), when owner is set and the file is not already theirs. Returns 0,
 * or -1 with errno set (the file unchanged). */
int sharedfile_give(int fd, const struct sharedfile_owner *owner);

#endif
