/*
 * test_s3.c - SigV4 signing (src/httpc/s3.c) against AWS's published
 * reference vector ("get-vanilla" of the SigV4 test suite) and the URI
 * encoding rules it depends on.  The integration test (test_agent.py s3)
 * checks the same code against radosgw, which verifies signatures.
 */
#include "httpc/s3.h"

#include "test.h"

#include <string.h>

static void test_vector(void)
{
    s3_header h[2] = { { "host", "example.amazonaws.com" },
                       { "x-amz-date", "20150830T123600Z" } };
    char out[512];

    REQUIRE(s3_sign("GET", "/", "", h, 2,
                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
                    "7852b855",
                    "20150830T123600Z", "us-east-1", "service", "AKIDEXAMPLE",
                    "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", out,
                    sizeof out) == 0);
    CHECK_STR(out, "AWS4-HMAC-SHA256 "
                   "Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                   "aws4_request, SignedHeaders=host;x-amz-date, "
                   "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956"
                   "d9b8aae1d763fbf31");
    /* a different secret gives a different signature */
    REQUIRE(s3_sign("GET", "/", "", h, 2, "e3", "20150830T123600Z", "us-east-1",
                    "service", "AKIDEXAMPLE", "other", out, sizeof out) == 0);
    CHECK(strstr(out, "5fa00fa3") == NULL);
}

static void test_encode(void)
{
    char out[64];
    CHECK(s3_uri_encode("a b/c~d.e_f-g", 1, out, sizeof out) > 0);
    CHECK_STR(out, "a%20b/c~d.e_f-g");
    CHECK(s3_uri_encode("a/b+c=", 0, out, sizeof out) > 0);
    CHECK_STR(out, "a%2Fb%2Bc%3D");
    CHECK(s3_uri_encode("\xc3\xa9", 0, out, sizeof out) > 0);
    CHECK_STR(out, "%C3%A9");
    CHECK(s3_uri_encode("abcdef", 0, out, 4) == 0);
}

int main(void)
{
    RUN(test_vector);
    RUN(test_encode);
    TEST_DONE();
}
