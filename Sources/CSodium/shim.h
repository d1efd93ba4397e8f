#ifndef CUSTODY_CSODIUM_SHIM_H
#define CUSTODY_CSODIUM_SHIM_H

// libsodium from Debian's libsodium-dev. Only CustodyProtection imports this module.
#include <sodium.h>

#endif
