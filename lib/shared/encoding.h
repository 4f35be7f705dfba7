/* encoding.h - hex and base64, the two ways providers write keys and
 * signatures as text. Base64 comes from libcrypto; the checks around it make
 * decoding strict (libcrypto alone skips white space and counts padding as
 * data).
 */
#ifndef PAYHOOK_ENCODING_H
#define PAYHOOK_ENCODING_H

#include <stddef.h>

/* Characters needed for the base64 text of n bytes, without the NUL. */
#define ENCODING_BASE64_LEN(n) ((((n) + 2) / 3) * 4)

/* Writes in[0..len) as 2 * len lower-case hex digits and a NUL into out.
 * Can't fail. */
void encoding_hex_encode(const unsigned char *in, size_t len, char *out);

/* Decodes in[0..in_len), an even number of hex digits of either case, into
 * out (at most cap bytes). Returns the number of bytes, or -1 when in is
 * empty, odd, holds a non-hex character or does not fit. */
long encoding_hex_decode(const char *in, size_t in_len, unsigned char *out,
			 size_t cap);

/* Writes in[0..len) as padded standard base64 and a NUL into out, which must
 * hold ENCODING_BASE64_LEN(len) + 1 bytes. Can't fail. */
void encoding_base64_encode(const unsigned char *in, size_t len, char *out);

/* Decodes standard, padded base64 in[0..in_len) into out (at most cap
 * bytes). Returns the number of bytes, or -1 when in is empty, not a multiple
 * of 4 long, holds anything but the alphabet and up to two trailing '=', or
 * does not fit. */
long encoding_base64_decode(const char *in, size_t in_len, unsigned char *out,
			    size_t cap);

#endif
