/* backend_paddle.h - Paddle Billing's list of events (GET /events) as a
 * backend.h backend. */
#ifndef PAYHOOK_BACKEND_PADDLE_H
#define PAYHOOK_BACKEND_PADDLE_H

#include "backend.h"

extern const struct backend backend_paddle;

#endif
