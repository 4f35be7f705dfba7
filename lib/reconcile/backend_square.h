/* backend_square.h - Square's SearchEvents (POST /v2/events) as a
 * backend.h backend. */
#ifndef PAYHOOK_BACKEND_SQUARE_H
#define PAYHOOK_BACKEND_SQUARE_H

#include "backend.h"

extern const struct backend backend_square;

#endif
