#ifndef PAYHOOK_STORE_H
#define PAYHOOK_STORE_H
#endif
