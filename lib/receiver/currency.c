/* currency.c - ISO 4217 exponents (see currency.h). Every active code has
 * two decimals except those listed here; a code that is not a known ISO 4217
 * code is refused rather than guessed. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "currency.h"

struct exponent {
	char code[4];
	int exponent;
};

/* ISO 4217 list one (2024): the active codes whose exponent is not 2. */
static const struct exponent exceptions[] = {
	{ "BHD", 3 }, { "BIF", 0 }, { "CLF", 4 }, { "CLP", 0 }, { "DJF", 0 },
	{ "GNF", 0 }, { "IQD", 3 }, { "ISK", 0 }, { "JOD", 3 }, { "JPY", 0 },
	{ "KMF", 0 }, { "KRW", 0 }, { "KWD", 3 }, { "LYD", 3 }, { "OMR", 3 },
	{ "PYG", 0 }, { "RWF", 0 }, { "TND", 3 }, { "UGX", 0 }, { "UYI", 0 },
	{ "UYW", 4 }, { "VND", 0 }, { "VUV", 0 }, { "XAF", 0 }, { "XOF", 0 },
	{ "XPF", 0 },
};

/* The active codes with two decimals, sorted for bsearch. */
static const char two_decimals[][4] = {
	"AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN",
	"BAM", "BBD", "BDT", "BGN", "BMD", "BND", "BOB", "BOV", "BRL", "BSD",
	"BTN", "BWP", "BYN", "BZD", "CAD", "CDF", "CHE", "CHF", "CHW", "CNY",
	"COP", "COU", "CRC", "CUP", "CVE", "CZK", "DKK", "DOP", "DZD", "EGP",
	"ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD",
	"GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IRR",
	"JMD", "KES", "KGS", "KHR", "KPW", "KYD", "KZT", "LAK", "LBP", "LKR",
	"LRD", "LSL", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU",
	"MUR", "MVR", "MWK", "MXN", "MXV", "MYR", "MZN", "NAD", "NGN", "NIO",
	"NOK", "NPR", "NZD", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "QAR",
	"RON", "RSD", "RUB", "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP",
	"SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS",
	"TMT", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "USD", "USN", "UYU",
	"UZS", "VED", "VES", "WST", "XCD", "XCG", "YER", "ZAR", "ZMW", "ZWG",
};

static int compare_code(const void *key, const void *item)
{
	return memcmp(key, item, 3);
}

int currency_exponent(const char *code)
{
	for (size_t i = 0; i < sizeof(exceptions) / sizeof(exceptions[0]); i++)
		if (memcmp(code, exceptions[i].code, 3) == 0)
			return exceptions[i].exponent;
	if (bsearch(code, two_decimals,
		    sizeof(two_decimals) / sizeof(two_decimals[0]),
		    sizeof(two_decimals[0]), compare_code) != NULL)
		return 2;
	return -1;
}
