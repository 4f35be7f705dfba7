/* store.c - placeholder until the module lands. */
#include "config.h"
