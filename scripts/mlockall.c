/* Locks every page the process has and will have (mlockall(MCL_CURRENT | MCL_FUTURE)) as
 * the process starts, so that memory is touched when it is mapped rather than when first
 * written. Preloaded into `downbeat audit`, it shows which violations are first touches of
 * memory a plugin allocated and had not yet written (docs/AUDIT.md, "Everything Debian
 * ships"):
 *
 *   cc -shared -fPIC -o /tmp/mlockall.so scripts/mlockall.c
 *   LD_PRELOAD=/tmp/mlockall.so downbeat audit /usr/lib/lv2/lsp-plugins.lv2
 */
#include <stdio.h>
#include <sys/mman.h>

__attribute__((constructor)) static void lock_all(void) {
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
        perror("mlockall");
    }
}
