/* Opens and closes /dev/null three times, then writes "done": for `catch syscall`. With an
 * argument, it first creates that file and sleeps half a second, so that a test can act
 * while it runs. */
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc > 1) {
        close(open(argv[1], O_WRONLY | O_CREAT, 0600));
        usleep(500000);
    }
    for (int i = 0; i < 3; i++) {
        int fd = open("/dev/null", O_RDONLY);
        close(fd); /* MARK: close */
    }
    return write(1, "done\n", 5) == 5 ? 0 : 1;
}
