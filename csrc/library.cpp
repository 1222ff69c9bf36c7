// The only TORCH_LIBRARY(qplugin): opens the namespace (packed-param classes are registered here
// as their issues land). Op schemas live in ops/<family>.cpp as TORCH_LIBRARY_FRAGMENTs.
#include <torch/library.h>

TORCH_LIBRARY(qplugin, m) {}
