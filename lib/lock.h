#ifndef PAYHOOK_LOCK_H
#define PAYHOOK_LOCK_H
#endif
