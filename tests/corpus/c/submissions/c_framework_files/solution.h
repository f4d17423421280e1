/* Student-supplied header: declares nothing the hidden driver needs. */
#define CORPUS_SOLUTION_H
