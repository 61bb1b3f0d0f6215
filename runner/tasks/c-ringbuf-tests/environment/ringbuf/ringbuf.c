#include <stdlib.h>
#include "ringbuf.h"

int ringbuf_init(struct ringbuf *rb, size_t capacity) {
    rb->data = malloc(capacity);
    rb->capacity = capacity;
    rb->head = rb->count = 0;
    return rb->data ? 0 : -1;
}

void ringbuf_free(struct ringbuf *rb) {
    free(rb->data);
    rb->data = NULL;
}

size_t ringbuf_write(struct ringbuf *rb, const void *src, size_t n) {
    const unsigned char *in = src;
    size_t written = 0;
    while (written < n && rb->count < rb->capacity) {
        rb->data[(rb->head + rb->count) % rb->capacity] = in[written++];
        rb->count++;
    }
    return written;
}

size_t ringbuf_read(struct ringbuf *rb, void *dst, size_t n) {
    unsigned char *out = dst;
    size_t done = 0;
    while (done < n && rb->count > 0) {
        out[done++] = rb->data[rb->head];
        rb->head = (rb->head + 1) % rb->capacity;
        rb->count--;
    }
    return done;
}
