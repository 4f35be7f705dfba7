/* test_url.c - unit tests of url: a URL read as libcurl reads it (the
 * host after a userinfo, the default port, a path, a query), and which
 * hosts are loopback.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "url.h"

START_TEST(the_parts_as_libcurl_reads_them)
{
	struct url_parts u;
	struct error err = { "" };

	ck_assert_int_eq(url_parse("https://api.paypal.com/v1/notifications/"
				   "certs/CERT-1", &u, &err), 0);
	ck_assert_str_eq(u.scheme, "https");
	ck_assert_str_eq(u.host, "api.paypal.com");
	ck_assert_int_eq(u.port, 443);
	ck_assert(!u.port_given);
	ck_assert_str_eq(u.path, "/v1/notifications/certs/CERT-1");
	ck_assert(!u.userinfo && !u.query && !u.fragment);
	ck_assert_int_eq(url_parse("HTTP://127.0.0.1:8080", &u, &err), 0);
	ck_assert_str_eq(u.scheme, "http");
	ck_assert_int_eq(u.port, 8080);
	ck_assert(u.port_given);
	ck_assert_str_eq(u.path, "/");
	ck_assert_int_eq(url_parse("http://[::1]:9/x?a=b#c", &u, &err), 0);
	ck_assert_str_eq(u.host, "[::1]");
	ck_assert(u.query && u.fragment);
}
END_TEST

START_TEST(userinfo_names_the_host_after_it)
{
	struct url_parts u;
	struct error err = { "" };

	ck_assert_int_eq(url_parse("http://127.0.0.1:1@0.0.0.0:9", &u, &err), 0);
	ck_assert(u.userinfo);
	ck_assert_str_eq(u.host, "0.0.0.0");
	ck_assert_int_eq(u.port, 9);
	ck_assert(!url_host_loopback(u.host));
	ck_assert_int_eq(url_parse("https://@api.stripe.com", &u, &err), 0);
	ck_assert(u.userinfo);
	ck_assert_int_eq(url_parse("https://:pw@api.stripe.com", &u, &err), 0);
	ck_assert(u.userinfo);
}
END_TEST

START_TEST(loopback_hosts)
{
	ck_assert(url_host_loopback("127.0.0.1"));
	ck_assert(url_host_loopback("127.255.0.9"));
	ck_assert(url_host_loopback("localhost"));
	ck_assert(url_host_loopback("LOCALHOST"));
	ck_assert(url_host_loopback("[::1]"));
	ck_assert(!url_host_loopback("0.0.0.0"));
	ck_assert(!url_host_loopback("127.0.0.1.example.com"));
	ck_assert(!url_host_loopback("localhost.example.com"));
	ck_assert(!url_host_loopback("128.0.0.1"));
	ck_assert(!url_host_loopback("[::2]"));
}
END_TEST

START_TEST(what_is_not_a_url)
{
	struct url_parts u;
	struct error err = { "" };

	ck_assert_int_eq(url_parse("api.stripe.com", &u, &err), -1);
	ck_assert_int_eq(url_parse("ftp://127.0.0.1/", &u, &err), -1);
	ck_assert_str_eq(err.message, "not an http:// or https:// URL");
	ck_assert_int_eq(url_parse("http://", &u, &err), -1);
	ck_assert_int_eq(url_parse("http://127.0.0.1:99999", &u, &err), -1);
	ck_assert_int_eq(url_parse("", &u, &err), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("url");
	TCase *tc = tcase_create("url");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, the_parts_as_libcurl_reads_them);
	tcase_add_test(tc, userinfo_names_the_host_after_it);
	tcase_add_test(tc, loopback_hosts);
	tcase_add_test(tc, what_is_not_a_url);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
