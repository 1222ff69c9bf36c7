// Linked into qplugin_loader only when it links qplugin's op library directly (shared or static
// archive) instead of dlopen-ing it: the strong reference to qplugin_register_all() makes the
// linker keep every registration object of the library (csrc/register.h).
#include "register.h"

extern "C" int64_t qplugin_loader_register_linked(void) { return qplugin_register_all(); }
