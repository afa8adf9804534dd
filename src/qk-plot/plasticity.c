/* Figures of the plasticity study. */
#include "figure.h"

const fig_def plasticity_figures[] = {
    {NULL, NULL, NULL, NULL}};
