/* Opens and closes /dev/null three times, then writes "done": for `catch syscall`. */
#include <fcntl.h>
#include <unistd.h>

int main(void) {
    for (int i = 0; i < 3; i++) {
        int fd = open("/dev/null", O_RDONLY);
        close(fd);
    }
    return write(1, "done\n", 5) == 5 ? 0 : 1;
}
