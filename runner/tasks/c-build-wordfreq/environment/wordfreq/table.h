#ifndef TABLE_H
#define TABLE_H
#include <stddef.h>

struct entry {
    char word[64];
    long count;
};

struct table {
    struct entry *entries;
    size_t used, size;
};

void table_add(struct table *t, const char *word);
void table_sort(struct table *t);
#endif
