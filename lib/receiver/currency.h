/* currency.h - ISO 4217 minor-unit exponents, for providers that write an
 * amount as a decimal in major units ("19.99" USD = 1999 cents).
 */
#ifndef PAYHOOK_CURRENCY_H
#define PAYHOOK_CURRENCY_H

/* The number of decimals of the currency whose upper-case code is code[0..3)
 * (2 for USD, 0 for JPY, 3 for KWD), or -1 for a code payhook does not know
 * (then no decimal amount can be converted exactly). Can't fail. */
int currency_exponent(const char *code);

#endif
