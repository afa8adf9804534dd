/* Figures of the rotation study. */
#include "figure.h"

const fig_def rotation_figures[] = {
    {NULL, NULL, NULL, NULL}};
