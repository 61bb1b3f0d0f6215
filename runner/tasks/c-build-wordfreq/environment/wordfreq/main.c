#include <ctype.h>
#include <stdio.h>
#include "table.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: wordfreq FILE\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (!in) {
        perror(argv[1]);
        return 1;
    }
    struct table t = {0};
    char word[64];
    size_t n = 0;
    int c;
    while ((c = fgetc(in)) != EOF) {
        if (isalpha(c) && n < sizeof word - 1) {
            word[n++] = (char)tolower(c);
        } else if (n) {
            word[n] = '\0';
            table_add(&t, word);
            n = 0;
        }
    }
    if (n) {
        word[n] = '\0';
        table_add(&t, word);
    }
    fclose(in);
    table_sort(&t);
    for (size_t i = 0; i < t.used; i++)
        printf("%ld %s\n", t.entries[i].count, t.entries[i].word)
    return 0;
}
