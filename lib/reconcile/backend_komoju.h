/* backend_komoju.h - KOMOJU's list of events (GET /api/v1/events) as a
 * backend.h backend. */
#ifndef PAYHOOK_BACKEND_KOMOJU_H
#define PAYHOOK_BACKEND_KOMOJU_H

#include "backend.h"

extern const struct backend backend_komoju;

#endif
