/* encoding.c - strict hex and base64 (see encoding.h). */
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "encoding.h"

void encoding_hex_encode(const unsigned char *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0x0f];
	}
	out[2 * len] = '\0';
}

static int hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long encoding_hex_decode(const char *in, size_t in_len, unsigned char *out,
			 size_t cap)
{
	if (in_len == 0 || in_len % 2 != 0 || in_len / 2 > cap ||
	    in_len / 2 > LONG_MAX)
		return -1;
	for (size_t i = 0; i < in_len; i += 2) {
		int hi = hex_value((unsigned char)in[i]);
		int lo = hex_value((unsigned char)in[i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i / 2] = (unsigned char)(hi << 4 | lo);
	}
	return (long)(in_len / 2);
}

void encoding_base64_encode(const unsigned char *in, size_t len, char *out)
{
	/* EVP_EncodeBlock takes an int length; callers encode MACs and keys. */
	EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}

static bool is_base64_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/* Decoding goes through a bounded stack buffer: EVP_DecodeBlock writes
 * in_len / 4 * 3 bytes, padding included, which may exceed out's room. */
#define DECODE_MAX 1024

long encoding_base64_decode(const char *in, size_t in_len, unsigned char *out,
			    size_t cap)
{
	unsigned char buf[DECODE_MAX];
	size_t pad = 0, n;
	int decoded;

	if (in_len == 0 || in_len % 4 != 0 || in_len / 4 * 3 > sizeof(buf))
		return -1;
	if (in[in_len - 1] == '=')
		pad++;
	if (in[in_len - 2] == '=')
		pad++;
	for (size_t i = 0; i < in_len - pad; i++)
		if (!is_base64_char((unsigned char)in[i]))
			return -1;
	decoded = EVP_DecodeBlock(buf, (const unsigned char *)in, (int)in_len);
	if (decoded < 0 || (size_t)decoded != in_len / 4 * 3) {
		OPENSSL_cleanse(buf, sizeof(buf));
		return -1;
	}
	n = (size_t)decoded - pad;
	if (n > cap) {
		OPENSSL_cleanse(buf, sizeof(buf));
		return -1;
	}
	memcpy(out, buf, n);
	OPENSSL_cleanse(buf, sizeof(buf));
	return (long)n;
}
