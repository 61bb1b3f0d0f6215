#include <stdio.h>
#include <string.h>
#include "ringbuf.h"

#define CHECK(cond) do { if (!(cond)) { printf("FAIL line %d: %s\n", __LINE__, #cond); return 1; } } while (0)

int main(void) {
    struct ringbuf rb;
    char out[16];
    CHECK(ringbuf_init(&rb, 8) == 0);
    CHECK(ringbuf_write(&rb, "abcdef", 6) == 6);
    CHECK(ringbuf_read(&rb, out, 4) == 4 && memcmp(out, "abcd", 4) == 0);
    CHECK(ringbuf_write(&rb, "ghijklmn", 8) == 6);  /* wraps around, then full */
    CHECK(ringbuf_read(&rb, out, 16) == 8 && memcmp(out, "efghijkl", 8) == 0);
    CHECK(ringbuf_read(&rb, out, 1) == 0);
    for (int round = 0; round < 1000; round++) {
        CHECK(ringbuf_write(&rb, "xyz", 3) == 3);
        CHECK(ringbuf_read(&rb, out, 3) == 3 && memcmp(out, "xyz", 3) == 0);
    }
    ringbuf_free(&rb);
    printf("ringbuf: all checks passed\n");
    return 0;
}
