/* The sandbox ("pause") program of the dev environment's real nodes: holds a pod's namespaces,
 * reaps orphaned children, exits on SIGINT or SIGTERM. Built static, the only file of its image. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig) { _exit(sig == SIGTERM ? 0 : 2); }
static void reap(int sig) { (void)sig; while (waitpid(-1, 0, WNOHANG) > 0) {} }

int main(void) {
    struct sigaction q = {.sa_handler = quit}, r = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
    sigaction(SIGINT, &q, 0);
    sigaction(SIGTERM, &q, 0);
    sigaction(SIGCHLD, &r, 0);
    for (;;) pause();
}
