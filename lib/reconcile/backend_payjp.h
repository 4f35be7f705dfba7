/* backend_payjp.h - PAY.JP's list of events (GET /v1/events) as a
 * backend.h backend. */
#ifndef PAYHOOK_BACKEND_PAYJP_H
#define PAYHOOK_BACKEND_PAYJP_H

#include "backend.h"

extern const struct backend backend_payjp;

#endif
