#include <stdlib.h>
#include <string.h>
#include "table.h"

void table_add(struct table *t, const char *word) {
    for (size_t i = 0; i < t->used; i++) {
        if (strcmp(t->entries[i].word, word) == 0) {
            t->entries[i].count++;
            return;
        }
    }
    if (t->used == t->size) {
        t->size = t->size ? t->size * 2 : 64;
        t->entries = realloc(t->entries, t->size * sizeof *t->entries);
    }
    strncpy(t->entries[t->used].word, word, sizeof t->entries[0].word - 1);
    t->entries[t->used].word[sizeof t->entries[0].word - 1] = '\0';
    t->entries[t->used].count = 1;
    t->used++;
}

static int by_count(const void *a, const void *b) {
    const struct entry *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return strcmp(x->word, y->word);
}

void table_sort(struct table *t) {
    qsort(t->entries, t->used, sizeof *t->entries, by_count);
}
