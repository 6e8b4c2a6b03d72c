#ifndef OA_BRIDGE_CDNSSD_SHIM_H
#define OA_BRIDGE_CDNSSD_SHIM_H
#if defined(__APPLE__)
#include <dns_sd.h>
#else
#include <avahi-compat-libdns_sd/dns_sd.h>
#endif
#endif
