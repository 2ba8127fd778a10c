/* Preloaded (LD_PRELOAD) into the reference Java Hive Metastore that tests/support/java_hms.py starts.
 *
 * Hive 2.3 listens on every interface and has no setting to change that. This library stands in front of the C
 * library's bind(): a request for the wildcard address becomes one for the loopback address, so a test never opens
 * a port to the network. Any other address goes through as asked.
 * Built by java_hms.py: gcc -shared -fPIC -o loopback_only.so loopback_only.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_call)(int, const struct sockaddr *, socklen_t);

/* 127.0.0.1 as an IPv6 address: an IPv6 socket that also takes IPv4 is reached there by clients dialling
 * 127.0.0.1, as it would have been on the wildcard address. */
static const unsigned char V4_MAPPED_LOOPBACK[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};

/* Turns the wildcard address in `address` (a copy, `length` bytes of it valid) into loopback; 1 when it did. */
static int narrow_to_loopback(struct sockaddr_storage *address, socklen_t length) {
    if (length >= sizeof(struct sockaddr_in) && address->ss_family == AF_INET) {
        struct sockaddr_in *ipv4 = (struct sockaddr_in *)address;
        if (ipv4->sin_addr.s_addr != htonl(INADDR_ANY))
            return 0;
        ipv4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return 1;
    }
    if (length >= sizeof(struct sockaddr_in6) && address->ss_family == AF_INET6) {
        struct sockaddr_in6 *ipv6 = (struct sockaddr_in6 *)address;
        if (memcmp(&ipv6->sin6_addr, &in6addr_any, sizeof in6addr_any) != 0)
            return 0;
        memcpy(&ipv6->sin6_addr, V4_MAPPED_LOOPBACK, sizeof V4_MAPPED_LOOPBACK);
        return 1;
    }
    return 0;
}

int bind(int fd, const struct sockaddr *address, socklen_t length) {
    static bind_call libc_bind;
    struct sockaddr_storage narrowed;

    if (libc_bind == NULL)
        libc_bind = (bind_call)dlsym(RTLD_NEXT, "bind");
    if (address == NULL || length > sizeof narrowed)
        return libc_bind(fd, address, length);
    memcpy(&narrowed, address, length);
    if (!narrow_to_loopback(&narrowed, length))
        return libc_bind(fd, address, length);
    return libc_bind(fd, (const struct sockaddr *)&narrowed, length);
}
