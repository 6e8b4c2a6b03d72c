// Everything is in include/CWorkspaceFS.h (static inline); SwiftPM wants one source file per C target.
#include "CWorkspaceFS.h"
