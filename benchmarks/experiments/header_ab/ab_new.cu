// The tree's headers.
#define AB_FN launch_new
#include "launch_impl.inc"
