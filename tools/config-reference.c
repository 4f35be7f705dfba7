/* config-reference - prints payhook's configuration key table (name, kind,
 * default, bounds, secret flag; one key a tab-separated line) from the table
 * the programs load, so that payhook.conf(5) is made from what payhook
 * accepts (man/payhook.conf.5.sh). Takes no arguments. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "configuration.h"

int main(int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		fputs("usage: config-reference\n", stderr);
		return 2;
	}
	if (config_write_reference(stdout) != 0) {
		perror("config-reference");
		return 1;
	}
	return 0;
}
